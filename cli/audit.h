/*
 * audit.h - `poolkeeper audit`: lint's checks (lint.h) over a live
 * cluster's objects, plus what only a live cluster shows. Those live checks
 * are pure functions over the listed objects (live.h):
 *
 *   rule                    on              finding (DENY unless said)
 *   address-held-twice      IPAddress       its spec.address is also held by an earlier
 *                                           IPAddress of the same pool (named)
 *   address-outside-pool    IPAddress       its address is not one its poolkeeper pool
 *                                           hands out (WARN: the pool does not exist)
 *   claim-address-missing   IPAddressClaim  status.addressRef names an IPAddress that
 *                                           does not exist
 *   address-claim-missing   IPAddress       spec.claimRef names a claim that does not exist
 *   claim-pending           IPAddressClaim  no status.addressRef for longer than the
 *                                           threshold since its creation, with the reason
 *                                           and message of its Ready condition
 *
 * An address outside its pool is also lint's check, but lint makes it only
 * on an IPAddress that passes its own rules (owner references and refs);
 * audit makes it, with the same rule (pk_pool_lookup_check_ipaddress_pool
 * over the listed pools), on the others, so that it is reported once.
 * Claims and IPAddresses being deleted are left out of the
 * live checks: their state is in flux.
 */
#ifndef PK_AUDIT_H
#define PK_AUDIT_H

#include <stdio.h>

#include "lint.h"
#include "live.h"
#include "violation.h"

#define PK_AUDIT_NAME_MAX   256
#define PK_AUDIT_ORIGIN_MAX (PK_AUDIT_NAME_MAX * 2 + 48)

struct pk_audit_finding {
	const char *kind; /* static: PK_CLAIM_KIND or PK_ADDRESS_KIND */
	char namespace_[PK_AUDIT_NAME_MAX];
	char name[PK_AUDIT_NAME_MAX];
	char origin[PK_AUDIT_ORIGIN_MAX]; /* "cluster:<Kind>/<ns>/<name>", lint's source for it */
	char object[PK_AUDIT_ORIGIN_MAX]; /* "<Kind> <ns>/<name>", as lint names objects */
	char field[PK_FIELD_MAX];
	const char *rule; /* static, from the table above */
	enum pk_severity severity;
	char message[PK_MESSAGE_MAX];
};

struct pk_audit_findings {
	struct pk_audit_finding *items;
	size_t n, cap;
};

void pk_audit_findings_free(struct pk_audit_findings *f);

/* Each live check appends what it finds; PK_OK or PK_ERR_NOMEM. */
PK_MUST_CHECK int pk_audit_check_held_twice(const struct pk_live *l, struct pk_audit_findings *out);
PK_MUST_CHECK int pk_audit_check_outside_pool(const struct pk_live *l,
                                              struct pk_audit_findings *out);
PK_MUST_CHECK int pk_audit_check_claim_addresses(const struct pk_live *l,
                                                 struct pk_audit_findings *out);
PK_MUST_CHECK int pk_audit_check_address_claims(const struct pk_live *l,
                                                struct pk_audit_findings *out);
/* now and pending_after in seconds. */
PK_MUST_CHECK int pk_audit_check_pending(const struct pk_live *l, long long now,
                                         long long pending_after, struct pk_audit_findings *out);

/* Every live check above, in that order (l indexed). */
PK_MUST_CHECK int pk_audit_check_all(const struct pk_live *l, long long now,
                                     long long pending_after, struct pk_audit_findings *out);

/* Feeds every listed object into the lint, each named "cluster:<Kind>/<ns>/<name>". */
PK_MUST_CHECK int pk_audit_add_to_lint(const struct pk_live *l, struct pk_lint *lint);

/*
 * lint's verdict (pk_lint_exit_code) when it is not 0; else 1 when a
 * finding fails (a DENY, or with `fail_on_warning` any), else 0.
 */
int pk_audit_exit_code(const struct pk_lint *lint, const struct pk_audit_findings *f,
                       bool fail_on_warning);

/*
 * Text: lint's report, then one line per finding,
 * "cluster:<Kind>/<ns>/<name>: deny|warn: <field>: <message> [<rule>]", then
 * "audit: N findings on the live cluster".
 */
void pk_audit_write_text(FILE *f, const struct pk_lint *lint, const struct pk_audit_findings *fs,
                         bool fail_on_warning);

/* lint's JSON object with "findings": [{kind, namespace, name, field, rule, severity,
 * message}] and exitCode from pk_audit_exit_code. NULL when out of memory. */
json_t *pk_audit_to_json(const struct pk_lint *lint, const struct pk_audit_findings *fs,
                         bool fail_on_warning);

/*
 * The report in `output`, one of lint's: text and json as above, github,
 * junit and sarif as lint's (report.h) with the findings added, each at its
 * origin with no line. PK_OK, or PK_ERR_NOMEM.
 */
PK_MUST_CHECK int pk_audit_write_report(FILE *f, const char *output, const struct pk_lint *lint,
                                        const struct pk_audit_findings *fs, bool fail_on_warning);

/* The command: argv after "audit". Returns the exit status. */
int pk_audit_main(int argc, char *argv[]);

#endif
