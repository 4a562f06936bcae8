/*
 * main.c - poolkeeper-controller: flags, API access, leader election, the
 * health and metrics listeners, signals. The start every program shares
 * (flags, --help, logs, signals) is daemon.h's; the controller is
 * controller.c's (docs/architecture.md).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api.h"
#include "daemon.h"
#include "flags.h"
#include "httpd.h"
#include "kube_client.h"
#include "kube_config.h"
#include "kube_elector.h"
#include "log.h"
#include "parse.h"
#include "reconcile.h"
#include "rules.h"

#ifndef PK_VERSION
#error "PK_VERSION (the CMake project version) must be defined"
#endif

enum {
	F_KUBECONFIG,
	F_NAMESPACE,
	F_WATCH_FILTER,
	F_WORKERS,
	F_QPS,
	F_BURST,
	F_LEADER_ELECT,
	F_LEASE_DURATION,
	F_RENEW_DEADLINE,
	F_RETRY_PERIOD,
	F_LEADER_NS,
	F_LEADER_ID,
	F_HEALTH_ADDR,
	F_METRICS_ADDR,
	F_BACKENDS,
	F_RESYNC,
	F_CREDENTIALS_NS,
	F_COUNT,
};

static const struct pk_flag flags[F_COUNT] = {
    [F_KUBECONFIG] = PK_FLAG_DEF_KUBECONFIG,
    [F_NAMESPACE] = {"namespace", 0, PK_FLAG_STRING, "", "NS",
                     "watch this namespace only (GlobalIPPools are then ignored); empty: all"},
    [F_WATCH_FILTER] = {"watch-filter", 0, PK_FLAG_STRING, "", "VALUE",
                        "handle only claims, pools and Clusters labelled " PK_WATCH_FILTER_LABEL
                        "=VALUE; empty: all"},
    [F_WORKERS] = {"workers", 0, PK_FLAG_UINT, "2", "1..64",
                   "reconcile workers; allocation is serialised per pool"},
    [F_QPS] = {"kube-api-qps", 0, PK_FLAG_UINT, "50", "1..100000",
               "API requests per second (client-side rate limit)"},
    [F_BURST] = {"kube-api-burst", 0, PK_FLAG_UINT, "100", "1..100000",
                 "API requests allowed in a burst"},
    [F_LEADER_ELECT] = {"leader-elect", 0, PK_FLAG_BOOL, "true", NULL,
                        "only the Lease holder allocates; --leader-elect=false: this process "
                        "allocates, alone"},
    [F_LEASE_DURATION] = {"leader-elect-lease-duration", 0, PK_FLAG_DURATION, "15s", "1s..10m",
                          "how long other candidates wait after the last renewal before "
                          "taking the Lease"},
    [F_RENEW_DEADLINE] = {"leader-elect-renew-deadline", 0, PK_FLAG_DURATION, "10s", "1s..10m",
                          "how long the leader keeps trying to renew before it stops leading; "
                          "below the lease duration"},
    [F_RETRY_PERIOD] = {"leader-elect-retry-period", 0, PK_FLAG_DURATION, "2s", "100ms..1m",
                        "how often candidates try to take, and the leader to renew, the Lease; "
                        "1.2 times it below the renew deadline"},
    [F_LEADER_NS] = {"leader-election-namespace", 0, PK_FLAG_STRING, "", "NS",
                     "namespace of the Lease; empty: the pod's namespace, else default"},
    [F_LEADER_ID] = {"leader-election-id", 0, PK_FLAG_STRING, "poolkeeper-controller", "NAME",
                     "name of the Lease"},
    [F_HEALTH_ADDR] = PK_FLAG_DEF_HEALTH_ADDR,
    [F_METRICS_ADDR] = PK_FLAG_DEF_METRICS_ADDR,
    [F_BACKENDS] = {"backends", 0, PK_FLAG_STRING, PK_REGISTRY_DEFAULT, "LIST",
                    "the pool backends to run, comma-separated; this build has: incluster "
                    "(IPPool, GlobalIPPool)"},
    [F_RESYNC] = {"resync-period", 0, PK_FLAG_DURATION, "10m", "0s..24h",
                  "how often the leader has backends that keep records in another system "
                  "compare them with the IPAddresses; 0s: never"},
    [F_CREDENTIALS_NS] = {"credentials-namespace", 0, PK_FLAG_STRING, "", "NS",
                          "the one namespace whose Secrets backends read their credentials "
                          "from; empty: the pod's namespace, else default"},
};

#define PROGRAM "poolkeeper-controller"
#define USAGE   PROGRAM " [flags]"
#define SUMMARY "poolkeeper's IPAM controller: allocates addresses to IPAddressClaims."

struct options {
	const char *kubeconfig;
	const char *namespace;
	const char *watch_filter;
	const char *leader_ns;
	const char *credentials_ns;
	const char *leader_id;
	struct pk_httpd_probes_config probes; /* the addresses */
	unsigned long workers, qps, burst;
	long lease_ms, renew_ms, retry_ms;
	bool leader_elect;
	const char *backend_list; /* --backends as given */
	long resync_ms;
	const struct pk_registry_entry *backends[PK_REGISTRY_MAX];
	size_t nbackends;
};

/* A name-like flag: empty is allowed (the default applies); otherwise its check, named. */
static int check_name(const struct pk_flag_value *vals, int idx,
                      int (*check)(const char *, struct pk_err *), struct pk_err *err)
{
	const char *v = pk_flags_get_string(flags, vals, idx);
	struct pk_err e;
	if (v == NULL || *v == '\0' || check(v, &e) == PK_OK)
		return PK_OK;
	return pk_err_set(err, PK_ERR_INVALID, "--%s %s", flags[idx].name, e.msg);
}

static int dns_label(const char *s, struct pk_err *err)
{
	return pk_parse_dns_name(s, false, err);
}

static int dns_subdomain(const char *s, struct pk_err *err)
{
	return pk_parse_dns_name(s, true, err);
}

/*
 * client-go's leader election rules (leaderelection.NewLeaderElector):
 * "leaseDuration must be greater than renewDeadline" and "renewDeadline must
 * be greater than retryPeriod*JitterFactor" (JitterFactor 1.2).
 */
static int check_lease_timing(const struct pk_flag_value *vals, const struct options *o,
                              struct pk_err *err)
{
	const char *lease = pk_flags_get_string(flags, vals, F_LEASE_DURATION),
	           *renew = pk_flags_get_string(flags, vals, F_RENEW_DEADLINE),
	           *retry = pk_flags_get_string(flags, vals, F_RETRY_PERIOD);
	if (o->renew_ms >= o->lease_ms)
		return pk_err_set(err, PK_ERR_INVALID, "--%s (%s) must be shorter than --%s (%s)",
		                  flags[F_RENEW_DEADLINE].name, renew, flags[F_LEASE_DURATION].name,
		                  lease);
	if (o->renew_ms * 10 <= o->retry_ms * 12)
		return pk_err_set(err, PK_ERR_INVALID,
		                  "--%s (%s) must be longer than 1.2 times --%s (%s), as client-go "
		                  "requires",
		                  flags[F_RENEW_DEADLINE].name, renew, flags[F_RETRY_PERIOD].name,
		                  retry);
	return PK_OK;
}

/* The flags into the options (pk_daemon_options_fn): what the table cannot check. */
static int read_options(void *opts, const struct pk_daemon_args *args, struct pk_err *err)
{
	const struct pk_flag_value *vals = args->vals;
	struct options *o = opts;
	memset(o, 0, sizeof(*o));
	o->kubeconfig = pk_flags_get_string(flags, vals, F_KUBECONFIG);
	o->namespace = pk_flags_get_string(flags, vals, F_NAMESPACE);
	o->watch_filter = pk_flags_get_string(flags, vals, F_WATCH_FILTER);
	o->leader_ns = pk_flags_get_string(flags, vals, F_LEADER_NS);
	o->credentials_ns = pk_flags_get_string(flags, vals, F_CREDENTIALS_NS);
	o->leader_id = pk_flags_get_string(flags, vals, F_LEADER_ID);
	o->leader_elect = pk_flags_get_bool(vals, F_LEADER_ELECT);
	o->workers = (unsigned long)pk_flags_get_num(vals, F_WORKERS);
	o->qps = (unsigned long)pk_flags_get_num(vals, F_QPS);
	o->burst = (unsigned long)pk_flags_get_num(vals, F_BURST);
	o->lease_ms = (long)(pk_flags_get_num(vals, F_LEASE_DURATION) / PK_NS_PER_MS);
	o->renew_ms = (long)(pk_flags_get_num(vals, F_RENEW_DEADLINE) / PK_NS_PER_MS);
	o->retry_ms = (long)(pk_flags_get_num(vals, F_RETRY_PERIOD) / PK_NS_PER_MS);
	o->resync_ms = (long)(pk_flags_get_num(vals, F_RESYNC) / PK_NS_PER_MS);
	int rc;
	if ((rc = check_name(vals, F_NAMESPACE, dns_label, err)) != PK_OK ||
	    (rc = check_name(vals, F_LEADER_NS, dns_label, err)) != PK_OK ||
	    (rc = check_name(vals, F_CREDENTIALS_NS, dns_label, err)) != PK_OK ||
	    (rc = check_name(vals, F_WATCH_FILTER, pk_parse_label_value, err)) != PK_OK ||
	    (rc = check_name(vals, F_LEADER_ID, dns_subdomain, err)) != PK_OK)
		return rc;
	if (*o->leader_id == '\0')
		return pk_err_set(err, PK_ERR_INVALID, "--leader-election-id must not be empty");
	if ((rc = check_lease_timing(vals, o, err)) != PK_OK)
		return rc;
	o->backend_list = pk_flags_get_string(flags, vals, F_BACKENDS);
	if ((rc = pk_registry_parse(o->backend_list, o->backends, &o->nbackends, err)) != PK_OK)
		return rc;
	return pk_httpd_probes_flags(flags, vals, F_HEALTH_ADDR, F_METRICS_ADDR, &o->probes, err);
}

/* ---- health and metrics: the shared listeners (httpd.h) ---- */

static bool probe_ready(void *ud, char *why, size_t len)
{
	return pk_controller_ready(ud, why, len);
}

static char *probe_metrics(void *ud, size_t *len)
{
	return pk_controller_metrics(ud, len);
}

/* ---- leadership ---- */

struct leader {
	struct pk_controller *ctl;
	const char *lease; /* its name, for logs */
	atomic_int lost;
	int sigpipe;
};

static void on_started(void *ud)
{
	struct leader *ld = ud;
	pk_log_info("leading", PK_LOG_STR("lease", ld->lease));
	pk_controller_set_leading(ld->ctl, true);
}

static void on_stopped(void *ud)
{
	struct leader *ld = ud;
	pk_controller_set_leading(ld->ctl, false);
	atomic_store(&ld->lost, 1);
	pk_log_info("no longer leading", PK_LOG_STR("lease", ld->lease));
}

static void on_new_leader(void *ud, const char *identity)
{
	const struct leader *ld = ud;
	pk_log_info("another process leads", PK_LOG_STR("lease", ld->lease),
	            PK_LOG_STR("holder", identity));
}

/*
 * The served version of a group into buf: v1beta2 if served, else v1beta1.
 * NULL when neither, or when the group cannot be read (logged).
 */
static const char *served_version(struct pk_kube_client *client, const char *group, char *buf,
                                  size_t len)
{
	static const char *const prefer[] = {PK_CAPI_V1BETA2, PK_CAPI_V1BETA1, NULL};
	struct pk_kube_error e;
	if (pk_kube_client_preferred_version(client, group, prefer, buf, len, &e) != PK_KUBE_OK) {
		pk_log_warn("API group not served", PK_LOG_STR("group", group),
		            PK_LOG_STR("error", e.message));
		return NULL;
	}
	return buf[0] != '\0' ? buf : NULL;
}

/* The flag's namespace, else the pod's (service account), else "default". */
static void flag_or_pod_namespace(const char *flag, char *buf, size_t len)
{
	if (flag != NULL && *flag != '\0') {
		snprintf(buf, len, "%s", flag);
		return;
	}
	snprintf(buf, len, "default");
	FILE *f = fopen("/var/run/secrets/kubernetes.io/serviceaccount/namespace", "r");
	if (f == NULL)
		return;
	char ns[256];
	if (fgets(ns, sizeof(ns), f) != NULL) {
		ns[strcspn(ns, "\r\n")] = '\0';
		if (ns[0] != '\0')
			snprintf(buf, len, "%s", ns);
	}
	fclose(f);
}

/* What main starts, stopped in the reverse order by stop(). */
struct daemon {
	struct options o;
	struct pk_kube_config *cfg;
	struct pk_kube_client *client;
	struct pk_controller *ctl;
	struct pk_kube_elector *el;
	struct pk_httpd_probes *probes;
	struct leader ld;
	char claim_version[16], cluster_version[16];
	char selector[128];
};

/* The kubeconfig and the client; false (logged) when API access cannot be set up. */
static bool api_access(struct daemon *dm)
{
	struct pk_err err = {{0}};
	struct pk_kube_log klog;
	pk_log_kube_sink(&klog);
	struct pk_kube_config_opts co = {
	    .path = dm->o.kubeconfig != NULL && *dm->o.kubeconfig ? dm->o.kubeconfig : NULL,
	    .log = &klog,
	    .allow_exec = true};
	struct pk_kube_client_opts copts = {.qps = (double)dm->o.qps, .burst = (int)dm->o.burst};
	if (pk_kube_config_load(&co, &dm->cfg, &err) != PK_OK ||
	    pk_kube_client_new(dm->cfg, &copts, &dm->client, &err) != PK_OK) {
		pk_log_error("cannot set up API access", PK_LOG_STR("error", err.msg));
		return false;
	}
	pk_log_info("API access", PK_LOG_STR("server", pk_kube_config_server(dm->cfg)));
	return true;
}

/* The served API versions and the watch filter; false (logged) without Cluster API's IPAM. */
static bool discover(struct daemon *dm)
{
	const char *claim = served_version(dm->client, PK_CAPI_IPAM_GROUP, dm->claim_version,
	                                   sizeof(dm->claim_version));
	if (claim == NULL) {
		pk_log_error(PK_CAPI_IPAM_GROUP " is not served in " PK_CAPI_V1BETA2
		                                " or " PK_CAPI_V1BETA1 ": install "
		                                "Cluster API's IPAM CRDs");
		return false;
	}
	const char *cluster = served_version(dm->client, PK_CAPI_CORE_GROUP, dm->cluster_version,
	                                     sizeof(dm->cluster_version));
	if (cluster == NULL)
		dm->cluster_version[0] = '\0';
	pk_log_info("API versions", PK_LOG_STR(PK_CAPI_IPAM_GROUP, claim),
	            PK_LOG_STR(PK_CAPI_CORE_GROUP, cluster ? cluster : "none"),
	            PK_LOG_UINT("workers", dm->o.workers),
	            PK_LOG_STR("backends", dm->o.backend_list));
	if (*dm->o.watch_filter != '\0') {
		snprintf(dm->selector, sizeof(dm->selector), PK_WATCH_FILTER_LABEL "=%s",
		         dm->o.watch_filter);
		pk_log_info("watch filter: claims, pools and Clusters with the label only; every "
		            "IPAddress is read, so that no address is handed out twice",
		            PK_LOG_STR("selector", dm->selector));
	}
	return true;
}

/* The controller and its health and metrics listeners; false (logged) on failure. */
static bool start_controller(struct daemon *dm)
{
	struct pk_err err = {{0}};
	char cns[256];
	flag_or_pod_namespace(dm->o.credentials_ns, cns, sizeof(cns));
	struct pk_controller_opts opts = {
	    .client = dm->client,
	    .namespace = dm->o.namespace,
	    .label_selector = dm->selector,
	    .claim_version = dm->claim_version,
	    .cluster_version = dm->cluster_version[0] != '\0' ? dm->cluster_version : NULL,
	    .workers = (unsigned)dm->o.workers,
	    .backends = dm->o.backends,
	    .nbackends = dm->o.nbackends,
	    .events_config = dm->cfg,
	    .resync_period_ms = dm->o.resync_ms,
	    .credentials_namespace = cns};
	struct pk_httpd_probes_config pc = dm->o.probes;
	pc.ready = probe_ready;
	pc.metrics = probe_metrics;
	if (pk_controller_new(&opts, &dm->ctl, &err) == PK_OK) {
		pc.ud = dm->ctl;
		if (pk_httpd_probes_start(&pc, &dm->probes, &err) == PK_OK) {
			pk_httpd_log_probes(&pc, pk_httpd_probes_port(dm->probes, false),
			                    pk_httpd_probes_port(dm->probes, true));
			if (pk_controller_start(dm->ctl, &err) == PK_OK)
				return true;
		}
	}
	pk_log_error("cannot start", PK_LOG_STR("error", err.msg));
	return false;
}

/*
 * Runs the controller until its informers have synced: 1. However long the
 * first lists take (100,000 objects on a busy API server may take minutes):
 * /readyz answers 503 meanwhile, and a signal still ends the process (0).
 * -1 (logged) on failure.
 */
static int wait_synced(struct daemon *dm)
{
	struct pk_err err = {{0}};
	struct timespec began;
	clock_gettime(CLOCK_MONOTONIC, &began);
	for (long noted_s = 0;;) {
		int run = pk_controller_run(dm->ctl, 1000, &err);
		if (run < 0) {
			pk_log_error("cannot start", PK_LOG_STR("error", err.msg));
			return -1;
		}
		if (run > 0)
			return 1;
		int sig = pk_daemon_wait_signal(0);
		if (sig != 0) {
			pk_log_info("shutting down before the informers synced",
			            PK_LOG_STR("signal", pk_daemon_signal_name(sig)));
			return 0;
		}
		struct timespec t;
		clock_gettime(CLOCK_MONOTONIC, &t);
		long waited_s = (long)(t.tv_sec - began.tv_sec);
		if (waited_s >= noted_s + 30) {
			char which[128];
			pk_controller_listing(dm->ctl, which, sizeof(which));
			pk_log_warn("informers still listing (is the CRD installed, may this "
			            "identity list and watch it?); not ready until they are",
			            PK_LOG_STR("resources", which),
			            PK_LOG_INT("seconds", waited_s));
			noted_s = waited_s;
		}
	}
}

/* Leader election, or leading at once with --leader-elect=false; false (logged) on failure. */
static bool start_leading(struct daemon *dm)
{
	dm->ld.ctl = dm->ctl;
	dm->ld.lease = dm->o.leader_id;
	if (!dm->o.leader_elect) {
		pk_log_info("leader election off: this process allocates");
		pk_controller_set_leading(dm->ctl, true);
		return true;
	}
	struct pk_err err = {{0}};
	char lns[256];
	flag_or_pod_namespace(dm->o.leader_ns, lns, sizeof(lns));
	struct pk_kube_elector_opts eo = {.namespace = lns,
	                                  .name = dm->o.leader_id,
	                                  .lease_duration_ms = dm->o.lease_ms,
	                                  .renew_deadline_ms = dm->o.renew_ms,
	                                  .retry_period_ms = dm->o.retry_ms,
	                                  .on_started = on_started,
	                                  .on_stopped = on_stopped,
	                                  .on_new_leader = on_new_leader,
	                                  .ud = &dm->ld};
	if (pk_kube_elector_new(dm->client, &eo, &dm->el, &err) != PK_OK ||
	    pk_kube_elector_start(dm->el, &err) != PK_OK) {
		pk_log_error("cannot start leader election", PK_LOG_STR("error", err.msg));
		return false;
	}
	pk_log_info("leader election", PK_LOG_STR("lease", dm->o.leader_id),
	            PK_LOG_STR("namespace", lns),
	            PK_LOG_STR("identity", pk_kube_elector_identity(dm->el)));
	return true;
}

/* Start-up, then waits for a signal (0), or for leadership to be lost (1): one term per process. */
static int run(void *ud)
{
	struct daemon *dm = ud;
	if (!api_access(dm) || !discover(dm) || !start_controller(dm))
		return 1;
	int synced = wait_synced(dm);
	if (synced <= 0)
		return synced == 0 ? 0 : 1;
	pk_log_info("informers synced");
	if (!start_leading(dm))
		return 1;
	for (;;) {
		int sig = pk_daemon_wait_signal(1000);
		if (sig != 0) {
			pk_log_info("shutting down",
			            PK_LOG_STR("signal", pk_daemon_signal_name(sig)));
			return 0;
		}
		if (atomic_load(&dm->ld.lost)) {
			pk_log_error(
			    "leadership lost: exiting so that a fresh process competes again");
			return 1;
		}
	}
}

static void stop(void *ud)
{
	struct daemon *dm = ud;
	/* In-flight work ends first, then the Lease is given up. */
	if (dm->ctl != NULL)
		pk_controller_stop(dm->ctl);
	if (dm->el != NULL) {
		pk_kube_elector_stop(dm->el);
		pk_kube_elector_free(dm->el);
	}
	/* The listeners read the controller: they stop before it is freed. */
	pk_httpd_probes_stop(dm->probes);
	pk_controller_free(dm->ctl);
	pk_kube_client_free(dm->client);
	pk_kube_config_free(dm->cfg);
}

int main(int argc, char **argv)
{
	static struct daemon dm;
	const struct pk_daemon d = {PROGRAM, PK_VERSION,   USAGE, SUMMARY, flags,
	                            F_COUNT, read_options, &dm.o, true};
	return pk_daemon_main(&d, argc, argv, run, stop, &dm);
}
