/* audit.c - `poolkeeper audit`: lint's checks and the live checks (audit.h) on a cluster. */
#include "audit.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "address.h"
#include "api.h"
#include "buf.h"
#include "flags.h"
#include "json.h"
#include "meta.h"
#include "parse.h"
#include "pool_ref.h"
#include "report.h"
#include "rules.h"

#define RULE_OUTSIDE_POOL  "address-outside-pool"
#define RULE_HELD_TWICE    "address-held-twice"
#define RULE_CLAIM_ADDRESS "claim-address-missing"
#define RULE_ADDRESS_CLAIM "address-claim-missing"
#define RULE_PENDING       "claim-pending"
#define EXIT_USAGE         2

void pk_audit_findings_free(struct pk_audit_findings *f)
{
	free(f->items);
	memset(f, 0, sizeof(*f));
}

static int add_sev(struct pk_audit_findings *out, const json_t *obj, enum pk_severity sev,
                   const char *field, const char *rule, const char *fmt, ...) PK_PRINTF(6, 7);

/* "cluster:<Kind>/<ns>/<name>": where lint and the findings say an object is. */
static char *origin_of(const json_t *obj, char *buf, size_t len)
{
	char what[PK_AUDIT_ORIGIN_MAX];
	snprintf(buf, len, "cluster:%s", pk_live_describe(obj, what, sizeof(what)));
	return buf;
}

/* Appends a finding on obj (its kind, namespace and name). */
static int add_sev(struct pk_audit_findings *out, const json_t *obj, enum pk_severity sev,
                   const char *field, const char *rule, const char *fmt, ...)
{
	if (pk_array_reserve(&out->items, &out->cap, out->n + 1, sizeof(*out->items)) != PK_OK)
		return PK_ERR_NOMEM;
	struct pk_audit_finding *x = &out->items[out->n++];
	memset(x, 0, sizeof(*x));
	const char *kind = pk_json_cstr_at(obj, "kind");
	x->kind = kind && !strcmp(kind, PK_CLAIM_KIND) ? PK_CLAIM_KIND : PK_ADDRESS_KIND;
	snprintf(x->namespace_, sizeof(x->namespace_), "%s", pk_live_namespace(obj));
	snprintf(x->name, sizeof(x->name), "%s", pk_live_name(obj));
	origin_of(obj, x->origin, sizeof(x->origin));
	snprintf(x->object, sizeof(x->object), "%s %s%s%s", x->kind, x->namespace_,
	         *x->namespace_ ? "/" : "", x->name);
	snprintf(x->field, sizeof(x->field), "%s", field);
	x->rule = rule;
	x->severity = sev;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(x->message, sizeof(x->message), fmt, ap);
	va_end(ap);
	return PK_OK;
}

#define add(out, obj, ...) add_sev((out), (obj), PK_SEV_DENY, __VA_ARGS__)

static bool deleting(const json_t *obj)
{
	return pk_json_path(obj, "metadata", "deletionTimestamp") != NULL;
}

/* ---- an address held twice ---- */

struct held {
	char pool[PK_POOL_REF_KEY_MAX]; /* pk_pool_ref_key */
	struct pk_addr addr;
	size_t index;
};

static int cmp_held(const void *pa, const void *pb)
{
	const struct held *a = pa, *b = pb;
	int c = strcmp(a->pool, b->pool);
	if (c != 0)
		return c;
	if (a->addr.family != b->addr.family)
		return a->addr.family < b->addr.family ? -1 : 1;
	if (a->addr.v != b->addr.v)
		return a->addr.v < b->addr.v ? -1 : 1;
	return a->index < b->index ? -1 : a->index > b->index;
}

/*
 * The pool an IPAddress's spec.poolRef names (pool_ref.h, as the webhook
 * names it), as a key. False when the reference or the address is not
 * there to compare.
 */
static bool held_of(const json_t *addr, size_t index, struct held *h)
{
	struct pk_pool_ref r;
	const char *text = pk_json_cstr(pk_json_path(addr, "spec", "address"));
	struct pk_err err = {{0}};
	if (!pk_pool_ref_read(pk_json_path(addr, "spec", "poolRef"), pk_live_namespace(addr), &r) ||
	    text == NULL || pk_address_parse(text, &h->addr, NULL, &err) != PK_OK)
		return false;
	h->index = index;
	return pk_pool_ref_key(&r, h->pool, sizeof(h->pool));
}

int pk_audit_check_held_twice(const struct pk_live *l, struct pk_audit_findings *out)
{
	size_t n = json_array_size(l->addresses), m = 0;
	struct held *hs = n ? calloc(n, sizeof(*hs)) : NULL;
	if (n && hs == NULL)
		return PK_ERR_NOMEM;
	for (size_t i = 0; i < n; i++) {
		const json_t *a = json_array_get(l->addresses, i);
		if (!deleting(a) && held_of(a, i, &hs[m]))
			m++;
	}
	if (m > 1)
		qsort(hs, m, sizeof(*hs), cmp_held);
	int rc = PK_OK;
	size_t first = 0;
	for (size_t i = 1; i < m && rc == PK_OK; i++) {
		if (strcmp(hs[i].pool, hs[first].pool) ||
		    hs[i].addr.family != hs[first].addr.family ||
		    hs[i].addr.v != hs[first].addr.v) {
			first = i;
			continue;
		}
		const json_t *a = json_array_get(l->addresses, hs[i].index),
		             *b = json_array_get(l->addresses, hs[first].index);
		char text[PK_ADDR_STRLEN], other[PK_AUDIT_NAME_MAX * 2 + 32];
		rc = add(out, a, "spec.address", RULE_HELD_TWICE,
		         "%s is also held by %s of the same pool",
		         pk_address_format(&hs[i].addr, text),
		         pk_live_describe(b, other, sizeof(other)));
	}
	free(hs);
	return rc;
}

/* ---- claims and IPAddresses that name each other ---- */

int pk_audit_check_claim_addresses(const struct pk_live *l, struct pk_audit_findings *out)
{
	size_t i;
	json_t *claim;
	json_array_foreach(l->claims, i, claim)
	{
		const char *name =
		    pk_json_cstr(pk_json_path(claim, "status", "addressRef", "name"));
		const char *ns = pk_live_namespace(claim);
		if (name == NULL || !*name || deleting(claim) ||
		    pk_live_address(l, ns, name) != NULL)
			continue;
		if (add(out, claim, "status.addressRef.name", RULE_CLAIM_ADDRESS,
		        "the claim is bound to IPAddress %s/%s, which does not exist", ns,
		        name) != PK_OK)
			return PK_ERR_NOMEM;
	}
	return PK_OK;
}

int pk_audit_check_address_claims(const struct pk_live *l, struct pk_audit_findings *out)
{
	size_t i;
	json_t *addr;
	json_array_foreach(l->addresses, i, addr)
	{
		const char *name = pk_json_cstr(pk_json_path(addr, "spec", "claimRef", "name"));
		const char *ns = pk_live_namespace(addr);
		if (name == NULL || !*name || deleting(addr) || pk_live_claim(l, ns, name) != NULL)
			continue;
		if (add(out, addr, "spec.claimRef.name", RULE_ADDRESS_CLAIM,
		        "IPAddressClaim %s/%s does not exist: the address is held for nobody", ns,
		        name) != PK_OK)
			return PK_ERR_NOMEM;
	}
	return PK_OK;
}

/* ---- an address outside its pool ---- */

int pk_audit_check_outside_pool(const struct pk_live *l, struct pk_audit_findings *out)
{
	struct pk_pool_lookup lk;
	pk_live_lookup(l, &lk);
	size_t i;
	json_t *addr;
	json_array_foreach(l->addresses, i, addr)
	{
		struct pk_violations v;
		struct pk_err err = {{0}};
		pk_violations_init(&v);
		pk_rules_check_ipaddress(addr, NULL, &v);
		if (deleting(addr) || pk_violations_count(&v, PK_SEV_DENY) == 0 ||
		    pk_pool_kind_of_ref(pk_json_path(addr, "spec", "poolRef")) == NULL)
			continue; /* lint checks it against its pool */
		pk_violations_init(&v);
		if (pk_pool_lookup_check_ipaddress_pool(&lk, pk_live_namespace(addr), addr, &v,
		                                        &err) != PK_OK)
			return PK_ERR_NOMEM;
		for (size_t k = 0; k < v.n; k++)
			if (add_sev(out, addr, v.items[k].severity,
			            *v.items[k].field ? v.items[k].field : "spec.poolRef",
			            RULE_OUTSIDE_POOL, "%s", v.items[k].message) != PK_OK)
				return PK_ERR_NOMEM;
	}
	return PK_OK;
}

/* ---- claims pending too long ---- */

/* "reason: message" of the claim's Ready condition, or why there is none. */
static void ready_reason(const json_t *claim, char *buf, size_t len)
{
	const json_t *c = pk_meta_condition(pk_json_path(claim, "status", "conditions"), "Ready");
	const char *reason = pk_json_cstr_at(c, "reason"), *msg = pk_json_cstr_at(c, "message");
	if (c == NULL)
		snprintf(buf, len, "no Ready condition");
	else
		snprintf(buf, len, "Ready is %s, reason %s%s%s",
		         pk_json_cstr_at(c, "status") ? pk_json_cstr_at(c, "status") : "unset",
		         reason ? reason : "unset", msg && *msg ? ": " : "",
		         msg && *msg ? msg : "");
}

int pk_audit_check_pending(const struct pk_live *l, long long now, long long pending_after,
                           struct pk_audit_findings *out)
{
	size_t i;
	json_t *claim;
	json_array_foreach(l->claims, i, claim)
	{
		const char *bound =
		    pk_json_cstr(pk_json_path(claim, "status", "addressRef", "name"));
		long long created;
		if ((bound && *bound) || deleting(claim) ||
		    pk_meta_time_parse(pk_json_meta_cstr(claim, "creationTimestamp"), &created) !=
		        PK_OK ||
		    now - created <= pending_after)
			continue;
		char age[32], why[PK_MESSAGE_MAX / 2];
		pk_format_duration((now - created) * 1000000000LL, age, sizeof(age));
		ready_reason(claim, why, sizeof(why));
		if (add(out, claim, "status.addressRef", RULE_PENDING, "no address after %s: %s",
		        age, why) != PK_OK)
			return PK_ERR_NOMEM;
	}
	return PK_OK;
}

int pk_audit_check_all(const struct pk_live *l, long long now, long long pending_after,
                       struct pk_audit_findings *out)
{
	int rc = pk_audit_check_held_twice(l, out);
	if (rc == PK_OK)
		rc = pk_audit_check_outside_pool(l, out);
	if (rc == PK_OK)
		rc = pk_audit_check_claim_addresses(l, out);
	if (rc == PK_OK)
		rc = pk_audit_check_address_claims(l, out);
	if (rc == PK_OK)
		rc = pk_audit_check_pending(l, now, pending_after, out);
	return rc;
}

/* ---- lint's checks ---- */

static int add_array(const json_t *items, struct pk_lint *lint)
{
	size_t i;
	json_t *obj;
	json_array_foreach(items, i, obj)
	{
		char source[PK_AUDIT_ORIGIN_MAX];
		/* One line of compact JSON: its findings are on line 1. */
		int rc = pk_lint_add_object(lint, json_incref(obj),
		                            origin_of(obj, source, sizeof(source)), 1);
		if (rc != PK_OK)
			return rc;
	}
	return PK_OK;
}

int pk_audit_add_to_lint(const struct pk_live *l, struct pk_lint *lint)
{
	int rc = add_array(l->pools, lint);
	if (rc == PK_OK)
		rc = add_array(l->addresses, lint);
	if (rc == PK_OK)
		rc = add_array(l->claims, lint);
	return rc;
}

static bool finding_fails(const struct pk_audit_finding *x, bool fail_on_warning)
{
	return x->severity == PK_SEV_DENY || fail_on_warning;
}

int pk_audit_exit_code(const struct pk_lint *lint, const struct pk_audit_findings *f,
                       bool fail_on_warning)
{
	int code = pk_lint_exit_code(lint, fail_on_warning);
	for (size_t i = 0; code == 0 && i < f->n; i++)
		if (finding_fails(&f->items[i], fail_on_warning))
			code = 1;
	return code;
}

/* ---- output ---- */

void pk_audit_write_text(FILE *f, const struct pk_lint *lint, const struct pk_audit_findings *fs,
                         bool fail_on_warning)
{
	bool warned = false;
	pk_report_write_text(f, lint, false, fail_on_warning);
	for (size_t i = 0; i < fs->n; i++) {
		const struct pk_audit_finding *x = &fs->items[i];
		fprintf(f, "%s: %s: %s: %s: %s [%s]\n", x->origin, pk_report_severity(x->severity),
		        x->object, x->field, x->message, x->rule);
		warned = warned || x->severity != PK_SEV_DENY;
	}
	fprintf(f, "audit: %zu finding%s on the live cluster%s\n", fs->n, fs->n == 1 ? "" : "s",
	        fail_on_warning && warned ? "; --fail-on=warning: warnings fail" : "");
}

static json_t *finding_json(const struct pk_audit_finding *x)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "kind", x->kind, "namespace",
	                 x->namespace_, "name", x->name, "field", x->field, "rule", x->rule,
	                 "severity", pk_report_severity(x->severity), "message", x->message);
}

json_t *pk_audit_to_json(const struct pk_lint *lint, const struct pk_audit_findings *fs,
                         bool fail_on_warning)
{
	json_t *root = pk_report_to_json(lint, fail_on_warning), *arr = json_array();
	bool ok = root != NULL && arr != NULL;
	for (size_t i = 0; ok && i < fs->n; i++) {
		json_t *j = finding_json(&fs->items[i]);
		ok = j != NULL && json_array_append_new(arr, j) == 0;
	}
	if (ok) {
		ok = json_object_set_new(root, "findings", arr) == 0;
		arr = NULL;
	}
	ok = ok &&
	     json_object_set_new(root, "exitCode",
	                         json_integer(pk_audit_exit_code(lint, fs, fail_on_warning))) == 0;
	json_decref(arr);
	if (!ok) {
		json_decref(root);
		return NULL;
	}
	return root;
}

/* The CI formats: lint's writers with the findings as extra ones, at their origins. */
static int write_ci(FILE *f, const char *output, const struct pk_lint *lint,
                    const struct pk_audit_findings *fs, bool fail_on_warning)
{
	struct pk_report_extra *extra = fs->n ? calloc(fs->n, sizeof(*extra)) : NULL;
	if (fs->n && extra == NULL)
		return PK_ERR_NOMEM;
	for (size_t i = 0; i < fs->n; i++) {
		const struct pk_audit_finding *x = &fs->items[i];
		extra[i] = (struct pk_report_extra){x->origin, x->object,  x->field,
		                                    x->rule,   x->message, x->severity};
	}
	const struct pk_report_ci c = {"audit", fail_on_warning, extra, fs->n, true};
	int rc = pk_report_ci_write(f, output, lint, &c);
	free(extra);
	return rc;
}

int pk_audit_write_report(FILE *f, const char *output, const struct pk_lint *lint,
                          const struct pk_audit_findings *fs, bool fail_on_warning)
{
	if (!strcmp(output, "json"))
		return pk_report_dump(f, pk_audit_to_json(lint, fs, fail_on_warning));
	if (strcmp(output, "text") != 0)
		return write_ci(f, output, lint, fs, fail_on_warning);
	pk_audit_write_text(f, lint, fs, fail_on_warning);
	return PK_OK;
}

/* ---- the command ---- */

enum audit_flag { A_FAIL_ON = PK_LIVE_F_COMMON, A_PENDING, A_COUNT };

static const struct pk_flag audit_flags[A_COUNT] = {
    [PK_LIVE_F_KUBECONFIG] = PK_FLAG_DEF_KUBECONFIG,
    [PK_LIVE_F_NS] = {"namespace", 'n', PK_FLAG_STRING, NULL, "NAME",
                      "only this namespace's pools, IPAddresses and claims (cluster-scoped "
                      "pools such as GlobalIPPools always)"},
    [PK_LIVE_F_OUTPUT] = {"output", 'o', PK_FLAG_CHOICE, "text", "text|json|github|junit|sarif",
                          "report as lint does: text lines, one JSON object, GitHub workflow "
                          "commands, JUnit XML or SARIF 2.1.0"},
    [PK_LIVE_F_HELP] = PK_FLAG_DEF_HELP,
    [A_FAIL_ON] = {"fail-on", 0, PK_FLAG_CHOICE, "error", "warning|error",
                   "the least severe finding that makes the exit status 1"},
    [A_PENDING] = {"pending-after", 0, PK_FLAG_DURATION, "5m", "0s..8760h",
                   "a claim without an address for longer than this is a finding"},
};

static const char audit_summary[] =
    "Runs lint's checks on a live cluster's pools (every kind of " PK_POOL_GROUP
    "),\n" PK_ADDRESS_KIND "es and " PK_CLAIM_KIND "s, and finds what only a live cluster shows:\n"
    "an address held twice in one pool, a claim bound to an " PK_ADDRESS_KIND " that no longer\n"
    "exists, an " PK_ADDRESS_KIND " whose claim is gone, and a claim pending for longer than\n"
    "--pending-after (with the reason of its Ready condition). The report takes lint's\n"
    "forms; a live finding is at cluster:<Kind>/<namespace>/<name>, with no line.\n"
    "See docs/audit.md.\n"
    "\n"
    "Exit status: 0 clean, 1 findings that fail (errors, or warnings with\n"
    "--fail-on=warning), 2 usage error or the cluster could not be read.";

/* Lints and audits what is listed and prints the report; the exit status. */
static int audit_and_report(const struct pk_live *live, const struct pk_flag_value *vals,
                            const char *output)
{
	long long pending_after = (long long)(pk_flags_get_num(vals, A_PENDING) / 1000000000ULL);
	bool fail_warn = !strcmp(pk_flags_get_string(audit_flags, vals, A_FAIL_ON), "warning");
	struct pk_audit_findings fs = {0};
	struct pk_lint *lint = pk_lint_new();
	int status = EXIT_USAGE;
	if (lint == NULL || pk_audit_add_to_lint(live, lint) != PK_OK ||
	    pk_lint_run(lint) != PK_OK ||
	    pk_audit_check_all(live, (long long)time(NULL), pending_after, &fs) != PK_OK ||
	    pk_audit_write_report(stdout, output, lint, &fs, fail_warn) != PK_OK)
		fprintf(stderr, "poolkeeper audit: out of memory\n");
	else
		status = pk_audit_exit_code(lint, &fs, fail_warn);
	pk_lint_free(lint);
	pk_audit_findings_free(&fs);
	return status;
}

int pk_audit_main(int argc, char *argv[])
{
	static const struct pk_live_command cmd = {"audit",       audit_flags,
	                                           A_COUNT,       "poolkeeper audit [flags]",
	                                           audit_summary, audit_and_report};
	return pk_live_main(&cmd, argc, argv);
}
