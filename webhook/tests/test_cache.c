/*
 * test_cache.c - the webhook's informer-fed cache: events change what the
 * lookups answer, a pool's IPAddresses come from its own index (not those
 * of other pools, namespaces or providers), claims and pools by key,
 * readiness only once every kind has listed, the admission decisions on
 * top of it, and reads while an informer thread writes. Its pool kinds and
 * their scopes are pool_ref.h's table, and a kind the table does not have
 * is an error, never another kind's pools.
 *
 * The informer is played by the test: it calls the transform and the
 * handlers pk_cache_feed installs, in the order kube_informer.h promises,
 * and releases an item only after the handler that drops it returned.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tenant.h"

#include "admission.h"
#include "api.h"
#include "cache.h"
#include "json.h"
#include "log.h"
#include "rules.h"
#include "strmap.h"

struct informer {
	struct pk_kube_informer_opts io;
	struct pk_strmap *store; /* key -> item, as the informer keeps it */
	bool cluster_scoped;
};

struct fixture {
	struct pk_cache *c;
	struct informer inf[PK_CACHE_KINDS_MAX];
};

/* The cache slot of one of poolkeeper's pool kinds. */
static enum pk_cache_kind slot_of(const char *kind)
{
	enum pk_cache_kind k;
	struct pk_err err;
	assert_int_equal(pk_cache_pool_slot(kind, &k, &err), PK_OK);
	return k;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	f->c = pk_cache_new();
	assert_non_null(f->c);
	for (size_t k = 0; k < pk_cache_kinds(); k++) {
		const struct pk_pool_kind *pk = pk_cache_slot_pool_kind((enum pk_cache_kind)k);
		pk_cache_feed(f->c, (enum pk_cache_kind)k, &f->inf[k].io);
		f->inf[k].store = pk_strmap_new();
		assert_non_null(f->inf[k].store);
		f->inf[k].cluster_scoped = pk != NULL && !pk->namespaced;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	/* as pk_lookup_close: the informers' items, then the cache */
	for (size_t k = 0; k < pk_cache_kinds(); k++)
		pk_strmap_free(f->inf[k].store, free);
	pk_cache_free(f->c);
	free(f);
	return 0;
}

static void key_of(const struct informer *in, const char *ns, const char *name, char *buf,
                   size_t len)
{
	if (in->cluster_scoped)
		snprintf(buf, len, "%s", name);
	else
		snprintf(buf, len, "%s/%s", ns != NULL ? ns : "", name);
}

/* ADDED or MODIFIED: obj is released here. */
static void ev_put(struct fixture *f, enum pk_cache_kind k, json_t *obj)
{
	struct informer *in = &f->inf[k];
	const json_t *md = json_object_get(obj, "metadata");
	char key[512];
	key_of(in, json_string_value(json_object_get(md, "namespace")),
	       json_string_value(json_object_get(md, "name")), key, sizeof(key));
	void *item = in->io.transform(in->io.transform_ud, obj);
	json_decref(obj);
	if (item == NULL) {
		/* skipped: an item stored under the key is removed, as a delete */
		void *gone = pk_strmap_remove(in->store, key);
		if (gone != NULL) {
			in->io.handlers.on_delete(in->io.handlers.ud, key, gone);
			free(gone);
		}
		return;
	}
	void *old = NULL;
	assert_int_equal(pk_strmap_put(in->store, key, item, &old), PK_OK);
	if (old != NULL) {
		in->io.handlers.on_update(in->io.handlers.ud, key, old, item);
		free(old);
	} else {
		in->io.handlers.on_add(in->io.handlers.ud, key, item);
	}
}

static void ev_delete(struct fixture *f, enum pk_cache_kind k, const char *ns, const char *name)
{
	struct informer *in = &f->inf[k];
	char key[512];
	key_of(in, ns, name, key, sizeof(key));
	void *item = pk_strmap_remove(in->store, key);
	assert_non_null(item);
	in->io.handlers.on_delete(in->io.handlers.ud, key, item);
	free(item);
}

static json_t *address(const char *ns, const char *name, const char *text, const char *kind,
                       const char *pool)
{
	json_t *o = json_pack(
	    "{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:{s:s}}, s:{s:s, s:i, s:{s:s}, s:{s:s, s:s, s:s}}}",
	    "apiVersion", PK_CAPI_IPAM_GROUP "/" PK_CAPI_V1BETA2, "kind", PK_ADDRESS_KIND,
	    "metadata", "name", name, "namespace", ns, "uid",
	    "0f8fad5b-d9cb-469f-a165-70867728950e", "resourceVersion", "7", "annotations",
	    "kubectl.kubernetes.io/last-applied-configuration", "{...}", "spec", "address", text,
	    "prefix", 24, "claimRef", "name", name, "poolRef", "apiGroup", PK_POOL_GROUP, "kind",
	    kind, "name", pool);
	assert_non_null(o);
	return o;
}

/* An address of another provider's pool of kind IPPool and the same name. */
static json_t *foreign_address(const char *ns, const char *name, const char *text, const char *pool)
{
	json_t *o = address(ns, name, text, PK_POOL_KIND, pool);
	json_object_set_new(json_object_get(json_object_get(o, "spec"), "poolRef"), "apiGroup",
	                    json_string(PK_CAPI_IPAM_GROUP));
	return o;
}

static json_t *pool(const char *kind, const char *ns, const char *name, const char *cidr)
{
	json_t *o = json_pack("{s:s, s:s, s:{s:s}, s:{s:[s], s:i}}", "apiVersion",
	                      PK_POOL_API_VERSION, "kind", kind, "metadata", "name", name, "spec",
	                      "addresses", cidr, "prefix", 16);
	assert_non_null(o);
	if (ns != NULL)
		json_object_set_new(json_object_get(o, "metadata"), "namespace", json_string(ns));
	return o;
}

static json_t *claim(const char *ns, const char *name, const char *pool_name)
{
	json_t *o = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:{s:s, s:{s:s, s:s, s:s}},"
	                      " s:{s:{s:s}, s:[{s:s, s:s, s:s}]}}",
	                      "apiVersion", PK_CAPI_IPAM_GROUP "/" PK_CAPI_V1BETA2, "kind",
	                      PK_CLAIM_KIND, "metadata", "name", name, "namespace", ns, "uid",
	                      "5b1c7c48-9a5e-4f5b-8d6f-0c2f3a1b4d5e", "spec", "clusterName", "prod",
	                      "poolRef", "apiGroup", PK_POOL_GROUP, "kind", PK_POOL_KIND, "name",
	                      pool_name, "status", "addressRef", "name", name, "conditions", "type",
	                      "Ready", "status", "True", "reason", "Allocated");
	assert_non_null(o);
	return o;
}

/* The spec.address of every item, sorted and joined with spaces. */
static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void addresses_text(json_t *items, char *buf, size_t len)
{
	size_t n = json_array_size(items);
	const char **v = calloc(n + 1, sizeof(*v));
	assert_non_null(v);
	for (size_t i = 0; i < n; i++) {
		v[i] = json_string_value(
		    json_object_get(json_object_get(json_array_get(items, i), "spec"), "address"));
		assert_non_null(v[i]);
	}
	qsort(v, n, sizeof(*v), cmp_str);
	buf[0] = '\0';
	size_t at = 0;
	for (size_t i = 0; i < n; i++)
		at += (size_t)snprintf(buf + at, len - at, "%s%s", i ? " " : "", v[i]);
	free(v);
}

/* list_pool_addresses, as text */
static void pool_addresses(struct fixture *f, const char *kind, const char *ns, const char *name,
                           char *buf, size_t len)
{
	json_t *items = NULL;
	struct pk_err err;
	assert_int_equal(pk_cache_list_pool_addresses(f->c, kind, ns, name, &items, &err), PK_OK);
	addresses_text(items, buf, len);
	json_decref(items);
}

static void test_address_events(void **state)
{
	struct fixture *f = *state;
	char got[256];
	pool_addresses(f, PK_GLOBAL_POOL_KIND, NULL, "shared", got, sizeof(got));
	assert_string_equal(got, "");

	ev_put(f, PK_CACHE_ADDRESSES,
	       address("a", "m-1", "10.0.0.1", PK_GLOBAL_POOL_KIND, "shared"));
	ev_put(f, PK_CACHE_ADDRESSES,
	       address("b", "m-2", "10.0.0.2", PK_GLOBAL_POOL_KIND, "shared"));
	pool_addresses(f, PK_GLOBAL_POOL_KIND, NULL, "shared", got, sizeof(got));
	assert_string_equal(got, "10.0.0.1 10.0.0.2");
	assert_int_equal(pk_cache_count(f->c, PK_CACHE_ADDRESSES), 2);

	/* MODIFIED: the new address replaces the old one */
	ev_put(f, PK_CACHE_ADDRESSES,
	       address("a", "m-1", "10.0.0.9", PK_GLOBAL_POOL_KIND, "shared"));
	pool_addresses(f, PK_GLOBAL_POOL_KIND, NULL, "shared", got, sizeof(got));
	assert_string_equal(got, "10.0.0.2 10.0.0.9");

	/* MODIFIED to another pool: it leaves the first pool's index */
	ev_put(f, PK_CACHE_ADDRESSES,
	       address("a", "m-1", "10.0.0.9", PK_GLOBAL_POOL_KIND, "other"));
	pool_addresses(f, PK_GLOBAL_POOL_KIND, NULL, "shared", got, sizeof(got));
	assert_string_equal(got, "10.0.0.2");
	pool_addresses(f, PK_GLOBAL_POOL_KIND, NULL, "other", got, sizeof(got));
	assert_string_equal(got, "10.0.0.9");

	/* MODIFIED to another provider's pool: it leaves the cache */
	ev_put(f, PK_CACHE_ADDRESSES, foreign_address("b", "m-2", "10.0.0.2", "shared"));
	assert_int_equal(pk_cache_count(f->c, PK_CACHE_ADDRESSES), 1);
	pool_addresses(f, PK_GLOBAL_POOL_KIND, NULL, "shared", got, sizeof(got));
	assert_string_equal(got, "");
	ev_put(f, PK_CACHE_ADDRESSES,
	       address("b", "m-2", "10.0.0.2", PK_GLOBAL_POOL_KIND, "shared"));
	assert_int_equal(pk_cache_count(f->c, PK_CACHE_ADDRESSES), 2);

	/* DELETED */
	ev_delete(f, PK_CACHE_ADDRESSES, "b", "m-2");
	pool_addresses(f, PK_GLOBAL_POOL_KIND, NULL, "shared", got, sizeof(got));
	assert_string_equal(got, "");
	assert_int_equal(pk_cache_count(f->c, PK_CACHE_ADDRESSES), 1);

	/* What is handed out is a copy: changing it changes nothing held. */
	json_t *items = NULL;
	struct pk_err err;
	assert_int_equal(
	    pk_cache_list_pool_addresses(f->c, PK_GLOBAL_POOL_KIND, NULL, "other", &items, &err),
	    PK_OK);
	json_t *a = json_array_get(items, 0);
	assert_string_equal(json_string_value(json_object_get(
	                        json_object_get(json_object_get(a, "spec"), "claimRef"), "name")),
	                    "m-1");
	/* trimmed as the controller keeps it: no annotations */
	assert_null(json_object_get(json_object_get(a, "metadata"), "annotations"));
	json_object_set_new(json_object_get(a, "spec"), "address", json_string("10.9.9.9"));
	json_decref(items);
	pool_addresses(f, PK_GLOBAL_POOL_KIND, NULL, "other", got, sizeof(got));
	assert_string_equal(got, "10.0.0.9");
}

static void test_addresses_by_pool(void **state)
{
	struct fixture *f = *state;
	char got[256], name[32], text[32];
	/* 2,000 addresses of 200 GlobalIPPools; the lookups see only the pool asked for */
	for (int i = 0; i < 2000; i++) {
		char pname[32];
		snprintf(name, sizeof(name), "m-%d", i);
		snprintf(text, sizeof(text), "10.%d.0.%d", i % 200, i / 200);
		snprintf(pname, sizeof(pname), "g-%d", i % 200);
		ev_put(f, PK_CACHE_ADDRESSES,
		       address(i % 2 ? "a" : "b", name, text, PK_GLOBAL_POOL_KIND, pname));
	}
	pool_addresses(f, PK_GLOBAL_POOL_KIND, NULL, "g-7", got, sizeof(got));
	assert_string_equal(got, "10.7.0.0 10.7.0.1 10.7.0.2 10.7.0.3 10.7.0.4 10.7.0.5 "
	                         "10.7.0.6 10.7.0.7 10.7.0.8 10.7.0.9");
	/* an IPPool of the same name is another pool */
	pool_addresses(f, PK_POOL_KIND, "a", "g-7", got, sizeof(got));
	assert_string_equal(got, "");

	/* IPPool references are to the IPPool of the address's own namespace */
	ev_put(f, PK_CACHE_ADDRESSES, address("a", "n-1", "10.250.0.1", PK_POOL_KIND, "nodes"));
	ev_put(f, PK_CACHE_ADDRESSES, address("b", "n-2", "10.250.0.2", PK_POOL_KIND, "nodes"));
	pool_addresses(f, PK_POOL_KIND, "a", "nodes", got, sizeof(got));
	assert_string_equal(got, "10.250.0.1");
	pool_addresses(f, PK_POOL_KIND, "b", "nodes", got, sizeof(got));
	assert_string_equal(got, "10.250.0.2");
	pool_addresses(f, PK_POOL_KIND, "c", "nodes", got, sizeof(got));
	assert_string_equal(got, "");
	/* every namespace's IPPool "nodes" */
	pool_addresses(f, PK_POOL_KIND, NULL, "nodes", got, sizeof(got));
	assert_string_equal(got, "10.250.0.1 10.250.0.2");

	/* another provider's address is in no pool of ours, even with the same names: not kept */
	ev_put(f, PK_CACHE_ADDRESSES, foreign_address("a", "x-1", "10.250.0.3", "nodes"));
	/* a name with a NUL names another pool than its C string */
	json_t *nul = address("a", "x-2", "10.250.0.4", PK_POOL_KIND, "nodes");
	json_object_set_new(json_object_get(json_object_get(nul, "spec"), "poolRef"), "name",
	                    json_stringn("nodes\0evil", 10));
	ev_put(f, PK_CACHE_ADDRESSES, nul);
	pool_addresses(f, PK_POOL_KIND, "a", "nodes", got, sizeof(got));
	assert_string_equal(got, "10.250.0.1");
	assert_int_equal(pk_cache_count(f->c, PK_CACHE_ADDRESSES), 2002);

	/* deleting every address of a pool empties its index; the others keep theirs */
	for (int i = 7; i < 2000; i += 200) {
		snprintf(name, sizeof(name), "m-%d", i);
		ev_delete(f, PK_CACHE_ADDRESSES, i % 2 ? "a" : "b", name);
	}
	pool_addresses(f, PK_GLOBAL_POOL_KIND, NULL, "g-7", got, sizeof(got));
	assert_string_equal(got, "");
	pool_addresses(f, PK_GLOBAL_POOL_KIND, NULL, "g-8", got, sizeof(got));
	assert_int_equal(strlen(got), strlen("10.8.0.0") * 10 + 9);
}

static void test_pools_and_claims(void **state)
{
	struct fixture *f = *state;
	struct pk_err err;
	json_t *o = NULL, *items = NULL;
	assert_int_equal(pk_cache_get_pool(f->c, PK_POOL_KIND, "a", "nodes", &o, &err), PK_OK);
	assert_null(o);

	ev_put(f, slot_of(PK_POOL_KIND), pool(PK_POOL_KIND, "a", "nodes", "10.1.0.0/16"));
	ev_put(f, slot_of(PK_POOL_KIND), pool(PK_POOL_KIND, "ab", "nodes", "10.2.0.0/16"));
	ev_put(f, slot_of(PK_GLOBAL_POOL_KIND),
	       pool(PK_GLOBAL_POOL_KIND, NULL, "nodes", "10.3.0.0/16"));

	assert_int_equal(pk_cache_get_pool(f->c, PK_POOL_KIND, "a", "nodes", &o, &err), PK_OK);
	assert_non_null(o);
	assert_string_equal(json_string_value(json_array_get(
	                        json_object_get(json_object_get(o, "spec"), "addresses"), 0)),
	                    "10.1.0.0/16");
	json_decref(o);
	/* a GlobalIPPool is found whatever namespace the caller names */
	assert_int_equal(pk_cache_get_pool(f->c, PK_GLOBAL_POOL_KIND, "a", "nodes", &o, &err),
	                 PK_OK);
	assert_non_null(o);
	json_decref(o);
	assert_int_equal(pk_cache_get_pool(f->c, PK_POOL_KIND, "c", "nodes", &o, &err), PK_OK);
	assert_null(o);

	/* a namespace's IPPools: "a", not "ab" */
	assert_int_equal(pk_cache_list_pools(f->c, PK_POOL_KIND, "a", &items, &err), PK_OK);
	assert_int_equal(json_array_size(items), 1);
	json_decref(items);
	assert_int_equal(pk_cache_list_pools(f->c, PK_POOL_KIND, NULL, &items, &err), PK_OK);
	assert_int_equal(json_array_size(items), 2);
	json_decref(items);
	assert_int_equal(pk_cache_list_pools(f->c, PK_GLOBAL_POOL_KIND, NULL, &items, &err), PK_OK);
	assert_int_equal(json_array_size(items), 1);
	json_decref(items);

	/* an update is what get answers next; a delete makes it absent */
	ev_put(f, slot_of(PK_POOL_KIND), pool(PK_POOL_KIND, "a", "nodes", "10.9.0.0/16"));
	assert_int_equal(pk_cache_get_pool(f->c, PK_POOL_KIND, "a", "nodes", &o, &err), PK_OK);
	assert_string_equal(json_string_value(json_array_get(
	                        json_object_get(json_object_get(o, "spec"), "addresses"), 0)),
	                    "10.9.0.0/16");
	json_decref(o);
	ev_delete(f, slot_of(PK_POOL_KIND), "a", "nodes");
	assert_int_equal(pk_cache_get_pool(f->c, PK_POOL_KIND, "a", "nodes", &o, &err), PK_OK);
	assert_null(o);
	assert_int_equal(pk_cache_count(f->c, slot_of(PK_POOL_KIND)), 1);

	/* claims: by namespace and name; what the checks read is kept, conditions are not */
	ev_put(f, PK_CACHE_CLAIMS, claim("a", "m-1", "nodes"));
	assert_int_equal(pk_cache_get_claim(f->c, "a", "m-1", &o, &err), PK_OK);
	assert_non_null(o);
	assert_string_equal(json_string_value(json_object_get(
	                        json_object_get(json_object_get(o, "spec"), "poolRef"), "name")),
	                    "nodes");
	assert_string_equal(
	    json_string_value(json_object_get(
	        json_object_get(json_object_get(o, "status"), "addressRef"), "name")),
	    "m-1");
	assert_null(json_object_get(json_object_get(o, "status"), "conditions"));
	json_decref(o);
	assert_int_equal(pk_cache_get_claim(f->c, "b", "m-1", &o, &err), PK_OK);
	assert_null(o);
	ev_delete(f, PK_CACHE_CLAIMS, "a", "m-1");
	assert_int_equal(pk_cache_get_claim(f->c, "a", "m-1", &o, &err), PK_OK);
	assert_null(o);
	/* a name longer than the API server allows is simply not there */
	char long_name[600];
	memset(long_name, 'x', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	assert_int_equal(pk_cache_get_claim(f->c, "a", long_name, &o, &err), PK_OK);
	assert_null(o);
}

static void test_ready_after_every_first_list(void **state)
{
	struct fixture *f = *state;
	assert_false(pk_cache_ready(f->c));
	/* objects arriving during a first list do not make it ready */
	ev_put(f, slot_of(PK_POOL_KIND), pool(PK_POOL_KIND, "a", "nodes", "10.1.0.0/16"));
	assert_false(pk_cache_synced(f->c, slot_of(PK_POOL_KIND)));
	for (size_t k = 0; k < pk_cache_kinds(); k++) {
		assert_false(pk_cache_ready(f->c));
		assert_false(pk_cache_synced(f->c, (enum pk_cache_kind)k));
		f->inf[k].io.handlers.on_synced(f->inf[k].io.handlers.ud);
		assert_true(pk_cache_synced(f->c, (enum pk_cache_kind)k));
	}
	assert_true(pk_cache_ready(f->c));
}

/* ---- the pool kinds are the table's ---- */

static void test_slots_follow_the_table(void **state)
{
	(void)state;
	size_t n;
	const struct pk_pool_kind *kinds = pk_pool_kinds(&n);
	struct pk_err err;
	assert_int_equal(pk_cache_kinds(), PK_CACHE_POOLS + n);
	assert_true(pk_cache_kinds() <= PK_CACHE_KINDS_MAX);
	assert_null(pk_cache_slot_pool_kind(PK_CACHE_ADDRESSES));
	assert_null(pk_cache_slot_pool_kind(PK_CACHE_CLAIMS));
	assert_null(pk_cache_slot_pool_kind((enum pk_cache_kind)(PK_CACHE_POOLS + n)));
	for (size_t i = 0; i < n; i++) {
		enum pk_cache_kind k;
		assert_int_equal(pk_cache_pool_slot(kinds[i].kind, &k, &err), PK_OK);
		assert_int_equal(k, PK_CACHE_POOLS + i);
		assert_ptr_equal(pk_cache_slot_pool_kind(k), &kinds[i]);
	}
}

/*
 * One pool "p" of every kind, and an address of namespace "a" on each: a
 * namespaced kind's pool and addresses are those of the namespace asked
 * for, a cluster-scoped kind's are found from any; no kind sees another's.
 */
static void test_scope_follows_the_table(void **state)
{
	struct fixture *f = *state;
	size_t n;
	const struct pk_pool_kind *kinds = pk_pool_kinds(&n);
	struct pk_err err;
	char got[256], want[64], cidr[32];
	/* kind i's pool is 10.i.0.0/16, its address 10.i.0.1 */
	for (size_t i = 0; i < n; i++) {
		snprintf(cidr, sizeof(cidr), "10.%zu.0.0/16", i);
		snprintf(want, sizeof(want), "10.%zu.0.1", i);
		ev_put(f, slot_of(kinds[i].kind),
		       pool(kinds[i].kind, kinds[i].namespaced ? "a" : NULL, "p", cidr));
		ev_put(f, PK_CACHE_ADDRESSES,
		       address("a", kinds[i].kind, want, kinds[i].kind, "p"));
	}
	for (size_t i = 0; i < n; i++) {
		const struct pk_pool_kind *pk = &kinds[i];
		json_t *o = NULL, *items = NULL;
		snprintf(cidr, sizeof(cidr), "10.%zu.0.0/16", i);
		snprintf(want, sizeof(want), "10.%zu.0.1", i);
		/* from its own namespace, and from every one */
		assert_int_equal(pk_cache_get_pool(f->c, pk->kind, "a", "p", &o, &err), PK_OK);
		assert_non_null(o);
		assert_string_equal(
		    json_string_value(json_array_get(pk_json_path(o, "spec", "addresses"), 0)),
		    cidr);
		json_decref(o);
		pool_addresses(f, pk->kind, "a", "p", got, sizeof(got));
		assert_string_equal(got, want);
		pool_addresses(f, pk->kind, NULL, "p", got, sizeof(got));
		assert_string_equal(got, want);
		/* from another namespace: only a cluster-scoped kind's */
		assert_int_equal(pk_cache_get_pool(f->c, pk->kind, "b", "p", &o, &err), PK_OK);
		assert_true((o != NULL) == !pk->namespaced);
		json_decref(o);
		assert_int_equal(pk_cache_list_pools(f->c, pk->kind, "b", &items, &err), PK_OK);
		assert_int_equal(json_array_size(items), pk->namespaced ? 0 : 1);
		json_decref(items);
		pool_addresses(f, pk->kind, "b", "p", got, sizeof(got));
		assert_string_equal(got, pk->namespaced ? "" : want);
	}
}

/*
 * Kinds the table does not have (a namespaced one, a "Global" one, IPPool
 * in the wrong case, none) name no pool: each read is an error naming the
 * kind, never the IPPool "nodes" nor its addresses.
 */
static void test_unknown_kind_is_no_pool(void **state)
{
	struct fixture *f = *state;
	struct pk_err err;
	ev_put(f, slot_of(PK_POOL_KIND), pool(PK_POOL_KIND, "a", "nodes", "10.1.0.0/16"));
	ev_put(f, slot_of(PK_GLOBAL_POOL_KIND),
	       pool(PK_GLOBAL_POOL_KIND, NULL, "nodes", "10.3.0.0/16"));
	ev_put(f, PK_CACHE_ADDRESSES, address("a", "n-1", "10.1.0.1", PK_POOL_KIND, "nodes"));
	ev_put(f, PK_CACHE_ADDRESSES, address("b", "n-2", "10.1.0.2", PK_POOL_KIND, "nodes"));
	/* an address on such a kind is in no pool of poolkeeper's: not kept */
	ev_put(f, PK_CACHE_ADDRESSES, address("a", "k-1", "10.1.0.3", "KeaIPPool", "nodes"));
	assert_int_equal(pk_cache_count(f->c, PK_CACHE_ADDRESSES), 2);

	static const char *const unknown[] = {"KeaIPPool", "GlobalKeaIPPool", "ippool", ""};
	for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
		const char *kind = unknown[i];
		char says[128];
		snprintf(says, sizeof(says), "\"%s\" is not a pool kind of " PK_POOL_GROUP, kind);
		enum pk_cache_kind k;
		assert_int_equal(pk_cache_pool_slot(kind, &k, &err), PK_ERR_INVALID);
		assert_int_equal(k, PK_CACHE_KINDS_MAX);
		assert_string_equal(err.msg, says);

		json_t *o = NULL, *items = NULL;
		memset(&err, 0, sizeof(err));
		assert_int_equal(pk_cache_get_pool(f->c, kind, "a", "nodes", &o, &err),
		                 PK_ERR_INVALID);
		assert_null(o);
		assert_string_equal(err.msg, says);
		for (int every = 0; every < 2; every++) {
			const char *ns = every ? NULL : "a";
			memset(&err, 0, sizeof(err));
			assert_int_equal(pk_cache_list_pools(f->c, kind, ns, &items, &err),
			                 PK_ERR_INVALID);
			assert_null(items);
			assert_string_equal(err.msg, says);
			memset(&err, 0, sizeof(err));
			assert_int_equal(
			    pk_cache_list_pool_addresses(f->c, kind, ns, "nodes", &items, &err),
			    PK_ERR_INVALID);
			assert_null(items);
			assert_string_equal(err.msg, says);
		}
	}
}

/* ---- the admission decisions over the cache ---- */

static int cb_list_pools(void *ctx, const char *kind, const char *ns, json_t **items,
                         struct pk_err *err)
{
	return pk_cache_list_pools(ctx, kind, ns, items, err);
}
static int cb_list_pool_addresses(void *ctx, const char *kind, const char *ns, const char *name,
                                  json_t **items, struct pk_err *err)
{
	return pk_cache_list_pool_addresses(ctx, kind, ns, name, items, err);
}
static int cb_get_pool(void *ctx, const char *kind, const char *ns, const char *name, json_t **obj,
                       struct pk_err *err)
{
	return pk_cache_get_pool(ctx, kind, ns, name, obj, err);
}
static int cb_get_claim(void *ctx, const char *ns, const char *name, json_t **obj,
                        struct pk_err *err)
{
	return pk_cache_get_claim(ctx, ns, name, obj, err);
}

/* The verdict of a GlobalIPPool review: allowed, or the denial's message in msg. */
static bool review_global_pool(struct fixture *f, const char *op, json_t *obj, json_t *old,
                               char *msg, size_t len)
{
	struct pk_admission_lookup lk = {.ctx = f->c,
	                                 .list_pools = cb_list_pools,
	                                 .list_pool_addresses = cb_list_pool_addresses,
	                                 .get_pool = cb_get_pool,
	                                 .get_claim = cb_get_claim};
	struct pk_admission_config cfg = {
	    .claims = PK_ENFORCE_DENY, .foreign_claims = PK_ENFORCE_WARN, .lookup = &lk};
	json_t *req = json_pack(
	    "{s:s, s:s, s:{s:s, s:s, s:{s:s, s:s, s:s}, s:s, s:O*, s:O*}}", "apiVersion",
	    "admission.k8s.io/v1", "kind", "AdmissionReview", "request", "uid", "u-1", "operation",
	    op, "resource", "group", PK_POOL_GROUP, "version", PK_POOL_VERSION, "resource",
	    PK_GLOBAL_POOL_RESOURCE, "name", "shared", "object", obj, "oldObject", old);
	assert_non_null(req);
	char *body = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	int status = 0;
	json_t *resp = NULL;
	pk_admission_review(&cfg, PK_ADMISSION_VALIDATE, body, strlen(body), &status, &resp);
	free(body);
	assert_int_equal(status, 200);
	const json_t *r = json_object_get(resp, "response");
	bool allowed = json_is_true(json_object_get(r, "allowed"));
	snprintf(msg, len, "%s",
	         allowed
	             ? ""
	             : json_string_value(json_object_get(json_object_get(r, "status"), "message")));
	json_decref(resp);
	return allowed;
}

static void test_admission_over_the_cache(void **state)
{
	struct fixture *f = *state;
	char msg[1024];
	json_t *old = pool(PK_GLOBAL_POOL_KIND, NULL, "shared", "10.0.0.0/16");
	json_t *smaller = pool(PK_GLOBAL_POOL_KIND, NULL, "shared", "10.0.0.0/24");
	ev_put(f, slot_of(PK_GLOBAL_POOL_KIND), json_incref(old));
	ev_put(f, PK_CACHE_ADDRESSES,
	       address("a", "m-1", "10.0.200.1", PK_GLOBAL_POOL_KIND, "shared"));

	/* shrink past an address in use: denied, naming it */
	assert_false(review_global_pool(f, "UPDATE", smaller, old, msg, sizeof(msg)));
	assert_non_null(strstr(msg, "10.0.200.1"));
	/* delete with an address: denied */
	assert_false(review_global_pool(f, "DELETE", NULL, old, msg, sizeof(msg)));
	assert_non_null(strstr(msg, "1 IPAddress allocated from this pool still exists"));

	/* once the address's DELETED event is in, both are allowed */
	ev_delete(f, PK_CACHE_ADDRESSES, "a", "m-1");
	assert_true(review_global_pool(f, "UPDATE", smaller, old, msg, sizeof(msg)));
	assert_true(review_global_pool(f, "DELETE", NULL, old, msg, sizeof(msg)));

	/* overlap: another GlobalIPPool's ADDED event makes a new pool overlap it */
	json_t *fresh = pool(PK_GLOBAL_POOL_KIND, NULL, "shared", "10.7.0.0/24");
	assert_true(review_global_pool(f, "UPDATE", fresh, old, msg, sizeof(msg)));
	ev_put(f, slot_of(PK_GLOBAL_POOL_KIND),
	       pool(PK_GLOBAL_POOL_KIND, NULL, "late", "10.7.0.128/25"));
	assert_false(review_global_pool(f, "UPDATE", fresh, old, msg, sizeof(msg)));
	assert_non_null(strstr(msg, "overlaps with a GlobalIPPool"));
	ev_delete(f, slot_of(PK_GLOBAL_POOL_KIND), NULL, "late");
	assert_true(review_global_pool(f, "UPDATE", fresh, old, msg, sizeof(msg)));
	json_decref(fresh);
	json_decref(smaller);
	json_decref(old);
}

/* ---- what a tenant's claims and an oversized object cost ---- */

/* The IPAddress check's verdict on an address naming the claim, as words. */
static void claim_check(const json_t *claim, char *buf, size_t len)
{
	json_t *a = address("a", "m-1", "10.1.0.5", PK_POOL_KIND, "nodes");
	struct pk_violations vs;
	pk_violations_init(&vs);
	pk_rules_check_ipaddress_claim(a, claim, &vs);
	pk_violations_join(&vs, PK_SEV_DENY, buf, len);
	json_decref(a);
}

static void test_long_finalizer_lists(void **state)
{
	struct fixture *f = *state;
	struct pk_err err;
	json_t *o = NULL;
	/* a claim of poolkeeper's with 4,300 other finalizers: its own is kept, and where */
	json_t *c = claim("a", "m-1", "nodes");
	assert_true(pk_test_set_tenant_finalizers(c, 4300, 2150, PK_CLAIM_FINALIZER));
	assert_true(pk_test_json_text_size(c) > 1100000);
	ev_put(f, PK_CACHE_CLAIMS, c);
	assert_int_equal(pk_cache_get_claim(f->c, "a", "m-1", &o, &err), PK_OK);
	assert_non_null(o);
	assert_true(pk_test_json_text_size(o) < 600);
	char *fins = json_dumps(pk_json_path(o, "metadata", "finalizers"), JSON_COMPACT);
	assert_string_equal(fins, "[2150,\"" PK_CLAIM_FINALIZER "\",2149]");
	free(fins);
	/* what the checks read is still there (the negative case: nothing else changed) */
	assert_string_equal(pk_json_cstr_path(o, "spec", "poolRef", "name"), "nodes");
	assert_string_equal(pk_json_cstr_path(o, "status", "addressRef", "name"), "m-1");
	json_decref(o);
	assert_int_equal(pk_cache_oversized(f->c), 0);
}

static void test_foreign_claims_keep_their_identity(void **state)
{
	struct fixture *f = *state;
	struct pk_err err;
	json_t *o = NULL;
	char want[1024], got[1024];
	/* no claim at all: what the IPAddress check says */
	claim_check(NULL, want, sizeof(want));
	assert_true(want[0] != '\0');

	json_t *c = claim("a", "m-1", "nodes");
	json_object_set_new(pk_json_path(c, "spec", "poolRef"), "apiGroup",
	                    json_string("ipam.cluster.x-k8s.io"));
	json_object_set_new(pk_json_path(c, "spec", "poolRef"), "kind",
	                    json_string("InClusterIPPool"));
	json_object_set_new(json_object_get(c, "metadata"), "resourceVersion", json_string("7"));
	assert_true(pk_test_set_tenant_finalizers(c, 4300, 4300, PK_CLAIM_FINALIZER));
	/* the whole claim gives the same verdict as none */
	claim_check(c, got, sizeof(got));
	assert_string_equal(got, want);
	ev_put(f, PK_CACHE_CLAIMS, c);
	assert_int_equal(pk_cache_get_claim(f->c, "a", "m-1", &o, &err), PK_OK);
	assert_non_null(o);
	char *text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	assert_string_equal(text, "{\"metadata\":{\"name\":\"m-1\",\"namespace\":\"a\","
	                          "\"resourceVersion\":\"7\","
	                          "\"uid\":\"5b1c7c48-9a5e-4f5b-8d6f-0c2f3a1b4d5e\"}}");
	free(text);
	/* and so does the kept copy */
	claim_check(o, got, sizeof(got));
	assert_string_equal(got, want);
	json_decref(o);
	assert_int_equal(pk_cache_count(f->c, PK_CACHE_CLAIMS), 1);
}

static void test_oversized_object_reported(void **state)
{
	struct fixture *f = *state;
	struct pk_err err;
	json_t *o = NULL;
	/* a pool of 8,000 address entries of 80 characters: over the cap once packed */
	json_t *p = pool(PK_POOL_KIND, "a", "huge", "10.1.0.0/16");
	json_t *list = json_object_get(json_object_get(p, "spec"), "addresses");
	for (int i = 0; i < 8000; i++) {
		char e[96];
		snprintf(e, sizeof(e),
		         "fd00:%04x:0000:0000:0000:0000:0000:0000-fd00:%04x:0000:0000:0000:"
		         "0000:ffff:ffff",
		         i, i);
		json_array_append_new(list, json_string(e));
	}
	char path[] = "/tmp/pk-test-cache-log-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	pk_log_set_fd(fd);
	ev_put(f, slot_of(PK_POOL_KIND), p);
	pk_log_set_fd(2);
	char logged[2048] = "";
	ssize_t n = pread(fd, logged, sizeof(logged) - 1, 0);
	close(fd);
	assert_true(n > 0);
	logged[n] = '\0';
	/* one line, naming the kind, the namespace, the name and the size */
	assert_non_null(strstr(logged, "over the cache's cap"));
	assert_non_null(strstr(logged, PK_POOL_KIND));
	assert_non_null(strstr(logged, "huge"));
	assert_non_null(strstr(logged, "bytes"));
	assert_ptr_equal(strchr(logged, '\n'), logged + n - 1);
	assert_int_equal(pk_cache_oversized(f->c), 1);
	/* only its name is held: no spec, so no check finds addresses in it */
	assert_int_equal(pk_cache_get_pool(f->c, PK_POOL_KIND, "a", "huge", &o, &err), PK_OK);
	assert_non_null(o);
	assert_null(json_object_get(o, "spec"));
	assert_string_equal(pk_json_meta_cstr(o, "name"), "huge");
	json_decref(o);
	/* an ordinary pool beside it is kept whole, and not counted */
	ev_put(f, slot_of(PK_POOL_KIND), pool(PK_POOL_KIND, "a", "nodes", "10.2.0.0/16"));
	assert_int_equal(pk_cache_get_pool(f->c, PK_POOL_KIND, "a", "nodes", &o, &err), PK_OK);
	assert_non_null(json_object_get(o, "spec"));
	json_decref(o);
	assert_int_equal(pk_cache_oversized(f->c), 1);
}

/* ---- an informer thread writing while admission threads read ---- */

#define CHURN_ADDRESSES 200
#define CHURN_ROUNDS    30

struct churn {
	struct fixture *f;
	atomic_bool done;
	atomic_int reads;
	atomic_int bad;
};

static void *churn_writer(void *arg)
{
	struct churn *ch = arg;
	char name[32], text[32];
	for (int r = 0; r < CHURN_ROUNDS; r++) {
		for (int i = 0; i < CHURN_ADDRESSES; i++) {
			snprintf(name, sizeof(name), "m-%d", i);
			snprintf(text, sizeof(text), "10.%d.%d.%d", r, i / 250, i % 250);
			ev_put(ch->f, PK_CACHE_ADDRESSES,
			       address("a", name, text, PK_GLOBAL_POOL_KIND, "shared"));
		}
		for (int i = 0; i < CHURN_ADDRESSES; i += 2) {
			snprintf(name, sizeof(name), "m-%d", i);
			ev_delete(ch->f, PK_CACHE_ADDRESSES, "a", name);
		}
	}
	atomic_store(&ch->done, true);
	return NULL;
}

static void *churn_reader(void *arg)
{
	struct churn *ch = arg;
	while (!atomic_load(&ch->done)) {
		json_t *items = NULL;
		struct pk_err err;
		if (pk_cache_list_pool_addresses(ch->f->c, PK_GLOBAL_POOL_KIND, NULL, "shared",
		                                 &items, &err) != PK_OK ||
		    json_array_size(items) > CHURN_ADDRESSES)
			atomic_fetch_add(&ch->bad, 1);
		size_t i;
		json_t *a;
		json_array_foreach(items, i, a)
		{
			if (json_string_value(
			        json_object_get(json_object_get(a, "spec"), "address")) == NULL)
				atomic_fetch_add(&ch->bad, 1);
		}
		json_decref(items);
		atomic_fetch_add(&ch->reads, 1);
	}
	return NULL;
}

static void test_reads_while_an_informer_writes(void **state)
{
	struct churn ch = {.f = *state};
	atomic_init(&ch.done, false);
	atomic_init(&ch.reads, 0);
	atomic_init(&ch.bad, 0);
	pthread_t w, r[3];
	for (int i = 0; i < 3; i++)
		assert_int_equal(pthread_create(&r[i], NULL, churn_reader, &ch), 0);
	assert_int_equal(pthread_create(&w, NULL, churn_writer, &ch), 0);
	pthread_join(w, NULL);
	for (int i = 0; i < 3; i++)
		pthread_join(r[i], NULL);
	assert_int_equal(atomic_load(&ch.bad), 0);
	assert_true(atomic_load(&ch.reads) > 0);
	/* the last round's odd-numbered addresses are what is left */
	char got[8192];
	pool_addresses(ch.f, PK_GLOBAL_POOL_KIND, NULL, "shared", got, sizeof(got));
	assert_non_null(strstr(got, "10.29.0.1 "));
	assert_null(strstr(got, "10.29.0.2 "));
	assert_int_equal(pk_cache_count(ch.f->c, PK_CACHE_ADDRESSES), CHURN_ADDRESSES / 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_address_events, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_addresses_by_pool, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_pools_and_claims, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_ready_after_every_first_list, setup, teardown),
	    cmocka_unit_test(test_slots_follow_the_table),
	    cmocka_unit_test_setup_teardown(test_scope_follows_the_table, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_unknown_kind_is_no_pool, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_admission_over_the_cache, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_long_finalizer_lists, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_foreign_claims_keep_their_identity, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_oversized_object_reported, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_reads_while_an_informer_writes, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
