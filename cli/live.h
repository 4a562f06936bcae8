/*
 * live.h - a live cluster's IPAM objects, listed once for `poolkeeper audit`
 * and `poolkeeper usage`: poolkeeper's pools (IPPools and GlobalIPPools),
 * and the IPAddresses and IPAddressClaims of ipam.cluster.x-k8s.io in the
 * version the server serves (v1beta2 before v1beta1). Every listed item has
 * its apiVersion and kind set, as a manifest would.
 *
 * The commands judge these arrays with pure functions (audit.h, usage.h),
 * so unit tests build a struct pk_live from JSON fixtures.
 */
#ifndef PK_LIVE_H
#define PK_LIVE_H

#include <jansson.h>

#include "pk.h"
#include "strmap.h"

struct pk_live {
	json_t *pools;     /* IPPools, then GlobalIPPools */
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
 * namespaced kinds, GlobalIPPools are always listed. What fails is printed
 * on stderr as "poolkeeper <cmd>: ...". Returns PK_OK, or an error after
 * printing it (l is then released).
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
 * and name, and for an IPPool the same namespace.
 */
bool pk_live_address_in_pool(const json_t *addr, const json_t *pool);

/* "<Kind>/<ns>/<name>", or "<Kind>/<name>" without a namespace, into buf; returns buf. */
char *pk_live_describe(const json_t *obj, char *buf, size_t len);

#endif
