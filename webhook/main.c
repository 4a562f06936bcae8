/*
 * main.c - poolkeeper-webhook: flags, start-up, signals. The start every
 * program shares (flags, --help, logs, signals) is daemon.h's, the
 * listeners are server.c's, the certificate watch serving_cert.c's, the decisions
 * admission.c's.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission.h"
#include "client_auth.h"
#include "daemon.h"
#include "serving_cert.h"
#include "flags.h"
#include "httpd.h"
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
	F_PER_SOURCE,
	F_GRACE,
	F_CLIENT_CA,
	F_REQUIRE_CLIENT,
	F_CLIENT_NAMES,
	F_LOOKUP_DEADLINE,
	F_COUNT,
};

/* A number as the flag table's default text. */
#define TEXT_(n) #n
#define TEXT(n)  TEXT_(n)

static const struct pk_flag flags[F_COUNT] = {
    [F_CERT] = {"tls-cert-file", 0, PK_FLAG_STRING, NULL, "FILE",
                "serving certificate, PEM (leaf first, then intermediates); watched"},
    [F_KEY] = {"tls-private-key-file", 0, PK_FLAG_STRING, NULL, "FILE",
               "private key of the serving certificate, PEM; watched"},
    [F_WEBHOOK_ADDR] = {"webhook-bind-address", 0, PK_FLAG_STRING, ":9443", "HOST:PORT",
                        "HTTPS listener for /validate and /mutate; empty HOST: every "
                        "address, port 0: any free port"},
    [F_HEALTH_ADDR] = PK_FLAG_DEF_HEALTH_ADDR,
    [F_METRICS_ADDR] = PK_FLAG_DEF_METRICS_ADDR,
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
    [F_PER_SOURCE] = {"max-connections-per-source", 0, PK_FLAG_UINT, "0", "0..100000",
                      "webhook connections open at once from one IP address; 0: a quarter "
                      "of --max-connections, at least 16"},
    [F_GRACE] = {"shutdown-grace-seconds", 0, PK_FLAG_UINT, "25", "0..3600",
                 "on SIGTERM, how long requests in flight may take to finish"},
    [F_CLIENT_CA] = {"client-ca-file", 0, PK_FLAG_STRING, NULL, "FILE",
                     "CA bundle, PEM, that client certificates are verified against: "
                     "every client is asked for one, and a request with one that does not "
                     "verify gets 401; watched (--cert-poll-seconds)"},
    [F_REQUIRE_CLIENT] = {"require-client-cert", 0, PK_FLAG_BOOL, NULL, NULL,
                          "a request without a valid client certificate gets 401 before "
                          "its body is read; needs --client-ca-file"},
    [F_CLIENT_NAMES] = {"client-cert-allowed-names", 0, PK_FLAG_STRING, NULL, "CN,CN",
                        "subject CNs a client certificate may have (others get 403); "
                        "empty: any the CA signed; needs --client-ca-file"},
    [F_LOOKUP_DEADLINE] = {"lookup-deadline-ms", 0, PK_FLAG_UINT, TEXT(PK_PERMISSION_DEADLINE_MS),
                           "10..30000",
                           "how long a review waits for its permission lookup (discovery, "
                           "SubjectAccessReview) before it repairs without blockOwnerDeletion; "
                           "keep it well under the registrations' timeoutSeconds"},
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
	unsigned poll_seconds;
	unsigned grace_seconds;
	struct pk_client_auth_config client_auth; /* ca_file NULL: no client certificates */
	struct pk_lookup_opts lookup;
};

/* The flags into the options (pk_daemon_options_fn): what the table cannot check. */
static int read_options(void *opts, const struct pk_daemon_args *args, struct pk_err *err)
{
	const struct pk_flag_value *vals = args->vals;
	struct options *o = opts;
	memset(o, 0, sizeof(*o));
	pk_server_default_config(&o->server);
	o->cert = pk_flags_get_string(flags, vals, F_CERT);
	o->key = pk_flags_get_string(flags, vals, F_KEY);
	o->kubeconfig = pk_flags_get_string(flags, vals, F_KUBECONFIG);
	o->poll_seconds = (unsigned)pk_flags_get_num(vals, F_POLL);
	o->server.threads = (unsigned)pk_flags_get_num(vals, F_THREADS);
	o->server.max_connections = (unsigned)pk_flags_get_num(vals, F_MAX_CONN);
	o->server.max_connections_per_source = (unsigned)pk_flags_get_num(vals, F_PER_SOURCE);
	if (o->server.max_connections_per_source > o->server.max_connections)
		return pk_err_set(err, PK_ERR_INVALID,
		                  "--max-connections-per-source must not exceed --max-connections "
		                  "(%u), got %u",
		                  o->server.max_connections, o->server.max_connections_per_source);
	o->grace_seconds = (unsigned)pk_flags_get_num(vals, F_GRACE);
	o->lookup.mode = PK_LOOKUP_CACHED;
	o->lookup.permission.deadline_ms = (long)pk_flags_get_num(vals, F_LOOKUP_DEADLINE);
	int rc;
	struct pk_httpd_probes_config pc = {0};
	if ((rc = pk_flags_get_hostport(flags, vals, F_WEBHOOK_ADDR, &o->server.webhook_address,
	                                NULL, err)) != PK_OK ||
	    (rc = pk_httpd_probes_flags(flags, vals, F_HEALTH_ADDR, F_METRICS_ADDR, &pc, err)) !=
	        PK_OK)
		return rc;
	o->server.health_address = pc.health_address;
	o->server.metrics_address = pc.metrics_address;
	o->server.metrics_off = pc.metrics_off;

	if ((rc = pk_rules_parse_enforcement(pk_flags_get_string(flags, vals, F_CLAIMS),
	                                     &o->admission.claims)) != PK_OK)
		return pk_err_set(err, rc, "--claim-enforcement must be repair, deny or warn");
	if ((rc = pk_rules_parse_enforcement(pk_flags_get_string(flags, vals, F_FOREIGN),
	                                     &o->admission.foreign_claims)) != PK_OK)
		return pk_err_set(err, rc, "--foreign-claims must be ignore, warn or deny");

	const char *ca = pk_flags_get_string(flags, vals, F_CLIENT_CA);
	o->client_auth.ca_file = ca != NULL && *ca != '\0' ? ca : NULL;
	o->client_auth.required = pk_flags_get_bool(vals, F_REQUIRE_CLIENT);
	o->client_auth.allowed_names = pk_flags_get_string(flags, vals, F_CLIENT_NAMES);
	const char *names = o->client_auth.allowed_names;
	if (o->client_auth.ca_file == NULL && o->client_auth.required)
		return pk_err_set(err, PK_ERR_INVALID,
		                  "--require-client-cert needs --client-ca-file: without a CA no "
		                  "certificate can be verified");
	if (o->client_auth.ca_file == NULL && names != NULL && *names != '\0')
		return pk_err_set(err, PK_ERR_INVALID,
		                  "--client-cert-allowed-names \"%s\" needs --client-ca-file",
		                  names);

	if (o->cert == NULL || *o->cert == '\0')
		return pk_err_set(err, PK_ERR_INVALID, "--tls-cert-file is required");
	if (o->key == NULL || *o->key == '\0')
		return pk_err_set(err, PK_ERR_INVALID, "--tls-private-key-file is required");
	return PK_OK;
}

/* What main starts, stopped in the reverse order by stop(). */
struct daemon {
	struct options o;
	bool keylog; /* SSLKEYLOGFILE was set, and removed */
	struct pk_lookup *lookup;
	struct pk_metrics *metrics;
	struct pk_certs *certs;
	struct pk_client_auth *client_auth;
	struct pk_server *server;
};

/* API access: --kubeconfig, $KUBECONFIG, or the pod's service account (lookup.h). */
static bool api_access(struct daemon *dm)
{
	struct pk_err err = {{0}};
	if (pk_lookup_open_opts(dm->o.kubeconfig, &dm->o.lookup, &dm->lookup, &err) != PK_OK) {
		pk_log_error("cannot set up API access", PK_LOG_STR("error", err.msg));
		return false;
	}
	dm->o.admission.lookup = pk_lookup_admission(dm->lookup);
	if (dm->o.admission.lookup == NULL)
		pk_log_warn("no API access (no --kubeconfig, no KUBECONFIG, not in a pod): checks "
		            "that need other objects are skipped");
	else
		pk_log_info("API access", PK_LOG_STR("server", pk_lookup_server(dm->lookup)));
	return true;
}

/* The metrics, the serving pair and the listeners; false (logged) on failure. */
static bool start_server(struct daemon *dm)
{
	struct pk_err err = {{0}};
	dm->metrics = pk_metrics_new();
	if (dm->metrics == NULL) {
		pk_log_error("out of memory");
		return false;
	}
	if (pk_certs_open(dm->o.cert, dm->o.key, dm->metrics, &dm->certs, &err) != PK_OK) {
		pk_log_error("cannot load the serving certificate", PK_LOG_STR("error", err.msg));
		return false;
	}
	dm->o.client_auth.metrics = dm->metrics;
	if (dm->o.client_auth.ca_file != NULL &&
	    pk_client_auth_open(&dm->o.client_auth, &dm->client_auth, &err) != PK_OK) {
		pk_log_error("cannot load the client CA", PK_LOG_STR("error", err.msg));
		return false;
	}
	if (dm->client_auth == NULL)
		pk_log_info("no --client-ca-file: callers are not asked for a client certificate");
	struct pk_server_config *sc = &dm->o.server;
	sc->client_auth = dm->client_auth;
	/* each repair the mutating webhook makes, by owner kind, on /metrics */
	dm->o.admission.count_repair = pk_metrics_count_repair;
	dm->o.admission.count_ctx = dm->metrics;
	/* objects the caches kept as their name only, over the cap */
	pk_metrics_set_oversized_source(dm->metrics, pk_lookup_oversized, dm->lookup);
	sc->admission = &dm->o.admission;
	sc->certs = dm->certs;
	sc->metrics = dm->metrics;
	sc->ready = pk_lookup_ready; /* /readyz: 503 until the caches have listed */
	sc->ready_ud = dm->lookup;
	if (pk_server_start(sc, &dm->server, &err) != PK_OK) {
		pk_log_error("cannot start", PK_LOG_STR("error", err.msg));
		return false;
	}
	pk_httpd_log_listening("webhook", pk_server_port(dm->server, PK_SERVER_WEBHOOK),
	                       &sc->webhook_address);
	const struct pk_httpd_probes_config probes = {.health_address = sc->health_address,
	                                              .metrics_address = sc->metrics_address,
	                                              .metrics_off = sc->metrics_off};
	pk_httpd_log_probes(&probes, pk_server_port(dm->server, PK_SERVER_HEALTH),
	                    pk_server_port(dm->server, PK_SERVER_METRICS));
	if (dm->client_auth != NULL)
		pk_certs_watch_also(dm->certs, pk_client_auth_reload, dm->client_auth);
	if (pk_certs_start_watch(dm->certs, dm->o.poll_seconds, &err) != PK_OK) {
		pk_log_error("cannot start", PK_LOG_STR("error", err.msg));
		return false;
	}
	return true;
}

/* Start-up, then serves until SIGTERM or SIGINT (0); 1 when start-up fails. */
static int run(void *ud)
{
	struct daemon *dm = ud;
	if (dm->keylog)
		pk_log_warn("SSLKEYLOGFILE was set; it was removed from the environment and no TLS "
		            "keys are written");
	if (!api_access(dm) || !start_server(dm))
		return 1;
	int sig = pk_daemon_wait_signal(-1);
	pk_log_info("shutting down", PK_LOG_STR("signal", pk_daemon_signal_name(sig)),
	            PK_LOG_UINT("graceSeconds", dm->o.grace_seconds));
	return 0;
}

static void stop(void *ud)
{
	struct daemon *dm = ud;
	if (dm->certs != NULL)
		pk_certs_stop_watch(dm->certs);
	pk_server_stop(dm->server, dm->o.grace_seconds);
	pk_certs_free(dm->certs);
	pk_client_auth_free(dm->client_auth);
	pk_metrics_free(dm->metrics);
	pk_lookup_close(dm->lookup);
}

int main(int argc, char **argv)
{
	static struct daemon dm;
	/* GnuTLS, libmicrohttpd's TLS, appends the secrets of every handshake to
	 * $SSLKEYLOGFILE when it is set: whoever reads that file and the traffic
	 * reads every AdmissionReview. It is read at the first handshake, so
	 * removing it here, before any listener starts, keeps the keys out. */
	dm.keylog = getenv("SSLKEYLOGFILE") != NULL;
	/* A fixed threshold: request bodies (up to 3 MiB) are mapped and unmapped
	 * on their own instead of raising glibc's moving threshold and staying in
	 * the worker threads' heaps after the request. */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	if (dm.keylog)
		unsetenv("SSLKEYLOGFILE");
	const struct pk_daemon d = {PROGRAM, PK_VERSION,   USAGE, SUMMARY, flags,
	                            F_COUNT, read_options, &dm.o, true};
	return pk_daemon_main(&d, argc, argv, run, stop, &dm);
}
