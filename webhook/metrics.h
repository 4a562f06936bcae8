/*
 * metrics.h - the webhook's Prometheus metrics, rendered as the text
 * exposition format (version 0.0.4) for GET /metrics:
 *
 *   poolkeeper_webhook_requests_total{endpoint,result}        counter
 *   poolkeeper_webhook_request_duration_seconds{endpoint}     histogram
 *   poolkeeper_webhook_certificate_reloads_total{result}      counter
 *   poolkeeper_webhook_certificate_expiry_timestamp_seconds   gauge
 *   poolkeeper_webhook_claim_repairs_total{owner_kind,repair}  counter
 *   poolkeeper_webhook_claim_repairs_skipped_total{owner_kind,reason} counter
 *   poolkeeper_webhook_cache_oversized_objects_total           counter
 *   poolkeeper_webhook_unauthenticated_requests_total{reason}  counter
 *   poolkeeper_webhook_client_ca_reloads_total{result}         counter
 *
 * Every update is a relaxed atomic add, so request threads never wait on
 * each other or on a scrape; only the first repair for an owner kind not
 * seen before takes a lock, to give it a row.
 *
 * owner_kind comes from a tenant's object, so its values are bounded: a
 * kind of at most 63 of [A-Za-z0-9] is itself, anything else is "other",
 * and after PK_METRICS_REPAIR_KINDS distinct kinds every new one is "other".
 */
#ifndef PK_WEBHOOK_METRICS_H
#define PK_WEBHOOK_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "admission.h"

enum pk_metrics_result {
	PK_METRICS_ALLOWED = 0, /* 200, response.allowed true */
	PK_METRICS_DENIED,      /* 200, response.allowed false */
	PK_METRICS_ERROR,       /* 4xx/5xx: not an AdmissionReview we could answer */
};

struct pk_metrics;

/* A zeroed set of metrics, or NULL when out of memory. Free with pk_metrics_free. */
struct pk_metrics *pk_metrics_new(void);
void pk_metrics_free(struct pk_metrics *m);

/* One request to /validate or /mutate and how long it took. */
void pk_metrics_observe_request(struct pk_metrics *m, enum pk_admission_endpoint endpoint,
                                enum pk_metrics_result result, double seconds);
/* One certificate reload attempt. */
void pk_metrics_count_reload(struct pk_metrics *m, bool ok);
/* What client authentication (client_auth.h) made of a caller: the reasons the metrics count. */
enum pk_client_verdict {
	PK_CLIENT_OK = 0,          /* authenticated, or none needed */
	PK_CLIENT_NO_CERT,         /* required and not presented: 401 */
	PK_CLIENT_BAD_CERT,        /* presented and not valid: 401 */
	PK_CLIENT_NAME_NOT_ALLOWED /* valid, its CN not allowed: 403 */
};

/* The metrics label of a verdict ("no_certificate", ...). */
const char *pk_client_verdict_name(enum pk_client_verdict v);

/*
 * One request refused before its body was read, for want of a valid client
 * certificate: `verdict` is a non-OK enum pk_client_verdict.
 */
void pk_metrics_count_unauthenticated(struct pk_metrics *m, int verdict);
uint64_t pk_metrics_get_unauthenticated(const struct pk_metrics *m, int verdict);
/* One client CA bundle reload attempt (a changed file). */
void pk_metrics_count_client_ca_reload(struct pk_metrics *m, bool ok);
/* notAfter of the serving certificate now in use, seconds since the epoch. */
void pk_metrics_set_cert_expiry(struct pk_metrics *m, int64_t not_after);

/*
 * One repair by the mutating webhook: the count_repair callback of struct
 * pk_admission_config, with count_ctx the struct pk_metrics. owner_kind is
 * the reference's kind as sent (untrusted; NULL or "" count as "other");
 * what is "controller", "blockOwnerDeletion" or "clusterName" (a repair
 * made), "skipped:permission" (blockOwnerDeletion left out: the requester
 * may not set it) or "skipped:timeout" (left out: the permission check had
 * no answer within the review's deadline). Any other `what` is not counted.
 */
#define PK_METRICS_REPAIR_KINDS 64
void pk_metrics_count_repair(void *m, const char *owner_kind, const char *what);

/*
 * Where poolkeeper_webhook_cache_oversized_objects_total comes from: fn(ud)
 * at each render (webhook/cache.h's pk_cache_oversized, through
 * pk_lookup_oversized). Set once, before the listeners start; without it
 * the counter reads 0.
 */
void pk_metrics_set_oversized_source(struct pk_metrics *m, unsigned long long (*fn)(void *ud),
                                     void *ud);

/* Reads one counter back (tests and the benchmark). */
uint64_t pk_metrics_get_requests(const struct pk_metrics *m, enum pk_admission_endpoint endpoint,
                                 enum pk_metrics_result result);
uint64_t pk_metrics_get_reloads(const struct pk_metrics *m, bool ok);
/* The count of `what` (as pk_metrics_count_repair takes it) under the owner_kind label value
 * label ("other" for the bucket of the rest); 0 for a label never counted. */
uint64_t pk_metrics_get_repairs(struct pk_metrics *m, const char *label, const char *what);

/*
 * The exposition text, NUL-terminated; *len gets its length. The caller
 * frees it with free(). NULL when out of memory.
 */
char *pk_metrics_render(const struct pk_metrics *m, size_t *len);

#endif
