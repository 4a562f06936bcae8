/* expect.c - own-write expectations; see expect.h. */
#include <pthread.h>
#include <stdlib.h>

#include "expect.h"
#include "json.h"
#include "kube.h"
#include "strmap.h"

struct record {
	uint64_t claim_rv, address_rv; /* 0: none */
	long long until_ns;
};

struct pk_expect {
	pthread_mutex_t mu;
	struct pk_strmap *map; /* claim ns/name -> struct record */
};

struct pk_expect *pk_expect_new(void)
{
	struct pk_expect *x = calloc(1, sizeof(*x));
	if (x == NULL)
		return NULL;
	if ((x->map = pk_strmap_new()) == NULL) {
		free(x);
		return NULL;
	}
	pthread_mutex_init(&x->mu, NULL);
	return x;
}

void pk_expect_free(struct pk_expect *x)
{
	if (x == NULL)
		return;
	pk_strmap_free(x->map, free);
	pthread_mutex_destroy(&x->mu);
	free(x);
}

uint64_t pk_expect_rv_hash(const json_t *obj)
{
	const char *rv = pk_json_meta_cstr(obj, "resourceVersion");
	return rv != NULL ? pk_strmap_hash(rv) : 0;
}

void pk_expect_write(struct pk_expect *x, const char *key, bool address, uint64_t rv_hash,
                     long long now_ns)
{
	if (rv_hash == 0)
		return;
	pthread_mutex_lock(&x->mu);
	struct record *r = pk_strmap_get(x->map, key);
	if (r == NULL && (r = calloc(1, sizeof(*r))) != NULL &&
	    pk_strmap_put(x->map, key, r, NULL) != PK_OK) {
		free(r);
		r = NULL;
	}
	if (r != NULL) {
		*(address ? &r->address_rv : &r->claim_rv) = rv_hash;
		r->until_ns = now_ns + PK_EXPECT_MS * 1000000LL;
	}
	pthread_mutex_unlock(&x->mu);
}

/* Under mu: drops r when both halves are seen. */
static void settle(struct pk_expect *x, const char *key, const struct record *r)
{
	if (r->claim_rv == 0 && r->address_rv == 0)
		free(pk_strmap_remove(x->map, key));
}

void pk_expect_seen(struct pk_expect *x, const char *key, bool address, uint64_t rv_hash)
{
	pthread_mutex_lock(&x->mu);
	struct record *r = pk_strmap_get(x->map, key);
	if (r != NULL) {
		uint64_t *want = address ? &r->address_rv : &r->claim_rv;
		if (rv_hash == 0 || *want == rv_hash)
			*want = 0;
		if (rv_hash == 0 && !address)
			r->address_rv = 0; /* the claim is gone: nothing to wait for */
		settle(x, key, r);
	}
	pthread_mutex_unlock(&x->mu);
}

long pk_expect_wait(struct pk_expect *x, const char *key, bool claim_present, uint64_t claim_rv,
                    uint64_t address_rv, long long now_ns)
{
	long wait = 0;
	pthread_mutex_lock(&x->mu);
	struct record *r = pk_strmap_get(x->map, key);
	if (r != NULL) {
		long long left = r->until_ns - now_ns;
		if (left <= 0 || !claim_present) {
			r->claim_rv = r->address_rv = 0;
		} else {
			if (r->claim_rv == claim_rv)
				r->claim_rv = 0;
			if (address_rv != 0 && r->address_rv == address_rv)
				r->address_rv = 0;
			if (r->claim_rv != 0 || r->address_rv != 0)
				wait = (long)(left / 1000000) + 1;
		}
		settle(x, key, r);
	}
	pthread_mutex_unlock(&x->mu);
	return wait;
}

size_t pk_expect_len(struct pk_expect *x)
{
	pthread_mutex_lock(&x->mu);
	size_t n = pk_strmap_len(x->map);
	pthread_mutex_unlock(&x->mu);
	return n;
}
