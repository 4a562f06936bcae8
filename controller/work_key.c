/* work_key.c - the controller's typed work keys; see work_key.h. */
#include <stdio.h>
#include <string.h>

#include "work_key.h"

#define COPY(dst, src) snprintf((dst), sizeof(dst), "%s", (src) != NULL ? (src) : "")

void pk_work_key_claim(struct pk_work_key *k, const char *ns, const char *name)
{
	memset(k, 0, sizeof(*k));
	k->kind = PK_WORK_CLAIM;
	COPY(k->namespace, ns);
	COPY(k->name, name);
}

void pk_work_key_pool(struct pk_work_key *k, enum pk_work_kind kind, const char *pool_kind,
                      const char *ns, const char *name)
{
	memset(k, 0, sizeof(*k));
	k->kind = kind;
	COPY(k->pool_kind, pool_kind);
	COPY(k->namespace, ns);
	COPY(k->name, name);
}

void pk_work_key_resync(struct pk_work_key *k)
{
	memset(k, 0, sizeof(*k));
	k->kind = PK_WORK_RESYNC;
}

bool pk_work_key_format(const struct pk_work_key *k, char *buf, size_t len)
{
	int n;
	if (k->kind == PK_WORK_CLAIM)
		n = snprintf(buf, len, "c/%s/%s", k->namespace, k->name);
	else if (k->kind == PK_WORK_RESYNC)
		n = snprintf(buf, len, "r/");
	else
		n = snprintf(buf, len, "%c/%s/%s/%s", k->kind == PK_WORK_POOL ? 'p' : 'g',
		             k->pool_kind, k->namespace, k->name);
	return n >= 0 && (size_t)n < len;
}

/* Copies [s, end) into dst (size cap); false when it does not fit. */
static bool part(char *dst, size_t cap, const char *s, const char *end)
{
	size_t n = (size_t)(end - s);
	if (n >= cap)
		return false;
	memcpy(dst, s, n);
	dst[n] = '\0';
	return true;
}

bool pk_work_key_parse(const char *text, struct pk_work_key *k)
{
	memset(k, 0, sizeof(*k));
	if (text == NULL || text[0] == '\0' || text[1] != '/')
		return false;
	const char *p = text + 2;
	if (text[0] == 'r') {
		k->kind = PK_WORK_RESYNC;
		return *p == '\0';
	}
	if (text[0] == 'c') {
		const char *slash = strchr(p, '/');
		k->kind = PK_WORK_CLAIM;
		return slash != NULL && strchr(slash + 1, '/') == NULL && slash[1] != '\0' &&
		       part(k->namespace, sizeof(k->namespace), p, slash) &&
		       part(k->name, sizeof(k->name), slash + 1, slash + 1 + strlen(slash + 1));
	}
	if (text[0] != 'p' && text[0] != 'g')
		return false;
	if (!pk_pool_key_parse(p, k))
		return false;
	k->kind = text[0] == 'p' ? PK_WORK_POOL : PK_WORK_POOL_GRACE;
	return true;
}

bool pk_pool_key_parse(const char *pool_key, struct pk_work_key *k)
{
	memset(k, 0, sizeof(*k));
	k->kind = PK_WORK_POOL;
	const char *a = strchr(pool_key, '/'), *b = a != NULL ? strchr(a + 1, '/') : NULL;
	if (a == NULL || b == NULL || a == pool_key || b[1] == '\0' || strchr(b + 1, '/') != NULL)
		return false;
	return part(k->pool_kind, sizeof(k->pool_kind), pool_key, a) &&
	       part(k->namespace, sizeof(k->namespace), a + 1, b) &&
	       part(k->name, sizeof(k->name), b + 1, b + 1 + strlen(b + 1));
}

void pk_object_key_parse(const char *key, struct pk_work_key *k)
{
	const char *slash = key != NULL ? strchr(key, '/') : NULL;
	if (slash == NULL) {
		pk_work_key_claim(k, "", key);
		return;
	}
	memset(k, 0, sizeof(*k));
	k->kind = PK_WORK_CLAIM;
	if (!part(k->namespace, sizeof(k->namespace), key, slash))
		k->namespace[0] = '\0';
	COPY(k->name, slash + 1);
}
