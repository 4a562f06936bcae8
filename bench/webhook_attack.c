/*
 * webhook_attack.c - poolkeeper-webhook under the four attacks an
 * unauthenticated client can make, on 127.0.0.1, with default flags:
 *
 *   slow-headers  1,000 TLS connections sending a header byte every 2 s
 *   parse-memory  8 clients posting 3 MB bodies of a million empty objects
 *   excess-conns  2,000 idle TCP connections (twice --max-connections)
 *   health-port   256 connections to the health port sending a byte every 2 s
 *
 * and, in the same run, a baseline with no attack. In every phase a valid
 * AdmissionReview is sent every 50 ms over a new TLS connection (as an
 * apiserver opening a connection does) and /healthz is probed every 100 ms;
 * the program prints their latency (p50, p99, max), failures, and the
 * webhook's peak and final RSS. Attackers reconnect whenever the webhook
 * closes them; all but slow-headers run at nice 19. Prints figures; never
 * fails on them.
 *
 *   pk_webhook_attack WEBHOOK_BIN CERT KEY CA [SECONDS]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <gnutls/gnutls.h>

static const char REVIEW[] =
    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
    "\"uid\":\"bench-attack-1\",\"operation\":\"CREATE\",\"resource\":{\"group\":"
    "\"ipam.poolkeeper.io\",\"version\":\"v1alpha1\",\"resource\":\"ippools\"},"
    "\"namespace\":\"team-a\",\"name\":\"x\",\"object\":{\"apiVersion\":"
    "\"ipam.poolkeeper.io/v1alpha1\",\"kind\":\"IPPool\",\"metadata\":{\"name\":\"x\","
    "\"namespace\":\"team-a\"},\"spec\":{\"addresses\":[\"10.0.0.10-10.0.0.20\"],"
    "\"prefix\":24,\"gateway\":\"10.0.0.1\"}}}}";

static uint16_t wport, hport;
static const char *ca_file;
static pid_t webhook;
static atomic_bool attacking;
static atomic_ulong attacker_reconnects, attacker_answers;
static atomic_uint attacker_open, attacker_open_min; /* connections open after each pass */

static void note_open(unsigned n)
{
	atomic_store(&attacker_open, n);
	if (n < atomic_load(&attacker_open_min))
		atomic_store(&attacker_open_min, n);
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void sleep_s(double s)
{
	struct timespec t = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
	nanosleep(&t, NULL);
}

static uint16_t free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET};
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	socklen_t len = sizeof(sa);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) != 0) {
		perror("bind");
		exit(1);
	}
	close(fd);
	return ntohs(sa.sin_port);
}

/* A TCP connection to 127.0.0.1:port, or -1. */
static int dial(uint16_t port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* True when the webhook closed fd, or answered (it closes after its error answers). */
static bool peer_closed(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	return poll(&p, 1, 0) == 1;
}

static long rss_kib(void)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)webhook);
	FILE *f = fopen(path, "r");
	long kib = -1;
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, "VmRSS:", 6) == 0)
			kib = strtol(line + 6, NULL, 10);
	fclose(f);
	return kib;
}

/* ---- the attackers ---- */

/*
 * Attackers run at the lowest priority: on a real cluster their CPU is not
 * the webhook's, and here they share its cores (Linux sets nice per thread).
 */
static void lower_priority(void)
{
	(void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);
}

struct tls_conn {
	int fd;
	gnutls_session_t s;
	size_t sent;
	double next;
};

static gnutls_certificate_credentials_t attacker_cred;

static bool tls_open(struct tls_conn *c)
{
	c->fd = dial(wport);
	if (c->fd < 0)
		return false;
	gnutls_init(&c->s, GNUTLS_CLIENT);
	gnutls_set_default_priority(c->s);
	gnutls_credentials_set(c->s, GNUTLS_CRD_CERTIFICATE, attacker_cred);
	gnutls_transport_set_int(c->s, c->fd);
	gnutls_handshake_set_timeout(c->s, 3000);
	int rc;
	do
		rc = gnutls_handshake(c->s);
	while (rc < 0 && !gnutls_error_is_fatal(rc));
	if (rc < 0) {
		gnutls_deinit(c->s);
		close(c->fd);
		c->fd = -1;
		return false;
	}
	c->sent = 0;
	return true;
}

static void tls_drop(struct tls_conn *c)
{
	if (c->fd < 0)
		return;
	gnutls_deinit(c->s);
	close(c->fd);
	c->fd = -1;
}

#define SLOW_HEAD "POST /validate HTTP/1.1\r\nHost: x\r\nX-Pad: "

static void *slow_headers(void *arg)
{
	(void)arg;
	/* Not lowered: at nice 19 on a busy machine it cannot keep 1,000 handshakes up. */
	enum { N = 1000 };
	struct tls_conn *c = calloc(N, sizeof(*c));
	for (int i = 0; i < N; i++)
		c[i].fd = -1;
	while (atomic_load(&attacking)) {
		double t = now_s();
		for (int i = 0; i < N && atomic_load(&attacking); i++) {
			if (c[i].fd >= 0 && peer_closed(c[i].fd))
				tls_drop(&c[i]);
			if (c[i].fd < 0) {
				if (tls_open(&c[i]))
					atomic_fetch_add(&attacker_reconnects, 1);
				c[i].next = t + 2.0;
				continue;
			}
			if (t < c[i].next)
				continue;
			char b = c[i].sent < strlen(SLOW_HEAD) ? SLOW_HEAD[c[i].sent] : 'a';
			if (gnutls_record_send(c[i].s, &b, 1) != 1)
				tls_drop(&c[i]);
			c[i].sent++;
			c[i].next = t + 2.0;
		}
		unsigned open = 0;
		for (int i = 0; i < N; i++)
			open += c[i].fd >= 0;
		note_open(open);
		sleep_s(0.01);
	}
	for (int i = 0; i < N; i++)
		tls_drop(&c[i]);
	free(c);
	return NULL;
}

static size_t discard(char *p, size_t sz, size_t n, void *ud)
{
	(void)p;
	(void)ud;
	return sz * n;
}

static char *many_objects;
static size_t many_len;

static void *parse_memory(void *arg)
{
	(void)arg;
	lower_priority();
	char url[128];
	snprintf(url, sizeof(url), "https://127.0.0.1:%u/validate", wport);
	CURL *e = curl_easy_init();
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_CAINFO, ca_file);
	curl_easy_setopt(e, CURLOPT_POSTFIELDS, many_objects);
	curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)many_len);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(e, CURLOPT_TIMEOUT, 30L);
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
	h = curl_slist_append(h, "Expect:");
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
	while (atomic_load(&attacking)) {
		if (curl_easy_perform(e) == CURLE_OK)
			atomic_fetch_add(&attacker_answers, 1);
	}
	curl_slist_free_all(h);
	curl_easy_cleanup(e);
	return NULL;
}

/* Plain connections to `port`, reopened when closed; a byte every `every` s (0: idle). */
static void hold(uint16_t port, int n, double every, const char *text)
{
	int *fd = malloc(sizeof(int) * (size_t)n);
	size_t *sent = calloc((size_t)n, sizeof(size_t));
	for (int i = 0; i < n; i++)
		fd[i] = dial(port);
	double next = now_s() + (every > 0 ? every : 1.0);
	while (atomic_load(&attacking)) {
		sleep_s(0.05);
		double t = now_s();
		if (t < next)
			continue;
		next = t + (every > 0 ? every : 1.0);
		for (int i = 0; i < n; i++) {
			if (fd[i] >= 0 && peer_closed(fd[i])) {
				close(fd[i]);
				fd[i] = -1;
			}
			if (fd[i] < 0) {
				fd[i] = dial(port);
				sent[i] = 0;
				if (fd[i] >= 0)
					atomic_fetch_add(&attacker_reconnects, 1);
				continue;
			}
			if (every > 0) {
				char b = sent[i] < strlen(text) ? text[sent[i]] : 'a';
				if (send(fd[i], &b, 1, MSG_NOSIGNAL) != 1) {
					close(fd[i]);
					fd[i] = -1;
				}
				sent[i]++;
			}
		}
		unsigned open = 0;
		for (int i = 0; i < n; i++)
			open += fd[i] >= 0;
		note_open(open);
	}
	for (int i = 0; i < n; i++)
		if (fd[i] >= 0)
			close(fd[i]);
	free(fd);
	free(sent);
}

static void *excess_connections(void *arg)
{
	(void)arg;
	lower_priority();
	hold(wport, 2000, 0, "");
	return NULL;
}

static void *health_port(void *arg)
{
	(void)arg;
	lower_priority();
	hold(hport, 256, 2.0, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: ");
	return NULL;
}

/* ---- the measuring side ---- */

struct series {
	double *v;
	size_t n, cap;
	unsigned failed;
};

static void add(struct series *s, double v)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 256;
		s->v = realloc(s->v, s->cap * sizeof(double));
	}
	s->v[s->n++] = v;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double pct(struct series *s, double p)
{
	if (s->n == 0)
		return 0;
	qsort(s->v, s->n, sizeof(double), cmp);
	size_t i = (size_t)(p * (double)(s->n - 1) + 0.5);
	return s->v[i] * 1000;
}

/* One request on a new connection; its latency, or a negative number on failure. */
static double once(CURL *e, const char *url, bool post, long want)
{
	curl_easy_setopt(e, CURLOPT_URL, url);
	if (post) {
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, REVIEW);
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)strlen(REVIEW));
	} else {
		curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
	}
	double t0 = now_s();
	CURLcode rc = curl_easy_perform(e);
	double took = now_s() - t0;
	long status = 0;
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
	return rc == CURLE_OK && status == want ? took : -1;
}

struct measure {
	double seconds;
	struct series review, health;
	long rss_max, rss_end;
};

static void *rss_sampler(void *arg)
{
	struct measure *m = arg;
	while (atomic_load(&attacking)) {
		long r = rss_kib();
		if (r > m->rss_max)
			m->rss_max = r;
		sleep_s(0.05);
	}
	return NULL;
}

static void measure(struct measure *m)
{
	char vurl[128], hurl[128];
	snprintf(vurl, sizeof(vurl), "https://127.0.0.1:%u/validate", wport);
	snprintf(hurl, sizeof(hurl), "http://127.0.0.1:%u/healthz", hport);
	CURL *v = curl_easy_init(), *h = curl_easy_init();
	struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/json");
	curl_easy_setopt(v, CURLOPT_HTTPHEADER, hdr);
	CURL *both[] = {v, h};
	for (int i = 0; i < 2; i++) {
		curl_easy_setopt(both[i], CURLOPT_CAINFO, ca_file);
		curl_easy_setopt(both[i], CURLOPT_FRESH_CONNECT, 1L);
		curl_easy_setopt(both[i], CURLOPT_FORBID_REUSE, 1L);
		curl_easy_setopt(both[i], CURLOPT_TIMEOUT, 15L);
		curl_easy_setopt(both[i], CURLOPT_WRITEFUNCTION, discard);
	}
	double end = now_s() + m->seconds, next_h = 0;
	while (now_s() < end) {
		double t = once(v, vurl, true, 200);
		if (t < 0)
			m->review.failed++;
		else
			add(&m->review, t);
		if (now_s() >= next_h) {
			t = once(h, hurl, false, 200);
			if (t < 0)
				m->health.failed++;
			else
				add(&m->health, t);
			next_h = now_s() + 0.1;
		}
		sleep_s(0.05);
	}
	curl_slist_free_all(hdr);
	curl_easy_cleanup(v);
	curl_easy_cleanup(h);
}

static void phase(const char *name, void *(*attack)(void *), int threads, double seconds)
{
	struct measure m = {.seconds = seconds};
	pthread_t t[8], rs;
	atomic_store(&attacking, true);
	atomic_store(&attacker_reconnects, 0);
	atomic_store(&attacker_answers, 0);
	atomic_store(&attacker_open, 0);
	atomic_store(&attacker_open_min, 1000000);
	pthread_create(&rs, NULL, rss_sampler, &m);
	for (int i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, attack, NULL);
	if (attack != NULL)
		sleep_s(2.0); /* let the attack build up */
	unsigned open_min = 1000000;
	atomic_store(&attacker_open_min, 1000000); /* from the end of the build-up */
	measure(&m);
	open_min = atomic_load(&attacker_open_min);
	atomic_store(&attacking, false);
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	pthread_join(rs, NULL);
	sleep_s(1.0);
	m.rss_end = rss_kib();
	char open[32] = "-";
	if (attack != NULL && attack != parse_memory && open_min < 1000000)
		snprintf(open, sizeof(open), "%u", open_min);
	printf("| %-13s | %5zu | %3u | %7.1f | %7.1f | %7.1f | %7.1f | %3u | %6.1f | %6.1f | %6lu "
	       "| %5s |\n",
	       name, m.review.n, m.review.failed, pct(&m.review, 0.5), pct(&m.review, 0.99),
	       pct(&m.review, 1.0), pct(&m.health, 1.0), m.health.failed,
	       (double)m.rss_max / 1024.0, (double)m.rss_end / 1024.0,
	       attack == parse_memory ? atomic_load(&attacker_answers)
	                              : atomic_load(&attacker_reconnects),
	       open);
	fflush(stdout);
	free(m.review.v);
	free(m.health.v);
}

static bool wait_ready(void)
{
	char url[128];
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/readyz", hport);
	CURL *e = curl_easy_init();
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
	for (int i = 0; i < 100; i++) {
		if (once(e, url, false, 200) >= 0) {
			curl_easy_cleanup(e);
			return true;
		}
		sleep_s(0.1);
	}
	curl_easy_cleanup(e);
	return false;
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: %s WEBHOOK_BIN CERT KEY CA [SECONDS]\n", argv[0]);
		return 2;
	}
	double secs = argc > 5 ? strtod(argv[5], NULL) : 10;
	ca_file = argv[4];
	signal(SIGPIPE, SIG_IGN);
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 8192) {
		rl.rlim_cur = rl.rlim_max < 8192 ? rl.rlim_max : 8192;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	gnutls_certificate_allocate_credentials(&attacker_cred);

	/* [{},{},...{}]: 3,000,001 bytes, a million empty objects. */
	many_len = 3000001;
	many_objects = malloc(many_len + 1);
	many_objects[0] = '[';
	for (size_t i = 0; i < 1000000; i++)
		memcpy(many_objects + 1 + 3 * i, "{},", 3);
	many_objects[many_len - 1] = ']';
	many_objects[many_len] = '\0';

	wport = free_port();
	hport = free_port();
	char wa[64], ha[64];
	snprintf(wa, sizeof(wa), "--webhook-bind-address=127.0.0.1:%u", wport);
	snprintf(ha, sizeof(ha), "--health-probe-bind-address=127.0.0.1:%u", hport);
	webhook = fork();
	if (webhook == 0) {
		int null = open("/dev/null", O_WRONLY);
		dup2(null, 2);
		char *args[] = {argv[1], "--tls-cert-file",
		                argv[2], "--tls-private-key-file",
		                argv[3], wa,
		                ha,      "--metrics-bind-address=0",
		                NULL};
		execv(argv[1], args);
		_exit(127);
	}
	if (!wait_ready()) {
		fprintf(stderr, "poolkeeper-webhook did not become ready\n");
		kill(webhook, SIGKILL);
		return 1;
	}
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	printf("poolkeeper-webhook, default flags (--max-connections 1000, %ld worker threads), "
	       "%.0f s per phase; a valid review every 50 ms and /healthz every 100 ms, each on "
	       "a new connection\n\n",
	       cores, secs);
	printf("| phase         | reviews | failed | p50 ms | p99 ms | max ms | healthz max ms | "
	       "healthz failed | RSS peak MiB | RSS after MiB | attacker reconnects (parse: "
	       "answers) | attacker conns open (min) |\n");
	printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
	phase("baseline", NULL, 0, secs);
	phase("slow-headers", slow_headers, 1, secs);
	phase("parse-memory", parse_memory, 8, secs);
	phase("excess-conns", excess_connections, 1, secs);
	phase("health-port", health_port, 1, secs);
	phase("baseline", NULL, 0, secs);

	kill(webhook, SIGTERM);
	int st;
	waitpid(webhook, &st, 0);
	gnutls_certificate_free_credentials(attacker_cred);
	free(many_objects);
	curl_global_cleanup();
	return 0;
}
