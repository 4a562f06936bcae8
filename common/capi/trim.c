/* trim.c - the members of API objects the controller reads; see trim.h. */
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "external_id.h"
#include "jpack.h"
#include "json.h"
#include "pk.h"
#include "trim.h"

/*
 * What to keep of an object: each named member as it is (only == NULL),
 * or, when it is an object, only the members `only` names (an object left
 * empty is left out, and so is a member that is not an object). Owner
 * references are a list, kept by controller_owners. An entry without a
 * name keeps what the table `also` names (the members every kind shares).
 */
struct keep {
	const char *name;
	const struct keep *only;
	bool controller_owners;
	bool finalizers;   /* poolkeeper's own entries and where they sit (own_finalizers) */
	bool presence;     /* kept as "": only whether it is there is read */
	size_t max_string; /* > 0: kept only as a string shorter than this */
	const struct keep *also;
};

/* Each table ends with an entry of neither name nor also. */
static const struct keep cluster_name_label[] = {{.name = PK_CLUSTER_NAME_LABEL}, {.name = NULL}};
/* "HasPaused" (CAPI's annotations.HasPaused) and clusterctl's delete-for-move read only the key:
 * a value (up to 256 KiB of a tenant's) is not kept. */
static const struct keep paused_annotation[] = {{.name = PK_PAUSED_ANNOTATION, .presence = true},
                                                {.name = NULL}};
static const struct keep claim_annotations[] = {
    {.name = PK_DELETE_FOR_MOVE_ANNOTATION, .presence = true},
    {.name = PK_PAUSED_ANNOTATION, .presence = true},
    {.name = NULL}};

/* The metadata every kind but Cluster keeps: who it is, its version, and whether it is
 * going. */
static const struct keep object_metadata[] = {
    {.name = "name"},
    {.name = "namespace"},
    {.name = "uid"},
    {.name = "resourceVersion"},
    {.name = "deletionTimestamp"},
    {.name = "finalizers", .finalizers = true},
    {.name = NULL},
};

/* Who an object is and its version, and nothing more: a claim on another provider's pool and
 * an object over PK_TRIM_MAX_BYTES. */
static const struct keep identity_metadata[] = {
    {.name = "name"}, {.name = "namespace"}, {.name = "uid"}, {.name = "resourceVersion"},
    {.name = NULL},
};
static const struct keep identity[] = {
    {.name = "metadata", .only = identity_metadata},
    {.name = NULL},
};

static const struct keep claim_metadata[] = {
    {.also = object_metadata},
    {.name = "generation"},
    {.name = "labels", .only = cluster_name_label},
    {.name = "annotations", .only = claim_annotations},
    {.name = NULL},
};
static const struct keep claim_spec[] = {
    {.name = "poolRef"}, {.name = "clusterName"}, {.name = NULL}};
static const struct keep claim_status[] = {
    {.name = "addressRef"}, {.name = "conditions"}, {.name = NULL}};
static const struct keep claim[] = {
    {.name = "apiVersion"},
    {.name = "metadata", .only = claim_metadata},
    {.name = "spec", .only = claim_spec},
    {.name = "status", .only = claim_status},
    {.name = NULL},
};

/* decide.c: an IPAddress is the claim's when a controller reference of kind IPAddressClaim
 * has its uid. */
static const struct keep owner_reference[] = {
    {.name = "kind"}, {.name = "uid"}, {.name = "controller"}, {.name = NULL}};
/* The external ID (external_id.h), at most as long as one poolkeeper writes. */
static const struct keep address_annotations[] = {
    {.name = PK_EXTERNAL_ID_ANNOTATION, .max_string = PK_EXTERNAL_ID_MAX}, {.name = NULL}};
static const struct keep address_metadata[] = {
    {.also = object_metadata},
    {.name = "annotations", .only = address_annotations},
    {.name = "ownerReferences", .only = owner_reference, .controller_owners = true},
    {.name = NULL},
};
static const struct keep address[] = {
    {.name = "metadata", .only = address_metadata},
    {.name = "spec"},
    {.name = NULL},
};

static const struct keep pool_metadata[] = {
    {.also = object_metadata},
    {.name = "generation"},
    {.name = "annotations", .only = paused_annotation},
    {.name = NULL},
};
static const struct keep pool[] = {
    {.name = "metadata", .only = pool_metadata},
    {.name = "spec"},
    {.name = "status"},
    {.name = NULL},
};

/* A backend's connection object or Secret (backend.h, watches): who it is, and what it says. */
static const struct keep connection_metadata[] = {
    {.also = identity_metadata},
    {.name = "generation"},
    {.name = NULL},
};
static const struct keep connection[] = {
    {.name = "metadata", .only = connection_metadata},
    {.name = "spec"},
    {.name = "data"},
    {.name = "type"},
    {.name = NULL},
};

static const struct keep cluster_metadata[] = {
    {.name = "name"},
    {.name = "namespace"},
    {.name = "annotations", .only = paused_annotation},
    {.name = NULL},
};
static const struct keep cluster_spec[] = {{.name = "paused"}, {.name = NULL}};
static const struct keep cluster[] = {
    {.name = "metadata", .only = cluster_metadata},
    {.name = "spec", .only = cluster_spec},
    {.name = NULL},
};

static json_t *trim_object(const json_t *src, const struct keep *k);

/* The finalizers poolkeeper puts on objects and takes off: the only entries of
 * metadata.finalizers anything reads. */
static const char *const own_finalizers[] = {PK_CLAIM_FINALIZER, PK_ADDRESS_FINALIZER,
                                             PK_POOL_FINALIZER};
#define OWN_FINALIZERS (sizeof(own_finalizers) / sizeof(own_finalizers[0]))

/* Which of own_finalizers v is (its index), or -1: another party's entry, or not a string. */
static int own_finalizer(const json_t *v)
{
	const char *s = pk_json_cstr(v);
	for (size_t i = 0; s != NULL && i < OWN_FINALIZERS; i++)
		if (strcmp(s, own_finalizers[i]) == 0)
			return (int)i;
	return -1;
}

/* run plus the entries v stands for: an integer n (a run already counted, trimming a trimmed
 * copy) is n of them, anything else one. */
static size_t add_run(size_t run, const json_t *v)
{
	json_int_t n = json_is_integer(v) ? json_integer_value(v) : 1;
	size_t add = n < 1 ? 1 : (uint64_t)n > (uint64_t)LONG_MAX ? (size_t)LONG_MAX : (size_t)n;
	return run > (size_t)LONG_MAX - add ? (size_t)LONG_MAX : run + add;
}

/* Appends a run of n other entries as the integer n (nothing when n is 0). */
static bool append_run(json_t *list, size_t n)
{
	return n == 0 || json_array_append_new(list, json_integer((json_int_t)n)) == 0;
}

/*
 * metadata.finalizers as trim.h keeps it: the first entry of each of own_finalizers, and
 * each run of other entries between them as its length, so that an entry's index is its
 * index in the whole list. A list of 4,300 other entries keeps as [4300]. *out is NULL when
 * the member is not a list (every reader reads such a member as no list). PK_ERR_NOMEM when
 * memory ran out.
 */
static int keep_finalizers(const json_t *list, json_t **out)
{
	*out = NULL;
	if (!json_is_array(list))
		return PK_OK;
	json_t *kept = json_array();
	bool seen[OWN_FINALIZERS] = {false};
	size_t run = 0, i;
	const json_t *v;
	if (kept == NULL)
		return PK_ERR_NOMEM;
	json_array_foreach(list, i, v)
	{
		int own = own_finalizer(v);
		/* A second copy is never read: every reader stops at the first. */
		if (own < 0 || seen[own]) {
			run = add_run(run, v);
			continue;
		}
		seen[own] = true;
		if (!append_run(kept, run) || json_array_append_new(kept, json_deep_copy(v)) != 0)
			goto nomem;
		run = 0;
	}
	if (!append_run(kept, run))
		goto nomem;
	*out = kept;
	return PK_OK;
nomem:
	json_decref(kept);
	return PK_ERR_NOMEM;
}

/* The controller references among owner references, each trimmed to `only`: *out is NULL
 * when there are none. PK_ERR_NOMEM when memory ran out. */
static int controller_owners(const json_t *refs, const struct keep *only, json_t **out)
{
	json_t *list = NULL;
	size_t i;
	const json_t *r;
	json_array_foreach(refs, i, r)
	{
		if (!json_is_object(r) || !json_is_true(json_object_get(r, "controller")))
			continue;
		if (list == NULL && (list = json_array()) == NULL)
			goto nomem;
		json_t *t = trim_object(r, only);
		/* json_array_append_new releases t when it fails */
		if (t == NULL || json_array_append_new(list, t) != 0)
			goto nomem;
	}
	*out = list;
	return PK_OK;
nomem:
	json_decref(list);
	*out = NULL;
	return PK_ERR_NOMEM;
}

/* A copy of member v as k keeps it into *copy (NULL: nothing kept). False when memory ran
 * out. */
static bool keep_member(const json_t *v, const struct keep *k, json_t **copy)
{
	*copy = NULL;
	if (k->presence)
		return (*copy = json_string("")) != NULL;
	if (k->max_string > 0 && (!json_is_string(v) || json_string_length(v) >= k->max_string))
		return true;
	if (k->finalizers)
		return keep_finalizers(v, copy) == PK_OK;
	if (k->controller_owners)
		return controller_owners(v, k->only, copy) == PK_OK;
	if (k->only == NULL)
		return (*copy = json_deep_copy(v)) != NULL;
	if (!json_is_object(v))
		return true;
	if ((*copy = trim_object(v, k->only)) == NULL)
		return false;
	if (json_object_size(*copy) == 0) {
		json_decref(*copy);
		*copy = NULL;
	}
	return true;
}

/* Adds the members of src that the table k names to out; false when memory ran out. */
static bool keep_members(const json_t *src, const struct keep *k, json_t *out)
{
	for (; k->name != NULL || k->also != NULL; k++) {
		if (k->name == NULL) {
			if (!keep_members(src, k->also, out))
				return false;
			continue;
		}
		const json_t *v = json_object_get(src, k->name);
		json_t *copy = NULL;
		if (v == NULL)
			continue;
		if (!keep_member(v, k, &copy) ||
		    (copy != NULL && json_object_set_new(out, k->name, copy) != 0))
			return false;
	}
	return true;
}

/* The members of src that k names, as a new object (empty when none); NULL when memory ran
 * out. src is an object. */
static json_t *trim_object(const json_t *src, const struct keep *k)
{
	json_t *out = json_object();
	if (out != NULL && !keep_members(src, k, out)) {
		json_decref(out);
		return NULL;
	}
	return out;
}

static json_t *trim(const json_t *obj, const struct keep *k)
{
	return json_is_object(obj) ? trim_object(obj, k) : NULL;
}

json_t *pk_trim_claim(const json_t *obj)
{
	return trim(obj, claim);
}

json_t *pk_trim_foreign_claim(const json_t *obj)
{
	return trim(obj, identity);
}

json_t *pk_trim_address(const json_t *obj)
{
	return trim(obj, address);
}

json_t *pk_trim_pool(const json_t *obj)
{
	return trim(obj, pool);
}

json_t *pk_trim_cluster(const json_t *obj)
{
	return trim(obj, cluster);
}

json_t *pk_trim_connection(const json_t *obj)
{
	return trim(obj, connection);
}

/* Packs obj into *packed (n bytes); over the cap, its identity instead, and *over gets the
 * size it packed to. PK_OK, or what pk_jpack_encode says. */
static int pack_capped(const json_t *obj, unsigned char **packed, size_t *n, size_t *over)
{
	*over = 0;
	int rc = pk_jpack_encode(obj, packed, n);
	if (rc != PK_OK || *n <= PK_TRIM_MAX_BYTES)
		return rc;
	*over = *n;
	free(*packed);
	*packed = NULL;
	json_t *id = trim(obj, identity);
	rc = id != NULL ? pk_jpack_encode(id, packed, n) : PK_ERR_NOMEM;
	json_decref(id);
	return rc;
}

void *pk_trim_pack(json_t *trimmed, size_t head, size_t tail, size_t *len, size_t *over)
{
	unsigned char *packed = NULL;
	size_t n = 0;
	*over = 0;
	int rc = trimmed != NULL ? pack_capped(trimmed, &packed, &n, over) : PK_ERR_NOMEM;
	json_decref(trimmed);
	if (rc != PK_OK)
		return NULL;
	unsigned char *block = NULL;
	if (head <= SIZE_MAX - tail && n <= SIZE_MAX - head - tail)
		block = malloc(head + n + tail);
	if (block != NULL) {
		memset(block, 0, head);
		memcpy(block + head, packed, n);
		memset(block + head + n, 0, tail);
		*len = n;
	}
	free(packed);
	return block;
}
