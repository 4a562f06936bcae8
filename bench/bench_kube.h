/*
 * bench_kube.h - what the Kubernetes benchmarks share: a client from the
 * usual kubeconfig search (exec plugins allowed, no client-side rate
 * limit), its release, a namespace for the benchmark's objects and a
 * synced informer. A benchmark that cannot connect, create the namespace
 * or sync the informer exits 1.
 */
#ifndef PK_BENCH_KUBE_H
#define PK_BENCH_KUBE_H

#include <stdio.h>
#include <stdlib.h>

#include "kube_client.h"
#include "kube_config.h"
#include "kube_informer.h"

/* max_response_bytes 0: the client's default; user_agent NULL: the client's default. prog
 * names the benchmark in the error. */
static inline void bench_kube_connect(const char *prog, size_t max_response_bytes,
                                      const char *user_agent, struct pk_kube_config **cfg,
                                      struct pk_kube_client **cli)
{
	struct pk_kube_config_opts co = {.allow_exec = true};
	struct pk_kube_client_opts o = {
	    .qps = -1, .max_response_bytes = max_response_bytes, .user_agent = user_agent};
	struct pk_err err;
	if (pk_kube_config_load(&co, cfg, &err) != PK_OK ||
	    pk_kube_client_new(*cfg, &o, cli, &err) != PK_OK) {
		fprintf(stderr, "%s: %s\n", prog, err.msg);
		exit(1);
	}
}

static inline void bench_kube_disconnect(struct pk_kube_config **cfg, struct pk_kube_client **cli)
{
	pk_kube_client_free(*cli);
	pk_kube_config_free(*cfg);
	*cli = NULL;
	*cfg = NULL;
}

/* Exits 1 after "prog: what: reason: message". */
static inline _Noreturn void bench_kube_fail(const char *prog, const char *what,
                                             enum pk_kube_reason rc, const struct pk_kube_error *e)
{
	fprintf(stderr, "%s: %s: %s: %s\n", prog, what, pk_kube_reason_name(rc),
	        e ? e->message : "");
	exit(1);
}

/* Creates obj (released here) at r; one that exists already is fine, any other failure
 * exits 1. */
static inline void bench_kube_create(const char *prog, struct pk_kube_client *cli,
                                     const struct pk_kube_ref *r, json_t *obj)
{
	struct pk_kube_error e;
	enum pk_kube_reason rc = pk_kube_client_create(cli, r, obj, NULL, NULL, &e);
	json_decref(obj);
	if (rc != PK_KUBE_OK && rc != PK_KUBE_ALREADY_EXISTS)
		bench_kube_fail(prog, "create", rc, &e);
}

/* Creates the namespace ns, or exits 1 naming what the server said. */
static inline void bench_kube_namespace(const char *prog, struct pk_kube_client *cli,
                                        const char *ns)
{
	json_t *n = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "Namespace",
	                      "metadata", "name", ns);
	struct pk_kube_ref r = {.version = "v1", .resource = "namespaces"};
	struct pk_kube_error e;
	enum pk_kube_reason rc = pk_kube_client_create(cli, &r, n, NULL, NULL, &e);
	json_decref(n);
	if (rc != PK_KUBE_OK) {
		fprintf(stderr, "%s: create namespace %s: %s: %s\n", prog, ns,
		        pk_kube_reason_name(rc), e.message);
		exit(1);
	}
}

/* An informer started on o and synced within timeout_ms; the caller frees it. */
static inline struct pk_kube_informer *bench_kube_informer(const char *prog,
                                                           struct pk_kube_client *cli,
                                                           const struct pk_kube_informer_opts *o,
                                                           long timeout_ms)
{
	struct pk_kube_informer *inf;
	struct pk_err err;
	if (pk_kube_informer_new(cli, o, &inf, &err) != PK_OK ||
	    pk_kube_informer_start(inf, &err) != PK_OK) {
		fprintf(stderr, "%s: informer: %s\n", prog, err.msg);
		exit(1);
	}
	if (!pk_kube_informer_wait_synced(inf, timeout_ms)) {
		fprintf(stderr, "%s: informer: not synced within %ld ms\n", prog, timeout_ms);
		exit(1);
	}
	return inf;
}

#endif
