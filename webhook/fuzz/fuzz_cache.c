/*
 * fuzz_cache.c - libFuzzer target for the webhook's lookup cache: any JSON
 * object (strings with NULs included) as an event of one of poolkeeper's
 * pool kinds, an IPAddress or an IPAddressClaim, added, read back through
 * every lookup of every pool kind (and of the kind its poolRef names,
 * which may be none of them), replaced and deleted. The first byte picks
 * the cache slot. Whatever the object, nothing crashes, and once it is
 * deleted the cache is empty.
 */
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "json.h"
#include "rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void read_all(struct pk_cache *c, const json_t *obj)
{
	const char *kind = pk_json_cstr_path(obj, "spec", "poolRef", "kind");
	const char *name = pk_json_cstr_path(obj, "spec", "poolRef", "name");
	const char *ns = pk_json_meta_cstr(obj, "namespace");
	struct pk_err err;
	json_t *v = NULL;
	size_t n;
	const struct pk_pool_kind *kinds = pk_pool_kinds(&n);
	for (size_t i = 0; i < n; i++) {
		const char *k = kinds[i].kind;
		if (pk_cache_list_pools(c, k, ns, &v, &err) == PK_OK)
			json_decref(v);
		if (pk_cache_list_pool_addresses(c, k, ns, name != NULL ? name : "x", &v, &err) ==
		    PK_OK)
			json_decref(v);
		if (pk_cache_list_pool_addresses(c, k, NULL, name != NULL ? name : "x", &v, &err) ==
		    PK_OK)
			json_decref(v);
		if (pk_cache_get_pool(c, k, ns, pk_json_meta_cstr(obj, "name"), &v, &err) == PK_OK)
			json_decref(v);
	}
	if (kind != NULL && pk_cache_list_pool_addresses(c, kind, ns, name, &v, &err) == PK_OK)
		json_decref(v);
	if (pk_cache_get_claim(c, ns, pk_json_meta_cstr(obj, "name"), &v, &err) == PK_OK)
		json_decref(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	enum pk_cache_kind k = (enum pk_cache_kind)(data[0] % pk_cache_kinds());
	json_t *obj = json_loadb((const char *)data + 1, size - 1, JSON_ALLOW_NUL, NULL);
	if (obj == NULL)
		return 0;
	struct pk_cache *c = pk_cache_new();
	if (c == NULL)
		abort();
	struct pk_kube_informer_opts io;
	memset(&io, 0, sizeof(io));
	pk_cache_feed(c, k, &io);
	const char *key = "ns/name"; /* the informer's key; the cache takes it as given */
	void *item = io.transform(io.transform_ud, obj);
	if (item != NULL) {
		io.handlers.on_add(io.handlers.ud, key, item);
		read_all(c, obj);
		void *again = io.transform(io.transform_ud, obj);
		if (again == NULL)
			abort(); /* the same object is kept the same way, memory permitting */
		io.handlers.on_update(io.handlers.ud, key, item, again);
		free(item);
		read_all(c, obj);
		io.handlers.on_delete(io.handlers.ud, key, again);
		free(again);
	}
	if (pk_cache_count(c, k) != 0)
		abort();
	pk_cache_free(c);
	json_decref(obj);
	return 0;
}
