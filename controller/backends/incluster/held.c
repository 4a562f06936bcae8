/*
 * held.c - the in-process backend's record of held addresses and its pool
 * states (each with its allocator); see incluster.h. Every function but
 * the lifecycle ones runs under the backend's mutex.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "incluster_internal.h"
#include "json.h"
#include "kube.h"
#include "log.h"
#include "objects.h"
#include "range_set.h"

/* One copy of each pool key, shared by every held address of the pool, and how many
 * addresses the record holds from the pool (a status write reads it, never the record). */
struct pool_name {
	size_t held;
	char key[];
};

long long incl_wall_now(void)
{
	return (long long)time(NULL);
}

/* The pool_name whose key an interned pool_key is. */
static struct pool_name *pool_name_of(const char *interned)
{
	return (struct pool_name *)(uintptr_t)(interned - offsetof(struct pool_name, key));
}

/* h now holds an address of the pool whose interned key is pool_key. */
static void held_set_pool(struct held *h, const char *pool_key)
{
	if (h->pool_key != NULL)
		pool_name_of(h->pool_key)->held--;
	h->pool_key = pool_key;
	pool_name_of(pool_key)->held++;
}

static void held_free(void *v)
{
	struct held *h = v;
	if (h != NULL && h->pool_key != NULL)
		pool_name_of(h->pool_key)->held--;
	free(h);
}

/* The pool key's one copy. */
static const char *pool_name(struct incluster *b, const char *pool_key)
{
	struct pool_name *p = pk_strmap_get(b->pool_names, pool_key);
	if (p != NULL)
		return p->key;
	size_t n = strlen(pool_key);
	if ((p = malloc(sizeof(*p) + n + 1)) == NULL)
		return NULL;
	p->held = 0;
	memcpy(p->key, pool_key, n + 1);
	if (pk_strmap_put(b->pool_names, pool_key, p, NULL) != PK_OK) {
		free(p);
		return NULL;
	}
	return p->key;
}

size_t incl_pool_held(struct incluster *b, const char *pool_key)
{
	const struct pool_name *p = pk_strmap_get(b->pool_names, pool_key);
	return p != NULL ? p->held : 0;
}

static void state_clear(struct pool_state *s)
{
	pk_allocator_free(s->alloc);
	s->alloc = NULL;
	pk_pool_release(&s->pool);
	memset(&s->pool, 0, sizeof(s->pool));
}

static void state_free(void *v)
{
	struct pool_state *s = v;
	if (s != NULL)
		state_clear(s);
	free(s);
}

int incl_records_init(struct incluster *b)
{
	b->held = pk_strmap_new();
	b->states = pk_strmap_new();
	b->pool_names = pk_strmap_new();
	return b->held != NULL && b->states != NULL && b->pool_names != NULL ? PK_OK : PK_ERR_NOMEM;
}

void incl_records_free(struct incluster *b)
{
	pk_strmap_free(b->held, held_free);
	pk_strmap_free(b->states, state_free);
	pk_strmap_free(b->pool_names, free);
	b->held = b->states = b->pool_names = NULL;
}

int incl_records_reset(struct incluster *b)
{
	struct pk_strmap *held = pk_strmap_new(), *states = pk_strmap_new();
	if (held == NULL || states == NULL) {
		pk_strmap_free(held, NULL);
		pk_strmap_free(states, NULL);
		return PK_ERR_NOMEM;
	}
	pk_strmap_free(b->held, held_free);
	pk_strmap_free(b->states, state_free);
	b->held = held;
	b->states = states;
	return PK_OK;
}

struct pool_state *incl_state_find(struct incluster *b, const char *pool_key)
{
	return pk_strmap_get(b->states, pool_key);
}

static void note_duplicate(struct pool_state *s, const char *text, const char *key)
{
	s->duplicates++;
	snprintf(s->duplicate_text, sizeof(s->duplicate_text),
	         "address %s is held by more than one IPAddress (one is %.120s)", text, key);
	pk_log_warn("duplicate address", PK_LOG_STR("pool", s->key), PK_LOG_STR("address", text),
	            PK_LOG_STR("ipaddress", key));
}

static void adopt_held(void *ud, const char *key, void *value)
{
	struct pool_state *s = ud;
	struct held *h = value;
	if (strcmp(h->pool_key, s->key) != 0)
		return;
	if (pk_allocator_adopt(s->alloc, h->addr) == PK_ERR_IN_USE) {
		char t[PK_ADDR_STRLEN];
		pk_address_format_v(h->addr, h->family, t);
		note_duplicate(s, t, key);
	}
}

struct quarantine_copy {
	struct pk_allocator *to;
	enum pk_family family;
};

static bool requarantine(pk_u128 addr, int64_t not_before, void *ctx)
{
	struct quarantine_copy *q = ctx;
	/* Held again since, or outside a new spec: the IPAddress or the spec wins. */
	if (pk_allocator_quarantine(q->to, addr, not_before) != PK_OK)
		pk_log_debug("quarantine not carried over");
	return true;
}

static void restore_quarantine(void *ud, const char *text, long long until)
{
	struct quarantine_copy *q = ud;
	struct pk_addr a;
	if (pk_address_parse(text, &a, "status.quarantinedAddresses", NULL) == PK_OK &&
	    a.family == q->family && pk_allocator_quarantine(q->to, a.v, until) != PK_OK)
		pk_log_debug("quarantine in the pool's status not restored",
		             PK_LOG_STR("address", text));
}

/* Decodes the spec into s and builds its allocator: adopts every held address of the pool,
 * then quarantines again what old (the same pool's allocator before a spec change; taken)
 * and the pool's status had in quarantine. PK_ERR_NOMEM; an unusable spec is s->invalid. */
static int state_build(struct incluster *b, struct pool_state *s, const json_t *pool,
                       struct pk_allocator *old)
{
	struct pk_violations v;
	pk_violations_init(&v);
	int rc = pk_pool_decode(json_object_get(pool, "spec"), &s->pool, &v);
	if (rc != PK_OK || s->pool.usable == NULL) {
		char why[PK_ERR_MSG_MAX];
		pk_violations_join(&v, PK_SEV_DENY, why, sizeof(why));
		snprintf(s->invalid, sizeof(s->invalid), "the spec of %.100s is not usable: %.380s",
		         s->key, rc != PK_OK ? "out of memory" : why);
		pk_allocator_free(old);
		return PK_OK;
	}
	s->alloc = pk_allocator_new(s->pool.usable);
	if (s->alloc == NULL) {
		pk_allocator_free(old);
		return PK_ERR_NOMEM;
	}
	s->valid = true;
	pk_strmap_foreach(b->held, adopt_held, s);
	struct quarantine_copy q = {s->alloc, s->pool.family};
	if (old != NULL)
		pk_allocator_each_quarantined(old, requarantine, &q);
	pk_allocator_free(old);
	pk_objects_pool_quarantine(pool, incl_wall_now(), restore_quarantine, &q);
	struct pk_alloc_counts n;
	pk_allocator_counts(s->alloc, &n);
	pk_log_info("pool allocator built", PK_LOG_STR("pool", s->key),
	            PK_LOG_INT("generation", s->generation),
	            PK_LOG_UINT("duplicates", s->duplicates),
	            PK_LOG_UINT("quarantined", (unsigned long long)n.quarantined));
	return PK_OK;
}

/*
 * The pool's state, (re)built when first needed or when its spec or
 * incarnation changed. NULL when memory runs out.
 */
struct pool_state *incl_pool_state(struct incluster *b, const char *pool_key, const json_t *pool)
{
	struct pool_state *s = incl_state_find(b, pool_key);
	const char *uid = pk_json_meta_cstr(pool, "uid");
	const json_t *g = json_object_get(json_object_get(pool, "metadata"), "generation");
	long long gen = json_is_integer(g) ? (long long)json_integer_value(g) : 0;
	if (s != NULL && uid != NULL && strcmp(s->uid, uid) == 0 && s->generation == gen)
		return s;
	struct pk_allocator *old = NULL;
	if (s == NULL) {
		s = calloc(1, sizeof(*s));
		if (s == NULL || pk_strmap_put(b->states, pool_key, s, NULL) != PK_OK) {
			free(s);
			return NULL;
		}
		snprintf(s->key, sizeof(s->key), "%s", pool_key);
	} else {
		/* The same pool, a new spec: its quarantine carries over. */
		if (uid != NULL && strcmp(s->uid, uid) == 0)
			old = s->alloc;
		else
			pk_allocator_free(s->alloc);
		s->alloc = NULL;
		state_clear(s);
	}
	snprintf(s->uid, sizeof(s->uid), "%s", uid ? uid : "");
	s->generation = gen;
	s->valid = false;
	s->duplicates = 0;
	s->duplicate_text[0] = '\0';
	s->invalid[0] = '\0';
	return state_build(b, s, pool, old) == PK_OK ? s : NULL;
}

/* The held entry for key, created (pool_copy interned) when new; NULL when out of memory. */
static struct held *held_entry(struct incluster *b, const char *key, struct held *h)
{
	if (h != NULL) {
		/* The IPAddress was re-created elsewhere: give the old address back first. */
		struct pool_state *old = incl_state_find(b, h->pool_key);
		if (old != NULL && old->alloc != NULL &&
		    pk_allocator_release(old->alloc, h->addr, 0, incl_wall_now()) != PK_OK)
			pk_log_debug("old address was not held", PK_LOG_STR("ipaddress", key));
		return h;
	}
	h = calloc(1, sizeof(*h));
	if (h == NULL || pk_strmap_put(b->held, key, h, NULL) != PK_OK) {
		free(h);
		return NULL;
	}
	return h;
}

/*
 * Records the address of a poolkeeper IPAddress as held; the pool's
 * allocator adopts it. True when that changed the record (a new address,
 * or a duplicate found): the pool's status is then due (its key in
 * pool_key).
 */
bool incl_held_record(struct incluster *b, const json_t *a, char *pool_key, size_t len)
{
	const char *ns = pk_json_meta_cstr(a, "namespace"), *name = pk_json_meta_cstr(a, "name");
	const json_t *spec = json_object_get(a, "spec");
	char key[PK_OBJECT_KEY_MAX];
	if (ns == NULL || name == NULL ||
	    !pk_backend_pool_key(&b->seam, json_object_get(spec, "poolRef"), ns, pool_key, len))
		return false;
	const char *text = pk_json_cstr_at(spec, "address");
	struct pk_addr addr;
	struct pk_err err;
	if (text == NULL || pk_address_parse(text, &addr, "spec.address", &err) != PK_OK) {
		pk_log_warn("IPAddress with an unreadable address ignored",
		            PK_LOG_STR("namespace", ns), PK_LOG_STR("name", name),
		            PK_LOG_STR("error", text ? err.msg : "spec.address missing"));
		return false;
	}
	pk_object_key(ns, name, key, sizeof(key));
	struct held *h = pk_strmap_get(b->held, key);
	if (h != NULL && h->addr == addr.v && strcmp(h->pool_key, pool_key) == 0)
		return false;
	const char *pool_copy = pool_name(b, pool_key);
	if (pool_copy == NULL || (h = held_entry(b, key, h)) == NULL) {
		pk_log_error("out of memory recording a held address",
		             PK_LOG_STR("ipaddress", key));
		return false;
	}
	held_set_pool(h, pool_copy);
	h->addr = addr.v;
	h->family = addr.family;
	struct pool_state *s = incl_state_find(b, pool_key);
	if (s != NULL && s->alloc != NULL && pk_allocator_adopt(s->alloc, addr.v) == PK_ERR_IN_USE)
		note_duplicate(s, text, key);
	return true;
}

struct shared_probe {
	const char *key, *pool_key;
	pk_u128 addr;
	bool found;
	const char *other; /* the first other holder found (a key of the record) */
};

static void probe_shared(void *ud, const char *key, void *value)
{
	struct shared_probe *p = ud;
	const struct held *h = value;
	if (!p->found && h->addr == p->addr && strcmp(key, p->key) != 0 &&
	    strcmp(h->pool_key, p->pool_key) == 0) {
		p->found = true;
		p->other = key;
	}
}

bool incl_held_elsewhere(struct incluster *b, const char *key)
{
	const struct held *h = pk_strmap_get(b->held, key);
	if (h == NULL)
		return false;
	/* A pool without duplicates (the allocator adopted every address once) needs no scan. */
	const struct pool_state *s = incl_state_find(b, h->pool_key);
	if (s != NULL && s->alloc != NULL && s->duplicates == 0)
		return false;
	struct shared_probe p = {key, h->pool_key, h->addr, false, NULL};
	pk_strmap_foreach(b->held, probe_shared, &p);
	return p.found;
}

/*
 * The address recorded for the claim's IPAddress `key` (now gone) may not
 * be handed to it again: it is of another pool, no longer one the pool
 * hands out, or held by another IPAddress of the pool too. Re-creating it
 * would repeat what was wrong (invariant 1).
 */
bool incl_held_stale(struct incluster *b, const struct pool_state *s, const char *key)
{
	const struct held *h = pk_strmap_get(b->held, key);
	if (h == NULL)
		return false;
	return strcmp(h->pool_key, s->key) != 0 || h->family != s->pool.family ||
	       !pk_range_set_contains(s->pool.usable, h->addr) || incl_held_elsewhere(b, key);
}

/* Gives h's address back to its pool (or notes the duplicate that still holds it). */
static void release_to_pool(struct incluster *b, struct pool_state *s, const char *key,
                            const struct held *h, struct released *out)
{
	/* A duplicate (two IPAddresses, one address): the other one still holds it. */
	struct shared_probe p = {key, h->pool_key, h->addr, false, NULL};
	if (s->duplicates > 0)
		pk_strmap_foreach(b->held, probe_shared, &p);
	if (p.found) {
		s->duplicates--;
		/* Its claim may have been refused adoption for the duplicate: look again. */
		snprintf(out->still_held_by, sizeof(out->still_held_by), "%s", p.other);
	} else {
		long long now = incl_wall_now();
		out->grace = s->valid ? s->pool.grace_seconds : 0;
		/* "addressReuseGracePeriodSeconds": the address waits that long. */
		if (pk_allocator_release(s->alloc, h->addr, now + out->grace, now) != PK_OK)
			pk_log_debug("released address was not held",
			             PK_LOG_STR("address", out->text));
	}
	/* With a grace period, the pool's sync when it ends wakes them. */
	out->wake = s->waiters && out->grace == 0;
	if (out->wake)
		s->waiters = false;
}

void incl_release_held(struct incluster *b, const char *key, struct released *out)
{
	memset(out, 0, sizeof(*out));
	struct held *h = pk_strmap_get(b->held, key);
	if (h == NULL)
		return;
	snprintf(out->pool_key, sizeof(out->pool_key), "%s", h->pool_key);
	pk_address_format_v(h->addr, h->family, out->text);
	struct pool_state *s = incl_state_find(b, h->pool_key);
	if (s != NULL && s->alloc != NULL)
		release_to_pool(b, s, key, h, out);
	held_free(pk_strmap_remove(b->held, key));
	out->done = true;
}

int incl_take_address(struct incluster *b, struct pool_state *s, const char *key,
                      struct tentative *t)
{
	memset(t, 0, sizeof(*t));
	struct held *h = pk_strmap_get(b->held, key);
	if (h != NULL) {
		/* An IPAddress deleted under a live claim comes back with the same address. */
		t->v = h->addr;
		return PK_OK;
	}
	int rc = pk_allocator_next(s->alloc, incl_wall_now(), &t->v);
	if (rc == PK_ERR_EXHAUSTED) {
		struct pk_alloc_counts n;
		pk_allocator_counts(s->alloc, &n);
		pk_count_format(n.total, t->total);
		t->exhausted = true;
		s->waiters = true;
		return PK_OK;
	}
	if (rc != PK_OK)
		return rc;
	h = calloc(1, sizeof(*h));
	const char *pool_copy = pool_name(b, s->key);
	if (h == NULL || pool_copy == NULL || pk_strmap_put(b->held, key, h, NULL) != PK_OK) {
		free(h);
		if (pk_allocator_release(s->alloc, t->v, 0, incl_wall_now()) != PK_OK)
			pk_log_debug("tentative address was not held");
		return PK_ERR_NOMEM;
	}
	held_set_pool(h, pool_copy);
	h->addr = t->v;
	h->family = s->pool.family;
	t->fresh = true;
	return PK_OK;
}

void incl_untake_address(struct incluster *b, const char *key)
{
	struct held *h = pk_strmap_remove(b->held, key);
	if (h == NULL)
		return;
	struct pool_state *s = incl_state_find(b, h->pool_key);
	if (s != NULL && s->alloc != NULL &&
	    pk_allocator_release(s->alloc, h->addr, 0, incl_wall_now()) != PK_OK)
		pk_log_debug("tentative address was not held");
	held_free(h);
}
