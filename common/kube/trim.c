/* trim.c - the members of API objects the controller reads; see trim.h. */
#include <stdbool.h>
#include <stddef.h>

#include "api.h"
#include "pk.h"
#include "trim.h"

/*
 * What to keep of an object: each named member as it is (only == NULL),
 * or, when it is an object, only the members `only` names (an object left
 * empty is left out, and so is a member that is not an object). Owner
 * references are a list, kept by controller_owners.
 */
struct keep {
	const char *name;
	const struct keep *only;
	bool controller_owners;
};

/* Each table ends with a NULL name. */
static const struct keep cluster_name_label[] = {{.name = PK_CLUSTER_NAME_LABEL}, {.name = NULL}};
static const struct keep paused_annotation[] = {{.name = PK_PAUSED_ANNOTATION}, {.name = NULL}};
static const struct keep claim_annotations[] = {
    {.name = PK_DELETE_FOR_MOVE_ANNOTATION}, {.name = PK_PAUSED_ANNOTATION}, {.name = NULL}};

static const struct keep claim_metadata[] = {
    {.name = "name"},
    {.name = "namespace"},
    {.name = "uid"},
    {.name = "resourceVersion"},
    {.name = "generation"},
    {.name = "deletionTimestamp"},
    {.name = "finalizers"},
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
static const struct keep address_metadata[] = {
    {.name = "name"},
    {.name = "namespace"},
    {.name = "uid"},
    {.name = "resourceVersion"},
    {.name = "deletionTimestamp"},
    {.name = "finalizers"},
    {.name = "ownerReferences", .only = owner_reference, .controller_owners = true},
    {.name = NULL},
};
static const struct keep address[] = {
    {.name = "metadata", .only = address_metadata},
    {.name = "spec"},
    {.name = NULL},
};

static const struct keep pool_metadata[] = {
    {.name = "name"},       {.name = "namespace"},
    {.name = "uid"},        {.name = "resourceVersion"},
    {.name = "generation"}, {.name = "deletionTimestamp"},
    {.name = "finalizers"}, {.name = "annotations", .only = paused_annotation},
    {.name = NULL},
};
static const struct keep pool[] = {
    {.name = "metadata", .only = pool_metadata},
    {.name = "spec"},
    {.name = "status"},
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

/* The members of src that k names, as a new object (empty when none); NULL when memory ran
 * out. src is an object. */
static json_t *trim_object(const json_t *src, const struct keep *k)
{
	json_t *out = json_object();
	if (out == NULL)
		return NULL;
	for (; k->name != NULL; k++) {
		const json_t *v = json_object_get(src, k->name);
		json_t *copy = NULL;
		bool nomem = false;
		if (v == NULL)
			continue;
		if (k->controller_owners) {
			nomem = controller_owners(v, k->only, &copy) != PK_OK;
		} else if (k->only == NULL) {
			copy = json_deep_copy(v);
			nomem = copy == NULL;
		} else if (json_is_object(v)) {
			copy = trim_object(v, k->only);
			nomem = copy == NULL;
			if (copy != NULL && json_object_size(copy) == 0) {
				json_decref(copy);
				copy = NULL;
			}
		}
		if (nomem || (copy != NULL && json_object_set_new(out, k->name, copy) != 0)) {
			json_decref(out);
			return NULL;
		}
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
