/* backend.c - what every pool backend shares; see backend.h. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "json.h"
#include "kube.h"

void pk_pool_view_clear(struct pk_pool_view *v)
{
	if (v == NULL)
		return;
	json_decref(v->obj);
	v->obj = NULL;
}

int pk_backend_view_pool(const struct pk_backend *b, const json_t *claim, json_t *pool,
                         struct pk_pool_view *out)
{
	const json_t *ref = pk_json_path(claim, "spec", "poolRef");
	memset(out, 0, sizeof(*out));
	out->obj = pool;
	const struct pk_pool_kind *kind =
	    pk_backend_pool_key(b, ref, pk_json_meta_cstr(claim, "namespace"), out->key,
	                        sizeof(out->key))
	        ? pk_backend_kind(b, pk_json_cstr_at(ref, "kind"))
	        : NULL;
	pk_pool_facts_from(claim, kind, pool, &out->facts);
	if (out->facts.state != PK_POOL_ACTIVE || b->ops->view_pool == NULL)
		return PK_OK;
	return b->ops->view_pool(b->self, out);
}

const struct pk_pool_kind *pk_backend_kind(const struct pk_backend *b, const char *kind)
{
	size_t n = 0;
	const struct pk_pool_kind *k = b->ops->kinds(b->self, &n);
	for (size_t i = 0; kind != NULL && i < n; i++)
		if (strcmp(k[i].kind, kind) == 0)
			return &k[i];
	return NULL;
}

bool pk_backend_resyncs(const struct pk_backend *b)
{
	return b->ops != NULL && b->ops->resync != NULL;
}

void pk_backend_cancel(const struct pk_backend *b)
{
	if (b->ops != NULL && b->ops->cancel != NULL)
		b->ops->cancel(b->self);
}

bool pk_backend_ready(const struct pk_backend *b, char *why, size_t len)
{
	return b->ops->ready == NULL || b->ops->ready(b->self, why, len);
}

bool pk_backend_pool_key(const struct pk_backend *b, const json_t *pool_ref, const char *ns,
                         char *out, size_t len)
{
	if (!b->ops->serves(b->self, pool_ref))
		return false;
	const char *kind = pk_json_cstr_at(pool_ref, "kind"),
	           *name = pk_json_cstr_at(pool_ref, "name");
	const struct pk_pool_kind *k = pk_backend_kind(b, kind);
	if (k == NULL || name == NULL)
		return false;
	pk_pool_key(kind, k->namespaced ? ns : "", name, out, len);
	return true;
}

void pk_pool_next_counts_moved(struct pk_pool_next *next, const char *pool_key)
{
	snprintf(next->pool_key, sizeof(next->pool_key), "%s", pool_key);
	next->sync = true;
}

struct pk_backend_result *pk_backend_result_set(struct pk_backend_result *r,
                                                enum pk_backend_status status, const char *reason,
                                                const char *fmt, ...)
{
	r->status = status;
	r->retry_after_ms = 0;
	memset(&r->next, 0, sizeof(r->next));
	snprintf(r->reason, sizeof(r->reason), "%s", reason != NULL ? reason : "");
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->message, sizeof(r->message), fmt, ap);
	va_end(ap);
	return r;
}
