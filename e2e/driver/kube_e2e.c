/*
 * kube_e2e.c - pk-kube-e2e, the driver e2e/tests/client.bats runs against
 * the loopback control plane to check poolkeeper's Kubernetes client end
 * to end. It reads $KUBECONFIG like every poolkeeper binary (exec plugins
 * allowed) and prints one line per step ("ok <step>") on stdout; the first
 * failure prints "FAIL <step>: <why>" and exits 1.
 *
 *   pk-kube-e2e crud NS COUNT         create/get/list(paged)/update/patch/delete/status/discovery
 *   pk-kube-e2e informer NS LABEL FINAL DUMP TIMEOUT_S
 *                                     run an informer on the ConfigMaps of NS with label LABEL
 *                                     until ConfigMap FINAL is in a synced store, then write
 *                                     "name=data.v" lines (sorted) to DUMP
 *   pk-kube-e2e whoami                print the user the API server sees (SelfSubjectReview)
 *   pk-kube-e2e list NS               print how many ConfigMaps NS holds
 *   pk-kube-e2e watch-gone NS RV      watch ConfigMaps of NS from RV; succeed when told 410 Gone
 *   pk-kube-e2e lease NS NAME ID SECONDS
 *                                     take part in leader election on Lease NAME as ID for
 *                                     SECONDS (or until TERM), printing "leading"/"stopped"
 *   pk-kube-e2e event NS KIND NAME REASON MESSAGE TIMES
 *                                     record the same Event TIMES times through the aggregator
 */
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json.h"
#include "kube_client.h"
#include "kube_config.h"
#include "kube_informer.h"
#include "kube_watch.h"
#include "parse.h"

static void log_stderr(void *ud, enum pk_kube_level level, const char *msg)
{
	(void)ud;
	static const char *const names[] = {"debug", "info", "warn", "error"};
	fprintf(stderr, "level=%s msg=\"%s\"\n", names[level & 3], msg);
}

static struct pk_kube_log logger = {.fn = log_stderr, .min_level = PK_KUBE_LOG_INFO};
static struct pk_kube_config *cfg;
static struct pk_kube_client *cli;

static void die(const char *step, const char *fmt, ...) PK_PRINTF(2, 3);
static void die(const char *step, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("FAIL %s: ", step);
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	fflush(stdout);
	exit(1);
}

static void ok(const char *fmt, ...) PK_PRINTF(1, 2);
static void ok(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("ok ");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	fflush(stdout);
}

/* expect(step, got, want, error): dies unless got == want. */
static void expect(const char *step, enum pk_kube_reason got, enum pk_kube_reason want,
                   const struct pk_kube_error *e)
{
	if (got != want)
		die(step, "got %s (HTTP %ld: %s), want %s", pk_kube_reason_name(got), e->code,
		    e->message, pk_kube_reason_name(want));
}

static void connect_client(double qps, int burst)
{
	struct pk_kube_config_opts co = {.log = &logger, .allow_exec = true};
	struct pk_err err;
	if (pk_kube_config_load(&co, &cfg, &err) != PK_OK)
		die("config", "%s", err.msg);
	struct pk_kube_client_opts o = {.qps = qps, .burst = burst};
	if (pk_kube_client_new(cfg, &o, &cli, &err) != PK_OK)
		die("client", "%s", err.msg);
}

/* ---- crud ---- */

struct creator {
	const char *ns;
	int from, to;
	int failed;
	struct pk_kube_error e;
};

static struct pk_kube_ref cm_ref(const char *ns, const char *name)
{
	return (struct pk_kube_ref){
	    .version = "v1", .resource = "configmaps", .namespace = ns, .name = name};
}

static void *create_range(void *arg)
{
	struct creator *k = arg;
	for (int i = k->from; i < k->to && !k->failed; i++) {
		char name[32], v[16];
		snprintf(name, sizeof(name), "cm-%04d", i);
		snprintf(v, sizeof(v), "%d", i);
		json_t *obj = json_pack("{s:s,s:s,s:{s:s,s:{s:s}},s:{s:s}}", "apiVersion", "v1",
		                        "kind", "ConfigMap", "metadata", "name", name, "labels",
		                        "app", "pk-e2e", "data", "i", v);
		struct pk_kube_ref r = cm_ref(k->ns, NULL);
		if (pk_kube_client_create(cli, &r, obj, NULL, NULL, &k->e) != PK_KUBE_OK)
			k->failed = i + 1;
		json_decref(obj);
	}
	return NULL;
}

static const char *data_of(const json_t *obj, const char *key)
{
	const char *v = json_string_value(json_object_get(json_object_get(obj, "data"), key));
	return v ? v : "";
}

/* COUNT ConfigMaps cm-NNNN, created from 8 threads on one client. */
static void crud_create(const char *ns, int count)
{
	long long t0 = pk_kube_now_ns();
	enum { NT = 8 };
	pthread_t th[NT];
	struct creator k[NT];
	for (int t = 0; t < NT; t++) {
		k[t] =
		    (struct creator){.ns = ns, .from = count * t / NT, .to = count * (t + 1) / NT};
		pthread_create(&th[t], NULL, create_range, &k[t]);
	}
	for (int t = 0; t < NT; t++) {
		pthread_join(th[t], NULL);
		if (k[t].failed)
			die("create", "cm-%04d: %s: %s", k[t].failed - 1,
			    pk_kube_reason_name(k[t].e.reason), k[t].e.message);
	}
	ok("create %d configmaps from %d threads in %.1f s", count, NT,
	   (double)(pk_kube_now_ns() - t0) / 1e9);
}

/* Page by page, 100 at a time; everything at once; label and field selectors. */
static void crud_list(const char *ns, int count)
{
	struct pk_kube_error e;
	enum pk_kube_reason rc;
	struct pk_kube_ref coll = cm_ref(ns, NULL);
	struct pk_kube_list_opts lo = {.limit = 100, .label_selector = "app=pk-e2e"};
	int pages = 0, items = 0;
	char cont[4096] = "";
	const char *first_rv = NULL;
	char rv0[64] = "";
	do {
		json_t *page;
		lo.continue_token = cont[0] ? cont : NULL;
		rc = pk_kube_client_list(cli, &coll, &lo, &page, &e);
		expect("list page", rc, PK_KUBE_OK, &e);
		pages++;
		items += (int)json_array_size(json_object_get(page, "items"));
		const char *c = json_string_value(
		    json_object_get(json_object_get(page, "metadata"), "continue"));
		snprintf(cont, sizeof(cont), "%s", c ? c : "");
		first_rv = pk_json_meta_cstr(page, "resourceVersion");
		if (pages == 1 && first_rv)
			snprintf(rv0, sizeof(rv0), "%s", first_rv);
		json_decref(page);
	} while (cont[0]);
	if (items != count || pages != (count + 99) / 100)
		die("list pages", "%d items in %d pages, want %d in %d", items, pages, count,
		    (count + 99) / 100);
	ok("list %d items in %d pages of 100 (snapshot %s)", items, pages, rv0);

	json_t *all;
	lo = (struct pk_kube_list_opts){.label_selector = "app=pk-e2e", .limit = 500};
	rc = pk_kube_client_list_all(cli, &coll, &lo, &all, &e);
	expect("list_all", rc, PK_KUBE_OK, &e);
	if ((int)json_array_size(json_object_get(all, "items")) != count)
		die("list_all", "%zu items", json_array_size(json_object_get(all, "items")));
	json_decref(all);
	lo = (struct pk_kube_list_opts){.field_selector = "metadata.name=cm-0001"};
	rc = pk_kube_client_list_all(cli, &coll, &lo, &all, &e);
	expect("list field selector", rc, PK_KUBE_OK, &e);
	if (json_array_size(json_object_get(all, "items")) != 1)
		die("list field selector", "%zu items",
		    json_array_size(json_object_get(all, "items")));
	json_decref(all);
	ok("list_all pages through everything; label and field selectors");
}

/* get, update, a stale update; AlreadyExists and NotFound. */
static void crud_update(const char *ns)
{
	struct pk_kube_error e;
	enum pk_kube_reason rc;
	struct pk_kube_ref one = cm_ref(ns, "cm-0001");
	json_t *obj, *stale, *out;
	rc = pk_kube_client_get(cli, &one, &obj, &e);
	expect("get", rc, PK_KUBE_OK, &e);
	stale = json_deep_copy(obj);
	json_object_set_new(json_object_get(obj, "data"), "i", json_string("updated"));
	rc = pk_kube_client_update(cli, &one, obj, NULL, &out, &e);
	expect("update", rc, PK_KUBE_OK, &e);
	if (strcmp(data_of(out, "i"), "updated") != 0 ||
	    strcmp(pk_json_meta_cstr(out, "resourceVersion"),
	           pk_json_meta_cstr(obj, "resourceVersion")) == 0)
		die("update", "not applied");
	json_decref(out);
	json_object_set_new(json_object_get(stale, "data"), "i", json_string("stale"));
	rc = pk_kube_client_update(cli, &one, stale, NULL, &out, &e);
	expect("update with a stale resourceVersion", rc, PK_KUBE_CONFLICT, &e);
	ok("update; a stale resourceVersion is Conflict (%s)", e.message);
	json_decref(stale);

	json_decref(obj);
	struct pk_kube_ref coll_named = cm_ref(ns, NULL);
	obj = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap", "metadata",
	                "name", "cm-0001");
	rc = pk_kube_client_create(cli, &coll_named, obj, NULL, NULL, &e);
	expect("create existing", rc, PK_KUBE_ALREADY_EXISTS, &e);
	json_decref(obj);
	struct pk_kube_ref missing = cm_ref(ns, "does-not-exist");
	rc = pk_kube_client_get(cli, &missing, &obj, &e);
	expect("get missing", rc, PK_KUBE_NOT_FOUND, &e);
	ok("AlreadyExists and NotFound decoded (code %ld)", e.code);
}

/* Merge patch, JSON patch (a failing test op), server-side apply; *applied gets the
 * object after the apply (the caller json_decrefs). */
static void crud_patch(const char *ns, json_t **applied)
{
	struct pk_kube_error e;
	enum pk_kube_reason rc;
	struct pk_kube_ref one = cm_ref(ns, "cm-0001");
	json_t *out;
	json_t *mp = json_pack("{s:{s:s}}", "data", "m", "1");
	rc = pk_kube_client_patch(cli, &one, PK_KUBE_PATCH_MERGE, mp, NULL, &out, &e);
	expect("merge patch", rc, PK_KUBE_OK, &e);
	if (strcmp(data_of(out, "m"), "1") != 0 || strcmp(data_of(out, "i"), "updated") != 0)
		die("merge patch", "not applied");
	json_decref(out);
	json_decref(mp);
	json_t *jp = json_pack("[{s:s,s:s,s:s},{s:s,s:s,s:s}]", "op", "test", "path", "/data/m",
	                       "value", "1", "op", "replace", "path", "/data/m", "value", "2");
	rc = pk_kube_client_patch(cli, &one, PK_KUBE_PATCH_JSON, jp, NULL, &out, &e);
	expect("json patch", rc, PK_KUBE_OK, &e);
	if (strcmp(data_of(out, "m"), "2") != 0)
		die("json patch", "not applied");
	json_decref(out);
	/* the same patch again: its test op fails now */
	rc = pk_kube_client_patch(cli, &one, PK_KUBE_PATCH_JSON, jp, NULL, &out, &e);
	if (rc == PK_KUBE_OK)
		die("json patch test op", "applied although the test op must fail");
	json_decref(jp);
	ok("merge patch; JSON patch; a failed test op is %s (HTTP %ld)", pk_kube_reason_name(rc),
	   e.code);
	json_t *ap =
	    json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
	              "metadata", "name", "cm-0001", "namespace", ns, "data", "applied", "yes");
	struct pk_kube_write_opts wo = {.field_manager = "pk-e2e", .force = true};
	rc = pk_kube_client_patch(cli, &one, PK_KUBE_PATCH_APPLY, ap, &wo, &out, &e);
	expect("server-side apply", rc, PK_KUBE_OK, &e);
	if (strcmp(data_of(out, "applied"), "yes") != 0)
		die("server-side apply", "not applied");
	json_decref(ap);
	ok("server-side apply");
	*applied = out;
}

/* Delete preconditions against the object as last written (applied). */
static void crud_delete(const char *ns, json_t *applied)
{
	struct pk_kube_error e;
	enum pk_kube_reason rc;
	struct pk_kube_ref one = cm_ref(ns, "cm-0001");
	json_t *obj, *out = applied;
	const char *uid = pk_json_meta_cstr(out, "uid");
	struct pk_kube_delete_opts d = {.uid = "00000000-0000-0000-0000-000000000000"};
	rc = pk_kube_client_delete(cli, &one, &d, NULL, &e);
	expect("delete with a wrong uid", rc, PK_KUBE_CONFLICT, &e);
	d = (struct pk_kube_delete_opts){.resource_version = "1"};
	rc = pk_kube_client_delete(cli, &one, &d, NULL, &e);
	expect("delete with a stale resourceVersion", rc, PK_KUBE_CONFLICT, &e);
	d = (struct pk_kube_delete_opts){.uid = uid,
	                                 .resource_version =
	                                     pk_json_meta_cstr(out, "resourceVersion"),
	                                 .propagation = "Background"};
	rc = pk_kube_client_delete(cli, &one, &d, NULL, &e);
	expect("delete with matching preconditions", rc, PK_KUBE_OK, &e);
	json_decref(out);
	rc = pk_kube_client_get(cli, &one, &obj, &e);
	expect("get after delete", rc, PK_KUBE_NOT_FOUND, &e);
	ok("delete: failed preconditions are Conflict; matching ones delete");
}

/* The status subresource of a CRD, and the immutable spec. */
static void crud_status(const char *ns)
{
	struct pk_kube_error e;
	enum pk_kube_reason rc;
	json_t *obj, *out;
	struct pk_kube_ref claims = {.group = "ipam.cluster.x-k8s.io",
	                             .version = "v1beta2",
	                             .resource = "ipaddressclaims",
	                             .namespace = ns};
	json_t *claim = json_pack("{s:s,s:s,s:{s:s},s:{s:{s:s,s:s,s:s}}}", "apiVersion",
	                          "ipam.cluster.x-k8s.io/v1beta2", "kind", "IPAddressClaim",
	                          "metadata", "name", "c1", "spec", "poolRef", "apiGroup",
	                          "ipam.poolkeeper.io", "kind", "IPPool", "name", "pool-a");
	rc = pk_kube_client_create(cli, &claims, claim, NULL, NULL, &e);
	expect("create claim", rc, PK_KUBE_OK, &e);
	json_decref(claim);
	struct pk_kube_ref st = claims;
	st.name = "c1";
	st.subresource = "status";
	json_t *sp = json_pack("{s:{s:{s:s}}}", "status", "addressRef", "name", "addr-1");
	rc = pk_kube_client_patch(cli, &st, PK_KUBE_PATCH_MERGE, sp, NULL, &out, &e);
	expect("patch status", rc, PK_KUBE_OK, &e);
	json_decref(sp);
	json_decref(out);
	struct pk_kube_ref c1 = claims;
	c1.name = "c1";
	rc = pk_kube_client_get(cli, &c1, &obj, &e);
	expect("get claim", rc, PK_KUBE_OK, &e);
	const char *an = json_string_value(
	    json_object_get(json_object_get(json_object_get(obj, "status"), "addressRef"), "name"));
	if (an == NULL || strcmp(an, "addr-1") != 0)
		die("status", "status.addressRef.name not set");
	/* an update of the main resource does not touch status, and the
	 * immutability policy answers Forbidden/Invalid for a spec change */
	json_object_set_new(json_object_get(json_object_get(obj, "spec"), "poolRef"), "name",
	                    json_string("pool-b"));
	rc = pk_kube_client_update(cli, &c1, obj, NULL, &out, &e);
	if (rc == PK_KUBE_OK)
		die("immutable spec", "spec change accepted");
	ok("status subresource patched; spec change refused as %s: %s", pk_kube_reason_name(rc),
	   e.message);
	json_decref(obj);
}

/* Discovery of a served group and of an unknown one. */
static void crud_discovery(void)
{
	struct pk_kube_error e;
	enum pk_kube_reason rc;
	json_t *vs;
	rc = pk_kube_client_group_versions(cli, "ipam.cluster.x-k8s.io", &vs, &e);
	expect("discovery", rc, PK_KUBE_OK, &e);
	bool has_b2 = false;
	size_t i;
	json_t *v;
	json_array_foreach(vs, i, v) has_b2 |= strcmp(json_string_value(v), "v1beta2") == 0;
	if (!has_b2)
		die("discovery", "v1beta2 not served");
	char *txt = json_dumps(vs, JSON_COMPACT);
	json_decref(vs);
	rc = pk_kube_client_group_versions(cli, "nothing.example.com", &vs, &e);
	expect("discovery of an unknown group", rc, PK_KUBE_NOT_FOUND, &e);
	ok("discovery: ipam.cluster.x-k8s.io serves %s; an unknown group is NotFound", txt);
	free(txt);
}

static int cmd_crud(const char *ns, int count)
{
	connect_client(500, 1000);
	crud_create(ns, count);
	crud_list(ns, count);
	crud_update(ns);
	json_t *applied;
	crud_patch(ns, &applied);
	crud_delete(ns, applied);
	crud_status(ns);
	crud_discovery();
	pk_kube_client_free(cli);
	pk_kube_config_free(cfg);
	return 0;
}

/* ---- informer ---- */

struct cmitem {
	char name[64];
	char value[64];
	char rv[32];
};

static void *cm_transform(void *ud, const json_t *obj)
{
	(void)ud;
	struct cmitem *it = calloc(1, sizeof(*it));
	if (it == NULL)
		return NULL;
	snprintf(it->name, sizeof(it->name), "%s", pk_json_meta_cstr(obj, "name"));
	snprintf(it->value, sizeof(it->value), "%s", data_of(obj, "v"));
	const char *rv = pk_json_meta_cstr(obj, "resourceVersion");
	snprintf(it->rv, sizeof(it->rv), "%s", rv ? rv : "");
	return it;
}

static int n_add, n_update, n_delete, n_dup;
static char last_rv[4096][40]; /* key hash -> last version reported, to spot duplicates */

static unsigned slot_of(const char *key)
{
	unsigned h = 5381;
	for (; *key; key++)
		h = h * 33 + (unsigned char)*key;
	return h % 4096;
}

static void note(const char *key, const struct cmitem *it)
{
	unsigned s = slot_of(key);
	if (strcmp(last_rv[s], it->rv) == 0)
		n_dup++;
	snprintf(last_rv[s], sizeof(last_rv[s]), "%s", it->rv);
}

static void h_add(void *ud, const char *key, const void *item)
{
	(void)ud;
	n_add++;
	note(key, item);
}

static void h_update(void *ud, const char *key, const void *old, const void *item)
{
	(void)ud;
	(void)old;
	n_update++;
	note(key, item);
}

static void h_delete(void *ud, const char *key, const void *item)
{
	(void)ud;
	(void)item;
	n_delete++;
	last_rv[slot_of(key)][0] = '\0';
}

static void h_synced(void *ud)
{
	(void)ud;
	printf("synced\n");
	fflush(stdout);
}

struct dump {
	char **lines;
	size_t n;
};

static void collect(void *ud, const char *key, const void *item)
{
	(void)key;
	struct dump *d = ud;
	const struct cmitem *it = item;
	size_t len = strlen(it->name) + strlen(it->value) + 2;
	d->lines[d->n] = malloc(len);
	snprintf(d->lines[d->n], len, "%s=%s", it->name, it->value);
	d->n++;
}

static int cmpstr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void has_final(void *ud, const char *key, const void *item)
{
	(void)key;
	(void)item;
	*(bool *)ud = true;
}

static int cmd_informer(const char *ns, const char *label, const char *final, const char *dumpf,
                        long timeout_s)
{
	connect_client(0, 0);
	struct pk_kube_informer_opts o = {
	    .ref = {.version = "v1", .resource = "configmaps", .namespace = ns},
	    .label_selector = label,
	    .page_size = 50,
	    .transform = cm_transform,
	    .handlers = {.on_add = h_add,
	                 .on_update = h_update,
	                 .on_delete = h_delete,
	                 .on_synced = h_synced},
	    .backoff_base_ms = 200,
	    .backoff_max_ms = 2000,
	};
	struct pk_kube_informer *inf;
	struct pk_err err;
	if (pk_kube_informer_new(cli, &o, &inf, &err) != PK_OK ||
	    pk_kube_informer_start(inf, &err) != PK_OK)
		die("informer", "%s", err.msg);
	long long end = pk_kube_now_ns() + timeout_s * 1000000000LL;
	enum pk_kube_informer_state last = PK_KUBE_INFORMER_STARTING;
	for (;;) {
		enum pk_kube_informer_state s = pk_kube_informer_state(inf);
		if (s != last) {
			printf("state %s\n", s == PK_KUBE_INFORMER_SYNCED  ? "synced"
			                     : s == PK_KUBE_INFORMER_STALE ? "stale"
			                                                   : "starting");
			fflush(stdout);
			last = s;
		}
		bool found = false;
		pk_kube_informer_get(inf, ns, final, has_final, &found);
		if (found && pk_kube_informer_synced(inf))
			break;
		if (pk_kube_now_ns() > end) {
			pk_kube_informer_free(inf);
			die("informer", "%s not seen in a synced store within %ld s", final,
			    timeout_s);
		}
		pk_kube_sleep_ns(50000000LL);
	}
	pk_kube_informer_stop(inf);
	struct dump d = {.lines = calloc(pk_kube_informer_count(inf) + 1, sizeof(char *))};
	pk_kube_informer_foreach(inf, collect, &d);
	qsort(d.lines, d.n, sizeof(char *), cmpstr);
	FILE *f = fopen(dumpf, "w");
	if (f == NULL)
		die("informer", "cannot write %s", dumpf);
	for (size_t i = 0; i < d.n; i++) {
		fprintf(f, "%s\n", d.lines[i]);
		free(d.lines[i]);
	}
	fclose(f);
	free(d.lines);
	ok("informer: %zu objects, lists=%lu adds=%d updates=%d deletes=%d duplicates=%d",
	   pk_kube_informer_count(inf), pk_kube_informer_lists(inf), n_add, n_update, n_delete,
	   n_dup);
	pk_kube_informer_free(inf);
	pk_kube_client_free(cli);
	pk_kube_config_free(cfg);
	return n_dup == 0 ? 0 : 1;
}

/* ---- auth ---- */

static int cmd_whoami(void)
{
	connect_client(0, 0);
	json_t *review = json_pack("{s:s,s:s}", "apiVersion", "authentication.k8s.io/v1", "kind",
	                           "SelfSubjectReview");
	struct pk_kube_ref r = {
	    .group = "authentication.k8s.io", .version = "v1", .resource = "selfsubjectreviews"};
	json_t *out;
	struct pk_kube_error e;
	enum pk_kube_reason rc = pk_kube_client_create(cli, &r, review, NULL, &out, &e);
	expect("whoami", rc, PK_KUBE_OK, &e);
	const char *user = json_string_value(json_object_get(
	    json_object_get(json_object_get(out, "status"), "userInfo"), "username"));
	printf("%s\n", user ? user : "");
	json_decref(out);
	json_decref(review);
	pk_kube_client_free(cli);
	pk_kube_config_free(cfg);
	return 0;
}

static int cmd_list(const char *ns)
{
	connect_client(0, 0);
	struct pk_kube_ref r = cm_ref(ns, NULL);
	json_t *out;
	struct pk_kube_error e;
	enum pk_kube_reason rc = pk_kube_client_list_all(cli, &r, NULL, &out, &e);
	if (rc != PK_KUBE_OK) {
		printf("%s %ld %s\n", pk_kube_reason_name(rc), e.code, e.message);
		return 2;
	}
	printf("%zu\n", json_array_size(json_object_get(out, "items")));
	json_decref(out);
	pk_kube_client_free(cli);
	pk_kube_config_free(cfg);
	return 0;
}

static int on_any(void *ud, const struct pk_kube_event *ev)
{
	(void)ud;
	printf("event %s %s\n", pk_kube_event_type_name(ev->type),
	       ev->resource_version ? ev->resource_version : "-");
	fflush(stdout);
	return 0;
}

static atomic_int gone_stop;

static void *gone_deadline(void *arg)
{
	(void)arg;
	pk_kube_sleep_ns(60 * 1000000000LL);
	atomic_store(&gone_stop, 1);
	return NULL;
}

static int cmd_watch_gone(const char *ns, const char *rv)
{
	connect_client(0, 0);
	struct pk_kube_ref r = cm_ref(ns, NULL);
	struct pk_kube_watch_opts o = {
	    .resource_version = rv, .bookmarks = true, .timeout_s = 30, .stop = &gone_stop};
	pthread_t t;
	pthread_create(&t, NULL, gone_deadline, NULL);
	pthread_detach(t);
	struct pk_kube_error e;
	enum pk_kube_reason rc = pk_kube_watch_run(cli, &r, &o, on_any, NULL, NULL, 0, &e);
	expect("watch from a compacted version", rc, PK_KUBE_GONE, &e);
	ok("watch from %s: Gone (HTTP %ld, %s): %s", rv, e.code, e.status_reason, e.message);
	pk_kube_client_free(cli);
	pk_kube_config_free(cfg);
	return 0;
}

int pk_kube_e2e_lease(struct pk_kube_client *c, const char *ns, const char *name, const char *id,
                      long seconds);
int pk_kube_e2e_event(struct pk_kube_client *c, const char *ns, const char *kind, const char *name,
                      const char *reason, const char *msg, int times);

static long num(const char *s, long lo, long hi)
{
	int64_t v;
	if (pk_parse_i64(s, lo, hi, &v, NULL) != PK_OK)
		die("usage", "\"%s\" is not a number in [%ld, %ld]", s, lo, hi);
	return (long)v;
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	if (argc >= 4 && strcmp(argv[1], "crud") == 0)
		return cmd_crud(argv[2], (int)num(argv[3], 1, 100000));
	if (argc >= 7 && strcmp(argv[1], "informer") == 0)
		return cmd_informer(argv[2], argv[3], argv[4], argv[5], num(argv[6], 1, 3600));
	if (argc >= 2 && strcmp(argv[1], "whoami") == 0)
		return cmd_whoami();
	if (argc >= 3 && strcmp(argv[1], "list") == 0)
		return cmd_list(argv[2]);
	if (argc >= 4 && strcmp(argv[1], "watch-gone") == 0)
		return cmd_watch_gone(argv[2], argv[3]);
	if (argc >= 6 && strcmp(argv[1], "lease") == 0) {
		connect_client(0, 0);
		return pk_kube_e2e_lease(cli, argv[2], argv[3], argv[4], num(argv[5], 1, 3600));
	}
	if (argc >= 8 && strcmp(argv[1], "event") == 0) {
		connect_client(0, 0);
		return pk_kube_e2e_event(cli, argv[2], argv[3], argv[4], argv[5], argv[6],
		                         (int)num(argv[7], 1, 10000));
	}
	fprintf(stderr, "usage: see the comment at the top of e2e/driver/kube_e2e.c\n");
	return 2;
}
