/*
 * convert.h - `poolkeeper convert`: the in-cluster IPAM provider's pools
 * (sigs.k8s.io/cluster-api-ipam-provider-in-cluster, InClusterIPPool and
 * GlobalInClusterIPPool of ipam.cluster.x-k8s.io v1alpha1 and v1alpha2) as
 * poolkeeper's IPPool and GlobalIPPool (ipam.poolkeeper.io/v1alpha1).
 *
 * Per object, by apiVersion and kind:
 *   InClusterIPPool, GlobalInClusterIPPool    converted (convert_pool.c); the
 *     v1alpha1, v1alpha2                       result must pass pk_rules_check_pool
 *   InClusterPrefixPool, GlobalInClusterPrefixPool   an error: no such poolkeeper kind
 *   IPAddressClaim whose spec.poolRef names an in-cluster IP pool
 *                                              poolRef rewritten to poolkeeper's kind
 *   IPAddress whose spec.poolRef names one     passed through, with a warning
 *   anything else                              passed through unchanged
 * Lists (kind: List, typed lists) are expanded into their items. Converted
 * pools are checked for overlap with each other as the webhook does (an
 * IPPool against its namespace's IPPools and every GlobalIPPool).
 *
 * Every change, warning and error is a message naming the input's file and
 * line, the object, and the field. Any error means nothing is written: the
 * output is all or nothing, so a pipeline never applies half a migration.
 *
 * Output: each object as an indented JSON document after a "---" line. JSON
 * is YAML, so the stream is a multi-document YAML file kubectl applies and
 * `poolkeeper lint` reads; no YAML emitter (and its quoting rules) is needed.
 *
 * Ownership: a struct pk_convert owns everything it loads and makes; the
 * message view is valid until pk_convert_free. Nothing here prints except
 * pk_convert_main and pk_convert_write_summary.
 */
#ifndef PK_CONVERT_H
#define PK_CONVERT_H

#include <jansson.h>
#include <stdio.h>

#include "pk.h"

/* The in-cluster provider's kinds (api/v1alpha2/inclusterippool_types.go). */
#define PK_INCLUSTER_POOL_KIND               "InClusterIPPool"
#define PK_INCLUSTER_GLOBAL_POOL_KIND        "GlobalInClusterIPPool"
#define PK_INCLUSTER_PREFIX_POOL_KIND        "InClusterPrefixPool"
#define PK_INCLUSTER_GLOBAL_PREFIX_POOL_KIND "GlobalInClusterPrefixPool"

enum pk_convert_level {
	PK_CONVERT_CHANGE = 0,  /* something convert rewrote, same behaviour */
	PK_CONVERT_WARNING = 1, /* a change or a difference that alters behaviour */
	PK_CONVERT_ERROR = 2,   /* the object could not be converted */
};

struct pk_convert_msg {
	enum pk_convert_level level;
	char *text; /* owned: "<file>:<line>: <Kind> <ns/name>: <field>: <message>" */
};

struct pk_convert_totals {
	size_t pools;      /* pools converted */
	size_t claims;     /* claims whose poolRef was rewritten */
	size_t passed;     /* objects passed through unchanged */
	size_t changes;    /* CHANGE and WARNING messages */
	size_t errors;     /* ERROR messages (load errors included) */
	size_t unreadable; /* inputs that could not be read */
};

struct pk_convert;

/* `ns` (may be NULL; copied): the namespace of namespaced objects that set none. */
struct pk_convert *pk_convert_new(const char *ns);
void pk_convert_free(struct pk_convert *c);

/* Loads and converts the manifests in buf; load errors become messages. PK_OK or PK_ERR_NOMEM. */
PK_MUST_CHECK int pk_convert_add_buffer(struct pk_convert *c, const char *buf, size_t len,
                                        const char *source);

/* Records an input that could not be read; `message` names it. */
PK_MUST_CHECK int pk_convert_add_unreadable(struct pk_convert *c, const char *message);

/* The checks across objects (overlap); call once after the last add. */
PK_MUST_CHECK int pk_convert_run(struct pk_convert *c);

const struct pk_convert_msg *pk_convert_messages(const struct pk_convert *c, size_t *n);
struct pk_convert_totals pk_convert_get_totals(const struct pk_convert *c);

/* 2 when an input could not be read, else 1 when anything could not be converted, else 0. */
int pk_convert_exit_code(const struct pk_convert *c);

/* The output stream (see above) as a new NUL-terminated string; NULL when out of memory. */
char *pk_convert_output(const struct pk_convert *c, size_t *len);

/* Every message, one a line, then a totals line. */
void pk_convert_write_summary(FILE *f, const struct pk_convert *c);

/* `poolkeeper convert [flags] FILE|DIR|- ...`; argv without the command. The exit status. */
int pk_convert_main(int argc, char *argv[]);

/* ---- convert_pool.c: one pool's spec ---- */

/* Where convert_pool.c reports: `add` copies field and message; it records memory failures. */
struct pk_convert_log {
	void (*add)(void *ctx, enum pk_convert_level level, const char *field, const char *msg);
	void *ctx;
	size_t errors;
};

void pk_convert_logf(struct pk_convert_log *lg, enum pk_convert_level level, const char *field,
                     const char *fmt, ...) PK_PRINTF(4, 5);

/*
 * The spec of an in-cluster pool of `version` ("v1alpha1" or "v1alpha2") as
 * a poolkeeper pool's spec, in *out (a new reference; NULL when the spec is
 * not an object). Every change and every reason it could not be converted is
 * logged; errors are counted in lg->errors. PK_OK or PK_ERR_NOMEM.
 */
PK_MUST_CHECK int pk_convert_pool_spec(const json_t *spec, const char *version, json_t **out,
                                       struct pk_convert_log *lg);

#endif
