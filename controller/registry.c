/* registry.c - the pool backends this build has (registry.h). */
#include "registry.h"

#include <stdio.h>
#include <string.h>

#include "backend_set.h"
#include "incluster.h"

static const struct pk_registry_entry entries[] = {
    {PK_INCLUSTER_BACKEND, "IPPool, GlobalIPPool (ipam.poolkeeper.io)", pk_incluster_new},
};

#define NENTRIES (sizeof(entries) / sizeof(entries[0]))

/* "incluster, ..." for errors. */
static void known(char *buf, size_t len)
{
	size_t at = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < NENTRIES && at < len; i++) {
		int w = snprintf(buf + at, len - at, "%s%s", i ? ", " : "", entries[i].name);
		if (w < 0)
			break;
		at += (size_t)w;
	}
}

static const struct pk_registry_entry *find_n(const char *name, size_t len)
{
	for (size_t i = 0; i < NENTRIES; i++)
		if (strlen(entries[i].name) == len && memcmp(entries[i].name, name, len) == 0)
			return &entries[i];
	return NULL;
}

const struct pk_registry_entry *pk_registry_find(const char *name)
{
	return name != NULL ? find_n(name, strlen(name)) : NULL;
}

int pk_registry_parse(const char *list, const struct pk_registry_entry *out[PK_REGISTRY_MAX],
                      size_t *n, struct pk_err *err)
{
	char names[256];
	known(names, sizeof(names));
	*n = 0;
	if (list == NULL || *list == '\0')
		return pk_err_set(
		    err, PK_ERR_INVALID,
		    "--backends: empty; name at least one backend (this build has: %s)", names);
	for (const char *p = list;;) {
		const char *end = strchr(p, ',');
		size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
		const struct pk_registry_entry *e = find_n(p, len);
		if (e == NULL)
			return pk_err_set(
			    err, PK_ERR_INVALID,
			    "--backends \"%s\": \"%.*s\" is not a backend of this build "
			    "(it has: %s)",
			    list, (int)(len > 64 ? 64 : len), p, names);
		for (size_t i = 0; i < *n; i++)
			if (out[i] == e)
				return pk_err_set(err, PK_ERR_INVALID,
				                  "--backends \"%s\": \"%s\" is named twice", list,
				                  e->name);
		if (*n == PK_REGISTRY_MAX)
			return pk_err_set(err, PK_ERR_INVALID,
			                  "--backends \"%s\": more than %d names", list,
			                  PK_REGISTRY_MAX);
		out[(*n)++] = e;
		if (end == NULL)
			return PK_OK;
		p = end + 1;
	}
}

int pk_registry_create(const struct pk_registry_entry *const *chosen, size_t n,
                       const struct pk_backend_host *host, struct pk_backend *out,
                       struct pk_err *err)
{
	struct pk_backend made[PK_REGISTRY_MAX];
	if (n == 0 || n > PK_REGISTRY_MAX)
		return pk_err_set(err, PK_ERR_INVALID, "--backends: name 1 to %d backends",
		                  PK_REGISTRY_MAX);
	for (size_t i = 0; i < n; i++) {
		if (chosen[i]->create(host, &made[i]) == PK_OK)
			continue;
		while (i-- > 0)
			made[i].ops->free(made[i].self);
		return pk_err_set(err, PK_ERR_NOMEM, "backend %s: out of memory", chosen[i]->name);
	}
	if (n == 1) {
		*out = made[0];
		return PK_OK;
	}
	return pk_backend_set_new(made, n, out, err);
}
