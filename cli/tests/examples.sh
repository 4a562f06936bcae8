#!/bin/sh
# unit_cli_examples: examples/ lints clean (exit 0) and every file in
# examples/invalid/ is denied on its own (exit 1), as is the directory; and
# the lint commands docs/ci.md shows run.
# Usage: examples.sh POOLKEEPER_BINARY EXAMPLES_DIR
bin=$1
dir=$2
fail=0
out=/tmp/pk-examples.$$

expect() {
	want=$1
	shift
	"$bin" "$@" >$out 2>&1
	got=$?
	if [ "$got" -ne "$want" ]; then
		echo "FAIL: poolkeeper $* exited $got, want $want:"
		cat $out
		fail=1
	else
		echo "ok: poolkeeper $* -> $got"
	fi
}

# what the output must (or must not) hold, after the last expect
holds() {
	if ! grep -q -- "$1" $out; then
		echo "FAIL: output lacks \"$1\":"
		cat $out
		fail=1
	fi
}

expect 0 lint --no-recursive "$dir"
expect 0 lint -o json --strict "$dir/demo" "$dir"/*.yaml
expect 0 lint "$dir/demo"
# recursive by default: the denied files under invalid/ are found
expect 1 lint "$dir"
holds "invalid/host-bits-set.yaml:10:7: error: IPPool default/host-bits-set: spec.addresses\[0\]"
expect 1 lint "$dir/invalid"
for f in "$dir"/invalid/*.yaml; do
	expect 1 lint "$f"
done
expect 1 lint "$dir/invalid/misspelled-field.yaml"
holds 'spec.excludeAddresses: unknown field "excludeAddresses"; did you mean "excludedAddresses"? \[unknown-field\]'
expect 1 lint "$dir/invalid/api-version-typo.yaml"
holds 'did you mean "ipam.poolkeeper.io/v1alpha1"?'
expect 1 lint "$dir/invalid/kind-typo.yaml"
holds 'did you mean "IPPool"?'
# outputs for CI
expect 1 lint -o github "$dir/invalid/host-bits-set.yaml"
holds "^::error file=$dir/invalid/host-bits-set.yaml,line=10,col=7,title=pool/spec.addresses::"
expect 1 lint -o junit "$dir/invalid/host-bits-set.yaml"
holds '<failure type="pool/spec.addresses"'
expect 1 lint -o sarif "$dir/invalid/host-bits-set.yaml"
holds '"version": "2.1.0"'
expect 2 lint -o yaml "$dir"
# ok objects only with --verbose
expect 0 lint "$dir/ippool-ipv4.yaml"
if grep -q ": ok:" $out; then
	echo "FAIL: ok objects listed without --verbose"
	fail=1
fi
expect 0 lint -v "$dir/ippool-ipv4.yaml"
holds ": ok: IPPool"
# the demo's claim warns: --fail-on=warning makes that fail
expect 1 lint --fail-on warning "$dir/demo"
expect 2 lint --fail-on info "$dir/demo"
# the claim modes: warn admits what repair and deny refuse; ignore is only
# for --foreign-claims
two="$dir/invalid/claim-two-owners-none-controller.yaml"
expect 1 lint --claim-enforcement deny "$two"
expect 0 lint --claim-enforcement warn "$two"
expect 1 lint --claim-enforcement=warn --fail-on=warning "$two"
expect 2 lint --claim-enforcement ignore "$two"
expect 2 lint --foreign-claims maybe "$two"
expect 2 lint "$dir/does-not-exist.yaml"
# the size cap is settable
expect 2 lint --max-file-size 100 "$dir/ippool-ipv4.yaml"
expect 0 lint --max-file-size 100000 "$dir/ippool-ipv4.yaml"
# threads change nothing in the report: every output, one thread against four
for o in text json sarif; do
	expect 1 lint -v -o $o -j 1 "$dir"
	cp $out $out.one
	expect 1 lint -v -o $o -j 4 "$dir"
	if ! cmp -s $out $out.one; then
		echo "FAIL: poolkeeper lint -o $o differs between -j 1 and -j 4:"
		diff $out.one $out
		fail=1
	fi
done
expect 2 lint -j 65 "$dir"
# every lint command docs/ci.md shows runs as written (findings may fail it,
# a flag it does not know may not), on the examples for its manifests/
docs="$dir/../docs/ci.md"
n=0
grep -o 'poolkeeper lint [^>|`]*manifests/' "$docs" | sed 's/ *$//' >$out.cmds
while read -r cmd; do
	n=$((n + 1))
	# shellcheck disable=SC2086 # the documented command's words
	set -- $(echo "$cmd" | sed "s|manifests/|$dir|; s|^poolkeeper ||")
	"$bin" "$@" >$out 2>&1
	got=$?
	if [ "$got" -ne 0 ] && [ "$got" -ne 1 ]; then
		echo "FAIL: docs/ci.md's \"$cmd\" exited $got:"
		cat $out
		fail=1
	else
		echo "ok: docs/ci.md's \"$cmd\" -> $got"
	fi
done <$out.cmds
if [ "$n" -lt 3 ]; then
	echo "FAIL: docs/ci.md shows $n lint commands; expected the GitHub and GitLab examples' (3 or more)"
	fail=1
fi
rm -f $out.cmds
rm -f $out $out.one
exit $fail
