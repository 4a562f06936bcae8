/*
 * tool.h - one run of poolkeeper-certs: read what is stored (files or the
 * two Secrets) and the webhook configurations, decide (renew.h), and when
 * anything must change, have the API server check every write first with a
 * dry run, then write in the order that never leaves a half-done state:
 *
 *   1. the CA (CA Secret, or ca.crt and ca.key),
 *   2. the serving pair with the bundle (serving Secret, or tls.key and tls.crt),
 *   3. caBundle in each webhook configuration, only once the pair it must
 *      verify is stored.
 *
 * A failure at step N leaves steps after N untouched, and what was written
 * is consistent: a bundle always holds the CA of every stored serving
 * certificate. When another writer changed an object in between (a 409, a
 * failed patch test), the run reads everything again and decides again, up
 * to three times. Nothing is written when nothing differs.
 *
 * Logs each decision and write through log.h.
 */
#ifndef PK_CERTS_TOOL_H
#define PK_CERTS_TOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "cabundle.h"
#include "kube_client.h"
#include "pk.h"
#include "renew.h"

struct pk_tool_opts {
	const char *namespace; /* of the Secrets */
	const char *secret;    /* the serving Secret; NULL: out_dir */
	const char *ca_secret; /* NULL: "<secret>-ca" */
	const char *out_dir;   /* files instead of Secrets; NULL: secret */
	const struct pk_webhook_config *configs;
	size_t nconfigs;
	struct pk_renew_policy policy;
	struct pk_kube_client *client; /* borrowed; needed for Secrets and configurations */
	time_t now;                    /* 0: the clock */
};

/* What a run did, for the caller's summary and for tests. */
struct pk_tool_outcome {
	bool new_ca;
	bool new_serving;
	unsigned secrets_written;
	unsigned files_written; /* chmod of a key file counts */
	unsigned configs_patched;
	unsigned webhooks_patched;
	unsigned attempts;
};

/* PK_OK, or PK_ERR_INVALID with one line in err (not NULL) naming the object and the cause. */
PK_MUST_CHECK int pk_tool_run(const struct pk_tool_opts *o, struct pk_tool_outcome *out,
                              struct pk_err *err);

#endif
