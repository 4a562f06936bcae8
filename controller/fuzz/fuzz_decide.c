/*
 * fuzz_decide.c - libFuzzer target for the controller's path from API
 * objects to the reconcile decision and the writes it makes:
 *
 *   {"claim": ..., "pool": ..., "cluster": ..., "address": ..., "others": [...]}
 *
 * (any member may be missing or of any type). Each object goes through
 * what the informers keep (trim.h, then jpack.h and back), the facts and
 * the adoption check (decide.h, with the pool decoded as the controller
 * does and "others" as the pool's other IPAddresses), the decision, and
 * the object or patch objects.c builds for it. Checked on every input:
 *   - nothing crashes, leaks or trips a sanitizer;
 *   - the packed copy is the trimmed object, and the decision from the
 *     trimmed objects is the decision from the whole ones (trim.h's
 *     promise);
 *   - an IPAddress another one of the pool holds, or one inconsistent with
 *     its claim or pool, is never adopted;
 *   - an address allocated is free in the pool and one it hands out;
 *   - a claim annotated cluster.x-k8s.io/paused (any value) gets no
 *     finalizer, no address, no adoption, and loses nothing: no IPAddress
 *     unprotected or deleted, no release (only clusterctl move's finalizer
 *     removal, which releases nothing).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "allocator.h"
#include "decide.h"
#include "incluster.h"
#include "jpack.h"
#include "json.h"
#include "objects.h"
#include "pool.h"
#include "pool_ref.h"
#include "rules.h"
#include "trim.h"

/* Same order of cap as a page of a few objects. */
#define FUZZ_INPUT_MAX (128 * 1024)
#define OTHERS_MAX     64
#define NOW            1790000000LL

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What the informer keeps: trimmed, packed, unpacked. NULL in, NULL out. */
static json_t *kept(const json_t *obj, json_t *(*trim)(const json_t *))
{
	if (obj == NULL)
		return NULL;
	json_t *t = trim(obj);
	if (t == NULL) {
		if (json_is_object(obj))
			abort(); /* trim.h: NULL only for a non-object (or no memory) */
		return NULL;
	}
	unsigned char *buf = NULL;
	size_t len = 0;
	json_t *back = NULL;
	if (pk_jpack_encode(t, &buf, &len) == PK_OK) {
		back = pk_jpack_decode(buf, len);
		if (back == NULL || !json_equal(back, t))
			abort(); /* what is packed comes back unchanged */
		free(buf);
	}
	json_decref(t);
	return back;
}

static bool no_nul(const json_t *s)
{
	return json_is_string(s) && strlen(json_string_value(s)) == json_string_length(s);
}

/* The in-process backend's kind that the claim's poolRef names (incluster.h). */
static const struct pk_pool_kind *kind_of(const json_t *claim)
{
	return pk_incluster_kind(pk_json_path(claim, "spec", "poolRef"));
}

struct world {
	const json_t *claim, *pool, *cluster, *address;
	const char *others[OTHERS_MAX];
	size_t n_others;
};

struct outcome {
	struct pk_claim_facts f;
	struct pk_claim_decision d;
	bool pool_valid;
};

/* The controller's steps for one claim, short of the API writes. */
static void decide(const struct world *w, struct pk_pool *p, struct outcome *o)
{
	memset(o, 0, sizeof(*o));
	struct pk_violations v;
	pk_violations_init(&v);
	memset(p, 0, sizeof(*p));
	o->pool_valid = w->pool != NULL &&
	                pk_pool_decode(json_object_get(w->pool, "spec"), p, &v) == PK_OK &&
	                p->usable != NULL;
	pk_claim_facts_from(w->claim, kind_of(w->claim), w->pool,
	                    pk_claim_cluster_name(w->claim) != NULL, w->cluster, w->address, &o->f);
	if (o->f.pool == PK_POOL_ACTIVE && !o->pool_valid)
		o->f.pool = PK_POOL_INVALID;
	/* taken: the record of held addresses shows the address on another IPAddress */
	struct pk_violations t;
	pk_violations_init(&t);
	pk_rules_check_ipaddress_unique(w->address, w->others, w->n_others, &t);
	bool active = o->f.pool == PK_POOL_ACTIVE;
	pk_claim_facts_check_address(&o->f, w->claim, w->address, active ? p : NULL,
	                             active && t.n > 0);
	pk_decide_claim(&o->f, &o->d);
	if (strnlen(o->d.message, sizeof(o->d.message)) == sizeof(o->d.message))
		abort();
	/* A paused claim is held: read from the object itself, as CAPI's HasPaused does. */
	const json_t *ann = json_object_get(json_object_get(w->claim, "metadata"), "annotations");
	if (json_is_object(ann) && json_object_get(ann, PK_PAUSED_ANNOTATION) != NULL &&
	    o->f.ours) {
		switch (o->d.action) {
		case PK_ACT_NONE:
		case PK_ACT_WAIT:
		case PK_ACT_NOT_READY:
			break;
		case PK_ACT_RELEASE:
			if (!o->f.delete_for_move)
				abort();
			break;
		case PK_ACT_ADD_FINALIZER:
		case PK_ACT_ALLOCATE:
		case PK_ACT_SET_READY:
		case PK_ACT_UNPROTECT_ADDRESS:
		case PK_ACT_DELETE_ADDRESS:
			abort();
		}
	}
	if (o->d.action == PK_ACT_SET_READY) {
		/* invariant 1, and never an inconsistent IPAddress */
		if (o->f.address_check != PK_ADDRESS_CONSISTENT || t.n > 0)
			abort();
		struct pk_violations c;
		pk_violations_init(&c);
		pk_rules_check_ipaddress_claim(w->address, w->claim, &c);
		pk_rules_check_ipaddress_in_pool(w->address, p, "fuzz", true, &c);
		if (pk_violations_count(&c, PK_SEV_DENY) != 0)
			abort();
	}
}

static void dump_free(json_t *j)
{
	if (j != NULL) {
		char *s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
		if (s == NULL)
			abort(); /* everything built must be sendable */
		free(s);
		json_decref(j);
	}
}

/* Allocates as allocate() does and builds the IPAddress; checks the address chosen. */
static void allocate(const struct world *w, const struct pk_pool *p)
{
	struct pk_allocator *a = pk_allocator_new(p->usable);
	if (a == NULL)
		return;
	for (size_t i = 0; i < w->n_others; i++) {
		struct pk_addr o;
		if (pk_address_parse(w->others[i], &o, NULL, NULL) == PK_OK &&
		    o.family == p->family)
			(void)pk_allocator_adopt(a, o.v);
	}
	pk_u128 v;
	if (pk_allocator_next(a, NOW, &v) == PK_OK) {
		char text[PK_ADDR_STRLEN], gw[PK_ADDR_STRLEN];
		pk_address_format_v(v, p->family, text);
		if (p->has_gateway)
			pk_address_format_v(p->gateway, p->family, gw);
		const json_t *ref = json_object_get(json_object_get(w->claim, "spec"), "poolRef");
		struct pk_ipaddress_spec s = {
		    .api_version = "ipam.cluster.x-k8s.io/v1beta2",
		    .address = text,
		    .prefix = p->has_prefix ? p->prefix : pk_address_bits(p->family),
		    .gateway = p->has_gateway ? gw : NULL,
		    .pool_kind = kind_of(w->claim),
		    .pool_name = json_string_value(json_object_get(ref, "name")),
		    .pool_uid = "pool-uid"};
		json_t *made = s.pool_kind != NULL && s.pool_name != NULL
		                   ? pk_objects_ipaddress(w->claim, &s)
		                   : NULL;
		if (made != NULL) {
			/* what the controller creates, the webhook admits: free and usable */
			struct pk_violations c;
			pk_violations_init(&c);
			pk_rules_check_ipaddress_in_pool(made, p, "fuzz", false, &c);
			pk_rules_check_ipaddress_unique(made, w->others, w->n_others, &c);
			const json_t *cname =
			    json_object_get(json_object_get(w->claim, "metadata"), "name");
			if (no_nul(cname) && no_nul(json_object_get(ref, "name")) &&
			    no_nul(json_object_get(ref, "kind")))
				pk_rules_check_ipaddress_claim(made, w->claim, &c);
			if (pk_violations_count(&c, PK_SEV_DENY) != 0)
				abort();
		}
		dump_free(made);
	}
	struct pk_alloc_counts n;
	pk_allocator_counts(a, &n);
	struct pk_condition cond = {
	    .type = "Ready", .status = true, .reason = "Ready", .message = "fuzz", .generation = 1};
	dump_free(pk_objects_pool_status_patch(w->pool, &n, &cond, NULL, NOW));
	pk_allocator_free(a);
}

static void noop_quarantine(void *ud, const char *address, long long until)
{
	(void)ud;
	(void)address;
	(void)until;
}

/* The write the step makes, built from the objects as the informers keep them. */
static void build(const struct world *w, const struct outcome *o, const struct pk_pool *p,
                  bool v1beta1)
{
	const json_t *g = json_object_get(json_object_get(w->claim, "metadata"), "generation");
	struct pk_condition cond = {.type = "Ready",
	                            .status = o->d.action == PK_ACT_SET_READY,
	                            .reason = o->d.reason,
	                            .message = o->d.message,
	                            .generation = json_is_integer(g) ? json_integer_value(g) : -1,
	                            .v1beta1 = v1beta1};
	switch (o->d.action) {
	case PK_ACT_NONE:
	case PK_ACT_WAIT:
		break;
	case PK_ACT_ADD_FINALIZER:
		dump_free(pk_objects_finalizer_add_patch(w->claim, PK_CLAIM_FINALIZER));
		break;
	case PK_ACT_NOT_READY:
	case PK_ACT_SET_READY: {
		const char *name = json_string_value(
		    json_object_get(json_object_get(w->address, "metadata"), "name"));
		(void)pk_objects_condition_same(
		    json_object_get(json_object_get(w->claim, "status"), "conditions"), &cond);
		dump_free(pk_objects_claim_status_patch(
		    w->claim, o->d.action == PK_ACT_SET_READY ? name : NULL, &cond, NOW));
		break;
	}
	case PK_ACT_ALLOCATE:
		if (o->pool_valid)
			allocate(w, p);
		break;
	case PK_ACT_UNPROTECT_ADDRESS:
		dump_free(pk_objects_finalizer_remove_patch(w->address, PK_ADDRESS_FINALIZER));
		break;
	case PK_ACT_DELETE_ADDRESS:
		break;
	case PK_ACT_RELEASE:
		dump_free(pk_objects_finalizer_remove_patch(w->claim, PK_CLAIM_FINALIZER));
		break;
	}
	pk_objects_pool_quarantine(w->pool, NOW, noop_quarantine, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > FUZZ_INPUT_MAX)
		return 0;
	/* JSON_ALLOW_NUL: the API server accepts strings with \u0000. */
	json_t *in = json_loadb((const char *)data, size, JSON_ALLOW_NUL, NULL);
	if (in == NULL)
		return 0;
	struct world whole = {.claim = json_object_get(in, "claim"),
	                      .pool = json_object_get(in, "pool"),
	                      .cluster = json_object_get(in, "cluster"),
	                      .address = json_object_get(in, "address")};
	/* As both caches keep it: a claim on another provider's pool is its identity only. */
	json_t *claim = kept(
	    whole.claim, (pk_pool_kind_of_ref(pk_json_path(whole.claim, "spec", "poolRef")) != NULL)
	                     ? pk_trim_claim
	                     : pk_trim_foreign_claim);
	json_t *pool = kept(whole.pool, pk_trim_pool);
	json_t *cluster = kept(whole.cluster, pk_trim_cluster);
	json_t *address = kept(whole.address, pk_trim_address);
	struct world cached = {
	    .claim = claim, .pool = pool, .cluster = cluster, .address = address};
	size_t i;
	json_t *o;
	json_array_foreach(json_object_get(in, "others"), i, o)
	{
		if (whole.n_others == OTHERS_MAX)
			break;
		json_t *k = kept(o, pk_trim_address);
		const char *t =
		    json_string_value(json_object_get(json_object_get(o, "spec"), "address"));
		const char *kt =
		    json_string_value(json_object_get(json_object_get(k, "spec"), "address"));
		/* borrowed from `in`: the kept copy must say the same */
		if ((t == NULL) != (kt == NULL) || (t != NULL && strcmp(t, kt) != 0))
			abort();
		json_decref(k);
		if (t != NULL) {
			whole.others[whole.n_others] = t;
			cached.others[whole.n_others] = t;
			whole.n_others++;
			cached.n_others++;
		}
	}

	struct pk_pool pw, pc;
	struct outcome ow, oc;
	decide(&whole, &pw, &ow);
	decide(&cached, &pc, &oc);
	if (ow.d.action != oc.d.action || strcmp(ow.d.reason, oc.d.reason) != 0 ||
	    strcmp(ow.d.message, oc.d.message) != 0)
		abort(); /* trim.h: the trimmed objects answer the same */
	build(&cached, &oc, &pc, false);
	build(&cached, &oc, &pc, true);
	pk_pool_release(&pw);
	pk_pool_release(&pc);
	json_decref(claim);
	json_decref(pool);
	json_decref(cluster);
	json_decref(address);
	json_decref(in);
	return 0;
}
