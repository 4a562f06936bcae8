/* backend_set.c - several pool backends side by side, as one; see backend_set.h. */
#include "backend_set.h"

#include <stdlib.h>
#include <string.h>

#include "json.h"

struct member {
	struct pk_backend b;
	const struct pk_pool_kind *kinds;
	size_t nkinds;
};

/* The most watches of all members together. */
#define SET_MAX_WATCHES 16

struct set {
	struct pk_backend_ops
	    ops; /* set_ops, with resync and watches only when a member has them */
	struct member m[PK_BACKEND_SET_MAX];
	size_t n;
	struct pk_pool_kind *kinds; /* every member's, in order */
	size_t nkinds;
	struct pk_backend_watch watches[SET_MAX_WATCHES]; /* every member's, in order */
	struct {
		size_t member, index; /* whose, and its index there */
	} watch_of[SET_MAX_WATCHES];
	size_t nwatches;
};

static bool has_kind(const struct member *m, const char *group, const char *kind)
{
	for (size_t i = 0; kind != NULL && i < m->nkinds; i++)
		if ((group == NULL || strcmp(m->kinds[i].group, group) == 0) &&
		    strcmp(m->kinds[i].kind, kind) == 0)
			return true;
	return false;
}

/* The member a poolRef names a pool of, or NULL. */
static struct member *by_ref(struct set *s, const json_t *pool_ref)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->m[i].b.ops->serves(s->m[i].b.self, pool_ref))
			return &s->m[i];
	return NULL;
}

/* The member that declared a view's kind (by group and kind), or NULL. */
static struct member *by_view(struct set *s, const struct pk_pool_view *v)
{
	const struct pk_pool_kind *k = v->facts.kind;
	for (size_t i = 0; k != NULL && i < s->n; i++)
		if (has_kind(&s->m[i], k->group, k->kind))
			return &s->m[i];
	return NULL;
}

/* The member that holds an address for the claim, or NULL. */
static struct member *by_holder(struct set *s, const struct pk_claim_id *id)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->m[i].b.ops->holds(s->m[i].b.self, id))
			return &s->m[i];
	return NULL;
}

static const struct pk_pool_kind *set_kinds(void *self, size_t *n)
{
	struct set *s = self;
	*n = s->nkinds;
	return s->kinds;
}

static bool set_serves(void *self, const json_t *pool_ref)
{
	return by_ref(self, pool_ref) != NULL;
}

static int set_view_pool(void *self, struct pk_pool_view *v)
{
	struct member *m = by_view(self, v);
	if (m == NULL || m->b.ops->view_pool == NULL)
		return PK_OK;
	return m->b.ops->view_pool(m->b.self, v);
}

static void set_check_address(void *self, const struct pk_pool_view *pool,
                              const struct pk_claim_id *id, const json_t *claim,
                              const json_t *address, struct pk_claim_facts *f)
{
	struct member *m = by_view(self, pool);
	if (m != NULL)
		m->b.ops->check_address(m->b.self, pool, id, claim, address, f);
}

static void set_ensure(void *self, const struct pk_pool_view *pool, const struct pk_claim_id *id,
                       struct pk_address_lease *lease, struct pk_backend_result *out)
{
	struct member *m = by_view(self, pool);
	if (m == NULL) {
		pk_backend_result_set(out, PK_BACKEND_PERMANENT, PK_REASON_ALLOCATION_FAILED,
		                      "no backend of this controller serves the claim's pool");
		return;
	}
	m->b.ops->ensure_address(m->b.self, pool, id, lease, out);
}

static void set_abandon(void *self, const struct pk_claim_id *id,
                        const struct pk_address_lease *lease)
{
	struct member *m = by_holder(self, id);
	if (m != NULL)
		m->b.ops->abandon_address(m->b.self, id, lease);
}

static bool set_holds(void *self, const struct pk_claim_id *id)
{
	return by_holder(self, id) != NULL;
}

static void set_release(void *self, const struct pk_claim_id *id, struct pk_release_note *out,
                        struct pk_backend_result *result)
{
	struct member *m = by_holder(self, id);
	if (m != NULL) {
		m->b.ops->release_address(m->b.self, id, out, result);
		return;
	}
	memset(out, 0, sizeof(*out));
	memset(result, 0, sizeof(*result));
	result->status = PK_BACKEND_OK;
}

static void set_seen(void *self, const json_t *address, struct pk_pool_next *next)
{
	struct member *m = by_ref(self, pk_json_path(address, "spec", "poolRef"));
	if (m != NULL)
		m->b.ops->address_seen(m->b.self, address, next);
}

static int set_on_leading(void *self)
{
	struct set *s = self;
	int rc = PK_OK;
	for (size_t i = 0; i < s->n; i++) {
		int r = s->m[i].b.ops->on_leading(s->m[i].b.self);
		if (rc == PK_OK)
			rc = r;
	}
	return rc;
}

static int set_reconcile_pool(void *self, const struct pk_work_key *k, const json_t *pool,
                              struct pk_pool_next *next)
{
	struct set *s = self;
	for (size_t i = 0; i < s->n; i++)
		if (has_kind(&s->m[i], NULL, k->pool_kind))
			return s->m[i].b.ops->reconcile_pool(s->m[i].b.self, k, pool, next);
	return PK_OK; /* a kind no member has: nothing to do */
}

/* Every member that resyncs; the first error. */
static int set_resync(void *self)
{
	struct set *s = self;
	int rc = PK_OK;
	for (size_t i = 0; i < s->n; i++) {
		int r =
		    pk_backend_resyncs(&s->m[i].b) ? s->m[i].b.ops->resync(s->m[i].b.self) : PK_OK;
		if (rc == PK_OK)
			rc = r;
	}
	return rc;
}

static const struct pk_backend_watch *set_watches(void *self, size_t *n)
{
	struct set *s = self;
	*n = s->nwatches;
	return s->watches;
}

static void set_watched(void *self, size_t i, const char *key, const json_t *obj, bool *requeue)
{
	struct set *s = self;
	if (i >= s->nwatches)
		return;
	struct member *m = &s->m[s->watch_of[i].member];
	m->b.ops->watched(m->b.self, s->watch_of[i].index, key, obj, requeue);
}

/* Gathers the members' watches; false when they are more than SET_MAX_WATCHES. */
static bool gather_watches(struct set *s)
{
	for (size_t i = 0; i < s->n; i++) {
		size_t n = 0;
		const struct pk_backend_watch *w = s->m[i].b.ops->watches != NULL
		                                       ? s->m[i].b.ops->watches(s->m[i].b.self, &n)
		                                       : NULL;
		for (size_t k = 0; k < n; k++) {
			if (s->nwatches == SET_MAX_WATCHES)
				return false;
			s->watches[s->nwatches] = w[k];
			s->watch_of[s->nwatches].member = i;
			s->watch_of[s->nwatches].index = k;
			s->nwatches++;
		}
	}
	if (s->nwatches > 0) {
		s->ops.watches = set_watches;
		s->ops.watched = set_watched;
	}
	return true;
}

static void set_cancel(void *self)
{
	struct set *s = self;
	for (size_t i = 0; i < s->n; i++)
		pk_backend_cancel(&s->m[i].b);
}

static bool set_ready(void *self, char *why, size_t len)
{
	struct set *s = self;
	for (size_t i = 0; i < s->n; i++)
		if (!pk_backend_ready(&s->m[i].b, why, len))
			return false;
	return true;
}

static void set_write_metrics(void *self, FILE *f)
{
	struct set *s = self;
	for (size_t i = 0; i < s->n; i++)
		s->m[i].b.ops->write_metrics(s->m[i].b.self, f);
}

static void set_free(void *self)
{
	struct set *s = self;
	for (size_t i = 0; i < s->n; i++)
		s->m[i].b.ops->free(s->m[i].b.self);
	free(s->kinds);
	free(s);
}

static const struct pk_backend_ops set_ops = {
    .kinds = set_kinds,
    .serves = set_serves,
    .view_pool = set_view_pool,
    .check_address = set_check_address,
    .ensure_address = set_ensure,
    .abandon_address = set_abandon,
    .holds = set_holds,
    .release_address = set_release,
    .address_seen = set_seen,
    .on_leading = set_on_leading,
    .reconcile_pool = set_reconcile_pool,
    .cancel = set_cancel,
    .ready = set_ready,
    .write_metrics = set_write_metrics,
    .free = set_free,
};

/* Frees the members and what the set holds so far. */
static void drop(const struct pk_backend *members, size_t n, struct set *s)
{
	for (size_t i = 0; i < n; i++)
		members[i].ops->free(members[i].self);
	if (s != NULL)
		free(s->kinds);
	free(s);
}

int pk_backend_set_new(const struct pk_backend *members, size_t n, struct pk_backend *out,
                       struct pk_err *err)
{
	if (n == 0 || n > PK_BACKEND_SET_MAX) {
		drop(members, n, NULL);
		return pk_err_set(err, PK_ERR_INVALID, "backends: %zu named, 1 to %d may be", n,
		                  PK_BACKEND_SET_MAX);
	}
	struct set *s = calloc(1, sizeof(*s));
	size_t total = 0;
	for (size_t i = 0; s != NULL && i < n; i++) {
		s->m[i].b = members[i];
		s->m[i].kinds = members[i].ops->kinds(members[i].self, &s->m[i].nkinds);
		total += s->m[i].nkinds;
	}
	if (s == NULL || (s->kinds = calloc(total ? total : 1, sizeof(*s->kinds))) == NULL) {
		drop(members, n, s);
		return pk_err_set(err, PK_ERR_NOMEM, "backends: out of memory");
	}
	s->n = n;
	const struct pk_pool_kind *twice = NULL;
	for (size_t i = 0; i < n && twice == NULL; i++)
		for (size_t k = 0; k < s->m[i].nkinds && twice == NULL; k++) {
			const struct pk_pool_kind *x = &s->m[i].kinds[k];
			for (size_t j = 0; j < i; j++)
				if (has_kind(&s->m[j], x->group, x->kind))
					twice = x;
			s->kinds[s->nkinds++] = *x;
		}
	if (twice != NULL) {
		int rc =
		    pk_err_set(err, PK_ERR_INVALID, "backends: two serve the pool kind %s (%s)",
		               twice->kind, twice->group);
		drop(members, n, s);
		return rc;
	}
	s->ops = set_ops;
	for (size_t i = 0; i < n; i++)
		if (pk_backend_resyncs(&s->m[i].b))
			s->ops.resync = set_resync;
	if (!gather_watches(s)) {
		int rc = pk_err_set(err, PK_ERR_INVALID, "backends: more than %d watched resources",
		                    SET_MAX_WATCHES);
		drop(members, n, s);
		return rc;
	}
	*out = (struct pk_backend){&s->ops, s};
	return PK_OK;
}
