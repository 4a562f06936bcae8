/* live.c - listing a live cluster's pools, IPAddresses and IPAddressClaims once. */
#include "live.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "json.h"
#include "kube_client.h"
#include "kube_config.h"
#include "parse.h"
#include "pool_ref.h"

int pk_live_init(struct pk_live *l)
{
	memset(l, 0, sizeof(*l));
	l->pools = json_array();
	l->addresses = json_array();
	l->claims = json_array();
	if (l->pools && l->addresses && l->claims)
		return PK_OK;
	pk_live_release(l);
	return PK_ERR_NOMEM;
}

void pk_live_release(struct pk_live *l)
{
	json_decref(l->pools);
	json_decref(l->addresses);
	json_decref(l->claims);
	pk_strmap_free(l->claim_index, NULL);
	pk_strmap_free(l->address_index, NULL);
	memset(l, 0, sizeof(*l));
}

const char *pk_live_namespace(const json_t *obj)
{
	const char *ns = pk_json_meta_cstr(obj, "namespace");
	return ns ? ns : "";
}

const char *pk_live_name(const json_t *obj)
{
	const char *name = pk_json_meta_cstr(obj, "name");
	return name ? name : "";
}

char *pk_live_describe(const json_t *obj, char *buf, size_t len)
{
	const char *kind = pk_json_cstr_at(obj, "kind"), *ns = pk_live_namespace(obj);
	snprintf(buf, len, "%s/%s%s%s", kind ? kind : "?", ns, *ns ? "/" : "", pk_live_name(obj));
	return buf;
}

static int index_items(const json_t *items, struct pk_strmap **out)
{
	*out = pk_strmap_new();
	if (*out == NULL)
		return PK_ERR_NOMEM;
	size_t i;
	json_t *obj;
	json_array_foreach(items, i, obj)
	{
		char key[512];
		snprintf(key, sizeof(key), "%s/%s", pk_live_namespace(obj), pk_live_name(obj));
		if (pk_strmap_put(*out, key, obj, NULL) != PK_OK)
			return PK_ERR_NOMEM;
	}
	return PK_OK;
}

int pk_live_index(struct pk_live *l)
{
	pk_strmap_free(l->claim_index, NULL);
	pk_strmap_free(l->address_index, NULL);
	l->claim_index = l->address_index = NULL;
	if (index_items(l->claims, &l->claim_index) != PK_OK ||
	    index_items(l->addresses, &l->address_index) != PK_OK)
		return PK_ERR_NOMEM;
	return PK_OK;
}

static const json_t *find(const struct pk_strmap *m, const char *ns, const char *name)
{
	char key[512];
	if (m == NULL || name == NULL)
		return NULL;
	snprintf(key, sizeof(key), "%s/%s", ns ? ns : "", name);
	return pk_strmap_get(m, key);
}

const json_t *pk_live_claim(const struct pk_live *l, const char *ns, const char *name)
{
	return find(l->claim_index, ns, name);
}

const json_t *pk_live_address(const struct pk_live *l, const char *ns, const char *name)
{
	return find(l->address_index, ns, name);
}

static bool str_eq(const char *a, const char *b)
{
	return a != NULL && b != NULL && !strcmp(a, b);
}

bool pk_live_address_in_pool(const json_t *addr, const json_t *pool)
{
	struct pk_pool_ref r;
	const char *api = pk_json_cstr_at(pool, "apiVersion");
	size_t glen = api && strchr(api, '/') ? (size_t)(strchr(api, '/') - api) : 0;
	if (!pk_pool_ref_read(pk_json_path(addr, "spec", "poolRef"), pk_live_namespace(addr), &r) ||
	    glen == 0 || strlen(r.group) != glen || strncmp(r.group, api, glen) != 0)
		return false;
	return pk_pool_ref_is(&r, pk_json_cstr_at(pool, "kind"), pk_live_namespace(pool),
	                      pk_live_name(pool));
}

static int lookup_get_pool(void *ctx, const char *kind, const char *ns, const char *name,
                           json_t **obj, struct pk_err *err)
{
	const struct pk_live *l = ctx;
	size_t i;
	json_t *pool;
	(void)err;
	*obj = NULL;
	json_array_foreach(l->pools, i, pool)
	{
		if (str_eq(pk_json_cstr_at(pool, "kind"), kind) &&
		    !strcmp(pk_live_name(pool), name) &&
		    (ns == NULL || !strcmp(pk_live_namespace(pool), ns))) {
			*obj = json_incref(pool);
			break;
		}
	}
	return PK_OK;
}

void pk_live_lookup(const struct pk_live *l, struct pk_pool_lookup *lk)
{
	*lk = (struct pk_pool_lookup){.ctx = (void *)(uintptr_t)l, .get_pool = lookup_get_pool};
}

/* ---- listing ---- */

struct lister {
	const char *cmd;
	struct pk_kube_client *c;
	const char *ns;
};

/* "poolkeeper <cmd>: listing <resource>.<group>: <reason>: <words>"; PK_ERR_API. */
static int say_list_failed(const struct lister *ls, const char *resource, const char *group,
                           const struct pk_kube_error *e)
{
	fprintf(stderr, "poolkeeper %s: listing %s.%s: %s: %s\n", ls->cmd, resource, group,
	        pk_kube_reason_name(e->reason), e->message);
	return PK_ERR_API;
}

/*
 * Lists one resource into `into`, setting each item's apiVersion and kind.
 * With `unserved`, a resource the server does not serve (404) lists
 * nothing and is told there (reason PK_KUBE_NOT_FOUND, the server's
 * words); any other failure is printed.
 */
static int list_into(struct lister *ls, const char *group, const char *version,
                     const char *resource, const char *kind, bool namespaced, json_t *into,
                     struct pk_kube_error *unserved)
{
	struct pk_kube_ref ref = {.group = group,
	                          .version = version,
	                          .resource = resource,
	                          .namespace = namespaced ? ls->ns : NULL};
	struct pk_kube_list_opts o = {0};
	struct pk_kube_error e = {0};
	json_t *list = NULL;
	char api[128];
	enum pk_kube_reason rc = pk_kube_client_list_all(ls->c, &ref, &o, &list, &e);
	if (rc != PK_KUBE_OK) {
		json_decref(list);
		e.reason = rc;
		if (rc == PK_KUBE_NOT_FOUND && unserved != NULL) {
			*unserved = e;
			return PK_OK;
		}
		return say_list_failed(ls, resource, group, &e);
	}
	snprintf(api, sizeof(api), "%s/%s", group, version);
	size_t i;
	json_t *item;
	int status = PK_OK;
	json_array_foreach(json_object_get(list, "items"), i, item)
	{
		if (json_object_set_new(item, "apiVersion", json_string(api)) != 0 ||
		    json_object_set_new(item, "kind", json_string(kind)) != 0 ||
		    json_array_append(into, item) != 0)
			status = PK_ERR_NOMEM;
	}
	json_decref(list);
	return status;
}

/*
 * Every pool kind of pool_ref.h's table into `into`. A kind the server does
 * not serve (404: a cluster whose poolkeeper predates that kind's CRD) has
 * no pools; a server that serves none of them has no poolkeeper, and that
 * is the failure, said of the first kind.
 */
static int list_pools(struct lister *ls, json_t *into)
{
	size_t n, unserved = 0;
	const struct pk_pool_kind *pk = pk_pool_kinds(&n);
	struct pk_kube_error first = {0};
	for (size_t i = 0; i < n; i++) {
		struct pk_kube_error e = {0};
		int rc = list_into(ls, pk[i].group, pk[i].version, pk[i].resource, pk[i].kind,
		                   pk[i].namespaced, into, &e);
		if (rc != PK_OK)
			return rc;
		if (e.reason == PK_KUBE_NOT_FOUND)
			unserved++;
		if (i == 0)
			first = e;
	}
	return n > 0 && unserved == n ? say_list_failed(ls, pk[0].resource, pk[0].group, &first)
	                              : PK_OK;
}

static int list_everything(struct lister *ls, struct pk_live *l)
{
	static const char *const want[] = {PK_CAPI_V1BETA2, PK_CAPI_V1BETA1, NULL};
	struct pk_kube_error e = {0};
	char ipam_v[16] = "";
	if (pk_kube_client_preferred_version(ls->c, PK_CAPI_IPAM_GROUP, want, ipam_v,
	                                     sizeof(ipam_v), &e) != PK_KUBE_OK ||
	    !*ipam_v) {
		fprintf(stderr, "poolkeeper %s: %s must be served in %s or %s: %s\n", ls->cmd,
		        PK_CAPI_IPAM_GROUP, PK_CAPI_V1BETA2, PK_CAPI_V1BETA1,
		        *e.message ? e.message : "not served");
		return PK_ERR_API;
	}
	int rc = list_pools(ls, l->pools);
	if (rc == PK_OK)
		rc = list_into(ls, PK_CAPI_IPAM_GROUP, ipam_v, PK_ADDRESS_RESOURCE, PK_ADDRESS_KIND,
		               true, l->addresses, NULL);
	if (rc == PK_OK)
		rc = list_into(ls, PK_CAPI_IPAM_GROUP, ipam_v, PK_CLAIM_RESOURCE, PK_CLAIM_KIND,
		               true, l->claims, NULL);
	if (rc == PK_ERR_NOMEM)
		fprintf(stderr, "poolkeeper %s: out of memory\n", ls->cmd);
	return rc;
}

int pk_live_load(const char *cmd, const char *kubeconfig, const char *ns, struct pk_live *l)
{
	struct pk_kube_config_opts co = {.path = kubeconfig, .allow_exec = true};
	struct pk_kube_client_opts o = {.qps = 50, .burst = 100};
	struct pk_kube_config *cfg = NULL;
	struct lister ls = {.cmd = cmd, .ns = ns};
	struct pk_err err = {{0}};
	if (pk_live_init(l) != PK_OK) {
		fprintf(stderr, "poolkeeper %s: out of memory\n", cmd);
		return PK_ERR_NOMEM;
	}
	int rc = PK_ERR_API;
	if (pk_kube_config_load(&co, &cfg, &err) != PK_OK ||
	    pk_kube_client_new(cfg, &o, &ls.c, &err) != PK_OK)
		fprintf(stderr, "poolkeeper %s: %s\n", cmd, err.msg);
	else
		rc = list_everything(&ls, l);
	if (rc == PK_OK && pk_live_index(l) != PK_OK) {
		fprintf(stderr, "poolkeeper %s: out of memory\n", cmd);
		rc = PK_ERR_NOMEM;
	}
	pk_kube_client_free(ls.c);
	pk_kube_config_free(cfg);
	if (rc != PK_OK)
		pk_live_release(l);
	return rc;
}

/* ---- the commands' frame ---- */

#define EXIT_USAGE 2

int pk_live_write_json(const char *cmd, json_t *j)
{
	int rc = j != NULL && json_dumpf(j, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER) == 0
	             ? PK_OK
	             : PK_ERR_NOMEM;
	json_decref(j);
	if (rc == PK_OK)
		fputc('\n', stdout);
	else
		fprintf(stderr, "poolkeeper %s: out of memory\n", cmd);
	return rc;
}

/* Lists the cluster the flags name and runs the command on it. */
static int load_and_run(const struct pk_live_command *cmd, const struct pk_flag_value *vals)
{
	const struct pk_flag *t = cmd->flags;
	const char *ns = vals[PK_LIVE_F_NS].set ? pk_flags_get_string(t, vals, PK_LIVE_F_NS) : NULL;
	const char *kc = vals[PK_LIVE_F_KUBECONFIG].set
	                     ? pk_flags_get_string(t, vals, PK_LIVE_F_KUBECONFIG)
	                     : NULL;
	struct pk_err err = {{0}};
	struct pk_live live;
	if (ns && pk_parse_dns_name(ns, false, &err) != PK_OK) {
		fprintf(stderr, "poolkeeper %s: --namespace: %s\n", cmd->name, err.msg);
		return EXIT_USAGE;
	}
	if (pk_live_load(cmd->name, kc, ns, &live) != PK_OK)
		return EXIT_USAGE;
	int status = cmd->run(&live, vals, pk_flags_get_string(t, vals, PK_LIVE_F_OUTPUT));
	if (fflush(stdout) != 0) {
		fprintf(stderr, "poolkeeper %s: writing the report failed\n", cmd->name);
		status = EXIT_USAGE;
	}
	pk_live_release(&live);
	return status;
}

int pk_live_main(const struct pk_live_command *cmd, int argc, char *argv[])
{
	struct pk_flag_value *vals = calloc(cmd->nflags, sizeof(*vals));
	const char **pos = calloc((size_t)argc + 1, sizeof(*pos));
	struct pk_err err = {{0}};
	size_t npos = 0;
	int status = EXIT_USAGE;
	if (vals == NULL || pos == NULL) {
		fprintf(stderr, "poolkeeper %s: out of memory\n", cmd->name);
	} else if (pk_flags_parse(cmd->flags, cmd->nflags, argc, argv, vals, pos, &npos, &err) !=
	           PK_OK) {
		fprintf(stderr, "poolkeeper %s: %s\nRun 'poolkeeper %s --help' for usage.\n",
		        cmd->name, err.msg, cmd->name);
	} else if (pk_flags_get_bool(vals, PK_LIVE_F_HELP)) {
		pk_flags_print_help(stdout, cmd->usage, cmd->summary, cmd->flags, cmd->nflags);
		status = 0;
	} else if (npos > 0) {
		fprintf(stderr,
		        "poolkeeper %s: takes no arguments\nRun 'poolkeeper %s --help' for "
		        "usage.\n",
		        cmd->name, cmd->name);
	} else {
		status = load_and_run(cmd, vals);
	}
	free(vals);
	free(pos);
	return status;
}
