/*
 * live.h - a live cluster's IPAM objects, listed once for `poolkeeper audit`
 * and `poolkeeper usage`: poolkeeper's pools (of every kind in pool_ref.h's
 * table: IPPools, GlobalIPPools, ...), and the IPAddresses and
 * IPAddressClaims of ipam.cluster.x-k8s.io in the version the server serves
 * (v1beta2 before v1beta1). Every listed item has its apiVersion and kind
 * set, as a manifest would.
 *
 * The commands judge these arrays with pure functions (audit.h, usage.h),
 * so unit tests build a struct pk_live from JSON fixtures.
 */
#ifndef PK_LIVE_H
#define PK_LIVE_H

#include <jansson.h>

#include "flags.h"
#include "pool_lookup.h"
#include "pk.h"
#include "strmap.h"

struct pk_live {
	json_t *pools;     /* poolkeeper's pools, kind by kind in pool_ref.h's table order */
	json_t *addresses; /* IPAddresses */
	json_t *claims;    /* IPAddressClaims */
	/* "<ns>/<name>" -> the object (borrowed from the arrays); pk_live_index fills them. */
	struct pk_strmap *claim_index, *address_index;
};

/* Empty arrays; PK_ERR_NOMEM (and nothing held) when memory runs out. */
PK_MUST_CHECK int pk_live_init(struct pk_live *l);
void pk_live_release(struct pk_live *l);

/*
 * Connects through `kubeconfig` (NULL: $KUBECONFIG, else the pod's service
 * account) and lists everything; `ns` (NULL: all) limits the
 * namespaced kinds, cluster-scoped pool kinds (GlobalIPPool) are always
 * listed. A pool kind whose resource the server does not serve (404, its
 * CRD not installed) has no pools, unless the server serves none of them.
 * What fails is printed on stderr as "poolkeeper <cmd>: ...". Returns
 * PK_OK, or an error after printing it (l is then released).
 */
PK_MUST_CHECK int pk_live_load(const char *cmd, const char *kubeconfig, const char *ns,
                               struct pk_live *l);

/* The object's namespace ("" when it has none) and name ("" likewise); borrowed. */
const char *pk_live_namespace(const json_t *obj);
const char *pk_live_name(const json_t *obj);

/* Indexes the claims and IPAddresses by namespace and name, after the last
 * object was added. PK_OK or PK_ERR_NOMEM. */
PK_MUST_CHECK int pk_live_index(struct pk_live *l);

/* The IPAddressClaim, or IPAddress, `name` of namespace `ns`, or NULL (borrowed). */
const json_t *pk_live_claim(const struct pk_live *l, const char *ns, const char *name);
const json_t *pk_live_address(const struct pk_live *l, const char *ns, const char *name);

/*
 * Whether an IPAddress's spec.poolRef names `pool`: the same apiGroup, kind
 * and name, and for a namespaced kind (IPPool) the same namespace.
 */
bool pk_live_address_in_pool(const json_t *addr, const json_t *pool);

/*
 * The rules' lookup (pool_lookup.h) over the listed pools, for the checks
 * of one IPAddress against its pool: get_pool only (the list functions are
 * NULL). Not partial: every pool was listed. Valid while l is.
 */
void pk_live_lookup(const struct pk_live *l, struct pk_pool_lookup *lk);

/* "<Kind>/<ns>/<name>", or "<Kind>/<name>" without a namespace, into buf; returns buf. */
char *pk_live_describe(const json_t *obj, char *buf, size_t len);

/* ---- the frame of `poolkeeper audit` and `poolkeeper usage` ---- */

/* The flags each command's table begins with, at these indexes. */
enum pk_live_flag {
	PK_LIVE_F_KUBECONFIG, /* PK_FLAG_DEF_KUBECONFIG */
	PK_LIVE_F_NS,         /* --namespace, -n */
	PK_LIVE_F_OUTPUT,     /* --output, -o: a CHOICE whose words the command names */
	PK_LIVE_F_HELP,       /* --help, -h */
	PK_LIVE_F_COMMON,
};

struct pk_live_command {
	const char *name; /* "audit" */
	const struct pk_flag *flags;
	size_t nflags;
	const char *usage, *summary;
	/* Judges and prints what was listed in --output's form ("text", "json", ...);
	 * returns the exit status. */
	int (*run)(const struct pk_live *l, const struct pk_flag_value *vals, const char *output);
};

/*
 * Parses argv (after the command's name), prints the help, refuses
 * arguments and a --namespace that is not a DNS label, lists the cluster
 * and calls cmd->run. Returns its status, 0 after --help, or 2 for a usage
 * error or a cluster that could not be read.
 */
int pk_live_main(const struct pk_live_command *cmd, int argc, char *argv[]);

/* Writes j (taken) indented with a final newline; PK_OK, or PK_ERR_NOMEM after
 * saying "poolkeeper <cmd>: out of memory" (j may be NULL: out of memory). */
PK_MUST_CHECK int pk_live_write_json(const char *cmd, json_t *j);

#endif
