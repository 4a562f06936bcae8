#!/bin/sh
# unit_cli_examples: examples/ lints clean (exit 0) and every file in
# examples/invalid/ is denied on its own (exit 1), as is the directory.
# Usage: examples.sh POOLKEEPER_BINARY EXAMPLES_DIR
bin=$1
dir=$2
fail=0

expect() {
	want=$1
	shift
	"$bin" "$@" >/tmp/pk-examples.$$ 2>&1
	got=$?
	if [ "$got" -ne "$want" ]; then
		echo "FAIL: poolkeeper $* exited $got, want $want:"
		cat /tmp/pk-examples.$$
		fail=1
	else
		echo "ok: poolkeeper $* -> $got"
	fi
}

expect 0 lint "$dir"
expect 0 lint --strict --format json "$dir"
expect 1 lint "$dir/invalid"
for f in "$dir"/invalid/*.yaml; do
	expect 1 lint "$f"
done
# the claim modes: warn admits what repair and deny refuse; ignore is only
# for --foreign-claims
two="$dir/invalid/claim-two-owners-none-controller.yaml"
expect 1 lint --claim-enforcement deny "$two"
expect 0 lint --claim-enforcement warn "$two"
expect 1 lint --claim-enforcement=warn --strict "$two"
expect 2 lint --claim-enforcement ignore "$two"
expect 2 lint --foreign-claims maybe "$two"
expect 2 lint "$dir/does-not-exist.yaml"
rm -f /tmp/pk-examples.$$
exit $fail
