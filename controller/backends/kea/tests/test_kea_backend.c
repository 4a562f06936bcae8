/*
 * test_kea_backend.c - the Kea backend's operations (kea.h) against a real
 * Kea (e2e/kea on loopback), with the fake writer and a host that records
 * the claims the backend queues: a take answers PENDING at once and queues
 * the claim when Kea answered, whose next ask gets the lease; Kea down
 * holds no worker, shows on the claim as a reason and on /readyz, and
 * recovers on its own; a release is confirmed only once Kea deleted the
 * lease, and says what follows (the pool's counts, its waiting claims);
 * cancel ends a call in flight at once, drops its answer and queues
 * nothing; a pool without a Kea server or subnet is invalid, naming the
 * field.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "json_fixture.h"
#include "fake_writer.h"
#include "kea.h"
#include "kea_fixture.h"
#include "base64.h"
#include "kea_lease.h"

struct host {
	struct fake_writer fw;
	struct pk_writer writer;
	struct pk_backend_host h;
	struct pk_backend b;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned queued;
	char last[PK_OBJECT_KEY_MAX];
};

static void queue_claim(void *ud, const char *key, long delay_ms)
{
	struct host *h = ud;
	(void)delay_ms;
	pthread_mutex_lock(&h->mu);
	h->queued++;
	snprintf(h->last, sizeof(h->last), "%s", key);
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->mu);
}

static void post_event(void *ud, const struct pk_kube_object_ref *r, bool warning,
                       const char *reason, const char *action, const char *message)
{
	(void)ud, (void)r, (void)warning, (void)reason, (void)action, (void)message;
}

/* Waits up to `seconds` until the backend queued `want` claims in all. */
static bool wait_queued_for(struct host *h, unsigned want, int seconds)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += seconds;
	pthread_mutex_lock(&h->mu);
	while (h->queued < want)
		if (pthread_cond_timedwait(&h->cv, &h->mu, &until) != 0)
			break;
	bool ok = h->queued >= want;
	pthread_mutex_unlock(&h->mu);
	return ok;
}

static bool wait_queued(struct host *h, unsigned want)
{
	return wait_queued_for(h, want, 15);
}

static int setup(void **state)
{
	struct host *h = calloc(1, sizeof(*h));
	assert_non_null(h);
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->cv, NULL);
	h->writer = fake_writer_init(&h->fw);
	h->h = (struct pk_backend_host){.ud = h,
	                                .writer = &h->writer,
	                                .queue_claim = queue_claim,
	                                .post_event = post_event,
	                                .ipam_version = "v1beta2",
	                                .call_timeout_ms = 5000};
	assert_int_equal(pk_kea_new(&h->h, &h->b), PK_OK);
	assert_int_equal(pk_kea_server_set(&h->b, "site-a", kea.url, kea.ca, "poolkeeper",
	                                   kea.password, "mgmt-a"),
	                 PK_OK);
	*state = h;
	return 0;
}

static int teardown(void **state)
{
	struct host *h = *state;
	h->b.ops->free(h->b.self);
	fake_writer_release(&h->fw);
	pthread_cond_destroy(&h->cv);
	pthread_mutex_destroy(&h->mu);
	free(h);
	return 0;
}

/* The view of KeaIPPool team-a/<name> over [first, last] (10.77.x.y). */
static void view(struct host *h, const char *name, const char *range, const char *extra,
                 struct pk_pool_view *v)
{
	memset(v, 0, sizeof(*v));
	snprintf(v->key, sizeof(v->key), "KeaIPPool/team-a/%s", name);
	v->obj = loadf("{'metadata': {'name': '%s', 'namespace': 'team-a', 'uid': 'pu-%s', "
	               "'generation': 1}, 'spec': {'addresses': ['%s'], 'prefix': 16, "
	               "'gateway': '10.77.0.1'%s}}",
	               name, name, range, extra);
	v->facts.state = PK_POOL_ACTIVE;
	assert_int_equal(h->b.ops->view_pool(h->b.self, v), PK_OK);
}

#define KEA_SPEC ", 'server': 'site-a', 'subnetId': 1"

static bool leased(const char *address);

static struct pk_claim_id id_of(const char *name, char *key, size_t len)
{
	snprintf(key, len, "team-a/%s", name);
	return (struct pk_claim_id){
	    .ns = "team-a", .name = name, .cluster = "prod", .uid = "u", .key = key};
}

static void a_take_answers_pending_then_the_lease(void **state)
{
	struct host *h = *state;
	struct pk_pool_view v;
	view(h, "nodes", "10.77.4.1-10.77.4.9", KEA_SPEC, &v);
	assert_int_equal(v.facts.state, PK_POOL_ACTIVE);
	char key[PK_OBJECT_KEY_MAX];
	struct pk_claim_id id = id_of("m-1", key, sizeof(key));
	struct pk_address_lease l;
	struct pk_backend_result r;
	h->b.ops->ensure_address(h->b.self, &v, &id, &l, &r);
	assert_int_equal(r.status, PK_BACKEND_PENDING);
	h->b.ops->ensure_address(h->b.self, &v, &id, &l, &r); /* asked again meanwhile */
	assert_true(r.status == PK_BACKEND_PENDING || r.status == PK_BACKEND_OK);
	assert_true(wait_queued(h, 1));
	assert_string_equal(h->last, "team-a/m-1");
	h->b.ops->ensure_address(h->b.self, &v, &id, &l, &r);
	assert_int_equal(r.status, PK_BACKEND_OK);
	assert_string_equal(l.address, "10.77.4.1");
	assert_int_equal(l.prefix, 16);
	assert_string_equal(l.gateway, "10.77.0.1");
	assert_true(l.fresh);
	assert_true(h->b.ops->holds(h->b.self, &id));
	char why[256];
	assert_true(h->b.ops->ready(h->b.self, why, sizeof(why)));
	/* Released: PENDING, then confirmed once Kea deleted the lease. */
	struct pk_release_note n;
	h->b.ops->release_address(h->b.self, &id, &n, &r);
	assert_int_equal(r.status, PK_BACKEND_PENDING);
	assert_true(h->b.ops->holds(h->b.self, &id)); /* the finalizer stays meanwhile */
	assert_true(wait_queued(h, 2));
	h->b.ops->release_address(h->b.self, &id, &n, &r);
	assert_int_equal(r.status, PK_BACKEND_OK);
	assert_true(n.released);
	assert_string_equal(n.address, "10.77.4.1");
	assert_string_equal(r.next.pool_key, "KeaIPPool/team-a/nodes");
	assert_true(r.next.sync);
	assert_true(r.next.wake);
	assert_false(h->b.ops->holds(h->b.self, &id));
	struct pk_kea_answer a;
	struct pk_kea_endpoint ep = endpoint();
	json_t *get = json_pack("{s:s}", "ip-address", "10.77.4.1");
	pk_kea_command(&ep, "lease4-get", "dhcp4", get, &a);
	json_decref(get);
	assert_int_equal(a.result, PK_KEA_EMPTY);
	pk_pool_view_clear(&v);
}

/* The IPAddress of a fresh lease was surely not created: the lease is given back in the
 * background, and a take asked meanwhile waits for it and is queued when it is done. */
static void an_abandoned_lease_is_given_back_and_the_claim_asks_again(void **state)
{
	struct host *h = *state;
	struct pk_pool_view v;
	view(h, "abandon", "10.77.10.1-10.77.10.9", KEA_SPEC, &v);
	char key[PK_OBJECT_KEY_MAX];
	struct pk_claim_id id = id_of("ab-1", key, sizeof(key));
	struct pk_address_lease l;
	struct pk_backend_result r;
	h->b.ops->ensure_address(h->b.self, &v, &id, &l, &r);
	assert_true(wait_queued(h, 1));
	h->b.ops->ensure_address(h->b.self, &v, &id, &l, &r);
	assert_int_equal(r.status, PK_BACKEND_OK);
	assert_true(l.fresh);
	h->b.ops->abandon_address(h->b.self, &id, &l);
	assert_false(h->b.ops->holds(h->b.self, &id));
	h->b.ops->ensure_address(h->b.self, &v, &id, &l, &r);
	assert_int_equal(r.status, PK_BACKEND_PENDING); /* the give-back is in flight */
	assert_true(wait_queued(h, 2));
	assert_false(leased("10.77.10.1"));
	h->b.ops->ensure_address(h->b.self, &v, &id, &l, &r);
	assert_int_equal(r.status, PK_BACKEND_PENDING); /* a new take */
	assert_true(wait_queued(h, 3));
	h->b.ops->ensure_address(h->b.self, &v, &id, &l, &r);
	assert_int_equal(r.status, PK_BACKEND_OK);
	assert_string_equal(l.address, "10.77.10.1");
	struct pk_release_note n;
	h->b.ops->release_address(h->b.self, &id, &n, &r);
	assert_true(wait_queued(h, 4));
	h->b.ops->release_address(h->b.self, &id, &n, &r);
	assert_int_equal(r.status, PK_BACKEND_OK);
	pk_pool_view_clear(&v);
}

static void kea_down_holds_no_worker_and_recovers(void **state)
{
	struct host *h = *state;
	struct pk_pool_view v;
	view(h, "down", "10.77.5.1-10.77.5.9", KEA_SPEC, &v);
	char key[PK_OBJECT_KEY_MAX];
	struct pk_claim_id id = id_of("d-1", key, sizeof(key));
	struct pk_address_lease l;
	struct pk_backend_result r;
	assert_int_equal(run_kea("stop agent"), 0);
	h->b.ops->ensure_address(h->b.self, &v, &id, &l, &r);
	assert_int_equal(r.status, PK_BACKEND_PENDING); /* at once: the call is the backend's */
	assert_true(wait_queued(h, 1));
	h->b.ops->ensure_address(h->b.self, &v, &id, &l, &r);
	assert_int_equal(r.status, PK_BACKEND_TRANSIENT);
	assert_string_equal(r.reason, "KeaUnreachable");
	assert_non_null(strstr(r.message, "cannot reach the Kea control agent"));
	char why[256];
	assert_false(h->b.ops->ready(h->b.self, why, sizeof(why)));
	assert_non_null(strstr(why, "KeaServer site-a"));
	assert_int_equal(run_kea("start agent"), 0); /* back once Kea answers */
	h->b.ops->ensure_address(h->b.self, &v, &id, &l, &r);
	assert_int_equal(r.status, PK_BACKEND_PENDING);
	assert_true(wait_queued(h, 2));
	h->b.ops->ensure_address(h->b.self, &v, &id, &l, &r);
	assert_int_equal(r.status, PK_BACKEND_OK);
	assert_string_equal(l.address, "10.77.5.1");
	assert_true(h->b.ops->ready(h->b.self, why, sizeof(why)));
	struct pk_release_note n;
	h->b.ops->release_address(h->b.self, &id, &n, &r);
	assert_true(wait_queued(h, 3));
	h->b.ops->release_address(h->b.self, &id, &n, &r);
	assert_int_equal(r.status, PK_BACKEND_OK);
	pk_pool_view_clear(&v);
}

/* A loopback listener that accepts and never answers: a call to it waits for its deadline. */
static int silent_listener(int *port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t al = sizeof(a);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, 8), 0);
	getsockname(fd, (struct sockaddr *)&a, &al);
	*port = ntohs(a.sin_port);
	return fd;
}

/* Every caller busy with a server that never answers (each call would wait 5 s for its
 * deadline): cancel ends them at once, their answers are dropped, and the next term's calls
 * run at once. */
static void cancel_ends_calls_and_drops_their_answers(void **state)
{
	struct host *h = *state;
	int port;
	int fd = silent_listener(&port);
	char url[64];
	snprintf(url, sizeof(url), "https://127.0.0.1:%d/", port);
	assert_int_equal(pk_kea_server_set(&h->b, "silent", url, kea.ca, "poolkeeper", "x", ""),
	                 PK_OK);
	struct pk_pool_view v, real;
	view(h, "silent", "10.77.6.1-10.77.6.9", ", 'server': 'silent', 'subnetId': 1", &v);
	char key[PK_OBJECT_KEY_MAX];
	struct pk_address_lease l;
	struct pk_backend_result r;
	for (int i = 0; i < 4; i++) { /* KEA_CALLERS */
		char name[8];
		snprintf(name, sizeof(name), "s-%d", i);
		struct pk_claim_id id = id_of(name, key, sizeof(key));
		h->b.ops->ensure_address(h->b.self, &v, &id, &l, &r);
		assert_int_equal(r.status, PK_BACKEND_PENDING);
	}
	struct timespec pause = {0, 300 * 1000000L};
	nanosleep(&pause, NULL);
	h->b.ops->cancel(h->b.self);
	/* A new term starts from the IPAddresses; calls run again, at once. */
	json_t *pages = loadf("[{'items': []}]");
	h->fw.pages = pages;
	assert_int_equal(h->b.ops->on_leading(h->b.self), PK_OK);
	json_decref(pages);
	view(h, "after", "10.77.6.20-10.77.6.29", KEA_SPEC, &real);
	struct pk_claim_id id = id_of("a-1", key, sizeof(key));
	h->b.ops->ensure_address(h->b.self, &real, &id, &l, &r);
	assert_int_equal(r.status, PK_BACKEND_PENDING);
	assert_true(wait_queued_for(h, 1, 3));
	assert_string_equal(h->last, "team-a/a-1"); /* none of the cancelled calls' */
	h->b.ops->ensure_address(h->b.self, &real, &id, &l, &r);
	assert_int_equal(r.status, PK_BACKEND_OK);
	struct pk_release_note n;
	h->b.ops->release_address(h->b.self, &id, &n, &r);
	assert_true(wait_queued(h, 2));
	h->b.ops->release_address(h->b.self, &id, &n, &r);
	assert_int_equal(r.status, PK_BACKEND_OK);
	pthread_mutex_lock(&h->mu);
	assert_int_equal(h->queued, 2);
	pthread_mutex_unlock(&h->mu);
	pk_pool_view_clear(&v);
	pk_pool_view_clear(&real);
	close(fd);
}

static void a_pool_without_server_or_subnet_is_invalid(void **state)
{
	struct host *h = *state;
	struct pk_pool_view v;
	view(h, "bad", "10.77.7.1-10.77.7.9", ", 'subnetId': 1", &v);
	assert_int_equal(v.facts.state, PK_POOL_INVALID);
	assert_non_null(strstr(v.text, "spec.server"));
	pk_pool_view_clear(&v);
	view(h, "bad2", "10.77.7.1-10.77.7.9", ", 'server': 'site-a', 'subnetId': 0", &v);
	assert_int_equal(v.facts.state, PK_POOL_INVALID);
	assert_non_null(strstr(v.text, "spec.subnetId"));
	pk_pool_view_clear(&v);
	view(h, "bad3", "10.77.7.300", KEA_SPEC, &v);
	assert_int_equal(v.facts.state, PK_POOL_INVALID);
	assert_non_null(strstr(v.text, "is not usable"));
	pk_pool_view_clear(&v);
}

/* Whether Kea holds a lease of address. */
static bool leased(const char *address)
{
	struct pk_kea_answer a;
	struct pk_kea_endpoint ep = endpoint();
	json_t *get = json_pack("{s:s}", "ip-address", address);
	pk_kea_command(&ep, "lease4-get", "dhcp4", get, &a);
	json_decref(get);
	pk_kea_answer_clear(&a);
	return a.outcome == PK_KEA_ANSWERED && a.result == PK_KEA_SUCCESS;
}

static void add_lease(const struct pk_kea_claim *c, const char *address)
{
	struct pk_addr a;
	struct pk_err err;
	struct pk_kea_answer ans;
	assert_int_equal(pk_address_parse(address, &a, NULL, &err), PK_OK);
	struct pk_kea_endpoint ep = endpoint();
	json_t *args = pk_kea_lease_add_args(c, &a);
	pk_kea_command(&ep, "lease4-add", "dhcp4", args, &ans);
	json_decref(args);
	assert_int_equal(ans.result, PK_KEA_SUCCESS);
	pk_kea_answer_clear(&ans);
}

/* A lease of this owner whose claim has no IPAddress, and that no call of this process is
 * about, is deleted; another owner's, a DHCP client's, and a claim's this process works on
 * stay. */
static void resync_deletes_only_this_owners_orphans(void **state)
{
	struct host *h = *state;
	const struct pk_kea_claim orphan = {.owner = "mgmt-a", .ns = "team-a", .name = "o-1"};
	const struct pk_kea_claim other = {.owner = "mgmt-b", .ns = "team-a", .name = "o-1"};
	add_lease(&orphan, "10.77.8.1");
	add_lease(&other, "10.77.8.2");
	struct pk_kea_answer a;
	struct pk_kea_endpoint ep = endpoint();
	json_t *dhcp =
	    json_pack("{s:s, s:s}", "ip-address", "10.77.8.3", "hw-address", "52:54:00:00:08:03");
	pk_kea_command(&ep, "lease4-add", "dhcp4", dhcp, &a);
	json_decref(dhcp);
	/* A claim this process took for: its record says so. */
	struct pk_pool_view v;
	view(h, "resync", "10.77.8.10-10.77.8.19", KEA_SPEC, &v);
	char key[PK_OBJECT_KEY_MAX];
	struct pk_claim_id id = id_of("k-1", key, sizeof(key));
	struct pk_address_lease l;
	struct pk_backend_result r;
	h->b.ops->ensure_address(h->b.self, &v, &id, &l, &r);
	assert_true(wait_queued(h, 1));
	json_t *pages = loadf("[{'items': []}]");
	h->fw.pages = pages;
	assert_true(pk_backend_resyncs(&h->b));
	assert_int_equal(h->b.ops->resync(h->b.self), PK_OK);
	json_decref(pages);
	assert_false(leased("10.77.8.1"));
	assert_true(leased("10.77.8.2"));
	assert_true(leased("10.77.8.3"));
	assert_true(leased("10.77.8.10"));
	assert_true(wait_queued(h, 2)); /* the orphan's claim is looked at again */
	assert_string_equal(h->last, "team-a/o-1");
	/* The Kea server unreachable: the resync fails (tried at the next period). */
	assert_int_equal(pk_kea_server_set(&h->b, "site-a", "https://127.0.0.1:1/", kea.ca,
	                                   "poolkeeper", kea.password, "mgmt-a"),
	                 PK_OK);
	pages = loadf("[{'items': []}]");
	h->fw.pages = pages;
	assert_int_equal(h->b.ops->resync(h->b.self), PK_ERR_API);
	json_decref(pages);
	json_t *del = json_pack("{s:s}", "ip-address", "10.77.8.2");
	pk_kea_command(&ep, "lease4-del", "dhcp4", del, &a);
	json_object_set_new(del, "ip-address", json_string("10.77.8.3"));
	pk_kea_command(&ep, "lease4-del", "dhcp4", del, &a);
	json_object_set_new(del, "ip-address", json_string("10.77.8.10"));
	pk_kea_command(&ep, "lease4-del", "dhcp4", del, &a);
	json_decref(del);
	pk_pool_view_clear(&v);
}

/* A basic-auth Secret as the informer keeps it. */
static json_t *secret(const char *name, const char *user, const char *password)
{
	char *u = pk_base64_encode(user, strlen(user)),
	     *p = pk_base64_encode(password, strlen(password));
	json_t *o =
	    loadf("{'metadata': {'name': '%s', 'namespace': 'poolkeeper'}, 'type': "
	          "'kubernetes.io/basic-auth', 'data': {'username': '%s', 'password': '%s'}}",
	          name, u, p);
	free(u);
	free(p);
	return o;
}

/* Takes a lease for claim `name` on view v and gives it back: the take's result. */
static enum pk_backend_status take_and_give_back(struct host *h, struct pk_pool_view *v,
                                                 const char *name, unsigned *queued, char *reason,
                                                 size_t len)
{
	char key[PK_OBJECT_KEY_MAX];
	struct pk_claim_id id = id_of(name, key, sizeof(key));
	struct pk_address_lease l;
	struct pk_backend_result r;
	h->b.ops->ensure_address(h->b.self, v, &id, &l, &r);
	assert_int_equal(r.status, PK_BACKEND_PENDING);
	assert_true(wait_queued(h, ++*queued));
	h->b.ops->ensure_address(h->b.self, v, &id, &l, &r);
	snprintf(reason, len, "%s", r.reason);
	enum pk_backend_status st = r.status;
	if (st == PK_BACKEND_OK) {
		struct pk_release_note n;
		h->b.ops->release_address(h->b.self, &id, &n, &r);
		assert_true(wait_queued(h, ++*queued));
		h->b.ops->release_address(h->b.self, &id, &n, &r);
		assert_int_equal(r.status, PK_BACKEND_OK);
	}
	return st;
}

/* The connection comes from a KeaServer and its Secret as the controller watches them: a
 * wrong password shows on the claim, and rotating the Secret fixes it without a restart; a
 * KeaServer that is not https is not used; one deleted is forgotten. */
static void connections_come_from_keaserver_and_secret(void **state)
{
	struct host *h = *state;
	size_t n = 0;
	const struct pk_backend_watch *w = h->b.ops->watches(h->b.self, &n);
	assert_int_equal(n, 2);
	assert_string_equal(w[0].resource, "keaservers");
	assert_false(w[0].namespaced);
	assert_string_equal(w[1].resource, "secrets");
	assert_true(w[1].namespaced);
	json_t *server = json_pack("{s:{s:s}, s:{s:s, s:s, s:{s:s}, s:s}}", "metadata", "name",
	                           "site-b", "spec", "url", kea.url, "caBundle", kea.ca,
	                           "credentialsSecretRef", "name", "kea-creds", "owner", "mgmt-a");
	bool requeue = false;
	json_t *wrong = secret("kea-creds", "poolkeeper", "not-the-password");
	h->b.ops->watched(h->b.self, 1, "poolkeeper/kea-creds", wrong, &requeue);
	h->b.ops->watched(h->b.self, 0, "site-b", server, &requeue);
	assert_true(requeue);
	struct pk_pool_view v;
	view(h, "site-b", "10.77.9.1-10.77.9.9", ", 'server': 'site-b', 'subnetId': 1", &v);
	unsigned queued = 0;
	char reason[64];
	assert_int_equal(take_and_give_back(h, &v, "c-1", &queued, reason, sizeof(reason)),
	                 PK_BACKEND_PERMANENT);
	assert_string_equal(reason, "KeaCredentialsRefused");
	/* Rotated: the next take uses the new password. */
	json_t *right = secret("kea-creds", "poolkeeper", kea.password);
	requeue = false;
	h->b.ops->watched(h->b.self, 1, "poolkeeper/kea-creds", right, &requeue);
	assert_true(requeue);
	assert_int_equal(take_and_give_back(h, &v, "c-1", &queued, reason, sizeof(reason)),
	                 PK_BACKEND_OK);
	/* Not https: not used (its calls say the server is not known). */
	json_object_set_new(json_object_get(server, "spec"), "url",
	                    json_string("http://127.0.0.1:1/"));
	h->b.ops->watched(h->b.self, 0, "site-b", server, &requeue);
	assert_int_equal(take_and_give_back(h, &v, "c-2", &queued, reason, sizeof(reason)),
	                 PK_BACKEND_PERMANENT);
	h->b.ops->watched(h->b.self, 0, "site-b", NULL, &requeue);
	json_decref(server);
	json_decref(wrong);
	json_decref(right);
	pk_pool_view_clear(&v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(a_take_answers_pending_then_the_lease, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        an_abandoned_lease_is_given_back_and_the_claim_asks_again, setup, teardown),
	    cmocka_unit_test_setup_teardown(kea_down_holds_no_worker_and_recovers, setup, teardown),
	    cmocka_unit_test_setup_teardown(cancel_ends_calls_and_drops_their_answers, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(a_pool_without_server_or_subnet_is_invalid, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(resync_deletes_only_this_owners_orphans, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(connections_come_from_keaserver_and_secret, setup,
	                                    teardown),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
