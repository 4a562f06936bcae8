/*
 * registry.h - the pool backends this build has, by name: what
 * --backends (chart value controller.backends) chooses from. The registry
 * is the one place that sees every backend's header; the generic side
 * (pkctl) sees none.
 */
#ifndef PK_REGISTRY_H
#define PK_REGISTRY_H

#include <stddef.h>

#include "backend.h"
#include "pk.h"

struct pk_registry_entry {
	const char *name;   /* "incluster" */
	const char *serves; /* its pool kinds, for --help and errors */
	PK_MUST_CHECK int (*create)(const struct pk_backend_host *host, struct pk_backend *out);
};

/* At most this many backends in a list. */
#define PK_REGISTRY_MAX 8

/* --backends' default. */
#define PK_REGISTRY_DEFAULT PK_INCLUSTER_BACKEND

/* The entry named `name`, or NULL. */
const struct pk_registry_entry *pk_registry_find(const char *name);

/*
 * A comma-separated list of backend names into out (in the list's order).
 * PK_ERR_INVALID, naming the value and the names this build has, for an
 * empty list, an empty or unknown name, or a name given twice.
 */
PK_MUST_CHECK int pk_registry_parse(const char *list,
                                    const struct pk_registry_entry *out[PK_REGISTRY_MAX], size_t *n,
                                    struct pk_err *err);

/*
 * The backends chosen[0..n) name, made with host, as one backend in *out:
 * the one itself, or several side by side (backend_set.h). Nothing is left
 * made when it fails. PK_ERR_INVALID (two that serve one kind), PK_ERR_NOMEM.
 */
PK_MUST_CHECK int pk_registry_create(const struct pk_registry_entry *const *chosen, size_t n,
                                     const struct pk_backend_host *host, struct pk_backend *out,
                                     struct pk_err *err);

#endif
