/* objects.c - the objects and patches the controller writes; see objects.h. */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "api.h"
#include "count.h"
#include "json.h"
#include "objects.h"
#include "rules.h"

static const json_t *finalizers_of(const json_t *obj)
{
	return json_object_get(json_object_get(obj, "metadata"), "finalizers");
}

/* The index of the finalizer's first entry, or -1. A cached copy keeps each run of other
 * entries as its length, an integer (trim.h); an object from the API server holds none. */
static long finalizer_index(const json_t *obj, const char *finalizer)
{
	size_t i;
	const json_t *v;
	long at = 0;
	json_array_foreach(finalizers_of(obj), i, v)
	{
		if (pk_json_cstr(v) != NULL && strcmp(pk_json_cstr(v), finalizer) == 0)
			return at;
		json_int_t run = json_is_integer(v) ? json_integer_value(v) : 1;
		if (run < 1)
			run = 1;
		if (run > LONG_MAX - at)
			return -1;
		at += (long)run;
	}
	return -1;
}

bool pk_objects_has_finalizer(const json_t *obj, const char *finalizer)
{
	return finalizer_index(obj, finalizer) >= 0;
}

/*
 * Finalizer patches are guarded by what they change, never by the object's
 * resourceVersion: another party's write (the garbage collector taking an
 * owner reference off, a provider's patch, kubectl) must not turn them into
 * a 422 and a retry. The uid test keeps a patch off an object of the same
 * name made since; a removal tests the entry at its index, and an add to an
 * object without the list tests that it still has none (a JSON Patch test
 * of null passes on a missing member), so that nobody's finalizers are
 * replaced. An append needs no guard: it adds to whatever list is there.
 */
static json_t *test_uid(const json_t *obj)
{
	const char *uid = pk_json_cstr_at(json_object_get(obj, "metadata"), "uid");
	if (uid == NULL)
		return NULL;
	return json_pack("{s:s, s:s, s:s}", "op", "test", "path", "/metadata/uid", "value", uid);
}

json_t *pk_objects_finalizer_add_patch(const json_t *obj, const char *finalizer)
{
	if (pk_objects_has_finalizer(obj, finalizer))
		return NULL;
	json_t *t = test_uid(obj);
	if (t == NULL)
		return NULL;
	if (json_is_array(finalizers_of(obj)))
		return json_pack("[o, {s:s, s:s, s:s}]", t, "op", "add", "path",
		                 "/metadata/finalizers/-", "value", finalizer);
	/* No list, or a member that is not one: replaced only if it is still absent (an API
	 * object's finalizers are always a list, so a non-list never matches null). */
	return json_pack("[o, {s:s, s:s, s:n}, {s:s, s:s, s:[s]}]", t, "op", "test", "path",
	                 "/metadata/finalizers", "value", "op", "add", "path",
	                 "/metadata/finalizers", "value", finalizer);
}

json_t *pk_objects_finalizer_remove_patch(const json_t *obj, const char *finalizer)
{
	long i = finalizer_index(obj, finalizer);
	if (i < 0)
		return NULL;
	json_t *t = test_uid(obj);
	if (t == NULL)
		return NULL;
	char path[64];
	snprintf(path, sizeof(path), "/metadata/finalizers/%ld", i);
	return json_pack("[o, {s:s, s:s, s:s}, {s:s, s:s}]", t, "op", "test", "path", path, "value",
	                 finalizer, "op", "remove", "path", path);
}

static bool str_is(const json_t *o, const char *key, const char *want)
{
	const char *s = pk_json_cstr_at(o, key);
	return s != NULL && want != NULL && strcmp(s, want) == 0;
}

bool pk_objects_condition_same(const json_t *conditions, const struct pk_condition *c)
{
	const json_t *old = pk_meta_condition(conditions, c->type);
	if (old == NULL)
		return false;
	if (!str_is(old, "status", c->status ? "True" : "False") ||
	    !str_is(old, "reason", c->reason) || !str_is(old, "message", c->message))
		return false;
	if (!c->v1beta1 && c->generation >= 0) {
		const json_t *g = json_object_get(old, "observedGeneration");
		if (!json_is_integer(g) || json_integer_value(g) != c->generation)
			return false;
	}
	return true;
}

json_t *pk_objects_condition_build(const json_t *old_conditions, const struct pk_condition *c,
                                   long long now)
{
	const char *status = c->status ? "True" : "False";
	const json_t *old = pk_meta_condition(old_conditions, c->type);
	char when[PK_TIME_TEXT_MAX];
	const char *ltt = pk_json_cstr_at(old, "lastTransitionTime");
	if (old == NULL || !str_is(old, "status", status) || ltt == NULL) {
		pk_meta_time_text(now, when);
		ltt = when;
	}
	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s}", "type", c->type, "status", status,
	                      "reason", c->reason, "message", c->message ? c->message : "",
	                      "lastTransitionTime", ltt);
	if (o == NULL)
		return NULL;
	if (c->v1beta1) {
		/* CAPI v1beta1: severity is set only when status is False. */
		if (!c->status)
			json_object_set_new(o, "severity", json_string("Warning"));
	} else if (c->generation >= 0) {
		json_object_set_new(o, "observedGeneration", json_integer(c->generation));
	}
	return o;
}

/* The conditions with c replacing the one of its type (others kept, in order). */
static json_t *conditions_with(const json_t *old, const struct pk_condition *c, long long now)
{
	json_t *out = json_array();
	json_t *nc = pk_objects_condition_build(old, c, now);
	if (out == NULL || nc == NULL) {
		json_decref(out);
		json_decref(nc);
		return NULL;
	}
	bool placed = false;
	size_t i;
	json_t *x;
	json_array_foreach(old, i, x)
	{
		if (str_is(x, "type", c->type)) {
			if (!placed)
				json_array_append(out, nc);
			placed = true;
		} else {
			json_array_append(out, x);
		}
	}
	if (!placed)
		json_array_append(out, nc);
	json_decref(nc);
	return out;
}

json_t *pk_objects_claim_status_patch(const json_t *claim, const char *address,
                                      const struct pk_condition *c, long long now)
{
	const json_t *status = json_object_get(claim, "status");
	json_t *conds = conditions_with(json_object_get(status, "conditions"), c, now);
	if (conds == NULL)
		return NULL;
	json_t *st = json_pack("{s:o}", "conditions", conds);
	if (st == NULL)
		return NULL;
	if (address != NULL)
		json_object_set_new(st, "addressRef", json_pack("{s:s}", "name", address));
	return json_pack("{s:o}", "status", st);
}

json_t *pk_objects_ipaddress(const json_t *claim, const struct pk_ipaddress_spec *s)
{
	const json_t *md = json_object_get(claim, "metadata");
	const char *name = pk_json_cstr_at(md, "name");
	const char *ns = pk_json_cstr_at(md, "namespace");
	const char *uid = pk_json_cstr_at(md, "uid");
	const char *claim_api = pk_json_cstr_at(claim, "apiVersion");
	char pool_api[320]; /* group (at most 253) "/" version */
	if (name == NULL || ns == NULL || uid == NULL || s->pool_uid == NULL ||
	    s->pool_kind == NULL ||
	    (size_t)snprintf(pool_api, sizeof(pool_api), "%s/%s", s->pool_kind->group,
	                     s->pool_kind->version) >= sizeof(pool_api))
		return NULL;
	json_t *owners =
	    json_pack("[{s:s, s:s, s:s, s:s, s:b, s:b}, {s:s, s:s, s:s, s:s, s:b, s:b}]",
	              "apiVersion", claim_api ? claim_api : s->api_version, "kind", PK_CLAIM_KIND,
	              "name", name, "uid", uid, "controller", 1, "blockOwnerDeletion", 1,
	              "apiVersion", pool_api, "kind", s->pool_kind->kind, "name", s->pool_name,
	              "uid", s->pool_uid, "controller", 0, "blockOwnerDeletion", 1);
	json_t *spec =
	    json_pack("{s:s, s:i, s:{s:s}, s:{s:s, s:s, s:s}}", "address", s->address, "prefix",
	              (int)s->prefix, "claimRef", "name", name, "poolRef", "apiGroup",
	              s->pool_kind->group, "kind", s->pool_kind->kind, "name", s->pool_name);
	if (owners == NULL || spec == NULL) {
		json_decref(owners);
		json_decref(spec);
		return NULL;
	}
	if (s->gateway != NULL)
		json_object_set_new(spec, "gateway", json_string(s->gateway));
	json_t *meta = json_pack("{s:s, s:s, s:o, s:[s]}", "name", name, "namespace", ns,
	                         "ownerReferences", owners, "finalizers", PK_ADDRESS_FINALIZER);
	if (meta == NULL) {
		json_decref(spec);
		return NULL;
	}
	const char *cluster =
	    pk_json_cstr(json_object_get(json_object_get(md, "labels"), PK_CLUSTER_NAME_LABEL));
	if (cluster != NULL)
		json_object_set_new(meta, "labels",
		                    json_pack("{s:s}", PK_CLUSTER_NAME_LABEL, cluster));
	if (s->external_id != NULL && s->external_id[0] != '\0')
		json_object_set_new(meta, "annotations",
		                    json_pack("{s:s}", PK_EXTERNAL_ID_ANNOTATION, s->external_id));
	return json_pack("{s:s, s:s, s:o, s:o}", "apiVersion", s->api_version, "kind",
	                 PK_ADDRESS_KIND, "metadata", meta, "spec", spec);
}

json_t *pk_objects_pool_status_patch(const json_t *pool, const struct pk_alloc_counts *counts,
                                     const struct pk_condition *c, const json_t *quarantine,
                                     long long now)
{
	char total[PK_COUNT_STRLEN], used[PK_COUNT_STRLEN], free_[PK_COUNT_STRLEN],
	    oor[PK_COUNT_STRLEN];
	pk_count_format(counts->total, total);
	pk_count_format(counts->used, used);
	pk_count_format(counts->free, free_);
	pk_u128_format(counts->out_of_range, oor);
	const json_t *status = json_object_get(pool, "status");
	const json_t *ips = json_object_get(status, "ipAddresses");
	const json_t *old_conds = json_object_get(status, "conditions");
	const json_t *old_q = json_object_get(status, "quarantinedAddresses");
	bool q_same = quarantine == NULL || json_equal(old_q, quarantine) ||
	              (old_q == NULL && json_array_size(quarantine) == 0);
	if (str_is(ips, "total", total) && str_is(ips, "used", used) &&
	    str_is(ips, "free", free_) && str_is(ips, "outOfRange", oor) && q_same &&
	    pk_objects_condition_same(old_conds, c))
		return NULL;
	json_t *conds = conditions_with(old_conds, c, now);
	if (conds == NULL)
		return NULL;
	json_t *p =
	    json_pack("{s:{s:{s:s, s:s, s:s, s:s}, s:o}}", "status", "ipAddresses", "total", total,
	              "used", used, "free", free_, "outOfRange", oor, "conditions", conds);
	if (p != NULL && quarantine != NULL &&
	    json_object_set(json_object_get(p, "status"), "quarantinedAddresses",
	                    (json_t *)(uintptr_t)quarantine) != 0) {
		json_decref(p);
		return NULL;
	}
	return p;
}

bool pk_objects_quarantine_add(json_t *quarantine, const char *address, long long until)
{
	if (json_array_size(quarantine) >= PK_QUARANTINE_MAX)
		return false;
	char when[PK_TIME_TEXT_MAX];
	pk_meta_time_text(until, when);
	return json_array_append_new(
	           quarantine, json_pack("{s:s, s:s}", "address", address, "until", when)) == 0;
}

void pk_objects_pool_quarantine(const json_t *pool, long long now,
                                void (*fn)(void *ud, const char *address, long long until),
                                void *ud)
{
	const json_t *q = json_object_get(json_object_get(pool, "status"), "quarantinedAddresses");
	size_t i;
	const json_t *e;
	json_array_foreach(q, i, e)
	{
		const char *a = pk_json_cstr_at(e, "address");
		long long until;
		if (a != NULL && pk_meta_time_parse(pk_json_cstr_at(e, "until"), &until) == PK_OK &&
		    until > now)
			fn(ud, a, until);
	}
}
