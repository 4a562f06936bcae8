/* kube_e2e_more.c - the lease and event modes of pk-kube-e2e. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "kube_client.h"
#include "kube_events.h"
#include "kube_elector.h"

int pk_kube_e2e_lease(struct pk_kube_client *c, const char *ns, const char *name, const char *id,
                      long seconds);
int pk_kube_e2e_event(struct pk_kube_client *c, const char *ns, const char *kind, const char *name,
                      const char *reason, const char *msg, int times);

static void say(void *ud)
{
	printf("%s\n", (const char *)ud);
	fflush(stdout);
}

static void started(void *ud)
{
	(void)ud;
	say("leading");
}

static void stopped(void *ud)
{
	(void)ud;
	say("stopped");
}

static void new_leader(void *ud, const char *who)
{
	(void)ud;
	printf("leader %s\n", who);
	fflush(stdout);
}

/* Campaigns for the Lease until SECONDS pass or TERM/INT arrives, then
 * stops (a leader gives the Lease up). */
int pk_kube_e2e_lease(struct pk_kube_client *c, const char *ns, const char *name, const char *id,
                      long seconds)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL); /* before the elector's thread exists */
	struct pk_kube_elector_opts o = {.namespace = ns,
	                                 .name = name,
	                                 .identity = id,
	                                 .on_started = started,
	                                 .on_stopped = stopped,
	                                 .on_new_leader = new_leader};
	struct pk_kube_elector *el;
	struct pk_err err;
	if (pk_kube_elector_new(c, &o, &el, &err) != PK_OK ||
	    pk_kube_elector_start(el, &err) != PK_OK) {
		printf("FAIL lease: %s\n", err.msg);
		return 1;
	}
	struct timespec ts = {.tv_sec = seconds};
	int sig = sigtimedwait(&set, NULL, &ts);
	printf("ending (%s)\n", sig > 0 ? strsignal(sig) : "time is up");
	fflush(stdout);
	pk_kube_elector_free(el);
	return 0;
}

int pk_kube_e2e_event(struct pk_kube_client *c, const char *ns, const char *kind, const char *name,
                      const char *reason, const char *msg, int times)
{
	struct pk_kube_recorder_opts o = {.controller = "ipam.poolkeeper.io/pk-kube-e2e"};
	struct pk_kube_recorder *rec;
	struct pk_err err;
	if (pk_kube_recorder_new(c, &o, &rec, &err) != PK_OK) {
		printf("FAIL event: %s\n", err.msg);
		return 1;
	}
	struct pk_kube_object_ref ref = {
	    .api_version = "v1", .kind = kind, .namespace = ns, .name = name};
	for (int i = 0; i < times; i++) {
		enum pk_kube_reason rc =
		    pk_kube_recorder_emit(rec, &ref, true, reason, "Test", "%s", msg);
		if (rc != PK_KUBE_OK) {
			printf("FAIL event: %s\n", pk_kube_reason_name(rc));
			return 1;
		}
	}
	if (pk_kube_recorder_flush(rec) != PK_KUBE_OK) {
		printf("FAIL event: flush\n");
		return 1;
	}
	unsigned long created, updated;
	pk_kube_recorder_stats(rec, &created, &updated);
	printf("ok event: %d occurrences, %lu Event created, %lu series updates\n", times, created,
	       updated);
	pk_kube_recorder_free(rec);
	return 0;
}
