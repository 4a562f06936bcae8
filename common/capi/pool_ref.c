/* pool_ref.c - poolkeeper's pool kinds, and which pool a reference names; see pool_ref.h. */
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "json.h"
#include "pool_ref.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const struct pk_pool_kind kinds[] = {
    {PK_POOL_KIND, PK_POOL_GROUP, PK_POOL_VERSION, PK_POOL_RESOURCE, true, PK_INCLUSTER_BACKEND,
     PK_POOL_SPEC_RANGES},
    {PK_GLOBAL_POOL_KIND, PK_POOL_GROUP, PK_POOL_VERSION, PK_GLOBAL_POOL_RESOURCE, false,
     PK_INCLUSTER_BACKEND, PK_POOL_SPEC_RANGES},
};

_Static_assert(COUNT(kinds) <= PK_POOL_KINDS_MAX, "PK_POOL_KINDS_MAX is too small");

const struct pk_pool_kind *pk_pool_kinds(size_t *n)
{
	*n = COUNT(kinds);
	return kinds;
}

const struct pk_pool_kind *pk_pool_kind_by_resource(const char *resource)
{
	for (size_t i = 0; resource != NULL && i < COUNT(kinds); i++)
		if (strcmp(kinds[i].resource, resource) == 0)
			return &kinds[i];
	return NULL;
}

const struct pk_pool_kind *pk_pool_kinds_of_backend(const char *backend, size_t *n)
{
	size_t first = COUNT(kinds), count = 0;
	for (size_t i = 0; backend != NULL && i < COUNT(kinds); i++) {
		if (strcmp(kinds[i].backend, backend) != 0)
			continue;
		if (first == COUNT(kinds))
			first = i;
		count++;
	}
	*n = count;
	return count ? &kinds[first] : NULL;
}

const struct pk_pool_kind *pk_pool_kind_find(const char *group, const char *kind)
{
	for (size_t i = 0; group != NULL && kind != NULL && i < COUNT(kinds); i++)
		if (strcmp(kinds[i].group, group) == 0 && strcmp(kinds[i].kind, kind) == 0)
			return &kinds[i];
	return NULL;
}

const struct pk_pool_kind *pk_pool_kind_of_ref(const json_t *pool_ref)
{
	return pk_pool_kind_find(pk_json_cstr_at(pool_ref, "apiGroup"),
	                         pk_json_cstr_at(pool_ref, "kind"));
}

bool pk_pool_ref_is_poolkeeper_group(const json_t *pool_ref)
{
	const char *group = pk_json_cstr_at(pool_ref, "apiGroup");
	return group != NULL && strcmp(group, PK_POOL_GROUP) == 0;
}

bool pk_pool_kind_namespaced(const char *group, const char *kind)
{
	const struct pk_pool_kind *k = pk_pool_kind_find(group, kind);
	if (k != NULL)
		return k->namespaced;
	return kind == NULL || strncmp(kind, "Global", 6) != 0;
}

bool pk_pool_ref_read(const json_t *pool_ref, const char *ns, struct pk_pool_ref *out)
{
	const char *group = pk_json_cstr_at(pool_ref, "apiGroup");
	memset(out, 0, sizeof(*out));
	out->group = group != NULL ? group : "";
	out->kind = pk_json_cstr_at(pool_ref, "kind");
	out->name = pk_json_cstr_at(pool_ref, "name");
	if (out->kind == NULL || out->kind[0] == '\0' || out->name == NULL || out->name[0] == '\0')
		return false;
	out->pk = pk_pool_kind_find(out->group, out->kind);
	if (!pk_pool_kind_namespaced(out->group, out->kind))
		return true;
	out->ns = ns;
	return ns != NULL && ns[0] != '\0';
}

bool pk_pool_ref_is(const struct pk_pool_ref *r, const char *kind, const char *ns, const char *name)
{
	if (kind == NULL || name == NULL || strcmp(r->kind, kind) != 0 ||
	    strcmp(r->name, name) != 0)
		return false;
	return r->ns == NULL || (ns != NULL && strcmp(r->ns, ns) == 0);
}

void pk_object_key(const char *ns, const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%.63s/%.253s", ns != NULL ? ns : "", name != NULL ? name : "");
}

void pk_pool_key(const char *kind, const char *ns, const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%.63s/%.63s/%.253s", kind != NULL ? kind : "", ns != NULL ? ns : "",
	         name != NULL ? name : "");
}

bool pk_pool_ref_key(const struct pk_pool_ref *r, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/%s/%s/%s", r->group, r->kind, r->ns != NULL ? r->ns : "",
	                 r->name);
	return n > 0 && (size_t)n < len;
}
