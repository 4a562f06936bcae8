/*
 * test_kube_fakeserver.h - a scripted HTTP/1.1 server on 127.0.0.1 for the
 * client's error-handling tests: each connection gets one answer chosen by
 * the test's responder, then is closed. Requests are recorded.
 *
 * fs_start_tls serves HTTPS instead, with a certificate the test makes with
 * fs_pki_new (a CA of its own and a server certificate for 127.0.0.1), so
 * that the client's trust decisions can be tested; handshakes that fail are
 * counted in tls_failures, and a request is recorded only after a handshake
 * succeeded.
 *
 * Used only by unit tests (test_kube_client.c, test_kube_watch.c); it binds
 * the loopback address and an ephemeral port and nothing else.
 */
#ifndef TEST_KUBE_FAKESERVER_H
#define TEST_KUBE_FAKESERVER_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "kube_client.h"

#define FS_MAX_REQ 4096

struct fs_request {
	char method[16];
	char path[2048];
	char headers[4096];
	char *body;
};

/* What to send back; the responder fills it in. */
struct fs_response {
	int status;          /* 0: close the connection without an answer */
	const char *headers; /* extra header lines, each ending "\r\n" */
	const char *body;    /* NULL: empty */
	size_t body_len;     /* 0: strlen(body) */
	int delay_ms;        /* before answering */
	bool chunked;        /* send the body chunked, in pieces of chunk_size */
	size_t chunk_size;
	int chunk_delay_ms; /* between pieces */
	char *owned;        /* freed after sending */
};

typedef void fs_responder(void *ud, int index, const struct fs_request *req,
                          struct fs_response *out);

struct fake_server {
	int fd;
	int port;
	pthread_t thread;
	volatile int stop;
	fs_responder *respond;
	void *ud;
	SSL_CTX *tls; /* NULL: plain HTTP */
	pthread_mutex_t mu;
	int nreq;
	int tls_failures;           /* handshakes that failed (under mu) */
	struct fs_request reqs[64]; /* the first 64 are kept */
};

/* One accepted connection: a socket, and its TLS session when serving HTTPS. */
struct fs_conn {
	int fd;
	SSL *ssl;
};

__attribute__((unused)) static void fs_sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static ssize_t fs_recv(const struct fs_conn *c, char *p, size_t n)
{
	if (c->ssl == NULL)
		return recv(c->fd, p, n, 0);
	int r = SSL_read(c->ssl, p, n > INT32_MAX ? INT32_MAX : (int)n);
	return r > 0 ? r : -1;
}

static int fs_write_all(const struct fs_conn *c, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w;
		if (c->ssl == NULL)
			w = send(c->fd, p, n, MSG_NOSIGNAL);
		else
			w = SSL_write(c->ssl, p, n > INT32_MAX ? INT32_MAX : (int)n);
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static void fs_serve(struct fake_server *s, const struct fs_conn *cfd)
{
	char buf[65536];
	size_t len = 0;
	char *end = NULL;
	while (len < sizeof(buf) - 1) {
		ssize_t r = fs_recv(cfd, buf + len, sizeof(buf) - 1 - len);
		if (r <= 0)
			return;
		len += (size_t)r;
		buf[len] = '\0';
		if ((end = strstr(buf, "\r\n\r\n")) != NULL)
			break;
	}
	if (end == NULL)
		return;
	struct fs_request req;
	memset(&req, 0, sizeof(req));
	char *sp1 = strchr(buf, ' ');
	char *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
	if (sp1 == NULL || sp2 == NULL)
		return;
	snprintf(req.method, sizeof(req.method), "%.*s", (int)(sp1 - buf), buf);
	snprintf(req.path, sizeof(req.path), "%.*s", (int)(sp2 - sp1 - 1), sp1 + 1);
	snprintf(req.headers, sizeof(req.headers), "%.*s", (int)(end - buf), buf);
	size_t hdr = (size_t)(end - buf) + 4;
	size_t clen = 0;
	char *cl = strcasestr(req.headers, "\r\ncontent-length:");
	if (cl != NULL)
		clen = (size_t)strtoul(cl + 17, NULL, 10);
	req.body = calloc(1, clen + 1);
	size_t have = len - hdr;
	if (have > clen)
		have = clen;
	memcpy(req.body, buf + hdr, have);
	while (have < clen) {
		ssize_t r = fs_recv(cfd, req.body + have, clen - have);
		if (r <= 0)
			break;
		have += (size_t)r;
	}

	pthread_mutex_lock(&s->mu);
	int index = s->nreq++;
	if (index < 64)
		s->reqs[index] = req;
	pthread_mutex_unlock(&s->mu);

	struct fs_response resp;
	memset(&resp, 0, sizeof(resp));
	resp.status = 200;
	s->respond(s->ud, index, &req, &resp);
	if (index >= 64)
		free(req.body);
	if (resp.delay_ms)
		fs_sleep_ms(resp.delay_ms);
	if (resp.status == 0) {
		free(resp.owned);
		return;
	}
	size_t blen = resp.body ? (resp.body_len ? resp.body_len : strlen(resp.body)) : 0;
	char head[2048];
	int n =
	    snprintf(head, sizeof(head),
	             "HTTP/1.1 %d X\r\nContent-Type: application/json\r\nConnection: close\r\n%s",
	             resp.status, resp.headers ? resp.headers : "");
	if (resp.chunked)
		n += snprintf(head + n, sizeof(head) - (size_t)n,
		              "Transfer-Encoding: chunked\r\n\r\n");
	else
		n += snprintf(head + n, sizeof(head) - (size_t)n, "Content-Length: %zu\r\n\r\n",
		              blen);
	if (fs_write_all(cfd, head, (size_t)n) == 0) {
		if (!resp.chunked) {
			fs_write_all(cfd, resp.body ? resp.body : "", blen);
		} else {
			size_t cs = resp.chunk_size ? resp.chunk_size : 64;
			for (size_t o = 0; o < blen && !s->stop; o += cs) {
				size_t k = blen - o < cs ? blen - o : cs;
				char ch[32];
				int hn = snprintf(ch, sizeof(ch), "%zx\r\n", k);
				if (fs_write_all(cfd, ch, (size_t)hn) ||
				    fs_write_all(cfd, resp.body + o, k) ||
				    fs_write_all(cfd, "\r\n", 2))
					break;
				if (resp.chunk_delay_ms)
					fs_sleep_ms(resp.chunk_delay_ms);
			}
			fs_write_all(cfd, "0\r\n\r\n", 5);
		}
	}
	free(resp.owned);
}

static void *fs_main(void *arg)
{
	struct fake_server *s = arg;
	while (!s->stop) {
		int cfd = accept(s->fd, NULL, NULL);
		if (cfd < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		struct fs_conn conn = {cfd, NULL};
		if (!s->stop && s->tls != NULL) {
			/* a client that stalls the handshake must not stall the test */
			struct timeval tv = {5, 0};
			setsockopt(cfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
			setsockopt(cfd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
			conn.ssl = SSL_new(s->tls);
			if (conn.ssl == NULL || SSL_set_fd(conn.ssl, cfd) != 1 ||
			    SSL_accept(conn.ssl) != 1) {
				pthread_mutex_lock(&s->mu);
				s->tls_failures++;
				pthread_mutex_unlock(&s->mu);
				SSL_free(conn.ssl);
				conn.ssl = NULL;
				ERR_clear_error();
				shutdown(cfd, SHUT_RDWR);
				close(cfd);
				continue;
			}
		}
		if (!s->stop)
			fs_serve(s, &conn);
		if (conn.ssl != NULL) {
			SSL_shutdown(conn.ssl);
			SSL_free(conn.ssl);
			ERR_clear_error();
		}
		shutdown(cfd, SHUT_RDWR);
		close(cfd);
	}
	return NULL;
}

static int fs_start_with(struct fake_server *s, fs_responder *respond, void *ud, SSL_CTX *tls)
{
	memset(s, 0, sizeof(*s));
	s->respond = respond;
	s->ud = ud;
	if (tls != NULL && SSL_CTX_up_ref(tls) == 1)
		s->tls = tls;
	else if (tls != NULL)
		return -1;
	pthread_mutex_init(&s->mu, NULL);
	s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s->fd < 0)
		return -1;
	int one = 1;
	setsockopt(s->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t al = sizeof(a);
	if (bind(s->fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(s->fd, 64) != 0 ||
	    getsockname(s->fd, (struct sockaddr *)&a, &al) != 0)
		return -1;
	s->port = ntohs(a.sin_port);
	return pthread_create(&s->thread, NULL, fs_main, s);
}

__attribute__((unused)) static int fs_start(struct fake_server *s, fs_responder *respond, void *ud)
{
	return fs_start_with(s, respond, ud, NULL);
}

/* HTTPS with tls (the server keeps its own reference). */
__attribute__((unused)) static int fs_start_tls(struct fake_server *s, fs_responder *respond,
                                                void *ud, SSL_CTX *tls)
{
	return fs_start_with(s, respond, ud, tls);
}

static void fs_stop(struct fake_server *s)
{
	s->stop = 1;
	/* wake accept() with a connection of our own */
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)s->port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	connect(fd, (struct sockaddr *)&a, sizeof(a));
	close(fd);
	pthread_join(s->thread, NULL);
	close(s->fd);
	SSL_CTX_free(s->tls);
	s->tls = NULL;
	for (int i = 0; i < s->nreq && i < 64; i++)
		free(s->reqs[i].body);
	pthread_mutex_destroy(&s->mu);
}

/* A loopback port nothing listens on (bound, then closed). */
__attribute__((unused)) static int fs_closed_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t al = sizeof(a);
	bind(fd, (struct sockaddr *)&a, sizeof(a));
	getsockname(fd, (struct sockaddr *)&a, &al);
	close(fd);
	return ntohs(a.sin_port);
}

/* Forgets the requests recorded so far (between tests). */
__attribute__((unused)) static void fs_reset(struct fake_server *s)
{
	for (int i = 0; i < s->nreq && i < 64; i++)
		free(s->reqs[i].body);
	memset(s->reqs, 0, sizeof(s->reqs));
	s->nreq = 0;
	s->tls_failures = 0;
}

/*
 * A kubeconfig that points at the server, and a client on it with `opts`
 * (NULL: no rate limit). 0 on success.
 */
__attribute__((unused)) static int fs_client_new(const struct fake_server *s,
                                                 const struct pk_kube_client_opts *opts,
                                                 struct pk_kube_config **cfg,
                                                 struct pk_kube_client **cli)
{
	char text[512];
	snprintf(text, sizeof(text),
	         "clusters:\n- name: c\n  cluster: {server: \"http://127.0.0.1:%d\"}\n"
	         "contexts:\n- name: x\n  context: {cluster: c}\ncurrent-context: x\n",
	         s->port);
	struct pk_err err;
	if (pk_kube_config_parse(text, strlen(text), "t", NULL, NULL, cfg, &err) != PK_OK)
		return -1;
	struct pk_kube_client_opts unlimited = {.qps = -1};
	return pk_kube_client_new(*cfg, opts ? opts : &unlimited, cli, &err) == PK_OK ? 0 : -1;
}

/* ---- certificates for fs_start_tls ---- */

/* A CA of the test's own and a server certificate it signed for 127.0.0.1. */
struct fs_pki {
	EVP_PKEY *ca_key;
	X509 *ca;
	EVP_PKEY *key;
	X509 *cert;
	char *ca_pem; /* the CA certificate, PEM, NUL-terminated */
};

static X509 *fs_cert_new(const char *cn, EVP_PKEY *key, X509 *issuer, EVP_PKEY *issuer_key,
                         long serial, bool ca)
{
	X509 *x = X509_new();
	X509_NAME *name = X509_NAME_new();
	bool ok = x != NULL && name != NULL && X509_set_version(x, 2) == 1 &&
	          ASN1_INTEGER_set(X509_get_serialNumber(x), serial) == 1 &&
	          X509_gmtime_adj(X509_getm_notBefore(x), -3600) != NULL &&
	          X509_gmtime_adj(X509_getm_notAfter(x), 86400) != NULL &&
	          X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn,
	                                     -1, -1, 0) == 1 &&
	          X509_set_subject_name(x, name) == 1 &&
	          X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : name) == 1 &&
	          X509_set_pubkey(x, key) == 1;
	X509_NAME_free(name);
	X509V3_CTX v3;
	X509V3_set_ctx_nodb(&v3);
	X509V3_set_ctx(&v3, issuer ? issuer : x, x, NULL, NULL, 0);
	const char *ext[][2] = {
	    {"basicConstraints", ca ? "critical,CA:TRUE" : "critical,CA:FALSE"},
	    {"keyUsage", ca ? "critical,keyCertSign,cRLSign" : "critical,digitalSignature"},
	    {"subjectKeyIdentifier", "hash"},
	    {ca ? NULL : "extendedKeyUsage", "serverAuth"},
	    {ca ? NULL : "subjectAltName", "IP:127.0.0.1,DNS:localhost"},
	};
	for (size_t i = 0; ok && i < sizeof(ext) / sizeof(ext[0]); i++) {
		if (ext[i][0] == NULL)
			continue;
		X509_EXTENSION *e = X509V3_EXT_conf(NULL, &v3, ext[i][0], ext[i][1]);
		ok = e != NULL && X509_add_ext(x, e, -1) == 1;
		X509_EXTENSION_free(e);
	}
	if (!ok || X509_sign(x, issuer_key ? issuer_key : key, EVP_sha256()) <= 0) {
		X509_free(x);
		return NULL;
	}
	return x;
}

__attribute__((unused)) static void fs_pki_free(struct fs_pki *p)
{
	EVP_PKEY_free(p->ca_key);
	X509_free(p->ca);
	EVP_PKEY_free(p->key);
	X509_free(p->cert);
	free(p->ca_pem);
	memset(p, 0, sizeof(*p));
}

/* PEM of x as a new NUL-terminated string, or NULL. */
static char *fs_pem_of(X509 *x)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *out = NULL, *data;
	if (b != NULL && PEM_write_bio_X509(b, x) == 1) {
		long n = BIO_get_mem_data(b, &data);
		if (n > 0 && (out = malloc((size_t)n + 1)) != NULL) {
			memcpy(out, data, (size_t)n);
			out[n] = '\0';
		}
	}
	BIO_free(b);
	return out;
}

/* A new CA named ca_cn and a server certificate from it. 0 on success. */
__attribute__((unused)) static int fs_pki_new(struct fs_pki *p, const char *ca_cn)
{
	memset(p, 0, sizeof(*p));
	p->ca_key = EVP_EC_gen("P-256");
	p->key = EVP_EC_gen("P-256");
	if (p->ca_key != NULL && p->key != NULL)
		p->ca = fs_cert_new(ca_cn, p->ca_key, NULL, NULL, 1, true);
	if (p->ca != NULL)
		p->cert = fs_cert_new("127.0.0.1", p->key, p->ca, p->ca_key, 2, false);
	if (p->cert != NULL)
		p->ca_pem = fs_pem_of(p->ca);
	if (p->ca_pem == NULL) {
		fs_pki_free(p);
		ERR_clear_error();
		return -1;
	}
	return 0;
}

/* A server context presenting p's certificate (caller frees). */
__attribute__((unused)) static SSL_CTX *fs_pki_server_ctx(const struct fs_pki *p)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	if (ctx == NULL || SSL_CTX_use_certificate(ctx, p->cert) != 1 ||
	    SSL_CTX_use_PrivateKey(ctx, p->key) != 1) {
		SSL_CTX_free(ctx);
		ERR_clear_error();
		return NULL;
	}
	return ctx;
}

#endif
