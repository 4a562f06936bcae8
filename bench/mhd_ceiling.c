/*
 * mhd_ceiling.c - the ceiling for poolkeeper-webhook's benchmark: the same
 * stack (libmicrohttpd over GnuTLS, a thread pool of the same size, TLS 1.2+,
 * keep-alive) that parses the AdmissionReview with jansson and answers
 * allowed: true with its uid, and nothing else. Whatever poolkeeper-webhook
 * does beyond this is what the benchmark's ratio measures.
 *
 *   pk_mhd_ceiling CERT KEY PORT THREADS   (PORT 0: any free port, printed)
 */
#include <jansson.h>
#include <microhttpd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_BODY (3u << 20)

struct req {
	char *buf;
	size_t len;
};

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL)
		return NULL;
	char *b = calloc(1, 1 << 20);
	if (b != NULL && fread(b, 1, (1 << 20) - 1, f) == 0) {
		free(b);
		b = NULL;
	}
	fclose(f);
	return b;
}

static enum MHD_Result answer(struct MHD_Connection *c, unsigned code, char *text)
{
	struct MHD_Response *r =
	    MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(r, "Content-Type", "application/json");
	enum MHD_Result ret = MHD_queue_response(c, code, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *data,
                               size_t *size, void **ctx)
{
	(void)cls;
	(void)url;
	(void)method;
	(void)version;
	struct req *q = *ctx;
	if (q == NULL) {
		*ctx = calloc(1, sizeof(struct req));
		return *ctx ? MHD_YES : MHD_NO;
	}
	if (*size > 0) {
		if (q->len + *size > MAX_BODY)
			return MHD_NO;
		char *nb = realloc(q->buf, q->len + *size);
		if (nb == NULL)
			return MHD_NO;
		memcpy(nb + q->len, data, *size);
		q->buf = nb;
		q->len += *size;
		*size = 0;
		return MHD_YES;
	}
	json_t *rv = json_loadb(q->buf ? q->buf : "", q->len, 0, NULL);
	const char *uid = json_string_value(json_object_get(json_object_get(rv, "request"), "uid"));
	json_t *out =
	    json_pack("{s:s, s:s, s:{s:s, s:b}}", "apiVersion", "admission.k8s.io/v1", "kind",
	              "AdmissionReview", "response", "uid", uid ? uid : "", "allowed", 1);
	char *text = json_dumps(out, JSON_COMPACT);
	json_decref(out);
	json_decref(rv);
	return answer(c, uid ? 200 : 400, text);
}

static void done(void *cls, struct MHD_Connection *c, void **ctx, enum MHD_RequestTerminationCode t)
{
	(void)cls;
	(void)c;
	(void)t;
	struct req *q = *ctx;
	if (q != NULL) {
		free(q->buf);
		free(q);
	}
	*ctx = NULL;
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: pk_mhd_ceiling CERT KEY PORT THREADS\n");
		return 2;
	}
	char *cert = slurp(argv[1]), *key = slurp(argv[2]);
	char *end;
	long port = strtol(argv[3], &end, 10);
	long threads = strtol(argv[4], &end, 10);
	if (cert == NULL || key == NULL || port < 0 || port > 65535 || threads < 1 ||
	    threads > 64) {
		fprintf(stderr, "pk_mhd_ceiling: bad arguments\n");
		return 2;
	}
	struct MHD_Daemon *d = MHD_start_daemon(
	    MHD_USE_TLS | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO, (uint16_t)port, NULL,
	    NULL, handler, NULL, MHD_OPTION_HTTPS_MEM_CERT, cert, MHD_OPTION_HTTPS_MEM_KEY, key,
	    MHD_OPTION_HTTPS_PRIORITIES, "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2",
	    MHD_OPTION_THREAD_POOL_SIZE, (unsigned)threads, MHD_OPTION_CONNECTION_TIMEOUT,
	    (unsigned)120, MHD_OPTION_NOTIFY_COMPLETED, done, NULL, MHD_OPTION_END);
	if (d == NULL) {
		fprintf(stderr, "pk_mhd_ceiling: cannot start on port %ld\n", port);
		return 1;
	}
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	printf("listening port=%u\n", info ? (unsigned)info->port : 0u);
	fflush(stdout);
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGTERM);
	sigaddset(&s, SIGINT);
	sigprocmask(SIG_BLOCK, &s, NULL);
	int sig;
	sigwait(&s, &sig);
	MHD_stop_daemon(d);
	free(cert);
	free(key);
	return 0;
}
