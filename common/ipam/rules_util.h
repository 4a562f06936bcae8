/*
 * rules_util.h - what the contract rule files (pool_rules.c, claim_rules.c,
 * address_rules.c, pool_lookup.c) share: quoting JSON strings for messages,
 * typed reads that report what is wrong, the checks every CAPI IPAM object
 * starts with, owner references, and where an address stands in a pool.
 * Internal to common/ipam: callers use rules.h and lookup.h.
 */
#ifndef PK_RULES_UTIL_H
#define PK_RULES_UTIL_H

#include <jansson.h>

#include "pool.h"
#include "violation.h"

#define DESC_MAX  200
#define QUOTE_MAX 300

/* Kubernetes object names are DNS subdomains: at most 253 characters. */
#define NAME_MAX_LEN 253

/* Room for every pool kind's name (63 characters each) or API version in one message. */
#define POOL_KINDS_TEXT_MAX 1200

struct pk_pool_kind;

/* The JSON string s quoted for a message (pk_text_quote); returns buf. */
const char *rules_util_quote(const json_t *s, char *buf, size_t len);

/* True when `s` is a JSON string equal to the C string `want`. */
bool rules_util_json_is(const json_t *s, const char *want);

/* True when the JSON strings a and b are equal (embedded NULs included). */
bool rules_util_json_equal(const json_t *a, const json_t *b);

/*
 * A required, non-empty string member; DENY and NULL when it is missing,
 * of another type, empty, longer than `max` or holding a NUL.
 */
const json_t *rules_util_require_string(const json_t *obj, const char *key, const char *field,
                                        size_t max, const char *hint, struct pk_violations *out);

/*
 * What a claim and an IPAddress check first (rules_util.c); returns the spec
 * to check further or NULL, and *version 1 (v1beta1), 2 (v1beta2) or 0.
 */
/*
 * DENY for each of metadata.name, .namespace and .generateName that holds a
 * NUL: the rules read such a string as invalid, and a review holding one is
 * read whole (JSON_ALLOW_NUL), so the name is refused here by name.
 */
void rules_util_check_meta_names(const json_t *obj, struct pk_violations *out);

const json_t *rules_util_capi_object_spec(const json_t *obj, const json_t *old, const char *kind,
                                          const char *spec_hint, int *version,
                                          struct pk_violations *out);

/* spec.poolRef of a claim or an IPAddress; *kind and *name are set when they pass. */
void rules_util_check_pool_ref(const json_t *spec, int version, const json_t **kind,
                               const json_t **name, struct pk_violations *out);

/* metadata.ownerReferences as an array, or NULL after a DENY (`needed` says why). */
const json_t *rules_util_owner_refs(const json_t *obj, const char *needed,
                                    struct pk_violations *out);

/* controller / blockOwnerDeletion of reference i: 1 true, 0 false or absent, -1 wrong type. */
int rules_util_ref_flag(const json_t *ref, size_t i, const char *key, struct pk_violations *out);

/* `Kind "name"` of an owner reference, for messages. */
const char *rules_util_ref_text(const json_t *ref, char *buf, size_t len);

/* poolkeeper's pool kind (pk_pool_kinds) whose name the JSON string `kind` is, or NULL. */
const struct pk_pool_kind *rules_util_pool_kind(const json_t *kind);

/* poolkeeper's pool kinds for a message, "IPPool or GlobalIPPool" (the table's order, ", "
 * between all but the last two); returns buf. */
const char *rules_util_pool_kinds_text(char *buf, size_t len);

/* Where an address stands in a pool whose spec decoded (pool_rules.c). */
enum pool_rules_holding {
	HOLD_USABLE,  /* the pool hands it out */
	HOLD_DRAINED, /* in spec.addresses, excluded since: its IPAddress keeps it */
	HOLD_OUT,     /* the pool cannot hold it */
};

/*
 * For HOLD_OUT, *why is "the gateway" or a reserved subnet role, or NULL
 * (outside spec.addresses, or of the other family).
 */
enum pool_rules_holding pool_rules_holding(const struct pk_pool *pool, const struct pk_addr *a,
                                           const char **why);

#endif
