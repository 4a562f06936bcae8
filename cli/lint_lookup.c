/* lint_lookup.c - the rules' lookup (pool_lookup.h) over what a lint loaded. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "json.h"
#include "lint_internal.h"
#include "rules.h"

/* ---- the rules' lookup over what was loaded ---- */

bool lint_is_kind(const struct pk_lint_object *o, const char *group, const char *kind)
{
	size_t n = strlen(group);
	return o->api_version != NULL && o->kind != NULL && !strncmp(o->api_version, group, n) &&
	       o->api_version[n] == '/' && !strcmp(o->kind, kind);
}

/* Whether object i is a pool of `kind` in namespace ns (NULL: any) named `name` (NULL: any). */
static bool pool_matches(const struct pk_lint *l, size_t i, const char *kind, const char *ns,
                         const char *name)
{
	const struct pk_lint_object *o = &l->objects[i];
	const char *ons = lint_effective_namespace(o);
	return lint_is_kind(o, PK_POOL_GROUP, kind) && o->name != NULL &&
	       (name == NULL || !strcmp(o->name, name)) &&
	       (ns == NULL || (ons != NULL && !strcmp(ons, ns)));
}

static int append(json_t *items, const json_t *value, struct pk_err *err)
{
	if (json_array_append(items, (json_t *)(uintptr_t)value) != 0)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	return PK_OK;
}

/* The pools that passed their own rules, loaded before l->before, but that one's duplicates. */
static int lookup_list_pools(void *ctx, const char *kind, const char *ns, json_t **items,
                             struct pk_err *err)
{
	struct pk_lint *l = ctx;
	const struct pk_lint_object *cur = l->before < l->n_objects ? &l->objects[l->before] : NULL;
	*items = json_array();
	if (*items == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < l->before; i++) {
		if (l->internal[i].pool == NULL || !pool_matches(l, i, kind, ns, NULL) ||
		    (cur != NULL && lint_same_identity(cur, &l->objects[i])))
			continue;
		if (append(*items, l->internal[i].value, err) != PK_OK) {
			json_decref(*items);
			return PK_ERR_NOMEM;
		}
	}
	return PK_OK;
}

static int lookup_list_pool_addresses(void *ctx, const char *kind, const char *ns, const char *name,
                                      json_t **items, struct pk_err *err)
{
	struct pk_lint *l = ctx;
	*items = json_array();
	if (*items == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < l->n_objects; i++) {
		const struct pk_lint_object *o = &l->objects[i];
		const json_t *v = l->internal[i].value;
		const json_t *ref = json_object_get(json_object_get(v, "spec"), "poolRef");
		const char *ons = lint_effective_namespace(o),
		           *rname = pk_json_cstr_at(ref, "name");
		const char *rkind = pk_json_cstr_at(ref, "kind");
		if (name == NULL || !lint_is_kind(o, PK_CAPI_IPAM_GROUP, PK_ADDRESS_KIND) ||
		    !pk_rules_is_poolkeeper_pool_ref(ref) || rname == NULL || strcmp(rname, name) ||
		    strcmp(rkind, kind) || (ns != NULL && strcmp(ons, ns)))
			continue;
		if (append(*items, v, err) != PK_OK) {
			json_decref(*items);
			return PK_ERR_NOMEM;
		}
	}
	return PK_OK;
}

/* The last definition of the pool (applying the files keeps the last). */
static int lookup_get_pool(void *ctx, const char *kind, const char *ns, const char *name,
                           json_t **obj, struct pk_err *err)
{
	struct pk_lint *l = ctx;
	(void)err;
	*obj = NULL;
	for (size_t i = l->n_objects; i-- > 0 && name != NULL;) {
		if (pool_matches(l, i, kind, strcmp(kind, PK_POOL_KIND) ? NULL : ns, name)) {
			*obj = json_incref((json_t *)(uintptr_t)l->internal[i].value);
			break;
		}
	}
	return PK_OK;
}

/* "IPPool default/a at file.yaml:3 (document 1)": which object, and where it was loaded. */
static void lookup_name_pool(void *ctx, const json_t *other, char *buf, size_t len)
{
	const struct pk_lint *l = ctx;
	char what[256];
	snprintf(buf, len, "another pool");
	for (size_t i = 0; i < l->n_objects; i++) {
		if (l->internal[i].value == other) {
			snprintf(buf, len, "%s at %s",
			         pk_lint_describe_object(&l->objects[i], what, sizeof(what)),
			         l->objects[i].origin);
			return;
		}
	}
}

void lint_init_lookup(struct pk_lint *l)
{
	l->lookup.ctx = l;
	l->lookup.list_pools = lookup_list_pools;
	l->lookup.list_pool_addresses = lookup_list_pool_addresses;
	l->lookup.get_pool = lookup_get_pool;
	l->lookup.name_pool = lookup_name_pool;
	l->lookup.partial = true;
}

const struct pk_pool_lookup *pk_lint_lookup(const struct pk_lint *l)
{
	return &l->lookup;
}
