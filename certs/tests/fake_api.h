/*
 * fake_api.h - a small stateful Kubernetes API for the certs suites, on
 * top of testsupport/kube_fakeserver.h (one HTTP answer per
 * connection on 127.0.0.1): Secrets (get, create, update with
 * resourceVersion checks), Validating/MutatingWebhookConfigurations (get,
 * JSON patch through testsupport/json_patch.h), dryRun=All, and injected answers
 * (403 for a method on a path, a Conflict once).
 *
 * Objects are kept by URL path; writes that are not dry runs are counted,
 * so a test can say "this run wrote nothing". Header-only so each test file
 * stays one module's.
 */
#ifndef PK_CERTS_FAKE_API_H
#define PK_CERTS_FAKE_API_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api.h"
#include "json_patch.h"
#include "kube_fakeserver.h"

#define FA_UNUSED __attribute__((unused))

struct fake_api {
	struct fake_server srv;
	pthread_mutex_t mu;
	json_t *objects; /* path -> object */
	unsigned long rv;
	unsigned writes;     /* stored writes (not dry runs) */
	unsigned dry_writes; /* dry runs */
	/* Injected: answer 403 to `deny_method` requests whose path starts with deny_path. */
	char deny_method[16];
	char deny_path[256];
	/* Injected: answer the next N updates (PUT) with 409 Conflict. */
	int conflicts;
};

FA_UNUSED static void fa_status(struct fs_response *out, int code, const char *reason,
                                const char *msg)
{
	json_t *st = json_pack("{s:s, s:s, s:s, s:s, s:s, s:i}", "kind", "Status", "apiVersion",
	                       PK_CORE_VERSION, "status", "Failure", "reason", reason, "message",
	                       msg, "code", code);
	out->status = code;
	out->owned = json_dumps(st, JSON_COMPACT);
	out->body = out->owned;
	json_decref(st);
}

FA_UNUSED static void fa_object(struct fs_response *out, int code, const json_t *obj)
{
	out->status = code;
	out->owned = json_dumps(obj, JSON_COMPACT);
	out->body = out->owned;
}

/* The path without its query, into buf; *dry set when dryRun=All is in the query. */
FA_UNUSED static void fa_split(const char *path, char *buf, size_t len, bool *dry)
{
	const char *q = strchr(path, '?');
	size_t n = q ? (size_t)(q - path) : strlen(path);
	if (n >= len)
		n = len - 1;
	memcpy(buf, path, n);
	buf[n] = '\0';
	*dry = q != NULL && strstr(q, "dryRun=All") != NULL;
}

FA_UNUSED static void fa_set_rv(struct fake_api *a, json_t *obj)
{
	char rv[32];
	snprintf(rv, sizeof(rv), "%lu", ++a->rv);
	json_t *meta = json_object_get(obj, "metadata");
	if (!json_is_object(meta)) {
		meta = json_object();
		json_object_set_new(obj, "metadata", meta);
	}
	json_object_set_new(meta, "resourceVersion", json_string(rv));
}

/* A write that passed its checks: stored at path (a reference taken) unless a dry run, and
 * answered with the object. Under a->mu. */
FA_UNUSED static void fa_store(struct fake_api *a, const char *path, json_t *obj, bool dry,
                               int code, struct fs_response *out)
{
	fa_set_rv(a, obj);
	if (!dry) {
		json_object_set(a->objects, path, obj);
		a->writes++;
	} else {
		a->dry_writes++;
	}
	fa_object(out, code, obj);
}

FA_UNUSED static void fa_respond(void *ud, int index, const struct fs_request *req,
                                 struct fs_response *out)
{
	(void)index;
	struct fake_api *a = ud;
	char path[1024];
	bool dry;
	fa_split(req->path, path, sizeof(path), &dry);
	pthread_mutex_lock(&a->mu);
	if (a->deny_method[0] != '\0' && strcmp(req->method, a->deny_method) == 0 &&
	    strncmp(path, a->deny_path, strlen(a->deny_path)) == 0) {
		char msg[1200];
		snprintf(msg, sizeof(msg),
		         "%s is forbidden: User \"system:serviceaccount:t:certs\" cannot %s it",
		         path, req->method);
		fa_status(out, 403, "Forbidden", msg);
		goto out;
	}
	json_t *have = json_object_get(a->objects, path);
	if (strcmp(req->method, "GET") == 0) {
		if (have == NULL)
			fa_status(out, 404, "NotFound", "not found");
		else
			fa_object(out, 200, have);
		goto out;
	}
	json_error_t je;
	json_t *body = json_loads(req->body ? req->body : "", 0, &je);
	if (body == NULL) {
		fa_status(out, 400, "BadRequest", "body is not JSON");
		goto out;
	}
	if (strcmp(req->method, "POST") == 0) {
		char full[1200];
		snprintf(
		    full, sizeof(full), "%s/%s", path,
		    json_string_value(json_object_get(json_object_get(body, "metadata"), "name")));
		if (json_object_get(a->objects, full) != NULL) {
			fa_status(out, 409, "AlreadyExists", "already exists");
		} else {
			fa_store(a, full, body, dry, 201, out);
		}
	} else if (strcmp(req->method, "PUT") == 0) {
		const char *want = json_string_value(
		    json_object_get(json_object_get(body, "metadata"), "resourceVersion"));
		const char *rv = json_string_value(
		    json_object_get(json_object_get(have, "metadata"), "resourceVersion"));
		if (have == NULL) {
			fa_status(out, 404, "NotFound", "not found");
		} else if (!dry && a->conflicts > 0) {
			a->conflicts--;
			fa_set_rv(a, have); /* someone else wrote */
			fa_status(out, 409, "Conflict", "the object has been modified");
		} else if (want == NULL || rv == NULL || strcmp(want, rv) != 0) {
			fa_status(out, 409, "Conflict", "the object has been modified");
		} else {
			fa_store(a, path, body, dry, 200, out);
		}
	} else if (strcmp(req->method, "PATCH") == 0) {
		json_t *doc = have ? json_deep_copy(have) : NULL;
		char why[300];
		if (doc == NULL) {
			fa_status(out, 404, "NotFound", "not found");
		} else if (!pk_test_json_patch(doc, body, why, sizeof(why))) {
			fa_status(out, 422, "Invalid",
			          "the server rejected our request: test failed");
		} else {
			fa_store(a, path, doc, dry, 200, out);
		}
		json_decref(doc);
	} else {
		fa_status(out, 405, "MethodNotAllowed", "method not allowed");
	}
	json_decref(body);
out:
	pthread_mutex_unlock(&a->mu);
}

/* Starts the API and a client on it (no client-side rate limit, retries as given). */
FA_UNUSED static int fa_start(struct fake_api *a, struct pk_kube_config **cfg,
                              struct pk_kube_client **cli)
{
	memset(a, 0, sizeof(*a));
	pthread_mutex_init(&a->mu, NULL);
	a->objects = json_object();
	a->rv = 100;
	if (fs_start(&a->srv, fa_respond, a) != 0)
		return -1;
	struct pk_kube_client_opts o = {.qps = -1, .max_retries = -1};
	return fs_client_new(&a->srv, &o, cfg, cli);
}

FA_UNUSED static void fa_stop(struct fake_api *a)
{
	fs_stop(&a->srv);
	json_decref(a->objects);
	pthread_mutex_destroy(&a->mu);
}

FA_UNUSED static json_t *fa_get(struct fake_api *a, const char *path)
{
	pthread_mutex_lock(&a->mu);
	json_t *o = json_incref(json_object_get(a->objects, path));
	pthread_mutex_unlock(&a->mu);
	return o;
}

FA_UNUSED static void fa_put(struct fake_api *a, const char *path, json_t *obj)
{
	pthread_mutex_lock(&a->mu);
	fa_set_rv(a, obj);
	json_object_set_new(a->objects, path, obj);
	pthread_mutex_unlock(&a->mu);
}

FA_UNUSED static unsigned fa_writes(struct fake_api *a)
{
	pthread_mutex_lock(&a->mu);
	unsigned n = a->writes;
	pthread_mutex_unlock(&a->mu);
	return n;
}

FA_UNUSED static void fa_deny(struct fake_api *a, const char *method, const char *path)
{
	pthread_mutex_lock(&a->mu);
	snprintf(a->deny_method, sizeof(a->deny_method), "%s", method ? method : "");
	snprintf(a->deny_path, sizeof(a->deny_path), "%s", path ? path : "");
	pthread_mutex_unlock(&a->mu);
}

#define FA_SECRETS         "/api/" PK_CORE_VERSION "/namespaces/t/" PK_SECRET_RESOURCE
#define FA_ADMISSIONREG_GV PK_ADMISSIONREG_GROUP "/" PK_ADMISSIONREG_VERSION
#define FA_VWC             "/apis/" FA_ADMISSIONREG_GV "/" PK_VALIDATING_WEBHOOK_RESOURCE
#define FA_MWC             "/apis/" FA_ADMISSIONREG_GV "/" PK_MUTATING_WEBHOOK_RESOURCE

/* A webhook configuration with `n` webhooks named hook<i> and no caBundle. */
FA_UNUSED static void fa_put_config(struct fake_api *a, bool mutating, const char *name, int n)
{
	json_t *hooks = json_array();
	for (int i = 0; i < n; i++) {
		char hn[64];
		snprintf(hn, sizeof(hn), "hook%d.example.io", i);
		json_array_append_new(hooks, json_pack("{s:s, s:{s:s}}", "name", hn, "clientConfig",
		                                       "url", "https://127.0.0.1:1/validate"));
	}
	json_t *cfg =
	    json_pack("{s:s, s:s, s:{s:s}, s:o}", "apiVersion", FA_ADMISSIONREG_GV, "kind",
	              mutating ? PK_MUTATING_WEBHOOK_KIND : PK_VALIDATING_WEBHOOK_KIND, "metadata",
	              "name", name, "webhooks", hooks);
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", mutating ? FA_MWC : FA_VWC, name);
	fa_put(a, path, cfg);
}

#endif
