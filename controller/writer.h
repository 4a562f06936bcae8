/*
 * writer.h - the controller's one way to the API server: every write (and
 * the few consistent reads a write rests on) goes through a pk_writer, so
 * that:
 *   - only the leader writes: the API writer answers PK_KUBE_CANCELLED
 *     ("not leading", e->code -1: nothing was sent) the moment leadership
 *     is lost, without a request;
 *   - failures are mapped and logged in one place (pk_writer_failed);
 *   - tests drive the reconcilers with a fake writer (set ops and self).
 *
 * The ops mirror kube_client.h (field manager "poolkeeper-controller"):
 * out (when not NULL) is a new reference to the object the server returned,
 * or NULL. Every op may be called from any thread.
 */
#ifndef PK_WRITER_H
#define PK_WRITER_H

#include <stdatomic.h>
#include <stdbool.h>

#include <jansson.h>

#include "kube_client.h"
#include "pk.h"

struct pk_writer_ops {
	enum pk_kube_reason (*create)(void *self, const struct pk_kube_ref *r, const json_t *obj,
	                              json_t **out, struct pk_kube_error *e);
	enum pk_kube_reason (*patch)(void *self, const struct pk_kube_ref *r, bool merge,
	                             const json_t *patch, json_t **out, struct pk_kube_error *e);
	/* uid: a precondition on the object deleted (NULL: none). */
	enum pk_kube_reason (*delete)(void *self, const struct pk_kube_ref *r, const char *uid,
	                              struct pk_kube_error *e);
	/* A consistent read of one object (the cache may lag; the API does not). */
	enum pk_kube_reason (*get)(void *self, const struct pk_kube_ref *r, json_t **out,
	                           struct pk_kube_error *e);
	/* A consistent read of every object of r, page by page; fn's non-zero return stops it. */
	enum pk_kube_reason (*list)(void *self, const struct pk_kube_ref *r, pk_kube_page_fn *fn,
	                            void *ud, struct pk_kube_error *e);
};

struct pk_writer {
	const struct pk_writer_ops *ops;
	void *self;
};

/* The API writer: client and the flags are borrowed (leading: writes go out only while it is
 * non-zero; stopping ends a list). */
struct pk_api_writer {
	struct pk_kube_client *client;
	atomic_int *leading;
	atomic_int *stopping;
};
struct pk_writer pk_api_writer(struct pk_api_writer *w);

/* Logs a failed write (what: "claim status", ...; key: the object) and returns PK_ERR_API
 * (e, the caller's, says why), or PK_ERR_NOMEM when e's reason is PK_KUBE_NOMEM. */
int pk_writer_failed(const char *what, const char *key, const struct pk_kube_error *e);

/*
 * Sends a patch (consumed; NULL: nothing to write, PK_OK) as a JSON patch
 * (merge false) or a merge patch. A NotFound object is PK_OK (*out NULL);
 * any other failure is logged and PK_ERR_API (pk_writer_failed). *out (when out is not
 * NULL) is the object patched, or NULL when nothing was.
 */
int pk_writer_patch(struct pk_writer *w, const struct pk_kube_ref *r, bool merge, json_t *patch,
                    const char *what, const char *key, json_t **out);

/* Deletes r (with the uid precondition); NotFound is PK_OK; else as pk_writer_failed. */
int pk_writer_delete(struct pk_writer *w, const struct pk_kube_ref *r, const char *uid,
                     const char *what, const char *key);

/* Whether r is gone by a consistent read: PK_OK and *gone, or as pk_writer_failed. */
int pk_writer_gone(struct pk_writer *w, const struct pk_kube_ref *r, const char *key, bool *gone);

#endif
