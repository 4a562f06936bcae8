/* permission.c - may the requester set blockOwnerDeletion: discovery and a SubjectAccessReview
 * on lookup threads, within a per-review deadline. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "answer_cache.h"
#include "api.h"
#include "json.h"
#include "log.h"
#include "parse.h"
#include "permission.h"

/* Discovery answers: bounded, and a kind found is asked again after a while, a kind not
 * found soon, so a CRD installed (or changed) later is seen. */
#define KINDMAP_MAX     512
#define KINDMAP_TTL_NS  (10LL * 60 * 1000 * 1000 * 1000)
#define KINDMAP_MISS_NS (10LL * 1000 * 1000 * 1000)

struct ask;

struct pk_permission {
	struct pk_kube_client *client; /* borrowed */
	struct pk_kindmap *kinds;      /* owner kinds -> resources and scopes, from discovery */
	struct pk_sarcache *sars;      /* SubjectAccessReview answers */
	long long deadline_ns;         /* how long a review waits for its answer */
	/* the lookup threads and their queue */
	pthread_mutex_t pool_lock;
	pthread_cond_t pool_work;
	struct ask *queue_head, *queue_tail;
	struct ask *active; /* queued or running, through active_next: the ones to share */
	unsigned queued, queue_max;
	long long shed_until_ns; /* new questions answered at once as timeouts until then */
	bool stopping;
	pthread_t *threads;
	unsigned nthreads; /* started */
};

/* ---- validation of what a tenant's owner reference says ---- */

static int bad_field(struct pk_err *err, const char *field, const char *v, const char *why)
{
	char q[300];
	pk_text_quote(v != NULL ? v : "", v != NULL ? strlen(v) : 0, q, sizeof(q));
	return pk_err_set(err, PK_ERR_INVALID, "%s \"%s\": %s", field, q, why);
}

/* apiVersion "group/version" or "version" (the core group) into group and version. */
static int split_api_version(const char *av, char *group, size_t glen, char *version, size_t vlen,
                             struct pk_err *err)
{
	static const char field[] = "owner reference apiVersion";
	const char *slash = av != NULL ? strchr(av, '/') : NULL;
	const char *v = slash != NULL ? slash + 1 : av;
	size_t gn = slash != NULL ? (size_t)(slash - av) : 0;
	if (av == NULL || av[0] == '\0')
		return bad_field(err, field, av,
		                 "must be GROUP/VERSION, or VERSION for the core group");
	if (gn >= glen || strlen(v) >= vlen)
		return bad_field(err, field, av, "is too long");
	memcpy(group, av, gn);
	group[gn] = '\0';
	snprintf(version, vlen, "%s", v);
	struct pk_err why = {{0}};
	if (slash != NULL && pk_parse_dns_name(group, true, &why) != PK_OK)
		return bad_field(err, field, av, "its group must be a DNS subdomain name");
	if (pk_parse_dns_name(version, false, &why) != PK_OK)
		return bad_field(err, field, av,
		                 "its version must be a DNS label (v1, v1beta1, ...)");
	return PK_OK;
}

/* A kind: as the apiserver allows for a CRD, a DNS-1035 label once lower-cased (at most
 * 63 of letters, digits and '-', starting with a letter, ending with a letter or digit). */
static int check_kind(const char *kind, struct pk_err *err)
{
	size_t n = kind != NULL ? strlen(kind) : 0;
	bool ok = n > 0 && n <= 63;
	for (size_t i = 0; ok && i < n; i++) {
		char c = kind[i];
		bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
		bool digit = c >= '0' && c <= '9';
		ok = alpha || (i > 0 && digit) || (i > 0 && i < n - 1 && c == '-');
	}
	return ok ? PK_OK
	          : bad_field(err, "owner reference kind", kind,
	                      "must be at most 63 letters, digits and '-', starting with a letter");
}

/* An object name as the apiserver accepts one in a path segment: not ".", "..", nor
 * holding '/' or '%'; at most 253 bytes of printable ASCII. */
static int check_name(const char *name, struct pk_err *err)
{
	size_t n = name != NULL ? strlen(name) : 0;
	bool ok = n > 0 && n <= 253 && strcmp(name, ".") != 0 && strcmp(name, "..") != 0;
	for (size_t i = 0; ok && i < n; i++)
		ok = name[i] > ' ' && name[i] < 0x7f && name[i] != '/' && name[i] != '%';
	return ok ? PK_OK
	          : bad_field(err, "owner reference name", name,
	                      "must be an object name (at most 253 printable characters, no '/' "
	                      "or '%', not \".\" or \"..\")");
}

/* ---- discovery ---- */

/* The APIResource of `kind` in a discovery document (an APIResourceList): the entry whose
 * kind matches and whose name is not a subresource ("vspherevms", not "vspherevms/status"),
 * and fits the kind map. */
static const json_t *resource_of(const json_t *list, const char *kind)
{
	size_t i;
	const json_t *r;
	json_array_foreach(json_object_get(list, "resources"), i, r)
	{
		const char *k = pk_json_cstr_at(r, "kind");
		const char *name = pk_json_cstr_at(r, "name");
		if (k != NULL && name != NULL && name[0] != '\0' && strlen(name) < 256 &&
		    strchr(name, '/') == NULL && strcmp(k, kind) == 0)
			return r;
	}
	return NULL;
}

int pk_permission_owner_target(const char *ns, const char *api_version, const char *kind,
                               const char *name, struct pk_owner_target *t, struct pk_err *err)
{
	struct pk_err why = {{0}};
	memset(t, 0, sizeof(*t));
	if (pk_parse_dns_name(ns, false, &why) != PK_OK)
		return bad_field(err, "namespace", ns, "must be a namespace name");
	int rc = split_api_version(api_version, t->group, sizeof(t->group), t->version,
	                           sizeof(t->version), err);
	if (rc == PK_OK)
		rc = check_kind(kind, err);
	if (rc == PK_OK)
		rc = check_name(name, err);
	if (rc != PK_OK) {
		memset(t, 0, sizeof(*t));
		return rc;
	}
	/* validated: no '/', '?', '%', '#', space or ".." can reach the path */
	if (t->group[0] == '\0') {
		snprintf(t->group_version, sizeof(t->group_version), "%s", t->version);
		snprintf(t->path, sizeof(t->path), "/api/%s", t->version);
	} else {
		snprintf(t->group_version, sizeof(t->group_version), "%s/%s", t->group, t->version);
		snprintf(t->path, sizeof(t->path), "/apis/%s/%s", t->group, t->version);
	}
	return PK_OK;
}

/* ---- the SubjectAccessReview ---- */

/* Copies the strings of src (an array) into a new array; other items are left out. */
static json_t *string_array(const json_t *src)
{
	json_t *out = json_array();
	size_t i;
	const json_t *v;
	json_array_foreach(src, i, v)
	{
		const char *str = pk_json_cstr(v);
		if (str != NULL)
			json_array_append_new(out, json_string(str));
	}
	return out;
}

/* spec of a SubjectAccessReview for user_info's user. NULL (err set) without a username. */
static json_t *review_spec(const json_t *user_info, struct pk_err *err)
{
	const char *user = pk_json_cstr_at(user_info, "username");
	if (user == NULL || user[0] == '\0') {
		pk_err_set(err, PK_ERR_INVALID, "request.userInfo.username: missing");
		return NULL;
	}
	json_t *spec = json_pack("{s:s}", "user", user);
	const char *uid = pk_json_cstr_at(user_info, "uid");
	if (uid != NULL && uid[0] != '\0')
		json_object_set_new(spec, "uid", json_string(uid));
	json_t *groups = json_object_get(user_info, "groups");
	if (json_is_array(groups))
		json_object_set_new(spec, "groups", string_array(groups));
	json_t *extra = json_object_get(user_info, "extra");
	if (json_is_object(extra)) {
		json_t *x = json_object();
		const char *k;
		json_t *v;
		json_object_foreach(extra, k, v)
		{
			if (json_is_array(v))
				json_object_set_new(x, k, string_array(v));
		}
		json_object_set_new(spec, "extra", x);
	}
	return spec;
}

/* ---- the permission lookup: off the listener's threads, within a deadline ---- */

/*
 * One permission question. The listener thread answers it from the caches when it can;
 * else it queues it for a lookup thread and waits until the deadline. Whichever of the two
 * lets go last frees it (refs, under the pool's lock): a lookup that ends after its review
 * gave up still fills the caches for the next one.
 */
struct ask {
	struct pk_owner_target t;
	char kind[64];
	char ns[64];
	json_t *spec; /* the review's spec, without resourceAttributes (owned) */
	char *key;    /* its SubjectAccessReview's cache key, when known before it is queued */
	long long deadline_ns;
	/* the answer */
	int rc;
	bool allowed;
	char rule[600];
	struct pk_err err;
	/* the pool's, under its lock */
	int refs;
	bool done;
	pthread_cond_t cond; /* broadcast when done: the asks sharing it wait on it too */
	struct ask *next, *active_next;
};

static void ask_free(struct ask *a)
{
	if (a == NULL)
		return;
	json_decref(a->spec);
	free(a->key);
	pthread_cond_destroy(&a->cond);
	free(a);
}

/* A condition variable on the monotonic clock, which the deadlines use. */
static void cond_init_monotonic(pthread_cond_t *c)
{
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(c, &ca);
	pthread_condattr_destroy(&ca);
}

static int timed_out(struct pk_err *err, const char *what, const char *why)
{
	return pk_err_set(err, PK_ERR_TIMEOUT, "%s timed out: %s", what, why);
}

/* A request that failed: a timeout (the deadline, the rate limit, the server's) is
 * PK_ERR_TIMEOUT, anything else PK_ERR_API. */
static int request_failed(struct pk_err *err, const char *what, const struct pk_kube_error *e)
{
	if (e->reason == PK_KUBE_TIMEOUT)
		return timed_out(err, what, e->message);
	return pk_err_set(err, PK_ERR_API, "%s: %s (%s)", what, e->message,
	                  pk_kube_reason_name(e->reason));
}

/* Discovery of the ask's group/version into the kind map. */
static int discover(struct pk_permission *p, struct ask *a, struct pk_err *err)
{
	const char *gv = a->t.group_version;
	struct pk_kube_error e;
	json_t *list = NULL;
	enum pk_kube_reason rc = pk_kube_client_request_by(p->client, "GET", a->t.path, NULL, NULL,
	                                                   0, a->deadline_ns, &list, &e);
	if (rc != PK_KUBE_OK && rc != PK_KUBE_NOT_FOUND) {
		char what[400];
		snprintf(what, sizeof(what), "API discovery of %s", gv);
		return request_failed(err, what, &e);
	}
	const json_t *r = rc == PK_KUBE_OK ? resource_of(list, a->kind) : NULL;
	const char *res = pk_json_cstr_at(r, "name");
	/* APIResource.namespaced: false for a cluster-scoped kind */
	bool namespaced = !json_is_false(json_object_get(r, "namespaced"));
	/* not cached when memory runs out: asked again next time */
	if (pk_kindmap_put(p->kinds, gv, a->kind, res, namespaced, pk_kube_now_ns()) != PK_OK)
		pk_log_warn("cannot cache an owner kind's resource", PK_LOG_STR("kind", a->kind));
	json_decref(list);
	return PK_OK;
}

/* The SubjectAccessReview itself; its answer goes into the cache under key. */
static int review(struct pk_permission *p, struct ask *a, const json_t *spec, const char *key,
                  struct pk_err *err)
{
	json_t *sar = json_pack("{s:s, s:s, s:O}", "apiVersion",
	                        PK_AUTHORIZATION_GROUP "/" PK_AUTHORIZATION_VERSION, "kind",
	                        PK_SUBJECT_ACCESS_REVIEW_KIND, "spec", spec);
	char *body = sar != NULL ? json_dumps(sar, JSON_COMPACT) : NULL;
	json_decref(sar);
	if (body == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	struct pk_kube_error e;
	json_t *out = NULL;
	enum pk_kube_reason kr = pk_kube_client_request_by(
	    p->client, "POST",
	    "/apis/" PK_AUTHORIZATION_GROUP "/" PK_AUTHORIZATION_VERSION
	    "/" PK_SUBJECT_ACCESS_REVIEW_RESOURCE,
	    "application/json", body, strlen(body), a->deadline_ns, &out, &e);
	free(body);
	if (kr != PK_KUBE_OK)
		return request_failed(err, PK_SUBJECT_ACCESS_REVIEW_KIND, &e);
	a->allowed = json_is_true(pk_json_path(out, "status", "allowed"));
	json_decref(out);
	/* a key too long to keep (or no memory) is asked every time */
	if (key != NULL && pk_sarcache_put(p->sars, key, a->allowed, pk_kube_now_ns()) != PK_OK)
		pk_log_debug("a SubjectAccessReview answer is not cached",
		             PK_LOG_UINT("keyBytes", strlen(key)));
	return PK_OK;
}

/*
 * Answers a from the caches and, unless cached_only, from the API server. *pending set (and
 * PK_OK) when cached_only and the caches do not hold the answer.
 */
static int answer(struct pk_permission *p, struct ask *a, bool cached_only, bool *pending)
{
	const char *gv = a->t.group_version, *group = a->t.group;
	const char *gname = group[0] != '\0' ? group : "\"\" (core)";
	char res[256];
	bool namespaced = true;
	*pending = false;
	enum pk_kindmap_hit hit =
	    pk_kindmap_get(p->kinds, gv, a->kind, pk_kube_now_ns(), res, sizeof(res), &namespaced);
	if (hit == PK_KINDMAP_NONE) {
		if (cached_only) {
			*pending = true;
			return PK_OK;
		}
		int rc = discover(p, a, &a->err);
		if (rc != PK_OK)
			return rc;
		hit = pk_kindmap_get(p->kinds, gv, a->kind, pk_kube_now_ns(), res, sizeof(res),
		                     &namespaced);
		if (hit == PK_KINDMAP_NONE) /* not cached (no memory): say what is known */
			return pk_err_set(&a->err, PK_ERR_NOMEM,
			                  "API discovery of %s: out of memory", gv);
	}
	if (hit == PK_KINDMAP_MISSING) {
		snprintf(a->rule, sizeof(a->rule),
		         "kind %s has no resource in API group %s version %s (API discovery)",
		         a->kind, gname, a->t.version);
		return PK_OK;
	}
	snprintf(a->rule, sizeof(a->rule), "update on %s/finalizers in API group %s", res, gname);
	/*
	 * As OwnerReferencesPermissionEnforcement asks: `update` of <resource>/finalizers, in the
	 * claim's namespace unless the owner's kind is cluster-scoped (then in none). The owner's
	 * name is left out, so that the answer holds for every owner of the kind and can be
	 * cached: a grant limited to some resourceNames reads as not allowed.
	 */
	json_t *attrs =
	    json_pack("{s:s, s:s, s:s, s:s, s:s}", "verb", "update", "group", group, "version",
	              a->t.version, "resource", res, "subresource", "finalizers");
	if (attrs != NULL && namespaced)
		json_object_set_new(attrs, "namespace", json_string(a->ns));
	json_t *spec = attrs != NULL ? json_deep_copy(a->spec) : NULL;
	if (spec == NULL || json_object_set_new(spec, "resourceAttributes", attrs) != 0) {
		json_decref(spec);
		return pk_err_set(&a->err, PK_ERR_NOMEM, "out of memory");
	}
	/* the cache key: user, uid, groups, extra and the resource, as the review asks */
	char *key = json_dumps(spec, JSON_COMPACT | JSON_SORT_KEYS);
	int rc = PK_OK;
	switch (key != NULL ? pk_sarcache_get(p->sars, key, pk_kube_now_ns()) : PK_SARCACHE_NONE) {
	case PK_SARCACHE_ALLOWED:
		a->allowed = true;
		break;
	case PK_SARCACHE_DENIED:
		a->allowed = false;
		break;
	case PK_SARCACHE_NONE:
		if (cached_only) {
			*pending = true;
			free(a->key);
			a->key = key; /* so that an identical question can share its answer */
			key = NULL;
		} else
			rc = review(p, a, spec, key, &a->err);
		break;
	}
	free(key);
	json_decref(spec);
	return rc;
}

/* A lookup thread: takes asks off the queue until the pool stops. */
static void *lookup_thread(void *ud)
{
	struct pk_permission *p = ud;
	pthread_mutex_lock(&p->pool_lock);
	for (;;) {
		while (!p->stopping && p->queue_head == NULL)
			pthread_cond_wait(&p->pool_work, &p->pool_lock);
		struct ask *a = p->queue_head;
		if (a == NULL)
			break; /* stopping, nothing left */
		p->queue_head = a->next;
		if (p->queue_head == NULL)
			p->queue_tail = NULL;
		p->queued--;
		bool stopping = p->stopping;
		pthread_mutex_unlock(&p->pool_lock);

		bool pending;
		if (stopping)
			a->rc =
			    timed_out(&a->err, "the permission check", "the webhook is stopping");
		else if (pk_kube_now_ns() >= a->deadline_ns)
			a->rc = timed_out(&a->err, "the permission check",
			                  "it waited in the lookup queue past its deadline");
		else
			a->rc = answer(p, a, false, &pending);

		pthread_mutex_lock(&p->pool_lock);
		a->done = true;
		pthread_cond_broadcast(&a->cond);
		for (struct ask **pp = &p->active; *pp != NULL; pp = &(*pp)->active_next) {
			if (*pp == a) {
				*pp = a->active_next;
				break;
			}
		}
		if (--a->refs == 0)
			ask_free(a);
	}
	pthread_mutex_unlock(&p->pool_lock);
	return NULL;
}

/* Waits, under the pool's lock, until h is done or the deadline passes. */
static void wait_done(struct pk_permission *p, struct ask *h, long long deadline_ns)
{
	struct timespec ts = {.tv_sec = (time_t)(deadline_ns / 1000000000LL),
	                      .tv_nsec = (long)(deadline_ns % 1000000000LL)};
	/* 0 is a wake-up (perhaps spurious); anything else, ETIMEDOUT above all, ends the wait */
	while (!h->done && pthread_cond_timedwait(&h->cond, &p->pool_lock, &ts) == 0)
		;
}

/*
 * Has a answered by a lookup thread, waiting until its deadline: returns the ask that holds
 * the answer, with the pool's lock held and a reference to it taken (h->done says whether
 * the answer came). That is a itself, or an identical question already queued or running,
 * whose answer a shares instead of asking again. Never blocks on a full queue: NULL at once,
 * a->rc the timeout, a still the caller's alone.
 */
static struct ask *ask_and_wait(struct pk_permission *p, struct ask *a)
{
	pthread_mutex_lock(&p->pool_lock);
	for (struct ask *x = p->active; a->key != NULL && x != NULL; x = x->active_next) {
		if (x->key != NULL && strcmp(x->key, a->key) == 0) {
			x->refs++;
			wait_done(p, x, a->deadline_ns);
			return x;
		}
	}
	if (p->stopping || p->queued >= p->queue_max) {
		pthread_mutex_unlock(&p->pool_lock);
		char why[128];
		snprintf(why, sizeof(why), "the lookup queue is full (%u waiting)", p->queue_max);
		a->rc = timed_out(&a->err, "the permission check", why);
		return NULL;
	}
	if (pk_kube_now_ns() < p->shed_until_ns) {
		pthread_mutex_unlock(&p->pool_lock);
		a->rc = timed_out(&a->err, "the permission check",
		                  "lookups missed their deadline in the last second");
		return NULL;
	}
	a->refs = 2;
	if (p->queue_tail != NULL)
		p->queue_tail->next = a;
	else
		p->queue_head = a;
	p->queue_tail = a;
	p->queued++;
	a->active_next = p->active;
	p->active = a;
	pthread_cond_signal(&p->pool_work);
	wait_done(p, a, a->deadline_ns);
	return a;
}

int pk_permission_check(struct pk_permission *p, const json_t *user_info, const char *ns,
                        const char *api_version, const char *kind, const char *name, bool *allowed,
                        char *rule, size_t rule_len, struct pk_err *err)
{
	*allowed = false;
	if (rule_len > 0)
		rule[0] = '\0';
	struct ask *a = calloc(1, sizeof(*a));
	if (a == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	cond_init_monotonic(&a->cond);
	int rc = pk_permission_owner_target(ns, api_version, kind, name, &a->t, err);
	if (rc == PK_OK && (a->spec = review_spec(user_info, err)) == NULL)
		rc = PK_ERR_INVALID;
	if (rc != PK_OK) {
		ask_free(a);
		return rc;
	}
	snprintf(a->kind, sizeof(a->kind), "%s", kind);
	snprintf(a->ns, sizeof(a->ns), "%s", ns);
	a->deadline_ns = pk_kube_now_ns() + p->deadline_ns;

	bool pending = false;
	a->rc = answer(p, a, true, &pending);
	/* h: the ask a lookup thread answers (a, or one a shares), the pool's lock held */
	struct ask *h = a->rc == PK_OK && pending ? ask_and_wait(p, a) : NULL;
	if (h != NULL && !h->done) {
		/* the lookup thread may still be writing h's answer: not read */
		char why[128];
		snprintf(why, sizeof(why), "no answer within %lld ms", p->deadline_ns / 1000000LL);
		rc = timed_out(err, "the permission check", why);
	} else {
		const struct ask *from = h != NULL ? h : a;
		if ((rc = from->rc) == PK_OK) {
			*allowed = from->allowed;
			snprintf(rule, rule_len, "%s", from->rule);
		} else {
			*err = from->err;
		}
	}
	if (h == NULL) {
		ask_free(a);
		return rc;
	}
	/* a lookup that missed its deadline, here or in the client (the pool's lock held) */
	if (rc == PK_ERR_TIMEOUT)
		p->shed_until_ns = pk_kube_now_ns() + PK_PERMISSION_SHED_MS * 1000000LL;
	if (h != a)
		ask_free(a); /* never shared */
	if (--h->refs == 0)
		ask_free(h);
	pthread_mutex_unlock(&p->pool_lock);
	return rc;
}

/* ---- set-up ---- */

int pk_permission_new(struct pk_kube_client *client, const struct pk_permission_opts *o,
                      struct pk_permission **out, struct pk_err *err)
{
	static const struct pk_permission_opts defaults = {0};
	if (o == NULL)
		o = &defaults;
	*out = NULL;
	struct pk_permission *p = calloc(1, sizeof(*p));
	if (p == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	p->client = client;
	pthread_mutex_init(&p->pool_lock, NULL);
	cond_init_monotonic(&p->pool_work);
	p->deadline_ns =
	    (o->deadline_ms > 0 ? o->deadline_ms : PK_PERMISSION_DEADLINE_MS) * 1000000LL;
	p->queue_max = o->queue > 0 ? o->queue : PK_PERMISSION_QUEUE;
	long long sar_ttl_ns =
	    (o->sar_ttl_ms > 0 ? o->sar_ttl_ms : PK_PERMISSION_SAR_TTL_MS) * 1000000LL;
	unsigned n = o->threads > 0 ? o->threads : PK_PERMISSION_THREADS;
	p->kinds = pk_kindmap_new(KINDMAP_MAX, KINDMAP_TTL_NS, KINDMAP_MISS_NS);
	p->sars = pk_sarcache_new(o->sar_max > 0 ? o->sar_max : PK_PERMISSION_SAR_MAX, sar_ttl_ns);
	p->threads = calloc(n, sizeof(*p->threads));
	if (p->kinds == NULL || p->sars == NULL || p->threads == NULL) {
		pk_permission_free(p);
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	}
	for (; p->nthreads < n; p->nthreads++) {
		int e = pthread_create(&p->threads[p->nthreads], NULL, lookup_thread, p);
		if (e != 0) {
			pk_permission_free(p);
			return pk_err_set(err, PK_ERR_NOMEM, "cannot start a lookup thread: %s",
			                  strerror(e));
		}
	}
	*out = p;
	return PK_OK;
}

void pk_permission_free(struct pk_permission *p)
{
	if (p == NULL)
		return;
	/* what is queued is answered "stopping", then the threads end */
	pthread_mutex_lock(&p->pool_lock);
	p->stopping = true;
	pthread_cond_broadcast(&p->pool_work);
	pthread_mutex_unlock(&p->pool_lock);
	for (unsigned i = 0; i < p->nthreads; i++)
		pthread_join(p->threads[i], NULL);
	free(p->threads);
	pthread_cond_destroy(&p->pool_work);
	pthread_mutex_destroy(&p->pool_lock);
	pk_kindmap_free(p->kinds);
	pk_sarcache_free(p->sars);
	free(p);
}
