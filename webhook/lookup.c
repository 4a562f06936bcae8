/* lookup.c - admission lookups over the Kubernetes API client. */
#include <stdlib.h>
#include <string.h>

#include "kube_client.h"
#include "log.h"
#include "lookup.h"
#include "rules.h"

struct pk_lookup {
	struct pk_kube_config *cfg;
	struct pk_kube_client *client;
	struct pk_kube_log log;
	struct pk_admission_lookup admission;
	char ipaddress_version[16]; /* v1beta2, or v1beta1 on CAPI before 1.11 */
};

static const char *pool_resource(const char *kind)
{
	return strcmp(kind, PK_GLOBAL_POOL_KIND) == 0 ? "globalippools" : "ippools";
}

static int failed(struct pk_err *err, const char *what, const struct pk_kube_error *e)
{
	return pk_err_set(err, PK_ERR_INVALID, "%s: %s (%s)", what, e->message,
	                  pk_kube_reason_name(e->reason));
}

/* items of a List, as a new reference */
static json_t *take_items(json_t *list)
{
	json_t *items = json_object_get(list, "items");
	items = json_is_array(items) ? json_incref(items) : json_array();
	json_decref(list);
	return items;
}

static int list_pools(void *ctx, const char *kind, const char *ns, json_t **items,
                      struct pk_err *err)
{
	struct pk_lookup *l = ctx;
	struct pk_kube_ref r = {.group = PK_POOL_GROUP,
	                        .version = "v1alpha1",
	                        .resource = pool_resource(kind),
	                        .namespace = strcmp(kind, PK_GLOBAL_POOL_KIND) == 0 ? NULL : ns};
	struct pk_kube_list_opts o = {0};
	struct pk_kube_error e;
	json_t *list = NULL;
	if (pk_kube_client_list_all(l->client, &r, &o, &list, &e) != PK_KUBE_OK)
		return failed(err, kind, &e);
	*items = take_items(list);
	return PK_OK;
}

static bool names_pool(const json_t *addr, const char *kind, const char *name)
{
	const json_t *ref = json_object_get(json_object_get(addr, "spec"), "poolRef");
	const char *g = json_string_value(json_object_get(ref, "apiGroup"));
	const char *k = json_string_value(json_object_get(ref, "kind"));
	const char *n = json_string_value(json_object_get(ref, "name"));
	return g != NULL && k != NULL && n != NULL && name != NULL &&
	       strcmp(g, PK_POOL_GROUP) == 0 && strcmp(k, kind) == 0 && strcmp(n, name) == 0;
}

static int list_pool_addresses(void *ctx, const char *kind, const char *ns, const char *name,
                               json_t **items, struct pk_err *err)
{
	struct pk_lookup *l = ctx;
	/* CAPI's IPAddress CRD has no selectable poolRef field: list and filter. */
	struct pk_kube_ref r = {.group = PK_CAPI_IPAM_GROUP,
	                        .version = l->ipaddress_version,
	                        .resource = "ipaddresses",
	                        .namespace = ns};
	struct pk_kube_list_opts o = {0};
	struct pk_kube_error e;
	json_t *list = NULL;
	if (pk_kube_client_list_all(l->client, &r, &o, &list, &e) != PK_KUBE_OK)
		return failed(err, "IPAddresses", &e);
	json_t *all = take_items(list);
	*items = json_array();
	size_t i;
	json_t *a;
	json_array_foreach(all, i, a)
	{
		if (names_pool(a, kind, name))
			json_array_append(*items, a);
	}
	json_decref(all);
	return PK_OK;
}

static int get_pool(void *ctx, const char *kind, const char *ns, const char *name, json_t **obj,
                    struct pk_err *err)
{
	struct pk_lookup *l = ctx;
	struct pk_kube_ref r = {.group = PK_POOL_GROUP,
	                        .version = "v1alpha1",
	                        .resource = pool_resource(kind),
	                        .namespace = strcmp(kind, PK_GLOBAL_POOL_KIND) == 0 ? NULL : ns,
	                        .name = name};
	struct pk_kube_error e;
	*obj = NULL;
	enum pk_kube_reason rc = pk_kube_client_get(l->client, &r, obj, &e);
	if (rc == PK_KUBE_NOT_FOUND)
		return PK_OK;
	if (rc != PK_KUBE_OK)
		return failed(err, kind, &e);
	return PK_OK;
}

static int get_claim(void *ctx, const char *ns, const char *name, json_t **obj,
                     struct pk_err *err)
{
	struct pk_lookup *l = ctx;
	struct pk_kube_ref r = {.group = PK_CAPI_IPAM_GROUP,
	                        .version = l->ipaddress_version,
	                        .resource = "ipaddressclaims",
	                        .namespace = ns,
	                        .name = name};
	struct pk_kube_error e;
	*obj = NULL;
	enum pk_kube_reason rc = pk_kube_client_get(l->client, &r, obj, &e);
	if (rc == PK_KUBE_NOT_FOUND)
		return PK_OK;
	if (rc != PK_KUBE_OK)
		return failed(err, "IPAddressClaim", &e);
	return PK_OK;
}

int pk_lookup_open(const char *kubeconfig, struct pk_lookup **out, struct pk_err *err)
{
	*out = NULL;
	bool have_path = kubeconfig != NULL && kubeconfig[0] != '\0';
	const char *env = getenv("KUBECONFIG");
	if (!have_path && (env == NULL || env[0] == '\0') &&
	    getenv("KUBERNETES_SERVICE_HOST") == NULL)
		return PK_OK; /* no API access */

	struct pk_lookup *l = calloc(1, sizeof(*l));
	if (l == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	pk_log_kube_sink(&l->log);
	struct pk_kube_config_opts co = {
	    .path = have_path ? kubeconfig : NULL, .log = &l->log, .allow_exec = true};
	int rc = pk_kube_config_load(&co, &l->cfg, err);
	if (rc != PK_OK)
		goto fail;
	/* Admission answers within the apiserver's timeout (10 s by default): fail fast. */
	struct pk_kube_client_opts opts = {
	    .qps = 50, .burst = 100, .timeout_ms = 5000, .connect_timeout_ms = 2000};
	rc = pk_kube_client_new(l->cfg, &opts, &l->client, err);
	if (rc != PK_OK)
		goto fail;
	/* Which IPAddress version the cluster serves decides how addresses are read:
	 * v1beta2 unless only v1beta1 is served. */
	static const char *const prefer[] = {"v1beta2", "v1beta1", NULL};
	struct pk_kube_error e;
	if (pk_kube_client_preferred_version(l->client, PK_CAPI_IPAM_GROUP, prefer,
	                                     l->ipaddress_version, sizeof(l->ipaddress_version),
	                                     &e) != PK_KUBE_OK)
		pk_log_warn("cannot read which versions of ipam.cluster.x-k8s.io are served; "
		            "assuming v1beta2",
		            PK_LOG_STR("error", e.message));
	if (l->ipaddress_version[0] == '\0') /* not read, or served in neither */
		snprintf(l->ipaddress_version, sizeof(l->ipaddress_version), "v1beta2");
	l->admission.ctx = l;
	l->admission.list_pools = list_pools;
	l->admission.list_pool_addresses = list_pool_addresses;
	l->admission.get_pool = get_pool;
	l->admission.get_claim = get_claim;
	*out = l;
	return PK_OK;
fail:
	pk_lookup_close(l);
	return rc;
}

void pk_lookup_close(struct pk_lookup *l)
{
	if (l == NULL)
		return;
	pk_kube_client_free(l->client);
	pk_kube_config_free(l->cfg);
	free(l);
}

const struct pk_admission_lookup *pk_lookup_admission(const struct pk_lookup *l)
{
	return l != NULL ? &l->admission : NULL;
}

const char *pk_lookup_server(const struct pk_lookup *l)
{
	return l != NULL ? pk_kube_config_server(l->cfg) : "";
}
