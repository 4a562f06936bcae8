/*
 * pool_lookup.c - the contract rules that read other objects through a
 * struct pk_pool_lookup (pool_lookup.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "pool.h"
#include "pool_lookup.h"
#include "pool_ref.h"
#include "rules.h"

static const char *meta_str(const json_t *obj, const char *key)
{
	return pk_json_cstr_at(json_object_get(obj, "metadata"), key);
}

static bool has_annotation(const json_t *obj, const char *key)
{
	const json_t *ann = json_object_get(json_object_get(obj, "metadata"), "annotations");
	return json_is_object(ann) && json_object_get(ann, key) != NULL;
}

/* Says which check could not run, before the lookup's own reason. */
static int wrap_err(struct pk_err *err, int rc, const char *what)
{
	char inner[PK_ERR_MSG_MAX];
	snprintf(inner, sizeof(inner), "%s", err->msg);
	return pk_err_set(err, rc, "%s: %s", what, inner);
}

char *pk_pool_lookup_object_name(char *buf, size_t len, const char *kind, const char *ns,
                                 const char *name)
{
	char qn[300], qs[300];
	pk_text_quote(name ? name : "", name ? strlen(name) : 0, qn, sizeof(qn));
	if (ns != NULL && ns[0] != '\0') {
		pk_text_quote(ns, strlen(ns), qs, sizeof(qs));
		snprintf(buf, len, "%s %s/%s", kind, qs, qn[0] ? qn : "(generated name)");
	} else {
		snprintf(buf, len, "%s %s", kind, qn[0] ? qn : "(generated name)");
	}
	return buf;
}

/*
 * How a message names another object: by name only when it lives in the
 * checked object's own namespace, since the requester may not be allowed
 * to read anything else (another namespace's pools and addresses, or
 * cluster-scoped pools). Anything else is described by its kind alone; an
 * admin finds it with kubectl or `poolkeeper audit`.
 */
static bool nameable(const char *req_ns, const char *other_ns)
{
	return req_ns != NULL && req_ns[0] != '\0' && other_ns != NULL &&
	       strcmp(req_ns, other_ns) == 0;
}

/* "a" or "an" before a kind's name, as it is said ("an IPPool", "a GlobalIPPool"). */
static const char *article(const char *kind)
{
	return kind[0] != '\0' && strchr("AEIOU", kind[0]) != NULL ? "an" : "a";
}

/* How a message names `other`, a pool of kind pk: a namespaced kind's pool by name when it is
 * in namespace ns, else by its kind and scope only. */
static void other_pool_name(const struct pk_pool_lookup *lk, const char *ns,
                            const struct pk_pool_kind *pk, const json_t *other, char *buf,
                            size_t len)
{
	const char *ons = meta_str(other, "namespace");
	if (lk->name_pool != NULL)
		lk->name_pool(lk->ctx, other, buf, len);
	else if (pk->namespaced && nameable(ns, ons))
		pk_pool_lookup_object_name(buf, len, pk->kind, ons, meta_str(other, "name"));
	else if (pk->namespaced)
		snprintf(buf, len, "%s %s of %s namespace", article(pk->kind), pk->kind,
		         ns != NULL && ns[0] != '\0' ? "another" : "a");
	else
		snprintf(buf, len, "%s %s", article(pk->kind), pk->kind);
}

/* The decoded spec of a pool object; false (and nothing to release) when it has no usable set. */
static bool decode(const json_t *obj, struct pk_pool *p)
{
	struct pk_violations ignore;
	pk_violations_init(&ignore);
	memset(p, 0, sizeof(*p));
	if (pk_pool_decode(json_object_get(obj, "spec"), p, &ignore) == PK_OK && p->usable != NULL)
		return true;
	pk_pool_release(p);
	return false;
}

/* Whether `other`, a pool of kind `kind`, is the pool id of kind mine names. */
static bool is_self(const struct pk_pool_id *id, const struct pk_pool_kind *mine,
                    const struct pk_pool_kind *kind, const json_t *other)
{
	const char *ons = meta_str(other, "namespace"), *oname = meta_str(other, "name");
	return id->name != NULL && oname != NULL && kind == mine && strcmp(oname, id->name) == 0 &&
	       (!mine->namespaced || (ons != NULL && id->ns != NULL && strcmp(ons, id->ns) == 0));
}

int pk_pool_lookup_check_overlaps(const struct pk_pool_lookup *lk, const struct pk_pool_id *id,
                                  const json_t *pool, struct pk_violations *out, struct pk_err *err)
{
	const struct pk_pool_kind *mine = pk_pool_kind_find(PK_POOL_GROUP, id->kind);
	if (mine == NULL) {
		char q[300];
		pk_text_quote(id->kind != NULL ? id->kind : "",
		              id->kind != NULL ? strlen(id->kind) : 0, q, sizeof(q));
		return pk_err_set(
		    err, PK_ERR_INVALID,
		    "cannot check overlap with other pools: \"%s\" is not a pool kind "
		    "of %s",
		    q, PK_POOL_GROUP);
	}
	struct pk_pool me;
	if (!decode(pool, &me))
		return PK_OK; /* the spec itself is already reported */
	size_t n;
	const struct pk_pool_kind *kinds = pk_pool_kinds(&n);
	int rc = PK_OK;
	for (size_t s = 0; s < n && rc == PK_OK; s++) {
		const struct pk_pool_kind *kind = &kinds[s];
		json_t *items = NULL, *other;
		size_t i;
		/* Two pools of namespaced kinds meet only in one namespace; a pool of a
		 * cluster-scoped kind meets every pool of every namespace. */
		const char *scope = mine->namespaced && kind->namespaced ? id->ns : NULL;
		rc = lk->list_pools(lk->ctx, kind->kind, scope, &items, err);
		if (rc != PK_OK) {
			rc = wrap_err(err, rc, "cannot check overlap with other pools");
			break;
		}
		json_array_foreach(items, i, other)
		{
			struct pk_pool theirs;
			if (meta_str(other, "name") == NULL || is_self(id, mine, kind, other) ||
			    !decode(other, &theirs))
				continue;
			char name[PK_OBJECT_NAME_MAX];
			other_pool_name(lk, id->ns, kind, other, name, sizeof(name));
			pk_rules_check_pool_overlap(&me, &theirs, name, out);
			pk_pool_release(&theirs);
		}
		json_decref(items);
	}
	pk_pool_release(&me);
	return rc;
}

/* spec.address of every IPAddress in `items` but the one named ns/name, borrowed. */
static const char **address_texts(const json_t *items, const char *ns, const char *name, size_t *n)
{
	const char **texts = calloc(json_array_size(items) + 1, sizeof(*texts));
	size_t i;
	const json_t *a;
	*n = 0;
	if (texts == NULL)
		return NULL;
	json_array_foreach(items, i, a)
	{
		const char *t = pk_json_cstr_at(json_object_get(a, "spec"), "address");
		const char *ans = meta_str(a, "namespace"), *aname = meta_str(a, "name");
		bool self = name != NULL && ns != NULL && ans != NULL && aname != NULL &&
		            strcmp(ans, ns) == 0 && strcmp(aname, name) == 0;
		if (t != NULL && !self)
			texts[(*n)++] = t;
	}
	return texts;
}

int pk_pool_lookup_check_shrink(const struct pk_pool_lookup *lk, const struct pk_pool_id *id,
                                const json_t *pool, struct pk_violations *out, struct pk_err *err)
{
	json_t *items = NULL;
	size_t n = 0;
	int rc = lk->list_pool_addresses(lk->ctx, id->kind, id->ns, id->name, &items, err);
	if (rc != PK_OK)
		return wrap_err(err, rc, "cannot check addresses in use");
	const char **texts = address_texts(items, NULL, NULL, &n);
	struct pk_pool me;
	if (texts == NULL) {
		rc = pk_err_set(err, PK_ERR_NOMEM, "cannot check addresses in use: out of memory");
	} else if (decode(pool, &me)) {
		pk_rules_check_pool_shrink(&me, texts, n, out);
		pk_pool_release(&me);
	}
	free(texts);
	json_decref(items);
	return rc;
}

bool pk_pool_lookup_protects_delete(const json_t *old)
{
	return !has_annotation(old, PK_DELETE_FOR_MOVE_ANNOTATION) &&
	       !has_annotation(old, PK_SKIP_DELETE_PROTECTION_ANNOTATION);
}

int pk_pool_lookup_check_delete(const struct pk_pool_lookup *lk, const struct pk_pool_id *id,
                                const json_t *old, struct pk_violations *out, struct pk_err *err)
{
	if (!pk_pool_lookup_protects_delete(old))
		return PK_OK;
	json_t *items = NULL;
	int rc = lk->list_pool_addresses(lk->ctx, id->kind, id->ns, id->name, &items, err);
	if (rc != PK_OK)
		return wrap_err(err, rc, "cannot check for IPAddresses allocated from it");
	size_t total = json_array_size(items);
	if (total > 0) {
		/* The first one is named when it is in the pool's namespace (always, for a
		 * namespaced kind's pool); a cluster-scoped kind's may be anywhere. */
		const json_t *first = json_array_get(items, 0);
		const char *fns = meta_str(first, "namespace");
		char who[PK_OBJECT_NAME_MAX + 16] = "";
		if (nameable(id->ns, fns)) {
			char one[PK_OBJECT_NAME_MAX];
			pk_pool_lookup_object_name(one, sizeof(one), PK_ADDRESS_KIND, fns,
			                           meta_str(first, "name"));
			snprintf(who, sizeof(who), " (first: %s)", one);
		}
		pk_violations_add(out, PK_SEV_DENY, NULL,
		                  "%zu IPAddress%s allocated from this pool still exist%s%s; "
		                  "delete the claims that hold them first, or annotate the pool "
		                  "with %s to delete it anyway",
		                  total, total == 1 ? "" : "es", total == 1 ? "s" : "", who,
		                  PK_SKIP_DELETE_PROTECTION_ANNOTATION);
	}
	json_decref(items);
	return PK_OK;
}

/* The pool of poolkeeper's that spec.poolRef of an IPAddress of namespace ns names; kind
 * NULL when it names none (another provider's, or a kind the table does not have). */
static struct pk_pool_id ipaddress_pool(const json_t *addr, const char *ns)
{
	struct pk_pool_ref r;
	struct pk_pool_id id = {0};
	if (pk_pool_ref_read(pk_json_path(addr, "spec", "poolRef"), ns, &r) && r.pk != NULL)
		id = (struct pk_pool_id){.kind = r.pk->kind, .ns = r.ns, .name = r.name};
	return id;
}

int pk_pool_lookup_check_ipaddress_pool(const struct pk_pool_lookup *lk, const char *ns,
                                        const json_t *addr, struct pk_violations *out,
                                        struct pk_err *err)
{
	struct pk_pool_id id = ipaddress_pool(addr, ns);
	char pool_text[PK_OBJECT_NAME_MAX], what[PK_OBJECT_NAME_MAX + 16];
	json_t *pool = NULL;
	struct pk_pool p;
	if (id.kind == NULL || id.name == NULL)
		return PK_OK; /* no pool of ours: pk_rules_check_ipaddress reports the poolRef */
	pk_pool_lookup_object_name(pool_text, sizeof(pool_text), id.kind, id.ns, id.name);
	int rc = lk->get_pool(lk->ctx, id.kind, id.ns, id.name, &pool, err);
	if (rc != PK_OK) {
		snprintf(what, sizeof(what), "cannot read %s", pool_text);
		return wrap_err(err, rc, what);
	}
	if (pool == NULL) {
		/* clusterctl move may recreate addresses in any order: warn only. */
		if (!lk->partial)
			pk_violations_add(out, PK_SEV_WARN, NULL, "%s does not exist", pool_text);
		return PK_OK;
	}
	const struct pk_pool *known = lk->decoded_pool ? lk->decoded_pool(lk->ctx, pool) : NULL;
	memset(&p, 0, sizeof(p));
	if (known == NULL) {
		struct pk_violations ignore;
		pk_violations_init(&ignore);
		if (pk_pool_decode(json_object_get(pool, "spec"), &p, &ignore) == PK_OK)
			known = &p;
	}
	if (known != NULL)
		pk_rules_check_ipaddress_in_pool(addr, known, pool_text, false, out);
	pk_pool_release(&p);
	json_decref(pool);
	return PK_OK;
}

int pk_pool_lookup_check_ipaddress_unique(const struct pk_pool_lookup *lk, const char *ns,
                                          const char *name, const json_t *addr,
                                          struct pk_violations *out, struct pk_err *err)
{
	struct pk_pool_id id = ipaddress_pool(addr, ns);
	json_t *items = NULL;
	size_t n = 0;
	if (id.kind == NULL || id.name == NULL)
		return PK_OK; /* no pool of ours: pk_rules_check_ipaddress reports the poolRef */
	int rc = lk->list_pool_addresses(lk->ctx, id.kind, id.ns, id.name, &items, err);
	if (rc != PK_OK)
		return wrap_err(err, rc, "cannot check whether the address is free");
	const char **texts = address_texts(items, ns, name, &n);
	if (texts == NULL)
		rc = pk_err_set(err, PK_ERR_NOMEM,
		                "cannot check whether the address is free: out of memory");
	else
		pk_rules_check_ipaddress_unique(addr, texts, n, out);
	free(texts);
	json_decref(items);
	return rc;
}
