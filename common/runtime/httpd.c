/* httpd.c - libmicrohttpd daemons with absolute deadlines, limits that never queue, a memory
 * budget. */
#include "httpd.h"

#include <errno.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

/* How often the deadlines are checked. */
#define TICK_NS (100 * 1000 * 1000L)

enum phase {
	WAITING, /* accepted; the first request's headers are not in yet */
	READING, /* a request's headers are in; its body is not */
	BUSY,    /* a request's headers and body are in; its answer is not sent yet */
	IDLE,    /* kept alive between requests */
};

/* One open connection (libmicrohttpd's socket context). */
struct slot {
	struct slot *prev, *next;
	int fd;
	struct pk_httpd_source from;
	enum phase phase;
	double since;      /* when the phase began (READING, BUSY: the headers), monotonic s */
	double body_by;    /* READING: when the body must be in */
	uint64_t base;     /* bytes received before the current request (or headers) began */
	size_t head;       /* READING, BUSY: the bytes received by the time the headers were in */
	uint64_t declared; /* READING, BUSY: the body's Content-Length (0: unknown or none) */
	size_t body;       /* READING, BUSY: body bytes handed to the handler */
	size_t charge;     /* bytes of the memory budget it holds (see charge_of) */
	bool shut;         /* shut down by us; libmicrohttpd has yet to close it */
	bool counted;      /* counted in its source's open connections */
	unsigned long spared; /* the victim search that passed it over */
};

struct pk_httpd {
	struct pk_httpd_config cfg;
	struct MHD_Daemon *d;
	uint16_t port;
	atomic_bool started;
	pthread_mutex_t mu; /* everything below */
	pthread_cond_t wake;
	bool stopping;
	bool watchdog_running;
	pthread_t watchdog;
	struct slot list;                      /* circular, in accept order */
	struct pk_httpd_source_counts sources; /* open (not shut down) connections per source */
	unsigned open, shut;
	unsigned long search; /* victim searches so far */
	unsigned long long accepted, refused, evicted, timed_out, over_memory;
	size_t charged; /* the connections' charges at the last tick */
};

static double now_seconds(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double deadline(const struct pk_httpd *h, const struct slot *s)
{
	const struct pk_httpd_limits *l = &h->cfg.limits;
	unsigned t = s->phase == WAITING ? l->header_timeout
	             : s->phase == IDLE  ? l->idle_timeout
	                                 : l->request_timeout;
	double at = s->since + (double)t;
	return s->phase == READING && s->body_by < at ? s->body_by : at;
}

static void count_close(struct pk_httpd *h, struct slot *s);

/* Called with h->mu held. */
static void shut_slot(struct pk_httpd *h, struct slot *s)
{
	/* libmicrohttpd reads the end of the stream and closes the connection. */
	(void)shutdown(s->fd, SHUT_RDWR);
	s->shut = true;
	h->shut++;
	count_close(h, s);
}

static struct slot *slot_of(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci != NULL ? ci->socket_context : NULL;
}

/* Bytes the kernel holds for fd that libmicrohttpd has not read yet. */
static int unread(int fd)
{
	int n = 0;
	return ioctl(fd, FIONREAD, &n) == 0 ? n : 0;
}

/* Bytes received on fd since it was accepted (TLS records included); 0 when unknown. */
static uint64_t received(int fd)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);
	memset(&ti, 0, sizeof(ti));
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 ||
	    len < offsetof(struct tcp_info, tcpi_bytes_received) + sizeof(ti.tcpi_bytes_received))
		return 0;
	return ti.tcpi_bytes_received;
}

/*
 * What a connection holds of the memory budget: while its headers come in
 * (a new connection's TLS handshake included), the bytes received for them
 * so far, which libmicrohttpd buffers; once they are in, those bytes plus
 * the body as announced (a handler may keep it whole from its first
 * byte), up to connection_memory: a handler bounds larger bodies itself, as
 * the webhook's large-body allowance does. Called with h->mu held.
 */
static size_t charge_of(const struct pk_httpd *h, const struct slot *s)
{
	if (s->phase == WAITING || s->phase == IDLE) {
		uint64_t got = received(s->fd);
		return got > s->base ? (size_t)(got - s->base) : 0;
	}
	uint64_t body = s->declared > s->body ? s->declared : s->body;
	size_t cap = h->cfg.limits.connection_memory;
	return s->head + (body < cap ? (size_t)body : cap);
}

/* A new phase; a request's body coming in keeps the time of its headers. */
static void set_phase(struct pk_httpd *h, struct slot *s, enum phase p)
{
	pthread_mutex_lock(&h->mu);
	if (!(s->phase == READING && p == BUSY))
		s->since = now_seconds();
	s->phase = p;
	pthread_mutex_unlock(&h->mu);
}

/*
 * A request's headers are in: when a body is announced, it must be in by
 * body_timeout plus its Content-Length at body_rate (a body of unknown
 * length, chunked, by the request deadline alone).
 */
static void begin_request(struct pk_httpd *h, struct slot *s, struct MHD_Connection *conn)
{
	const struct pk_httpd_limits *l = &h->cfg.limits;
	const char *cl =
	    MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	const char *te =
	    MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
	uint64_t declared = 0;
	struct pk_err e;
	bool known = cl != NULL && pk_parse_uint(cl, 0, UINT64_MAX, &declared, &e) == PK_OK;
	double t = now_seconds();
	/* The header's own size: what was received may hold some of the body already. */
	const union MHD_ConnectionInfo *hi =
	    MHD_get_connection_info(conn, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
	uint64_t got = received(s->fd);
	pthread_mutex_lock(&h->mu);
	s->since = t;
	s->head = hi != NULL ? hi->header_size : got > s->base ? (size_t)(got - s->base) : 0;
	s->declared = known ? declared : 0;
	s->body = 0;
	if ((known || cl == NULL) && te == NULL && declared == 0) {
		s->phase = BUSY;
	} else {
		s->phase = READING;
		s->body_by = known ? t + (double)l->body_timeout + (double)declared / l->body_rate
		                   : t + (double)l->request_timeout;
	}
	pthread_mutex_unlock(&h->mu);
}

/* A connection of s's source opened; an unknown source is not counted. Called with h->mu held. */
static void count_open(struct pk_httpd *h, struct slot *s)
{
	s->counted = pk_httpd_source_counts_add(&h->sources, &s->from);
}

/* A counted connection shut down or closed. Called with h->mu held. */
static void count_close(struct pk_httpd *h, struct slot *s)
{
	if (!s->counted)
		return;
	s->counted = false;
	pk_httpd_source_counts_remove(&h->sources, &s->from);
}

/*
 * How readily a connection makes room, lowest first; -1: never.
 *   0  a body not in past the grace: a client that announced more than it
 *      sends (the apiserver writes headers and body at once);
 *   1  headers not in past the grace, on a new connection;
 *   2  without a request in progress: idle between requests, or new.
 * A request whose body is in, or is still within the grace, is never
 * evicted: it is the listener's to finish.
 */
static int evict_rank(const struct slot *s, double t)
{
	bool late = t - s->since > (double)PK_HTTPD_STALL_GRACE;
	switch (s->phase) {
	case READING:
		return late ? 0 : -1;
	case WAITING:
		return late ? 1 : 2;
	case IDLE:
		return 2;
	case BUSY:
		break;
	}
	return -1;
}

/*
 * Whether s goes before victim, both of rank r. Within a rank the one that
 * has been in its phase longest goes first, except among connections
 * without a request in progress (rank 2) when any source may lose one:
 * there the source holding most connections goes first, so a client that
 * opens many pushes out its own before the few of another (the
 * apiserver's kept-alive connections). Called with h->mu held.
 */
static bool goes_before(const struct pk_httpd *h, const struct slot *s, const struct slot *victim,
                        int r, bool any_source)
{
	if (r == 2 && any_source) {
		unsigned a = pk_httpd_source_counts_get(&h->sources, &s->from),
		         b = pk_httpd_source_counts_get(&h->sources, &victim->from);
		if (a != b)
			return a > b;
	}
	return s->since < victim->since;
}

/*
 * Whether a new connection from `by`, which holds `held`, may take s's
 * place at rank r. A stalled connection (rank 0, 1) goes for anyone. One
 * without a request in progress goes only for its own source or for one
 * that holds fewer: a client whose connections all have requests in
 * progress (bodies within their grace) never pushes out the kept-alive
 * connection of a source that holds fewer, such as the apiserver's.
 * Called with h->mu held.
 */
static bool may_take(const struct pk_httpd *h, const struct slot *s, int r,
                     const struct pk_httpd_source *by, unsigned held)
{
	return r < 2 || pk_httpd_source_same(&s->from, by) ||
	       pk_httpd_source_counts_get(&h->sources, &s->from) > held;
}

/*
 * The connection to shut down for a new one from `by`; with `own` set, one
 * of that source's. The lowest rank goes first (stalled bodies before idle
 * kept-alive connections, which an attacker's new connections would
 * otherwise push out), within a rank as goes_before says, and only what
 * may_take allows. Among the eight first, one whose bytes are not waiting
 * unread in the kernel goes first: a client with unread bytes is one the
 * listener has not caught up with, more likely a prompt client than a slow
 * one. Called with h->mu held; NULL when no candidate may go.
 */
static struct slot *pick_victim(struct pk_httpd *h, const struct pk_httpd_source *by, bool own)
{
	struct slot *first = NULL;
	double t = now_seconds();
	unsigned held = pk_httpd_source_counts_get(&h->sources, by);
	h->search++;
	for (int tries = 0; tries < 8; tries++) {
		struct slot *victim = NULL;
		int best = -1;
		for (struct slot *s = h->list.next; s != &h->list; s = s->next) {
			int r = s->shut || s->spared == h->search ? -1 : evict_rank(s, t);
			if (r < 0 || (own && !pk_httpd_source_same(&s->from, by)) ||
			    !may_take(h, s, r, by, held))
				continue;
			if (victim == NULL || r < best ||
			    (r == best && goes_before(h, s, victim, r, !own))) {
				victim = s;
				best = r;
			}
		}
		if (victim == NULL || unread(victim->fd) == 0)
			return victim != NULL ? victim : first;
		if (first == NULL)
			first = victim;
		victim->spared = h->search;
	}
	return first;
}

/*
 * The connection to cut when the connections hold more than the memory
 * budget: a stalled one first (evict_rank 0 or 1), the one stalled
 * longest; otherwise the one holding most whose request is not complete
 * (new, reading headers or a body), unless `stalled_only`. A request whose
 * body is in is never cut: the memory is its handler's. Called with h->mu
 * held; NULL when none may go.
 */
static struct slot *pick_over_memory(struct pk_httpd *h, bool stalled_only)
{
	struct slot *stalled = NULL, *largest = NULL;
	double t = now_seconds();
	for (struct slot *s = h->list.next; s != &h->list; s = s->next) {
		if (s->shut || s->phase == BUSY || s->charge == 0)
			continue;
		int r = evict_rank(s, t);
		if ((r == 0 || r == 1) && (stalled == NULL || s->since < stalled->since))
			stalled = s;
		if (largest == NULL || s->charge > largest->charge)
			largest = s;
	}
	return stalled != NULL || stalled_only ? stalled : largest;
}

/*
 * Counts every connection's charge and, past the budget, cuts connections
 * until it is kept. Returns how many were cut. Called with h->mu held.
 */
static unsigned keep_budget(struct pk_httpd *h)
{
	size_t total = 0;
	for (struct slot *s = h->list.next; s != &h->list; s = s->next) {
		s->charge = s->shut ? 0 : charge_of(h, s);
		total += s->charge;
	}
	unsigned cut = 0;
	while (total > h->cfg.limits.memory_budget) {
		struct slot *v = pick_over_memory(h, false);
		if (v == NULL)
			break;
		shut_slot(h, v);
		h->over_memory++;
		total -= v->charge;
		v->charge = 0;
		cut++;
	}
	h->charged = total;
	return cut;
}

/* ---- libmicrohttpd callbacks ---- */

/*
 * Before a connection is added: make room or close it at once, never
 * queue. A source that holds its share already makes room among its own
 * connections only, so it cannot push anyone else out, nor lock itself
 * out while one of its own waits idle. Two pool threads may accept from
 * one source at the same instant and both get in: the share can be passed
 * by the pool's size less one, no more.
 */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
	(void)addrlen;
	struct pk_httpd *h = cls;
	struct pk_httpd_source src = pk_httpd_source_from(addr);
	const char *why = NULL;
	pthread_mutex_lock(&h->mu);
	if (h->charged >= h->cfg.limits.memory_budget) {
		/* Only a stalled connection gives memory back for a new one. */
		struct slot *victim = pick_over_memory(h, true);
		if (victim != NULL) {
			shut_slot(h, victim);
			h->over_memory++;
			h->charged -= victim->charge < h->charged ? victim->charge : h->charged;
			victim->charge = 0;
		} else {
			why = "the connections hold their memory budget";
		}
	}
	bool at_share = pk_httpd_source_counts_get(&h->sources, &src) >= h->cfg.limits.per_source;
	if (why == NULL && (at_share || h->open - h->shut >= h->cfg.limits.max_connections)) {
		struct slot *victim = pick_victim(h, &src, at_share);
		if (victim != NULL) {
			shut_slot(h, victim);
			h->evicted++;
		} else {
			why = at_share
			          ? "every connection of its source has a request in progress"
			          : "every connection it may replace has a request in progress";
		}
	}
	if (why != NULL)
		h->refused++;
	pthread_mutex_unlock(&h->mu);
	if (why == NULL)
		return MHD_YES;
	pk_log_debug("connection refused", PK_LOG_STR("listener", h->cfg.name),
	             PK_LOG_STR("reason", why),
	             PK_LOG_UINT("maxConnections", h->cfg.limits.max_connections),
	             PK_LOG_UINT("perSource", h->cfg.limits.per_source));
	return MHD_NO;
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
	struct pk_httpd *h = cls;
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		if (h->cfg.started != NULL)
			h->cfg.started(h->cfg.ud, conn);
		const union MHD_ConnectionInfo *ci =
		    MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		struct slot *s = ci != NULL ? calloc(1, sizeof(*s)) : NULL;
		*socket_context = s;
		if (s == NULL)
			return; /* untracked: libmicrohttpd's own idle timeout still applies */
		s->fd = ci->connect_fd;
		s->from = pk_httpd_source_of(conn);
		s->phase = WAITING;
		s->since = now_seconds();
		pthread_mutex_lock(&h->mu);
		count_open(h, s);
		s->prev = h->list.prev;
		s->next = &h->list;
		h->list.prev->next = s;
		h->list.prev = s;
		h->open++;
		h->accepted++;
		pthread_mutex_unlock(&h->mu);
		return;
	}
	if (code != MHD_CONNECTION_NOTIFY_CLOSED)
		return;
	if (h->cfg.closed != NULL)
		h->cfg.closed(h->cfg.ud, conn);
	struct slot *s = *socket_context;
	if (s == NULL)
		return;
	/* Unlinked before libmicrohttpd closes the descriptor: never shut down a reused one. */
	pthread_mutex_lock(&h->mu);
	s->prev->next = s->next;
	s->next->prev = s->prev;
	h->open--;
	if (s->shut)
		h->shut--;
	count_close(h, s);
	pthread_mutex_unlock(&h->mu);
	free(s);
	*socket_context = NULL;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req)
{
	(void)version;
	struct pk_httpd *h = cls;
	struct slot *s = slot_of(conn);
	/* Only this connection's thread writes its phase, so reading it here needs no lock.
	 * libmicrohttpd calls once with the headers, then with each part of the body,
	 * then once more with none when the body is complete. */
	if (s != NULL && (s->phase == WAITING || s->phase == IDLE))
		begin_request(h, s, conn);
	else if (s != NULL && s->phase == READING && *upload_data_size == 0)
		set_phase(h, s, BUSY);
	else if (s != NULL && s->phase == READING) {
		pthread_mutex_lock(&h->mu);
		s->body += *upload_data_size;
		pthread_mutex_unlock(&h->mu);
	}
	return h->cfg.handler(h->cfg.ud, conn, url, method, upload_data, upload_data_size, req);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **req,
                         enum MHD_RequestTerminationCode how)
{
	struct pk_httpd *h = cls;
	if (h->cfg.completed != NULL)
		h->cfg.completed(h->cfg.ud, conn, req, how);
	struct slot *s = slot_of(conn);
	if (s == NULL)
		return;
	uint64_t got = received(s->fd);
	pthread_mutex_lock(&h->mu);
	s->base = got; /* the next request's bytes count from here */
	pthread_mutex_unlock(&h->mu);
	set_phase(h, s, IDLE);
}

static void mhd_log(void *cls, const char *fmt, va_list ap) PK_PRINTF(2, 0);
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	const struct pk_httpd *h = cls;
	/* Before start-up finishes these explain a failure; afterwards they are
	 * mostly clients misbehaving, which are not ours to shout about. */
	enum pk_log_level level = atomic_load(&h->started) ? PK_LOG_DEBUG : PK_LOG_WARN;
	if (!pk_log_enabled(level))
		return;
	char buf[512];
	vsnprintf(buf, sizeof(buf), fmt, ap);
	size_t n = strlen(buf);
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = '\0';
	pk_log_write(level, 0, "libmicrohttpd", PK_LOG_STR("listener", h->cfg.name),
	             PK_LOG_STR("detail", buf), PK_LOG_END);
}

/* ---- the deadline thread ---- */

static void *watchdog_main(void *arg)
{
	struct pk_httpd *h = arg;
	pthread_mutex_lock(&h->mu);
	while (!h->stopping) {
		struct timespec until;
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += TICK_NS;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		(void)pthread_cond_timedwait(&h->wake, &h->mu, &until);
		double t = now_seconds();
		unsigned cut = 0;
		for (struct slot *s = h->list.next; s != &h->list; s = s->next) {
			if (s->shut || t < deadline(h, s))
				continue;
			/* A body waiting unread in the kernel is the listener's delay, not the
			 * client's: only the request deadline cuts it. */
			if (s->phase == READING &&
			    t < s->since + (double)h->cfg.limits.request_timeout &&
			    unread(s->fd) > 0)
				continue;
			shut_slot(h, s);
			h->timed_out++;
			cut++;
		}
		unsigned over = keep_budget(h);
		if ((cut > 0 || over > 0) && pk_log_enabled(PK_LOG_DEBUG)) {
			pthread_mutex_unlock(&h->mu);
			pk_log_debug("connections closed", PK_LOG_STR("listener", h->cfg.name),
			             PK_LOG_UINT("pastDeadline", cut),
			             PK_LOG_UINT("overMemory", over));
			pthread_mutex_lock(&h->mu);
		}
	}
	pthread_mutex_unlock(&h->mu);
	return NULL;
}

/* ---- start and stop ---- */

static unsigned family_flags(const struct sockaddr_storage *ss, bool any, bool dual)
{
	if (any)
		return dual ? MHD_USE_DUAL_STACK : 0;
	return ss->ss_family == AF_INET6 ? MHD_USE_IPv6 : 0;
}

#define OPT(o, v, p) ((struct MHD_OptionItem){(o), (intptr_t)(v), (p)})

static struct MHD_Daemon *start_daemon(struct pk_httpd *h)
{
	const struct pk_httpd_config *c = &h->cfg;
	const struct pk_httpd_limits *l = &c->limits;
	struct sockaddr_storage ss;
	socklen_t sl;
	bool any;
	pk_hostport_sockaddr(&c->address, &ss, &sl, &any);

	size_t extra = 0;
	while (c->options != NULL && c->options[extra].option != MHD_OPTION_END)
		extra++;
	struct MHD_OptionItem *opts = calloc(extra + 12, sizeof(*opts));
	if (opts == NULL)
		return NULL;
	unsigned threads = c->threads > 1 ? c->threads : 1;
	/* libmicrohttpd splits its limit between the pool's threads and stops
	 * accepting (leaving connections queued) when one thread's share is
	 * used: keep it out of reach, on_accept holds the real limit. */
	unsigned long mhd_limit = ((unsigned long)l->max_connections + 16ul) * threads;
	if (mhd_limit > 1000000ul)
		mhd_limit = 1000000ul;
	unsigned idle = l->idle_timeout;
	if (l->header_timeout > idle)
		idle = l->header_timeout;
	if (l->request_timeout > idle)
		idle = l->request_timeout;
	size_t n = 0;
	opts[n++] = OPT(MHD_OPTION_EXTERNAL_LOGGER, mhd_log, h);
	opts[n++] = OPT(MHD_OPTION_CONNECTION_LIMIT, mhd_limit, NULL);
	/* A backstop only: the deadline thread closes connections first. */
	opts[n++] = OPT(MHD_OPTION_CONNECTION_TIMEOUT, idle + 1, NULL);
	opts[n++] = OPT(MHD_OPTION_CONNECTION_MEMORY_LIMIT, l->connection_memory, NULL);
	opts[n++] = OPT(MHD_OPTION_NOTIFY_COMPLETED, on_completed, h);
	opts[n++] = OPT(MHD_OPTION_NOTIFY_CONNECTION, on_connection, h);
	if (threads > 1)
		opts[n++] = OPT(MHD_OPTION_THREAD_POOL_SIZE, threads, NULL);
	if (!any)
		opts[n++] = OPT(MHD_OPTION_SOCK_ADDR, 0, &ss);
	for (size_t i = 0; i < extra; i++)
		opts[n++] = c->options[i];
	opts[n] = OPT(MHD_OPTION_END, 0, NULL);

	struct MHD_Daemon *d = NULL;
	for (int dual = 1; dual >= 0 && d == NULL; dual--) {
		unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ITC |
		                 MHD_USE_ERROR_LOG | c->mhd_flags | family_flags(&ss, any, dual);
		d = MHD_start_daemon(flags, c->address.port, on_accept, h, on_request, h,
		                     MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
		if (!any)
			break; /* a given address has one family: no dual-stack fallback */
	}
	free(opts);
	return d;
}

static void free_httpd(struct pk_httpd *h)
{
	if (h->watchdog_running) {
		pthread_mutex_lock(&h->mu);
		h->stopping = true;
		pthread_cond_signal(&h->wake);
		pthread_mutex_unlock(&h->mu);
		pthread_join(h->watchdog, NULL);
	}
	pthread_cond_destroy(&h->wake);
	pthread_mutex_destroy(&h->mu);
	pk_httpd_source_counts_free(&h->sources);
	free(h);
}

struct pk_httpd_limits pk_httpd_limits_resolve(const struct pk_httpd_limits *l)
{
	struct pk_httpd_limits r = *l;
	if (r.per_source == 0) {
		r.per_source = r.max_connections / PK_HTTPD_PER_SOURCE_SHARE;
		if (r.per_source < PK_HTTPD_PER_SOURCE_MIN)
			r.per_source = PK_HTTPD_PER_SOURCE_MIN;
	}
	if (r.per_source > r.max_connections)
		r.per_source = r.max_connections;
	if (r.body_timeout == 0)
		r.body_timeout = PK_HTTPD_BODY_TIMEOUT;
	if (r.body_rate == 0)
		r.body_rate = PK_HTTPD_BODY_RATE;
	if (r.memory_budget == 0) {
		size_t per = (size_t)r.max_connections * PK_HTTPD_MEMORY_PER_CONNECTION;
		size_t least = PK_HTTPD_MEMORY_LEAST * r.connection_memory;
		r.memory_budget = per > least ? per : least;
	}
	return r;
}

int pk_httpd_start(const struct pk_httpd_config *cfg, struct pk_httpd **out, struct pk_err *err)
{
	char at[INET6_ADDRSTRLEN + 16];
	pk_hostport_format(&cfg->address, at, sizeof(at));
	const struct pk_httpd_limits *l = &cfg->limits;
	if (cfg->handler == NULL || l->max_connections == 0 || l->header_timeout == 0 ||
	    l->request_timeout == 0 || l->idle_timeout == 0 || l->connection_memory < 4096)
		return pk_err_set(err, PK_ERR_INVALID,
		                  "%s listener: a handler, positive timeouts and connection limit, "
		                  "and at least 4096 bytes per connection are required",
		                  cfg->name);
	struct pk_httpd *h = calloc(1, sizeof(*h));
	if (h == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	h->cfg = *cfg;
	h->cfg.limits = pk_httpd_limits_resolve(&cfg->limits);
	h->list.prev = h->list.next = &h->list;
	/* Connections there can be: the limit, and one more per pool thread that accepts at the
	 * same instant (on_accept); twice that, as a power of two. */
	size_t most = (size_t)h->cfg.limits.max_connections + (cfg->threads > 1 ? cfg->threads : 1);
	int rc = pk_httpd_source_counts_init(&h->sources, most, err);
	if (rc != PK_OK) {
		free(h);
		return rc;
	}
	atomic_init(&h->started, false);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&h->wake, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&h->mu, NULL);
	h->d = start_daemon(h);
	h->cfg.options = NULL; /* copied into the daemon's options; not kept */
	if (h->d == NULL) {
		free_httpd(h);
		return pk_err_set(err, PK_ERR_INVALID, "cannot listen on %s (%s)", at, cfg->name);
	}
	if (pthread_create(&h->watchdog, NULL, watchdog_main, h) != 0) {
		MHD_stop_daemon(h->d);
		free_httpd(h);
		return pk_err_set(err, PK_ERR_NOMEM,
		                  "%s listener: cannot start its deadline thread", cfg->name);
	}
	h->watchdog_running = true;
	const union MHD_DaemonInfo *i = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
	h->port = i != NULL ? i->port : 0;
	atomic_store(&h->started, true);
	*out = h;
	return PK_OK;
}

uint16_t pk_httpd_port(const struct pk_httpd *h)
{
	return h != NULL ? h->port : 0;
}

void pk_httpd_quiesce(struct pk_httpd *h)
{
	/* Stop accepting; quiesce hands the listening socket back for us to close. */
	MHD_socket fd = MHD_quiesce_daemon(h->d);
	if (fd != MHD_INVALID_SOCKET)
		close(fd);
}

void pk_httpd_stop(struct pk_httpd *h)
{
	if (h == NULL)
		return;
	/* Every connection is closed (and unlinked) before the deadline thread stops. */
	MHD_stop_daemon(h->d);
	free_httpd(h);
}

void pk_httpd_get_stats(struct pk_httpd *h, struct pk_httpd_stats *out)
{
	pthread_mutex_lock(&h->mu);
	out->open = h->open;
	out->accepted = h->accepted;
	out->refused = h->refused;
	out->evicted = h->evicted;
	out->timed_out = h->timed_out;
	out->over_memory = h->over_memory;
	out->memory = h->charged;
	pthread_mutex_unlock(&h->mu);
}

enum MHD_Result pk_httpd_respond(struct MHD_Connection *conn, unsigned status,
                                 const char *content_type, const char *body, size_t len, bool owned,
                                 const char *allow, bool close)
{
	struct MHD_Response *r = owned
	                             ? MHD_create_response_from_buffer(len, (void *)(uintptr_t)body,
	                                                               MHD_RESPMEM_MUST_FREE)
	                             : MHD_create_response_from_buffer(len, (void *)(uintptr_t)body,
	                                                               MHD_RESPMEM_MUST_COPY);
	if (r == NULL) {
		if (owned)
			free((void *)(uintptr_t)body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
	if (allow != NULL)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
	if (close)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
	enum MHD_Result ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}
