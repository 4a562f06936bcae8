/*
 * fake_writer.h - a pk_writer (writer.h) for the controller's suites: it
 * records every call and answers as the test set it up, with no API
 * server. Include after <cmocka.h> and json_fixture.h.
 *
 * Patches answer with the object patched (the patch applied is not
 * computed: the answer is `patched`, else an object whose resourceVersion
 * counts the writes). Creates answer with the object sent, given a
 * resourceVersion, unless create_reason says otherwise.
 */
#ifndef PK_TEST_FAKE_WRITER_H
#define PK_TEST_FAKE_WRITER_H

#include <stdio.h>
#include <string.h>

#include "writer.h"

#define FAKE_CALLS 16

struct fake_call {
	char op[8];     /* "create", "patch", "delete", "get", "list" */
	char what[160]; /* "<resource>[/<subresource>] <name>" */
	bool merge;     /* patches */
	json_t *body;   /* the object created or the patch sent (a reference) */
};

struct fake_writer {
	struct fake_call calls[FAKE_CALLS];
	size_t ncalls;
	unsigned rv;
	/* answers */
	enum pk_kube_reason create_reason; /* PK_KUBE_OK: created */
	long create_code;
	enum pk_kube_reason get_reason;   /* PK_KUBE_NOT_FOUND: gone */
	enum pk_kube_reason patch_reason; /* PK_KUBE_OK */
	json_t *patched;                  /* the answer to a JSON patch (borrowed), or NULL */
	json_t *pages;                    /* list: an array of pages (borrowed), or NULL */
	enum pk_kube_reason list_reason;  /* PK_KUBE_OK: the pages */
};

static inline void fake_record(struct fake_writer *w, const char *op, const struct pk_kube_ref *r,
                               const json_t *body, bool merge)
{
	if (w->ncalls >= FAKE_CALLS)
		fail_msg("more than %d API calls", FAKE_CALLS);
	struct fake_call *c = &w->calls[w->ncalls++];
	snprintf(c->op, sizeof(c->op), "%s", op);
	snprintf(c->what, sizeof(c->what), "%s%s%s %s", r->resource, r->subresource ? "/" : "",
	         r->subresource ? r->subresource : "", r->name ? r->name : "");
	c->merge = merge;
	c->body = body != NULL ? json_deep_copy(body) : NULL;
}

/* A copy of obj with a new resourceVersion. */
static inline json_t *fake_written(struct fake_writer *w, const json_t *obj)
{
	json_t *o = json_deep_copy(obj);
	char rv[32];
	snprintf(rv, sizeof(rv), "w%u", ++w->rv);
	json_t *md = json_object_get(o, "metadata");
	if (md == NULL) {
		md = json_object();
		json_object_set_new(o, "metadata", md);
	}
	json_object_set_new(md, "resourceVersion", json_string(rv));
	return o;
}

static inline enum pk_kube_reason fake_create(void *self, const struct pk_kube_ref *r,
                                              const json_t *obj, json_t **out,
                                              struct pk_kube_error *e)
{
	struct fake_writer *w = self;
	fake_record(w, "create", r, obj, false);
	if (w->create_reason != PK_KUBE_OK)
		return pk_kube_error_set(e, w->create_reason, w->create_code, "fake refusal");
	if (out != NULL)
		*out = fake_written(w, obj);
	return PK_KUBE_OK;
}

static inline enum pk_kube_reason fake_patch(void *self, const struct pk_kube_ref *r, bool merge,
                                             const json_t *patch, json_t **out,
                                             struct pk_kube_error *e)
{
	struct fake_writer *w = self;
	fake_record(w, "patch", r, patch, merge);
	if (w->patch_reason != PK_KUBE_OK)
		return pk_kube_error_set(e, w->patch_reason, 409, "fake refusal");
	if (out != NULL) {
		json_t *blank = json_object();
		*out = fake_written(w, w->patched != NULL && !merge ? w->patched : blank);
		json_decref(blank);
	}
	return PK_KUBE_OK;
}

static inline enum pk_kube_reason fake_delete(void *self, const struct pk_kube_ref *r,
                                              const char *uid, struct pk_kube_error *e)
{
	(void)uid;
	(void)e;
	fake_record(self, "delete", r, NULL, false);
	return PK_KUBE_OK;
}

static inline enum pk_kube_reason fake_get(void *self, const struct pk_kube_ref *r, json_t **out,
                                           struct pk_kube_error *e)
{
	struct fake_writer *w = self;
	fake_record(w, "get", r, NULL, false);
	if (w->get_reason != PK_KUBE_OK)
		return pk_kube_error_set(e, w->get_reason, 404, "fake: not found");
	*out = json_object();
	return PK_KUBE_OK;
}

static inline enum pk_kube_reason fake_list(void *self, const struct pk_kube_ref *r,
                                            pk_kube_page_fn *fn, void *ud, struct pk_kube_error *e)
{
	struct fake_writer *w = self;
	fake_record(w, "list", r, NULL, false);
	if (w->list_reason != PK_KUBE_OK)
		return pk_kube_error_set(e, w->list_reason, 500, "fake refusal");
	size_t i;
	json_t *page;
	json_array_foreach(w->pages, i, page)
	{
		if (fn(ud, page) != 0)
			break;
	}
	return PK_KUBE_OK;
}

static const struct pk_writer_ops fake_writer_ops = {fake_create, fake_patch, fake_delete, fake_get,
                                                     fake_list};

static inline struct pk_writer fake_writer_init(struct fake_writer *w)
{
	memset(w, 0, sizeof(*w));
	w->get_reason = PK_KUBE_NOT_FOUND;
	struct pk_writer out = {&fake_writer_ops, w};
	return out;
}

static inline void fake_writer_release(struct fake_writer *w)
{
	for (size_t i = 0; i < w->ncalls; i++)
		json_decref(w->calls[i].body);
	w->ncalls = 0;
}

/* The index of the first call of op on what ("ipaddresses c1"), or -1. */
static inline int fake_find(const struct fake_writer *w, const char *op, const char *what)
{
	for (size_t i = 0; i < w->ncalls; i++)
		if (strcmp(w->calls[i].op, op) == 0 && strcmp(w->calls[i].what, what) == 0)
			return (int)i;
	return -1;
}

/* Whether the body of call i, dumped, contains text. */
static inline bool fake_body_has(const struct fake_writer *w, int i, const char *text)
{
	if (i < 0 || (size_t)i >= w->ncalls || w->calls[i].body == NULL)
		return false;
	char *s = json_dumps(w->calls[i].body, JSON_COMPACT | JSON_ENCODE_ANY);
	bool has = s != NULL && strstr(s, text) != NULL;
	free(s);
	return has;
}

#endif
