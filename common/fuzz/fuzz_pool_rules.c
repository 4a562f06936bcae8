/*
 * fuzz_pool_rules.c - libFuzzer target for the pool rules: any bytes that
 * parse as JSON go through pk_rules_check_pool (CREATE and UPDATE),
 * pk_pool_decode, the overlap rule against itself and the shrink rule. A
 * crash, leak or sanitizer report is a bug: nothing a client sends may
 * bring a poolkeeper process down.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "pool_ref.h"
#include "rules.h"

/* Same order of cap as an admission request's object. */
#define FUZZ_INPUT_MAX (64 * 1024)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > FUZZ_INPUT_MAX)
		return 0;
	json_error_t e;
	/*
	 * jansson refuses nesting deeper than JSON_PARSER_MAX_DEPTH (2048), so
	 * deep input cannot exhaust the stack. JSON_ALLOW_NUL: strings with
	 * \u0000 must be handled by the rules, not assumed away.
	 */
	json_t *j = json_loadb((const char *)data, size,
	                       JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES, &e);
	if (j == NULL)
		return 0;

	struct pk_violations v;
	char line[8192];
	pk_violations_init(&v);
	pk_rules_check_pool(j, NULL, &v);
	pk_rules_check_pool(j, j, &v);
	pk_violations_join(&v, PK_SEV_DENY, line, sizeof(line));
	pk_violations_join(&v, PK_SEV_WARN, line, sizeof(line));

	/* A bare spec as well as a whole object. */
	const json_t *spec = json_is_object(j) && json_object_get(j, "spec") != NULL
	                         ? json_object_get(j, "spec")
	                         : j;
	struct pk_pool p;
	pk_violations_init(&v);
	if (pk_pool_decode(spec, &p, &v) == PK_OK) {
		pk_rules_check_pool_overlap(&p, &p, "IPPool fuzz/self", &v);
		static const char *const in_use[] = {
		    "10.0.0.1",
		    "10.0.0.255",
		    "192.168.1.7",
		    "2001:db8::1",
		    "::",
		    "not-an-address",
		    NULL,
		    "255.255.255.255",
		    "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
		};
		pk_rules_check_pool_shrink(&p, in_use, sizeof(in_use) / sizeof(in_use[0]), &v);
		/* Every usable address is drawn from the listed ones. */
		if (p.usable != NULL && !pk_range_set_covers(p.addresses, p.usable))
			abort();
	}
	pk_pool_release(&p);

	/* The claim and address rules share the helpers; give them the same bytes. */
	pk_violations_init(&v);
	pk_rules_check_claim(j, NULL, &v);
	pk_rules_check_claim(j, j, &v);
	pk_rules_check_ipaddress(j, NULL, &v);
	pk_violations_join(&v, PK_SEV_DENY, line, sizeof(line));
	(void)(pk_pool_kind_of_ref(j) != NULL);
	(void)pk_pool_ref_is_poolkeeper_group(j);

	/* Claim modes and repair: a plan applied to a copy leaves a claim whose candidate
	 * needs nothing more, and the result is checked again in every mode. */
	static const enum pk_enforcement modes[] = {PK_ENFORCE_REPAIR, PK_ENFORCE_DENY,
	                                            PK_ENFORCE_WARN, PK_ENFORCE_IGNORE};
	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		struct pk_claim_repair plan;
		pk_violations_init(&v);
		pk_rules_check_claim_mode(j, NULL, modes[m], &v);
		pk_rules_plan_claim_repair(j, modes[m], &plan);
		pk_rules_note_claim_repair(j, &plan, modes[m], &v);
		if (!pk_rules_claim_repair_any(&plan))
			continue;
		json_t *copy = json_deep_copy(j);
		if (copy == NULL)
			continue;
		if (pk_rules_apply_claim_repair(copy, &plan) != PK_OK)
			abort(); /* a plan always fits the object it was made from */
		struct pk_claim_repair again;
		pk_rules_plan_claim_repair(copy, modes[m], &again);
		if (again.set_controller || again.set_block_owner_deletion ||
		    again.cluster_name != NULL)
			abort(); /* repairing is idempotent */
		pk_violations_init(&v);
		pk_rules_check_claim_mode(copy, NULL, modes[m], &v);
		json_decref(copy);
	}
	json_decref(j);
	return 0;
}
