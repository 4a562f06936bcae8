/* kube_elector.c - leader election on a coordination.k8s.io/v1 Lease. */
#include "kube_elector.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/rand.h>

#include "json.h"
#include "kube_events.h"
#include "kube_worker.h"

struct pk_kube_elector {
	struct pk_kube_client *c;
	char *ns, *name, *id;
	long duration_ms, deadline_ms, retry_ms;
	struct pk_kube_elector_opts o; /* callbacks */
	const struct pk_kube_log *log;

	char *observed;        /* the Lease spec as last seen, serialised */
	long long observed_ns; /* when it last changed, monotonic */
	char leader[256];      /* last holder reported to on_new_leader */

	struct pk_kube_worker w;
	atomic_int leading;
};

void pk_kube_lease_default_identity(char *buf, size_t len)
{
	char host[256] = "poolkeeper";
	unsigned char r[16];
	if (gethostname(host, sizeof(host) - 1) != 0)
		snprintf(host, sizeof(host), "poolkeeper");
	host[sizeof(host) - 1] = '\0';
	if (RAND_bytes(r, sizeof(r)) != 1) {
		long long t = pk_kube_now_ns() ^ (long long)getpid();
		memcpy(r, &t, sizeof(t));
		memcpy(r + 8, &t, sizeof(t));
	}
	char hex[33];
	for (int i = 0; i < 16; i++)
		snprintf(hex + 2 * i, 3, "%02x", r[i]);
	snprintf(buf, len, "%s_%s", host, hex);
}

enum pk_kube_lease_action pk_kube_lease_decide(const char *holder, const char *me,
                                               long long observed_ns, long duration_ms,
                                               long long now_ns)
{
	if (holder == NULL || holder[0] == '\0')
		return PK_KUBE_LEASE_ACQUIRE;
	if (strcmp(holder, me) == 0)
		return PK_KUBE_LEASE_RENEW;
	/* client-go: valid while observedTime + leaseDuration is after now */
	if (observed_ns + (long long)duration_ms * 1000000LL > now_ns)
		return PK_KUBE_LEASE_WAIT;
	return PK_KUBE_LEASE_ACQUIRE;
}

json_t *pk_kube_lease_spec(const json_t *old_spec, const char *me, long duration_s, bool release,
                           const struct timespec *now)
{
	char ts[64];
	pk_kube_micro_time(now, ts, sizeof(ts));
	const char *old_holder = pk_json_cstr_at(old_spec, "holderIdentity");
	json_int_t transitions = json_integer_value(json_object_get(old_spec, "leaseTransitions"));
	bool same = old_holder != NULL && strcmp(old_holder, me) == 0;
	const char *acquire = same ? pk_json_cstr_at(old_spec, "acquireTime") : NULL;
	/* client-go counts a transition when the lease changes hands */
	if (!release && !same && old_holder != NULL && old_holder[0] != '\0')
		transitions++;
	json_t *spec = json_pack("{s:s,s:I,s:s,s:s,s:I}", "holderIdentity", release ? "" : me,
	                         "leaseDurationSeconds", (json_int_t)(release ? 1 : duration_s),
	                         "acquireTime", acquire && !release ? acquire : ts, "renewTime", ts,
	                         "leaseTransitions", transitions);
	return spec;
}

int pk_kube_elector_new(struct pk_kube_client *c, const struct pk_kube_elector_opts *o,
                        struct pk_kube_elector **out, struct pk_err *err)
{
	*out = NULL;
	if (o->namespace == NULL || o->name == NULL)
		return pk_err_set(err, PK_ERR_INVALID,
		                  "leader election needs a Lease namespace and name");
	long dur = o->lease_duration_ms > 0 ? o->lease_duration_ms : PK_KUBE_LEASE_DURATION_MS;
	long dl = o->renew_deadline_ms > 0 ? o->renew_deadline_ms : PK_KUBE_RENEW_DEADLINE_MS;
	long retry = o->retry_period_ms > 0 ? o->retry_period_ms : PK_KUBE_RETRY_PERIOD_MS;
	/* client-go: LeaseDuration > RenewDeadline > RetryPeriod * 1.2 */
	if (dur <= dl || dl <= retry * 12 / 10)
		return pk_err_set(err, PK_ERR_INVALID,
		                  "leader election needs lease duration > renew deadline > 1.2 x "
		                  "retry period");
	struct pk_kube_elector *el = calloc(1, sizeof(*el));
	if (el == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	char id[512];
	if (o->identity == NULL)
		pk_kube_lease_default_identity(id, sizeof(id));
	el->c = c;
	el->o = *o;
	el->ns = strdup(o->namespace);
	el->name = strdup(o->name);
	el->id = strdup(o->identity ? o->identity : id);
	el->duration_ms = dur;
	el->deadline_ms = dl;
	el->retry_ms = retry;
	el->log = pk_kube_client_log(c);
	pk_kube_worker_init(&el->w);
	el->o.namespace = el->ns;
	el->o.name = el->name;
	el->o.identity = el->id;
	if (el->ns == NULL || el->name == NULL || el->id == NULL) {
		pk_kube_elector_free(el);
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	}
	*out = el;
	return PK_OK;
}

const char *pk_kube_elector_identity(const struct pk_kube_elector *el)
{
	return el->id;
}

bool pk_kube_elector_leading(struct pk_kube_elector *el)
{
	return atomic_load(&el->leading) != 0;
}

static long jittered(long ms)
{
	unsigned seed = (unsigned)pk_kube_now_ns();
	return ms + (long)(rand_r(&seed) % (ms / 5 + 1));
}

static struct pk_kube_ref lease_ref(struct pk_kube_elector *el, bool named)
{
	return (struct pk_kube_ref){.group = "coordination.k8s.io",
	                            .version = "v1",
	                            .resource = "leases",
	                            .namespace = el->ns,
	                            .name = named ? el->name : NULL,
	                            .timeout_ms = el->deadline_ms / 2};
}

static void observe(struct pk_kube_elector *el, const json_t *spec)
{
	char *s = json_dumps(spec, JSON_COMPACT | JSON_SORT_KEYS);
	if (s == NULL)
		return;
	if (el->observed == NULL || strcmp(el->observed, s) != 0) {
		free(el->observed);
		el->observed = s;
		el->observed_ns = pk_kube_now_ns();
	} else {
		free(s);
	}
}

/* One attempt to take or keep the Lease (client-go's tryAcquireOrRenew). */
static bool try_acquire_or_renew(struct pk_kube_elector *el)
{
	struct pk_kube_ref r = lease_ref(el, true);
	struct pk_kube_error e;
	json_t *lease = NULL, *spec, *out = NULL;
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	long dur_s = (el->duration_ms + 999) / 1000;
	enum pk_kube_reason rc = pk_kube_client_get(el->c, &r, &lease, &e);
	if (rc == PK_KUBE_NOT_FOUND) {
		spec = pk_kube_lease_spec(NULL, el->id, dur_s, false, &now);
		json_t *obj = json_pack("{s:s,s:s,s:{s:s,s:s},s:O}", "apiVersion",
		                        "coordination.k8s.io/v1", "kind", "Lease", "metadata",
		                        "name", el->name, "namespace", el->ns, "spec", spec);
		struct pk_kube_ref coll = lease_ref(el, false);
		rc = obj ? pk_kube_client_create(el->c, &coll, obj, NULL, &out, &e) : PK_KUBE_NOMEM;
		json_decref(obj);
		if (rc == PK_KUBE_OK)
			observe(el, spec);
		json_decref(spec);
		json_decref(out);
		return rc == PK_KUBE_OK;
	}
	if (rc != PK_KUBE_OK) {
		pk_kube_logf(el->log, PK_KUBE_LOG_WARN, "lease %s/%s: %s: %s", el->ns, el->name,
		             pk_kube_reason_name(rc), e.message);
		return false;
	}
	json_t *old = json_object_get(lease, "spec");
	observe(el, old);
	const char *holder = pk_json_cstr_at(old, "holderIdentity");
	json_t *d = json_object_get(old, "leaseDurationSeconds");
	long dms = json_is_integer(d) && json_integer_value(d) > 0
	               ? (long)json_integer_value(d) * 1000
	               : el->duration_ms;
	enum pk_kube_lease_action act =
	    pk_kube_lease_decide(holder, el->id, el->observed_ns, dms, pk_kube_now_ns());
	if (act == PK_KUBE_LEASE_WAIT) {
		if (strcmp(el->leader, holder) != 0) {
			snprintf(el->leader, sizeof(el->leader), "%s", holder);
			if (el->o.on_new_leader)
				el->o.on_new_leader(el->o.ud, holder);
		}
		json_decref(lease);
		return false;
	}
	spec = pk_kube_lease_spec(old, el->id, dur_s, false, &now);
	json_object_set(lease, "spec", spec);
	rc = spec ? pk_kube_client_update(el->c, &r, lease, NULL, &out, &e) : PK_KUBE_NOMEM;
	if (rc == PK_KUBE_OK)
		observe(el, json_object_get(out, "spec"));
	else if (rc != PK_KUBE_CONFLICT)
		pk_kube_logf(el->log, PK_KUBE_LOG_WARN, "lease %s/%s: update: %s: %s", el->ns,
		             el->name, pk_kube_reason_name(rc), e.message);
	json_decref(spec);
	json_decref(out);
	json_decref(lease);
	return rc == PK_KUBE_OK;
}

/* Gives the Lease up if it is still ours (client-go's release). */
static void release_lease(struct pk_kube_elector *el)
{
	struct pk_kube_ref r = lease_ref(el, true);
	struct pk_kube_error e;
	json_t *lease = NULL, *out = NULL;
	if (pk_kube_client_get(el->c, &r, &lease, &e) != PK_KUBE_OK)
		return;
	json_t *old = json_object_get(lease, "spec");
	const char *holder = pk_json_cstr_at(old, "holderIdentity");
	if (holder != NULL && strcmp(holder, el->id) == 0) {
		struct timespec now;
		clock_gettime(CLOCK_REALTIME, &now);
		json_t *spec = pk_kube_lease_spec(old, el->id, 1, true, &now);
		json_object_set_new(lease, "spec", spec);
		enum pk_kube_reason rc = pk_kube_client_update(el->c, &r, lease, NULL, &out, &e);
		if (rc != PK_KUBE_OK)
			pk_kube_logf(el->log, PK_KUBE_LOG_WARN, "lease %s/%s: release: %s: %s",
			             el->ns, el->name, pk_kube_reason_name(rc), e.message);
	}
	json_decref(out);
	json_decref(lease);
}

static void *run(void *arg)
{
	struct pk_kube_elector *el = arg;
	/* acquire */
	while (!pk_kube_worker_stopping(&el->w)) {
		if (try_acquire_or_renew(el))
			break;
		pk_kube_worker_nap(&el->w, jittered(el->retry_ms));
	}
	if (pk_kube_worker_stopping(&el->w))
		return NULL;
	atomic_store(&el->leading, 1);
	pk_kube_logf(el->log, PK_KUBE_LOG_INFO, "lease %s/%s: %s is the leader", el->ns, el->name,
	             el->id);
	if (el->o.on_started)
		el->o.on_started(el->o.ud);
	/* renew until the deadline passes without a successful renewal */
	long long last = pk_kube_now_ns();
	bool lost = false;
	while (!pk_kube_worker_stopping(&el->w)) {
		pk_kube_worker_nap(&el->w, el->retry_ms);
		if (pk_kube_worker_stopping(&el->w))
			break;
		if (try_acquire_or_renew(el)) {
			last = pk_kube_now_ns();
			continue;
		}
		if (pk_kube_now_ns() - last > (long long)el->deadline_ms * 1000000LL) {
			lost = true;
			break;
		}
	}
	atomic_store(&el->leading, 0);
	if (lost)
		pk_kube_logf(el->log, PK_KUBE_LOG_WARN,
		             "lease %s/%s: %s could not renew within %ld ms: leadership lost",
		             el->ns, el->name, el->id, el->deadline_ms);
	else
		release_lease(el);
	if (el->o.on_stopped)
		el->o.on_stopped(el->o.ud);
	return NULL;
}

int pk_kube_elector_start(struct pk_kube_elector *el, struct pk_err *err)
{
	int rc = pk_kube_worker_start(&el->w, run, el);
	if (rc == EBUSY)
		return pk_err_set(err, PK_ERR_INVALID, "elector already started");
	if (rc != 0)
		return pk_err_set(err, PK_ERR_NOMEM, "cannot start the elector: %s", strerror(rc));
	return PK_OK;
}

void pk_kube_elector_stop(struct pk_kube_elector *el)
{
	pk_kube_worker_stop(&el->w);
}

void pk_kube_elector_free(struct pk_kube_elector *el)
{
	if (el == NULL)
		return;
	pk_kube_worker_destroy(&el->w);
	free(el->ns);
	free(el->name);
	free(el->id);
	free(el->observed);
	free(el);
}
