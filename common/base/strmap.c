/* strmap.c - string-keyed hash map; see strmap.h. */
#include <stdlib.h>
#include <string.h>

#include "strmap.h"

#define INITIAL_BUCKETS 16

struct node {
	struct node *next;
	uint64_t hash;
	void *value;
	char key[]; /* NUL-terminated */
};

struct pk_strmap {
	struct node **buckets;
	size_t nbuckets; /* a power of two */
	size_t n;
};

uint64_t pk_strmap_hash(const char *s)
{
	uint64_t h = 14695981039346656037ULL;
	for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
		h ^= *p;
		h *= 1099511628211ULL;
	}
	return h;
}

struct pk_strmap *pk_strmap_new(void)
{
	struct pk_strmap *m = calloc(1, sizeof(*m));
	if (m == NULL)
		return NULL;
	m->buckets = calloc(INITIAL_BUCKETS, sizeof(*m->buckets));
	if (m->buckets == NULL) {
		free(m);
		return NULL;
	}
	m->nbuckets = INITIAL_BUCKETS;
	return m;
}

void pk_strmap_free(struct pk_strmap *m, void (*free_value)(void *value))
{
	if (m == NULL)
		return;
	for (size_t i = 0; i < m->nbuckets; i++) {
		struct node *e = m->buckets[i], *next;
		for (; e != NULL; e = next) {
			next = e->next;
			if (free_value != NULL)
				free_value(e->value);
			free(e);
		}
	}
	free(m->buckets);
	free(m);
}

static struct node **slot(const struct pk_strmap *m, const char *key, uint64_t h)
{
	struct node **pp = &m->buckets[h & (m->nbuckets - 1)];
	while (*pp != NULL && ((*pp)->hash != h || strcmp((*pp)->key, key) != 0))
		pp = &(*pp)->next;
	return pp;
}

void *pk_strmap_get(const struct pk_strmap *m, const char *key)
{
	return pk_strmap_get_hashed(m, key, pk_strmap_hash(key));
}

void *pk_strmap_get_hashed(const struct pk_strmap *m, const char *key, uint64_t h)
{
	struct node *e = *slot(m, key, h);
	return e != NULL ? e->value : NULL;
}

/* Rehashes into nb buckets (a power of two); on failure the map stays as it is. */
static void resize(struct pk_strmap *m, size_t nb)
{
	struct node **b = calloc(nb, sizeof(*b));
	if (b == NULL)
		return;
	for (size_t i = 0; i < m->nbuckets; i++) {
		struct node *e = m->buckets[i], *next;
		for (; e != NULL; e = next) {
			next = e->next;
			e->next = b[e->hash & (nb - 1)];
			b[e->hash & (nb - 1)] = e;
		}
	}
	free(m->buckets);
	m->buckets = b;
	m->nbuckets = nb;
}

/* Doubles the bucket array; on failure the map stays as it is (only slower). */
static void grow(struct pk_strmap *m)
{
	size_t nb = m->nbuckets * 2;
	if (nb < m->nbuckets || nb > SIZE_MAX / sizeof(struct node *))
		return;
	resize(m, nb);
}

int pk_strmap_put(struct pk_strmap *m, const char *key, void *value, void **old)
{
	return pk_strmap_put_hashed(m, key, pk_strmap_hash(key), value, old);
}

int pk_strmap_put_hashed(struct pk_strmap *m, const char *key, uint64_t h, void *value, void **old)
{
	struct node **pp = slot(m, key, h);
	if (old != NULL)
		*old = NULL;
	if (*pp != NULL) {
		if (old != NULL)
			*old = (*pp)->value;
		(*pp)->value = value;
		return PK_OK;
	}
	size_t klen = strlen(key);
	struct node *e = malloc(sizeof(*e) + klen + 1);
	if (e == NULL)
		return PK_ERR_NOMEM;
	memcpy(e->key, key, klen + 1);
	e->hash = h;
	e->value = value;
	e->next = NULL;
	*pp = e;
	m->n++;
	if (m->n > m->nbuckets)
		grow(m);
	return PK_OK;
}

void *pk_strmap_remove(struct pk_strmap *m, const char *key)
{
	return pk_strmap_remove_hashed(m, key, pk_strmap_hash(key));
}

void *pk_strmap_remove_hashed(struct pk_strmap *m, const char *key, uint64_t h)
{
	struct node **pp = slot(m, key, h);
	struct node *e = *pp;
	if (e == NULL)
		return NULL;
	*pp = e->next;
	void *v = e->value;
	free(e);
	m->n--;
	/* Gives memory back after a burst of keys; failing to is harmless. */
	if (m->nbuckets > INITIAL_BUCKETS && m->n * 8 < m->nbuckets)
		resize(m, m->nbuckets / 2);
	return v;
}

size_t pk_strmap_len(const struct pk_strmap *m)
{
	return m->n;
}

void pk_strmap_foreach(const struct pk_strmap *m, pk_strmap_visit_fn *fn, void *ud)
{
	for (size_t i = 0; i < m->nbuckets; i++)
		for (struct node *e = m->buckets[i]; e != NULL; e = e->next)
			fn(ud, e->key, e->value);
}
