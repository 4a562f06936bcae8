/*
 * kea_records.c - what the Kea backend keeps: its servers' connections,
 * its pools (decoded, each with its allocator) and its claims; see
 * kea_internal.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "json.h"
#include "kea_internal.h"
#include "log.h"

static void server_free(void *v)
{
	struct kea_server *s = v;
	if (s == NULL)
		return;
	free(s->url);
	free(s->ca);
	free(s->user);
	kea_wipe(s->password);
	free(s->owner);
	free(s);
}

static void pool_free(void *v)
{
	struct kea_pool *p = v;
	if (p == NULL)
		return;
	pk_allocator_free(p->kp.alloc);
	pk_pool_release(&p->spec);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

int kea_records_init(struct kea_backend *b)
{
	b->servers = pk_strmap_new();
	b->pools = pk_strmap_new();
	b->claims = pk_strmap_new();
	return b->servers && b->pools && b->claims ? PK_OK : PK_ERR_NOMEM;
}

void kea_records_free(struct kea_backend *b)
{
	pk_strmap_free(b->servers, server_free);
	pk_strmap_free(b->pools, pool_free);
	pk_strmap_free(b->claims, free);
	b->servers = b->pools = b->claims = NULL;
}

struct kea_claim *kea_claim_get(struct kea_backend *b, const char *key, bool create)
{
	struct kea_claim *c = pk_strmap_get(b->claims, key);
	if (c != NULL || !create)
		return c;
	if ((c = calloc(1, sizeof(*c))) == NULL)
		return NULL;
	if (pk_strmap_put(b->claims, key, c, NULL) != PK_OK) {
		free(c);
		return NULL;
	}
	return c;
}

void kea_claim_drop(struct kea_backend *b, const char *key)
{
	free(pk_strmap_remove(b->claims, key));
}

struct kea_pool *kea_pool_find(struct kea_backend *b, const char *key)
{
	return pk_strmap_get(b->pools, key);
}

/* The Kea fields of a pool's spec: server (a KeaServer's name) and subnetId. */
static bool kea_fields(const json_t *spec, struct kea_pool *p)
{
	const char *server = pk_json_cstr_at(spec, "server");
	const json_t *sid = json_object_get(spec, "subnetId");
	if (server == NULL || server[0] == '\0' || strlen(server) >= sizeof(p->server)) {
		snprintf(p->invalid, sizeof(p->invalid), "spec.server: name a KeaServer");
		return false;
	}
	if (!json_is_integer(sid) || json_integer_value(sid) < 1 ||
	    json_integer_value(sid) > 4294967294LL) {
		snprintf(p->invalid, sizeof(p->invalid),
		         "spec.subnetId: Kea's id of the subnet the addresses lie in, 1 to "
		         "4294967294");
		return false;
	}
	snprintf(p->server, sizeof(p->server), "%s", server);
	p->subnet_id = (long)json_integer_value(sid);
	return true;
}

/* A claim that holds an address of the pool (pk_strmap_foreach over the claims). */
struct pool_scan {
	const char *pool_key, *except;
	pk_u128 addr;
	struct pk_allocator *adopt_into; /* NULL: count or find */
	size_t held;
	bool found;
};

static void scan_claim(void *ud, const char *key, void *value)
{
	struct pool_scan *s = ud;
	const struct kea_claim *c = value;
	if (!c->held || strcmp(c->pool_key, s->pool_key) != 0)
		return;
	s->held++;
	if (s->adopt_into != NULL) {
		int rc = pk_allocator_adopt(s->adopt_into, c->address.v);
		(void)rc; /* PK_ERR_IN_USE: two claims hold it; check_address reports that */
	} else if (c->address.v == s->addr && (s->except == NULL || strcmp(key, s->except) != 0))
		s->found = true;
}

/* Decodes the pool's spec into p (its allocator included) and marks what claims hold. */
static void decode(struct kea_backend *b, struct kea_pool *p, const json_t *pool)
{
	const json_t *spec = json_object_get(pool, "spec");
	struct pk_violations v;
	pk_violations_init(&v);
	p->valid = false;
	p->invalid[0] = '\0';
	int rc = pk_pool_decode(spec, &p->spec, &v);
	if (rc != PK_OK || p->spec.usable == NULL) {
		char why[PK_ERR_MSG_MAX];
		pk_violations_join(&v, PK_SEV_DENY, why, sizeof(why));
		snprintf(p->invalid, sizeof(p->invalid), "the spec of %.100s is not usable: %.380s",
		         p->key, rc != PK_OK ? "out of memory" : why);
		return;
	}
	if (!kea_fields(spec, p))
		return;
	if ((p->kp.alloc = pk_allocator_new(p->spec.usable)) == NULL) {
		snprintf(p->invalid, sizeof(p->invalid), "out of memory");
		return;
	}
	p->kp.family = p->spec.family;
	p->kp.subnet_id = p->subnet_id;
	p->valid = true;
	/* What the backend knows to be held is used (a lease in Kea counts too, when tried). */
	struct pool_scan scan = {.pool_key = p->key, .adopt_into = p->kp.alloc};
	pk_strmap_foreach(b->claims, scan_claim, &scan);
}

struct kea_pool *kea_pool_state(struct kea_backend *b, const char *key, const json_t *pool)
{
	const char *uid = pk_json_meta_cstr(pool, "uid");
	const json_t *g = json_object_get(json_object_get(pool, "metadata"), "generation");
	long long gen = json_is_integer(g) ? json_integer_value(g) : 0;
	struct kea_pool *p = kea_pool_find(b, key);
	if (p != NULL && p->generation == gen && strcmp(p->uid, uid != NULL ? uid : "") == 0)
		return p;
	if (p != NULL) {
		/* A caller may be taking from the old one: it goes with the last of them. */
		pk_strmap_remove(b->pools, key);
		p->retired = true;
		if (p->refs == 0)
			pool_free(p);
	}
	if ((p = calloc(1, sizeof(*p))) == NULL)
		return NULL;
	pthread_mutex_init(&p->mu, NULL);
	snprintf(p->key, sizeof(p->key), "%s", key);
	snprintf(p->uid, sizeof(p->uid), "%s", uid != NULL ? uid : "");
	p->generation = gen;
	p->kp.key = p->key;
	p->kp.mu = &p->mu;
	if (pk_strmap_put(b->pools, key, p, NULL) != PK_OK) {
		pool_free(p);
		return NULL;
	}
	decode(b, p, pool);
	return p;
}

void kea_pool_put(struct kea_backend *b, struct kea_pool *p)
{
	(void)b;
	if (--p->refs == 0 && p->retired)
		pool_free(p);
}

bool kea_address_of(struct kea_backend *b, const json_t *address, char key[PK_OBJECT_KEY_MAX],
                    char pool_key[PK_OBJECT_KEY_MAX], struct pk_addr *a)
{
	const char *ns = pk_json_meta_cstr(address, "namespace"),
	           *name = pk_json_meta_cstr(address, "name");
	const json_t *spec = json_object_get(address, "spec");
	const char *text = pk_json_cstr_at(spec, "address");
	struct pk_err err;
	if (ns == NULL || name == NULL || text == NULL ||
	    !pk_backend_pool_key(&b->seam, json_object_get(spec, "poolRef"), ns, pool_key,
	                         PK_OBJECT_KEY_MAX) ||
	    pk_address_parse(text, a, "spec.address", &err) != PK_OK)
		return false;
	pk_object_key(ns, name, key, PK_OBJECT_KEY_MAX);
	return true;
}

int kea_list_addresses(struct kea_backend *b, int (*page)(void *ud, const json_t *page), void *ud)
{
	struct pk_kube_ref r = {.group = PK_CAPI_IPAM_GROUP,
	                        .version = b->host.ipam_version,
	                        .resource = PK_ADDRESS_RESOURCE,
	                        .namespace = b->host.namespace};
	struct pk_kube_error e;
	if (b->host.writer->ops->list(b->host.writer->self, &r, page, ud, &e) == PK_KUBE_OK)
		return PK_OK;
	return e.reason == PK_KUBE_NOMEM ? PK_ERR_NOMEM : PK_ERR_API;
}

size_t kea_pool_held(struct kea_backend *b, const char *pool_key)
{
	struct pool_scan scan = {.pool_key = pool_key};
	pk_strmap_foreach(b->claims, scan_claim, &scan);
	return scan.held;
}

bool kea_held_elsewhere(struct kea_backend *b, const char *pool_key, const char *key, pk_u128 addr)
{
	struct pool_scan scan = {.pool_key = pool_key, .except = key, .addr = addr};
	pk_strmap_foreach(b->claims, scan_claim, &scan);
	return scan.found;
}

bool kea_server_endpoint(struct kea_backend *b, const char *name, struct pk_kea_endpoint *ep)
{
	const struct kea_server *s = pk_strmap_get(b->servers, name);
	if (s == NULL)
		return false;
	*ep = (struct pk_kea_endpoint){.url = s->url,
	                               .ca_pem = s->ca,
	                               .ca_len = s->ca_len,
	                               .user = s->user,
	                               .password = s->password,
	                               .timeout_ms = b->host.call_timeout_ms};
	return true;
}

char *kea_dup(const char *s)
{
	return s != NULL ? strdup(s) : NULL;
}

void kea_wipe(char *secret)
{
	if (secret != NULL)
		memset(secret, 0, strlen(secret));
	free(secret);
}

int pk_kea_server_set(struct pk_backend *seam, const char *name, const char *url, const char *ca,
                      const char *user, const char *password, const char *owner)
{
	struct kea_backend *b = seam->self;
	struct kea_server *s = NULL;
	if (url != NULL) {
		s = calloc(1, sizeof(*s));
		if (s == NULL)
			return PK_ERR_NOMEM;
		s->url = strdup(url);
		s->ca = kea_dup(ca);
		s->ca_len = ca != NULL ? strlen(ca) : 0;
		s->user = kea_dup(user);
		s->password = kea_dup(password);
		s->owner = strdup(owner != NULL ? owner : "");
		if (s->url == NULL || s->owner == NULL || (ca && !s->ca) || (user && !s->user) ||
		    (password && !s->password)) {
			server_free(s);
			return PK_ERR_NOMEM;
		}
	}
	pthread_mutex_lock(&b->mu);
	void *old = pk_strmap_remove(b->servers, name);
	int rc = s != NULL ? pk_strmap_put(b->servers, name, s, NULL) : PK_OK;
	pthread_mutex_unlock(&b->mu);
	server_free(old);
	if (rc != PK_OK)
		server_free(s);
	return rc;
}
