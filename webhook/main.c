/*
 * main.c - poolkeeper-webhook: flags, start-up, signals. The listeners are
 * server.c's, the certificate watch certs.c's, the decisions admission.c's.
 */
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission.h"
#include "serving_cert.h"
#include "flags.h"
#include "log.h"
#include "lookup.h"
#include "metrics.h"
#include "server.h"

#ifndef PK_VERSION
#error "PK_VERSION (the CMake project version) must be defined"
#endif

enum {
	F_CERT,
	F_KEY,
	F_WEBHOOK_ADDR,
	F_HEALTH_ADDR,
	F_METRICS_ADDR,
	F_KUBECONFIG,
	F_CLAIMS,
	F_FOREIGN,
	F_POLL,
	F_THREADS,
	F_MAX_CONN,
	F_GRACE,
	F_LOG_FORMAT,
	F_V,
	F_VERSION,
	F_HELP,
	F_COUNT,
};

static const struct pk_flag flags[F_COUNT] = {
    [F_CERT] = {"tls-cert-file", 0, PK_FLAG_STRING, NULL, "FILE",
                "serving certificate, PEM (leaf first, then intermediates); watched"},
    [F_KEY] = {"tls-private-key-file", 0, PK_FLAG_STRING, NULL, "FILE",
               "private key of the serving certificate, PEM; watched"},
    [F_WEBHOOK_ADDR] = {"webhook-bind-address", 0, PK_FLAG_STRING, ":9443", "HOST:PORT",
                        "HTTPS listener for /validate and /mutate; empty HOST: every "
                        "address, port 0: any free port"},
    [F_HEALTH_ADDR] = {"health-probe-bind-address", 0, PK_FLAG_STRING, ":8081", "HOST:PORT",
                       "plain HTTP listener for /healthz and /readyz"},
    [F_METRICS_ADDR] = {"metrics-bind-address", 0, PK_FLAG_STRING, ":8080", "HOST:PORT",
                        "plain HTTP listener for /metrics; 0 turns metrics off"},
    [F_KUBECONFIG] = PK_FLAG_DEF_KUBECONFIG,
    [F_CLAIMS] = {"claim-enforcement", 0, PK_FLAG_CHOICE, "repair", "repair|deny|warn",
                  "contract violations of claims on poolkeeper pools"},
    [F_FOREIGN] = {"foreign-claims", 0, PK_FLAG_CHOICE, "warn", "ignore|warn|deny",
                   "contract violations of claims on other providers' pools"},
    [F_POLL] = {"cert-poll-seconds", 0, PK_FLAG_UINT, "10", "1..86400",
                "how often the certificate files are checked for a new pair"},
    [F_THREADS] = {"thread-pool-size", 0, PK_FLAG_UINT, "0", "0..1024",
                   "webhook worker threads; 0: one per core"},
    [F_MAX_CONN] = {"max-connections", 0, PK_FLAG_UINT, "1000", "1..100000",
                    "webhook connections open at once"},
    [F_GRACE] = {"shutdown-grace-seconds", 0, PK_FLAG_UINT, "25", "0..3600",
                 "on SIGTERM, how long requests in flight may take to finish"},
    [F_LOG_FORMAT] = PK_FLAG_DEF_LOG_FORMAT,
    [F_V] = PK_FLAG_DEF_V,
    [F_VERSION] = PK_FLAG_DEF_VERSION,
    [F_HELP] = PK_FLAG_DEF_HELP,
};

#define PROGRAM "poolkeeper-webhook"
#define USAGE   PROGRAM " --tls-cert-file FILE --tls-private-key-file FILE [flags]"
#define SUMMARY "poolkeeper's validating and mutating admission webhook (HTTPS)."

struct options {
	const char *cert;
	const char *key;
	const char *kubeconfig;
	struct pk_server_config server;
	struct pk_admission_config admission;
	enum pk_log_format log_format;
	unsigned verbosity;
	unsigned poll_seconds;
	unsigned grace_seconds;
	bool help, version;
};

static int parse_options(int argc, char **argv, struct options *o, struct pk_err *err)
{
	struct pk_flag_value vals[F_COUNT];
	int rc = pk_flags_parse_only(flags, F_COUNT, argc, argv, vals, err);
	if (rc != PK_OK)
		return rc;

	memset(o, 0, sizeof(*o));
	pk_server_default_config(&o->server);
	o->help = pk_flags_get_bool(vals, F_HELP);
	o->version = pk_flags_get_bool(vals, F_VERSION);
	if (o->help || o->version)
		return PK_OK;
	o->cert = pk_flags_get_string(flags, vals, F_CERT);
	o->key = pk_flags_get_string(flags, vals, F_KEY);
	o->kubeconfig = pk_flags_get_string(flags, vals, F_KUBECONFIG);
	o->verbosity = (unsigned)pk_flags_get_num(vals, F_V);
	o->poll_seconds = (unsigned)pk_flags_get_num(vals, F_POLL);
	o->server.threads = (unsigned)pk_flags_get_num(vals, F_THREADS);
	o->server.max_connections = (unsigned)pk_flags_get_num(vals, F_MAX_CONN);
	o->grace_seconds = (unsigned)pk_flags_get_num(vals, F_GRACE);
	if ((rc = pk_flags_get_hostport(flags, vals, F_WEBHOOK_ADDR, &o->server.webhook_address,
	                                NULL, err)) != PK_OK ||
	    (rc = pk_flags_get_hostport(flags, vals, F_HEALTH_ADDR, &o->server.health_address, NULL,
	                                err)) != PK_OK ||
	    (rc = pk_flags_get_hostport(flags, vals, F_METRICS_ADDR, &o->server.metrics_address,
	                                &o->server.metrics_off, err)) != PK_OK)
		return rc;

	if ((rc = pk_rules_parse_enforcement(pk_flags_get_string(flags, vals, F_CLAIMS),
	                                     &o->admission.claims)) != PK_OK)
		return pk_err_set(err, rc, "--claim-enforcement must be repair, deny or warn");
	if ((rc = pk_rules_parse_enforcement(pk_flags_get_string(flags, vals, F_FOREIGN),
	                                     &o->admission.foreign_claims)) != PK_OK)
		return pk_err_set(err, rc, "--foreign-claims must be ignore, warn or deny");
	if ((rc = pk_log_parse_format(pk_flags_get_string(flags, vals, F_LOG_FORMAT),
	                              &o->log_format, err)) != PK_OK)
		return rc;

	if (o->cert == NULL || *o->cert == '\0')
		return pk_err_set(err, PK_ERR_INVALID, "--tls-cert-file is required");
	if (o->key == NULL || *o->key == '\0')
		return pk_err_set(err, PK_ERR_INVALID, "--tls-private-key-file is required");
	return PK_OK;
}

static const char *listener_names[] = {"webhook", "health", "metrics"};

int main(int argc, char **argv)
{
	/* GnuTLS, libmicrohttpd's TLS, appends the secrets of every handshake to
	 * $SSLKEYLOGFILE when it is set: whoever reads that file and the traffic
	 * reads every AdmissionReview. It is read at the first handshake, so
	 * removing it here, before any listener starts, keeps the keys out. */
	bool keylog = getenv("SSLKEYLOGFILE") != NULL;
	/* A fixed threshold: request bodies (up to 3 MiB) are mapped and unmapped
	 * on their own instead of raising glibc's moving threshold and staying in
	 * the worker threads' heaps after the request. */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	if (keylog)
		unsetenv("SSLKEYLOGFILE");
	struct options o;
	struct pk_err err = {{0}};
	if (parse_options(argc, argv, &o, &err) != PK_OK) {
		pk_log_error("invalid command line", PK_LOG_STR("error", err.msg),
		             PK_LOG_STR("hint", "see " PROGRAM " --help"));
		return 2;
	}
	if (o.help) {
		pk_flags_print_help(stdout, USAGE, SUMMARY, flags, F_COUNT);
		return 0;
	}
	if (o.version) {
		printf("%s %s\n", PROGRAM, PK_VERSION);
		return 0;
	}
	pk_log_set_format(o.log_format);
	pk_log_set_level(o.verbosity >= 1 ? PK_LOG_DEBUG : PK_LOG_INFO);

	/* Every thread started from here on inherits this mask; main waits for the signals. */
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	int status = 1;
	struct pk_lookup *lookup = NULL;
	struct pk_metrics *metrics = NULL;
	struct pk_certs *certs = NULL;
	struct pk_server *server = NULL;
	if (keylog)
		pk_log_warn("SSLKEYLOGFILE was set; it was removed from the environment and no TLS "
		            "keys are written");
	/* API access: --kubeconfig, $KUBECONFIG, or the pod's service account (lookup.h). */
	if (pk_lookup_open(o.kubeconfig, &lookup, &err) != PK_OK) {
		pk_log_error("cannot set up API access", PK_LOG_STR("error", err.msg));
		goto out;
	}
	o.admission.lookup = pk_lookup_admission(lookup);
	if (o.admission.lookup == NULL)
		pk_log_warn("no API access (no --kubeconfig, no KUBECONFIG, not in a pod): checks "
		            "that need other objects are skipped");
	else
		pk_log_info("API access", PK_LOG_STR("server", pk_lookup_server(lookup)));

	metrics = pk_metrics_new();
	if (metrics == NULL) {
		pk_log_error("out of memory");
		goto out;
	}
	if (pk_certs_open(o.cert, o.key, metrics, &certs, &err) != PK_OK) {
		pk_log_error("cannot load the serving certificate", PK_LOG_STR("error", err.msg));
		goto out;
	}
	/* each repair the mutating webhook makes, by owner kind, on /metrics */
	o.admission.count_repair = pk_metrics_count_repair;
	o.admission.count_ctx = metrics;
	o.server.admission = &o.admission;
	o.server.certs = certs;
	o.server.metrics = metrics;
	o.server.ready = pk_lookup_ready; /* /readyz: 503 until the caches have listed */
	o.server.ready_ud = lookup;
	if (pk_server_start(&o.server, &server, &err) != PK_OK) {
		pk_log_error("cannot start", PK_LOG_STR("error", err.msg));
		goto out;
	}
	const struct pk_hostport *at[] = {&o.server.webhook_address, &o.server.health_address,
	                                  &o.server.metrics_address};
	for (int l = PK_SERVER_WEBHOOK; l <= PK_SERVER_METRICS; l++) {
		if (l == PK_SERVER_METRICS && o.server.metrics_off) {
			pk_log_info("metrics off", PK_LOG_STR("flag", "--metrics-bind-address=0"));
			continue;
		}
		pk_log_info("listening", PK_LOG_STR("listener", listener_names[l]),
		            PK_LOG_UINT("port", pk_server_port(server, (enum pk_server_listener)l)),
		            PK_LOG_STR("address", *at[l]->host ? at[l]->host : "all"));
	}
	if (pk_certs_start_watch(certs, o.poll_seconds, &err) != PK_OK) {
		pk_log_error("cannot start", PK_LOG_STR("error", err.msg));
		goto out;
	}

	int sig = 0;
	while (sigwait(&sigs, &sig) != 0)
		;
	pk_log_info("shutting down", PK_LOG_STR("signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"),
	            PK_LOG_UINT("graceSeconds", o.grace_seconds));
	status = 0;
out:
	if (certs != NULL)
		pk_certs_stop_watch(certs);
	pk_server_stop(server, o.grace_seconds);
	pk_certs_free(certs);
	pk_metrics_free(metrics);
	pk_lookup_close(lookup);
	if (status == 0)
		pk_log_info("stopped");
	return status;
}
