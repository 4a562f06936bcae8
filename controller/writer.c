/* writer.c - the leader-gated API writer and its error mapping; see writer.h. */
#include "writer.h"
#include "log.h"

#define MANAGER "poolkeeper-controller"

/* PK_KUBE_CANCELLED unless leading. */
static bool gate(struct pk_api_writer *w, struct pk_kube_error *e)
{
	if (atomic_load(w->leading))
		return true;
	(void)pk_kube_error_set(e, PK_KUBE_CANCELLED, -1, "not leading");
	return false;
}

static enum pk_kube_reason api_create(void *self, const struct pk_kube_ref *r, const json_t *obj,
                                      json_t **out, struct pk_kube_error *e)
{
	struct pk_api_writer *w = self;
	struct pk_kube_write_opts o = {.field_manager = MANAGER};
	if (!gate(w, e))
		return PK_KUBE_CANCELLED;
	return pk_kube_client_create(w->client, r, obj, &o, out, e);
}

static enum pk_kube_reason api_patch(void *self, const struct pk_kube_ref *r, bool merge,
                                     const json_t *patch, json_t **out, struct pk_kube_error *e)
{
	struct pk_api_writer *w = self;
	struct pk_kube_write_opts o = {.field_manager = MANAGER};
	if (!gate(w, e))
		return PK_KUBE_CANCELLED;
	return pk_kube_client_patch(w->client, r, merge ? PK_KUBE_PATCH_MERGE : PK_KUBE_PATCH_JSON,
	                            patch, &o, out, e);
}

static enum pk_kube_reason api_delete(void *self, const struct pk_kube_ref *r, const char *uid,
                                      struct pk_kube_error *e)
{
	struct pk_api_writer *w = self;
	struct pk_kube_delete_opts d = {.uid = uid};
	if (!gate(w, e))
		return PK_KUBE_CANCELLED;
	return pk_kube_client_delete(w->client, r, &d, NULL, e);
}

static enum pk_kube_reason api_get(void *self, const struct pk_kube_ref *r, json_t **out,
                                   struct pk_kube_error *e)
{
	struct pk_api_writer *w = self;
	return pk_kube_client_get(w->client, r, out, e);
}

static enum pk_kube_reason api_list(void *self, const struct pk_kube_ref *r, pk_kube_page_fn *fn,
                                    void *ud, struct pk_kube_error *e)
{
	struct pk_api_writer *w = self;
	/* resourceVersion unset: a consistent read. Pages of 250: a page of whole objects is
	 * about 11 KB each as parsed JSON, on top of everything the informers keep. A shutdown
	 * ends the read (100,000 IPAddresses take a minute or more). */
	struct pk_kube_list_opts o = {.limit = 250, .stop = w->stopping};
	return pk_kube_client_list_pages(w->client, r, &o, fn, ud, NULL, 0, e);
}

static const struct pk_writer_ops api_ops = {api_create, api_patch, api_delete, api_get, api_list};

struct pk_writer pk_api_writer(struct pk_api_writer *w)
{
	struct pk_writer out = {&api_ops, w};
	return out;
}

int pk_writer_failed(const char *what, const char *key, const struct pk_kube_error *e)
{
	pk_log_warn("write failed", PK_LOG_STR("write", what), PK_LOG_STR("object", key),
	            PK_LOG_STR("reason", pk_kube_reason_name(e->reason)),
	            PK_LOG_STR("error", e->message));
	return e->reason == PK_KUBE_NOMEM ? PK_ERR_NOMEM : PK_ERR_API;
}

int pk_writer_patch(struct pk_writer *w, const struct pk_kube_ref *r, bool merge, json_t *patch,
                    const char *what, const char *key, json_t **out)
{
	struct pk_kube_error e;
	if (out != NULL)
		*out = NULL;
	if (patch == NULL)
		return PK_OK;
	enum pk_kube_reason rc = w->ops->patch(w->self, r, merge, patch, out, &e);
	json_decref(patch);
	if (rc == PK_KUBE_NOT_FOUND)
		return PK_OK;
	if (rc != PK_KUBE_OK)
		return pk_writer_failed(what, key, &e);
	pk_log_debug("patched", PK_LOG_STR("write", what), PK_LOG_STR("object", key));
	return PK_OK;
}

int pk_writer_delete(struct pk_writer *w, const struct pk_kube_ref *r, const char *uid,
                     const char *what, const char *key)
{
	struct pk_kube_error e;
	enum pk_kube_reason rc = w->ops->delete (w->self, r, uid, &e);
	if (rc != PK_KUBE_OK && rc != PK_KUBE_NOT_FOUND)
		return pk_writer_failed(what, key, &e);
	return PK_OK;
}

int pk_writer_gone(struct pk_writer *w, const struct pk_kube_ref *r, const char *key, bool *gone)
{
	struct pk_kube_error e;
	json_t *o = NULL;
	enum pk_kube_reason rc = w->ops->get(w->self, r, &o, &e);
	json_decref(o);
	*gone = rc == PK_KUBE_NOT_FOUND;
	if (rc != PK_KUBE_OK && rc != PK_KUBE_NOT_FOUND)
		return pk_writer_failed("get", key, &e);
	return PK_OK;
}
