/*
 * pool_kind.h - a pool resource as the backend that serves it declares it.
 * The generic side (the claim reconciler, its decisions and the objects it
 * writes) takes every pool-specific fact from this declaration, never from
 * poolkeeper's own kinds: the IPAddress's spec.poolRef and its owner
 * reference to the pool, whether a poolRef from any namespace names the
 * one pool, and how messages name the pool.
 */
#ifndef PK_POOL_KIND_H
#define PK_POOL_KIND_H

#include <stdbool.h>

struct pk_pool_kind {
	const char *kind;            /* "IPPool" */
	const char *group, *version; /* "ipam.poolkeeper.io", "v1alpha1" */
	const char *resource;        /* "ippools" */
	bool namespaced;             /* false: a poolRef from any namespace names the one pool */
};

#endif
