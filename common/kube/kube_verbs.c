/* kube_verbs.c - get, list (one page, every page, page by page), create, update, patch and
 * delete, over the transport. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "kube_client_int.h"

enum pk_kube_reason pk_kube_client_get(struct pk_kube_client *c, const struct pk_kube_ref *r,
                                       json_t **out, struct pk_kube_error *e)
{
	char path[PATH_MAX_LEN];
	enum pk_kube_reason rc;
	*out = NULL;
	if (r->name == NULL)
		return pk_kube_error_set(e, PK_KUBE_BAD_REQUEST, 0, "get needs a name");
	if ((rc = pk_kube_client_build_path(r, path, sizeof(path), e)) != PK_KUBE_OK)
		return rc;
	struct call k = {.method = "GET", .path = path, .timeout_ms = r->timeout_ms};
	return pk_kube_client_call_json(c, &k, out, e);
}

static enum pk_kube_reason list_path(const struct pk_kube_ref *r, const struct pk_kube_list_opts *o,
                                     char *path, size_t len, struct pk_kube_error *e)
{
	struct pk_kube_ref coll = *r;
	coll.name = NULL;
	coll.subresource = NULL;
	enum pk_kube_reason rc = pk_kube_client_build_path(&coll, path, len, e);
	if (rc != PK_KUBE_OK || o == NULL)
		return rc;
	char lim[32];
	snprintf(lim, sizeof(lim), "%ld", o->limit);
	if ((rc = pk_kube_client_add_query(path, len, "labelSelector", o->label_selector, e)) ||
	    (rc = pk_kube_client_add_query(path, len, "fieldSelector", o->field_selector, e)) ||
	    (rc = pk_kube_client_add_query(path, len, "limit", o->limit > 0 ? lim : NULL, e)) ||
	    (rc = pk_kube_client_add_query(path, len, "continue", o->continue_token, e)) ||
	    (rc = pk_kube_client_add_query(path, len, "resourceVersion", o->resource_version, e)))
		return rc;
	return PK_KUBE_OK;
}

/* Reports an object left out of a page: the log, and the caller's on_skip. */
struct skip_report {
	struct pk_kube_client *c;
	const char *path;
	const struct pk_kube_list_opts *o;
};

static void report_skip(void *ud, const char *ns, const char *name, const char *why)
{
	struct skip_report *sr = ud;
	char obj[620];
	pk_kube_quote_object(ns, name, obj, sizeof(obj));
	pk_kube_logf(&sr->c->log, PK_KUBE_LOG_WARN,
	             "kube list %s: object %s left out, it cannot be decoded: %s", sr->path, obj,
	             why);
	if (sr->o != NULL && sr->o->on_skip != NULL)
		sr->o->on_skip(sr->o->skip_ud, ns, name, why);
}

/* The List a page of limit 1 stands for when its one object was over the cap: no items,
 * and the members the scan picked out of it. */
static json_t *page_without_object(const struct pk_kube_scan *scan)
{
	const char *cont = pk_kube_scan_value(scan, 0), *rv = pk_kube_scan_value(scan, 1);
	const char *kind = pk_kube_scan_value(scan, 4), *api = pk_kube_scan_value(scan, 5);
	json_t *meta = json_object(), *page = json_object(), *items = json_array();
	if (meta == NULL || page == NULL || items == NULL ||
	    json_object_set_new(page, "items", items) != 0 ||
	    json_object_set_new(page, "metadata", meta) != 0 ||
	    (kind && json_object_set_new(page, "kind", json_string(kind)) != 0) ||
	    (api && json_object_set_new(page, "apiVersion", json_string(api)) != 0) ||
	    (cont && json_object_set_new(meta, "continue", json_string(cont)) != 0) ||
	    (rv && json_object_set_new(meta, "resourceVersion", json_string(rv)) != 0)) {
		json_decref(page);
		return NULL;
	}
	return page;
}

enum pk_kube_reason pk_kube_client_list(struct pk_kube_client *c, const struct pk_kube_ref *r,
                                        const struct pk_kube_list_opts *o, json_t **out,
                                        struct pk_kube_error *e)
{
	static const char *const scan_paths[] = {
	    "metadata.continue",
	    "metadata.resourceVersion",
	    "items.*.metadata.namespace",
	    "items.*.metadata.name",
	    "kind",
	    "apiVersion",
	};
	char path[PATH_MAX_LEN];
	*out = NULL;
	enum pk_kube_reason rc = list_path(r, o, path, sizeof(path), e);
	if (rc != PK_KUBE_OK)
		return rc;
	/* A page always has room for one object at its cap. */
	size_t cap =
	    c->max_bytes > c->max_object + PAGE_SLACK ? c->max_bytes : c->max_object + PAGE_SLACK;
	struct pk_kube_scan *scan = NULL;
	if (o != NULL && o->limit == 1 &&
	    (scan = pk_kube_scan_new(scan_paths, sizeof(scan_paths) / sizeof(scan_paths[0]))) ==
	        NULL)
		return pk_kube_error_set(e, PK_KUBE_NOMEM, 0, "out of memory");
	bool overflowed = false;
	struct call k = {.method = "GET",
	                 .path = path,
	                 .timeout_ms = r->timeout_ms,
	                 .stop = o ? o->stop : NULL,
	                 .max_bytes = cap,
	                 .overflow = scan,
	                 .overflowed = &overflowed};
	char *buf = NULL;
	size_t len = 0;
	struct skip_report sr = {c, path, o};
	rc = pk_kube_client_perform(c, &k, &buf, &len, e);
	if (rc == PK_KUBE_OK && overflowed) {
		/* The page's one object is over the cap: it streamed by unkept. */
		char why[160];
		snprintf(why, sizeof(why), "%zu bytes or more, over the %zu-byte cap on one object",
		         pk_kube_scan_bytes(scan) > PAGE_SLACK
		             ? pk_kube_scan_bytes(scan) - PAGE_SLACK
		             : pk_kube_scan_bytes(scan),
		         c->max_object);
		report_skip(&sr, pk_kube_scan_value(scan, 2), pk_kube_scan_value(scan, 3), why);
		if ((*out = page_without_object(scan)) == NULL)
			rc = pk_kube_error_set(e, PK_KUBE_NOMEM, 0, "out of memory");
	} else if (rc == PK_KUBE_OK) {
		struct pk_err perr;
		int prc = pk_kube_list_decode(buf ? buf : "", len, c->max_object, c->max_depth,
		                              report_skip, &sr, out, &perr);
		if (prc != PK_OK)
			rc = pk_kube_error_set(
			    e, prc == PK_ERR_TOO_BIG ? PK_KUBE_TOO_LARGE : PK_KUBE_BAD_RESPONSE, 0,
			    "GET %s: %s", path, perr.msg);
	}
	free(buf);
	pk_kube_scan_free(scan);
	if (rc == PK_KUBE_OK && !json_is_array(json_object_get(*out, "items"))) {
		json_decref(*out);
		*out = NULL;
		return pk_kube_error_set(e, PK_KUBE_BAD_RESPONSE, 0, "GET %s: answer has no items",
		                         path);
	}
	return rc;
}

/*
 * One page of a listing: a page over the response cap is read again with
 * half the limit, down to 1, and page->limit keeps the smaller figure for
 * the pages after it (objects of one collection tend to be alike).
 */
static enum pk_kube_reason list_shrinking(struct pk_kube_client *c, const struct pk_kube_ref *r,
                                          struct pk_kube_list_opts *page, json_t **p,
                                          struct pk_kube_error *e)
{
	for (;;) {
		enum pk_kube_reason rc = pk_kube_client_list(c, r, page, p, e);
		if (rc != PK_KUBE_TOO_LARGE || page->limit <= 1)
			return rc;
		long next = page->limit / 2;
		pk_kube_logf(&c->log, PK_KUBE_LOG_INFO,
		             "kube list %s: a page of %ld is too large (%s); reading pages of %ld",
		             r->resource, page->limit, e ? e->message : "", next);
		page->limit = next;
	}
}

enum pk_kube_reason pk_kube_client_list_all(struct pk_kube_client *c, const struct pk_kube_ref *r,
                                            const struct pk_kube_list_opts *o, json_t **out,
                                            struct pk_kube_error *e)
{
	struct pk_kube_list_opts page = {0};
	if (o != NULL)
		page = *o;
	if (page.limit <= 0)
		page.limit = PK_KUBE_DEFAULT_PAGE;
	page.continue_token = NULL;
	*out = NULL;
	json_t *all = NULL;
	char *cont = NULL;
	bool restarted = false;
	enum pk_kube_reason rc;
	for (;;) {
		json_t *p;
		page.continue_token = cont;
		rc = list_shrinking(c, r, &page, &p, e);
		if (rc == PK_KUBE_GONE && cont != NULL && !restarted) {
			/* The snapshot behind the continue token was compacted: list
			 * everything at once instead (client-go's pager does the same). */
			pk_kube_logf(&c->log, PK_KUBE_LOG_INFO,
			             "kube list %s: continue token expired, listing without paging",
			             r->resource);
			json_decref(all);
			all = NULL;
			free(cont);
			cont = NULL;
			restarted = true;
			struct pk_kube_list_opts full = page;
			full.limit = 0;
			full.continue_token = NULL;
			rc = pk_kube_client_list(c, r, &full, out, e);
			if (rc != PK_KUBE_TOO_LARGE)
				return rc;
			/* Too large in one answer: page by page again, from a new snapshot. */
			pk_kube_logf(&c->log, PK_KUBE_LOG_INFO,
			             "kube list %s: too large in one answer, paging again from the "
			             "start",
			             r->resource);
			continue;
		}
		if (rc != PK_KUBE_OK)
			break;
		/* the page's continue token, taken before the page is merged */
		json_t *meta = json_object_get(p, "metadata");
		const char *next = pk_json_cstr_at(meta, "continue");
		free(cont);
		cont = next && next[0] ? strdup(next) : NULL;
		if (next != NULL && next[0] && cont == NULL) {
			json_decref(p);
			rc = pk_kube_error_set(e, PK_KUBE_NOMEM, 0, "out of memory");
			break;
		}
		if (all == NULL) {
			all = p;
			json_object_del(meta, "continue");
			json_object_del(meta, "remainingItemCount");
		} else {
			int x = json_array_extend(json_object_get(all, "items"),
			                          json_object_get(p, "items"));
			json_decref(p);
			if (x != 0) {
				rc = pk_kube_error_set(e, PK_KUBE_NOMEM, 0, "out of memory");
				break;
			}
		}
		if (cont == NULL) {
			*out = all;
			return PK_KUBE_OK;
		}
	}
	free(cont);
	json_decref(all);
	return rc;
}

enum pk_kube_reason pk_kube_client_list_pages(struct pk_kube_client *c, const struct pk_kube_ref *r,
                                              const struct pk_kube_list_opts *o,
                                              pk_kube_page_fn *fn, void *ud, char *rv,
                                              size_t rv_len, struct pk_kube_error *e)
{
	struct pk_kube_list_opts page = {0};
	if (o != NULL)
		page = *o;
	if (page.limit <= 0)
		page.limit = PK_KUBE_DEFAULT_PAGE;
	char *cont = NULL;
	enum pk_kube_reason rc;
	bool first = true;
	if (rv != NULL && rv_len > 0)
		rv[0] = '\0';
	for (;;) {
		json_t *p;
		page.continue_token = cont;
		rc = list_shrinking(c, r, &page, &p, e);
		if (rc != PK_KUBE_OK)
			break;
		json_t *meta = json_object_get(p, "metadata");
		if (first && rv != NULL && rv_len > 0) {
			const char *v = pk_json_cstr_at(meta, "resourceVersion");
			snprintf(rv, rv_len, "%s", v ? v : "");
		}
		first = false;
		const char *next = pk_json_cstr_at(meta, "continue");
		free(cont);
		cont = next && next[0] ? strdup(next) : NULL;
		bool oom = next != NULL && next[0] && cont == NULL;
		int stop = fn(ud, p);
		json_decref(p);
		if (oom) {
			rc = pk_kube_error_set(e, PK_KUBE_NOMEM, 0, "out of memory");
			break;
		}
		if (stop) {
			rc = pk_kube_error_set(e, PK_KUBE_CANCELLED, 0, "listing stopped");
			break;
		}
		if (cont == NULL)
			break;
	}
	free(cont);
	return rc;
}

static enum pk_kube_reason write_query(char *path, size_t len, const struct pk_kube_write_opts *w,
                                       bool apply, struct pk_kube_error *e)
{
	enum pk_kube_reason rc = PK_KUBE_OK;
	if (w == NULL)
		return rc;
	if ((rc = pk_kube_client_add_query(path, len, "fieldManager", w->field_manager, e)) ||
	    (rc = pk_kube_client_add_query(path, len, "dryRun", w->dry_run ? "All" : NULL, e)) ||
	    (rc = pk_kube_client_add_query(path, len, "force", apply && w->force ? "true" : NULL,
	                                   e)))
		return rc;
	return rc;
}

static enum pk_kube_reason send_json(struct pk_kube_client *c, const char *method, const char *path,
                                     const char *ctype, const json_t *obj, long timeout_ms,
                                     json_t **out, struct pk_kube_error *e)
{
	char *body = json_dumps(obj, JSON_COMPACT);
	if (body == NULL)
		return pk_kube_error_set(e, PK_KUBE_NOMEM, 0, "cannot serialise the request body");
	struct call k = {.method = method,
	                 .path = path,
	                 .content_type = ctype,
	                 .body = body,
	                 .body_len = strlen(body),
	                 .timeout_ms = timeout_ms};
	enum pk_kube_reason rc = pk_kube_client_call_json(c, &k, out, e);
	free(body);
	return rc;
}

enum pk_kube_reason pk_kube_client_create(struct pk_kube_client *c, const struct pk_kube_ref *r,
                                          const json_t *obj, const struct pk_kube_write_opts *w,
                                          json_t **out, struct pk_kube_error *e)
{
	char path[PATH_MAX_LEN];
	struct pk_kube_ref coll = *r;
	coll.name = NULL;
	coll.subresource = NULL;
	enum pk_kube_reason rc;
	if (out != NULL)
		*out = NULL;
	if ((rc = pk_kube_client_build_path(&coll, path, sizeof(path), e)) ||
	    (rc = write_query(path, sizeof(path), w, false, e)))
		return rc;
	return send_json(c, "POST", path, "application/json", obj, r->timeout_ms, out, e);
}

enum pk_kube_reason pk_kube_client_update(struct pk_kube_client *c, const struct pk_kube_ref *r,
                                          const json_t *obj, const struct pk_kube_write_opts *w,
                                          json_t **out, struct pk_kube_error *e)
{
	char path[PATH_MAX_LEN];
	struct pk_kube_ref named = *r;
	enum pk_kube_reason rc;
	if (out != NULL)
		*out = NULL;
	if (named.name == NULL)
		named.name = pk_json_meta_cstr(obj, "name");
	if (named.name == NULL)
		return pk_kube_error_set(e, PK_KUBE_BAD_REQUEST, 0, "update needs a name");
	if ((rc = pk_kube_client_build_path(&named, path, sizeof(path), e)) ||
	    (rc = write_query(path, sizeof(path), w, false, e)))
		return rc;
	return send_json(c, "PUT", path, "application/json", obj, r->timeout_ms, out, e);
}

enum pk_kube_reason pk_kube_client_patch(struct pk_kube_client *c, const struct pk_kube_ref *r,
                                         enum pk_kube_patch_type type, const json_t *patch,
                                         const struct pk_kube_write_opts *w, json_t **out,
                                         struct pk_kube_error *e)
{
	static const char *const ctypes[] = {
	    [PK_KUBE_PATCH_MERGE] = "application/merge-patch+json",
	    [PK_KUBE_PATCH_JSON] = "application/json-patch+json",
	    [PK_KUBE_PATCH_STRATEGIC] = "application/strategic-merge-patch+json",
	    [PK_KUBE_PATCH_APPLY] = "application/apply-patch+yaml",
	};
	char path[PATH_MAX_LEN];
	enum pk_kube_reason rc;
	if (out != NULL)
		*out = NULL;
	if ((unsigned)type > PK_KUBE_PATCH_APPLY || r->name == NULL)
		return pk_kube_error_set(e, PK_KUBE_BAD_REQUEST, 0,
		                         "patch needs a name and a type");
	if (type == PK_KUBE_PATCH_JSON ? !json_is_array(patch) : !json_is_object(patch))
		return pk_kube_error_set(e, PK_KUBE_BAD_REQUEST, 0,
		                         "a JSON patch is an array, other patches are objects");
	if (type == PK_KUBE_PATCH_APPLY && (w == NULL || w->field_manager == NULL))
		return pk_kube_error_set(e, PK_KUBE_BAD_REQUEST, 0,
		                         "server-side apply needs a field manager");
	if ((rc = pk_kube_client_build_path(r, path, sizeof(path), e)) ||
	    (rc = write_query(path, sizeof(path), w, type == PK_KUBE_PATCH_APPLY, e)))
		return rc;
	return send_json(c, "PATCH", path, ctypes[type], patch, r->timeout_ms, out, e);
}

enum pk_kube_reason pk_kube_client_delete(struct pk_kube_client *c, const struct pk_kube_ref *r,
                                          const struct pk_kube_delete_opts *d, json_t **out,
                                          struct pk_kube_error *e)
{
	char path[PATH_MAX_LEN];
	enum pk_kube_reason rc;
	if (out != NULL)
		*out = NULL;
	if (r->name == NULL)
		return pk_kube_error_set(e, PK_KUBE_BAD_REQUEST, 0, "delete needs a name");
	if ((rc = pk_kube_client_build_path(r, path, sizeof(path), e)) != PK_KUBE_OK)
		return rc;
	json_t *opts = json_pack("{s:s,s:s}", "apiVersion", "v1", "kind", "DeleteOptions");
	json_t *pre = json_object();
	if (opts == NULL || pre == NULL) {
		json_decref(opts);
		json_decref(pre);
		return pk_kube_error_set(e, PK_KUBE_NOMEM, 0, "out of memory");
	}
	if (d != NULL) {
		if (d->propagation)
			json_object_set_new(opts, "propagationPolicy", json_string(d->propagation));
		if (d->uid)
			json_object_set_new(pre, "uid", json_string(d->uid));
		if (d->resource_version)
			json_object_set_new(pre, "resourceVersion",
			                    json_string(d->resource_version));
		if (d->has_grace_period)
			json_object_set_new(opts, "gracePeriodSeconds",
			                    json_integer(d->grace_period_s));
		if (d->dry_run)
			json_object_set_new(opts, "dryRun", json_pack("[s]", "All"));
	}
	if (json_object_size(pre) > 0)
		json_object_set(opts, "preconditions", pre);
	json_decref(pre);
	rc = send_json(c, "DELETE", path, "application/json", opts, r->timeout_ms, out, e);
	json_decref(opts);
	return rc;
}
