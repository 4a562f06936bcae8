/*
 * test_cache.c - what the controller's informers keep of each object
 * (cache.c's transforms): a claim of poolkeeper's pool keeps what a pass
 * reads and the hashes and flags the scans filter on, also under 4,300
 * finalizers of another party; a claim on another provider's pool keeps
 * its identity only; an object over PK_TRIM_MAX_BYTES is logged (one
 * line: kind, namespace, name, size), counted, and kept as its identity.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "pool_ref.h"
#include "tenant.h"

#include "api.h"
#include "cache.h"
#include "json.h"
#include "json_fixture.h"
#include "log.h"
#include "metrics.h"
#include "objects.h"
#include "rules.h"
#include "strmap.h"
#include "trim.h"

/* A backend of poolkeeper's two kinds: all cache.c asks of it is the pool key. */
static const struct pk_pool_kind kinds[] = {
    {.kind = PK_POOL_KIND, .namespaced = true},
    {.kind = PK_GLOBAL_POOL_KIND, .namespaced = false},
};

static const struct pk_pool_kind *fake_kinds(void *self, size_t *n)
{
	(void)self;
	*n = sizeof(kinds) / sizeof(kinds[0]);
	return kinds;
}

static bool fake_serves(void *self, const json_t *pool_ref)
{
	(void)self;
	return pk_pool_kind_of_ref(pool_ref) != NULL;
}

static const struct pk_backend_ops fake_ops = {.kinds = fake_kinds, .serves = fake_serves};

struct fixture {
	struct pk_backend backend;
	struct pk_metrics metrics;
	struct pk_cache cache;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	f->backend = (struct pk_backend){.ops = &fake_ops};
	assert_int_equal(pk_metrics_init(&f->metrics), PK_OK);
	f->cache = (struct pk_cache){.backend = &f->backend, .metrics = &f->metrics};
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	pk_metrics_release(&f->metrics);
	free(f);
	return 0;
}

static const char *const CLAIM =
    "{'apiVersion':'ipam.cluster.x-k8s.io/v1beta2','kind':'IPAddressClaim',"
    "'metadata':{'name':'m-1','namespace':'team-a','uid':'c-1','resourceVersion':'7',"
    "'generation':1,'labels':{'cluster.x-k8s.io/cluster-name':'prod'}},"
    "'spec':{'poolRef':{'apiGroup':'ipam.poolkeeper.io','kind':'IPPool','name':'nodes'}},"
    "'status':{'addressRef':{'name':'m-1'},'conditions':[{'type':'Ready','status':'True',"
    "'reason':'Allocated','message':'','lastTransitionTime':'2026-01-01T00:00:00Z'}]}}";

/* Runs the transform with the log going to a file; *logged gets what it wrote. */
static void *keep_logged(void *(*keep)(void *, const json_t *), struct pk_cache *c, const json_t *o,
                         char *logged, size_t len)
{
	char path[] = "/tmp/pk-test-ctl-cache-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	pk_log_set_fd(fd);
	void *item = keep(c, o);
	pk_log_set_fd(2);
	ssize_t n = pread(fd, logged, len - 1, 0);
	close(fd);
	logged[n > 0 ? n : 0] = '\0';
	return item;
}

static void test_claim_under_long_finalizers(void **state)
{
	struct fixture *f = *state;
	json_t *claim = load(CLAIM);
	assert_true(pk_test_set_tenant_finalizers(claim, 4300, 2150, PK_CLAIM_FINALIZER));
	assert_true(pk_test_json_text_size(claim) > 1190000);
	char logged[1024];
	void *item = keep_logged(pk_cache_keep_claim, &f->cache, claim, logged, sizeof(logged));
	assert_non_null(item);
	assert_string_equal(logged, "");
	json_t *k = pk_cache_item_json(item);
	assert_true(pk_test_json_text_size(k) < 600);
	assert_json(pk_json_path(k, "metadata", "finalizers"),
	            "[2150,'ipam.poolkeeper.io/release-address',2149]");
	/* what a pass reads is all there: its finalizer, and where it sits */
	assert_true(pk_objects_has_finalizer(k, PK_CLAIM_FINALIZER));
	json_t *pw = pk_objects_finalizer_remove_patch(claim, PK_CLAIM_FINALIZER);
	json_t *pt = pk_objects_finalizer_remove_patch(k, PK_CLAIM_FINALIZER);
	assert_true(json_equal(pw, pt));
	json_decref(pw);
	json_decref(pt);
	assert_string_equal(pk_json_cstr_path(k, "spec", "poolRef", "name"), "nodes");
	assert_true(pk_cache_item_ready(item));
	assert_true(pk_cache_item_ours(item));
	assert_false(pk_cache_item_deleting(item));
	assert_int_equal(atomic_load(&f->metrics.cache_oversized), 0);
	json_decref(k);
	free(item);
	json_decref(claim);
}

static void test_foreign_claim_keeps_identity(void **state)
{
	struct fixture *f = *state;
	json_t *claim = load(CLAIM);
	assert_true(pk_test_set_tenant_finalizers(claim, 4300, 4300, PK_CLAIM_FINALIZER));
	assert_int_equal(
	    json_object_set_new(json_object_get(claim, "spec"), "poolRef",
	                        load("{'apiGroup':'ipam.cluster.x-k8s.io','kind':'InClusterIPPool',"
	                             "'name':'nodes'}")),
	    0);
	void *item = pk_cache_keep_claim(&f->cache, claim);
	assert_non_null(item);
	json_t *k = pk_cache_item_json(item);
	assert_json(k, "{'metadata':{'name':'m-1','namespace':'team-a','uid':'c-1',"
	               "'resourceVersion':'7'}}");
	/* no flags: no scan ever picks it, and no time to Ready is measured for it */
	assert_false(pk_cache_item_ready(item));
	assert_false(pk_cache_item_ours(item));
	assert_int_equal(pk_cache_item_rv_hash(item), pk_strmap_hash("7"));
	json_decref(k);
	free(item);
	json_decref(claim);
}

static void test_oversized_objects(void **state)
{
	struct fixture *f = *state;
	char logged[1024];
	/* a claim of poolkeeper's pool whose pool name alone is 600 KB */
	json_t *claim = load(CLAIM);
	char *big = malloc(600001);
	assert_non_null(big);
	memset(big, 'n', 600000);
	big[600000] = '\0';
	json_object_set_new(pk_json_path(claim, "spec", "poolRef"), "name", json_string(big));
	void *item = keep_logged(pk_cache_keep_claim, &f->cache, claim, logged, sizeof(logged));
	assert_non_null(item);
	json_t *k = pk_cache_item_json(item);
	assert_json(k, "{'metadata':{'name':'m-1','namespace':'team-a','uid':'c-1',"
	               "'resourceVersion':'7'}}");
	assert_false(pk_cache_item_ready(item));
	assert_false(pk_cache_item_ours(item));
	json_decref(k);
	free(item);
	/* one line naming it and its size */
	assert_non_null(strstr(logged, "over the cache's cap"));
	assert_non_null(strstr(logged, PK_CLAIM_KIND));
	assert_non_null(strstr(logged, "team-a"));
	assert_non_null(strstr(logged, "m-1"));
	assert_non_null(strstr(logged, "bytes"));
	assert_ptr_equal(strchr(logged, '\n'), logged + strlen(logged) - 1);
	assert_int_equal(atomic_load(&f->metrics.cache_oversized), 1);
	json_decref(claim);

	/* a pool, the same */
	json_t *pool = load("{'kind':'IPPool','metadata':{'name':'huge','namespace':'team-a'},"
	                    "'spec':{'addresses':['10.0.0.0/24']}}");
	json_object_set_new(json_object_get(pool, "spec"), "gateway", json_string(big));
	item = keep_logged(pk_cache_keep_pool, &f->cache, pool, logged, sizeof(logged));
	k = pk_cache_item_json(item);
	assert_json(k, "{'metadata':{'name':'huge','namespace':'team-a'}}");
	assert_non_null(strstr(logged, "huge"));
	assert_int_equal(atomic_load(&f->metrics.cache_oversized), 2);
	json_decref(k);
	free(item);
	json_decref(pool);
	free(big);

	/* and the counter is on the metrics page */
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	assert_non_null(out);
	pk_metrics_write(&f->metrics, out);
	fclose(out);
	assert_non_null(strstr(buf, "poolkeeper_cache_oversized_objects_total 2\n"));
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_claim_under_long_finalizers, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_foreign_claim_keeps_identity, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_oversized_objects, setup, teardown),
	};
	return cmocka_run_group_tests_name("cache", tests, NULL, NULL);
}
