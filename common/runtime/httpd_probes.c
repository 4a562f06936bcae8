/*
 * httpd_probes.c - the health (/healthz, /readyz) and metrics (/metrics)
 * listeners both daemons serve: pk_httpd listeners with the limits
 * PK_HTTPD_PROBE_* of httpd.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flags.h"
#include "httpd.h"
#include "log.h"

/* ---- health and metrics ---- */

/* A path a probes listener answers, and its answer. */
struct route {
	const char *path;
	enum MHD_Result (*answer)(struct pk_httpd_probes *p, struct MHD_Connection *conn);
};

/* One probes listener: its routes, its probes. */
struct probe {
	struct pk_httpd_probes *p;
	const struct route *routes;
};

struct pk_httpd_probes {
	struct pk_httpd_probes_config cfg;
	struct pk_httpd *health, *metrics;
	struct probe health_probe, metrics_probe; /* the listeners' ud */
};

#define TEXT "text/plain; charset=utf-8"

static enum MHD_Result plain(struct MHD_Connection *conn, unsigned status, const char *text,
                             const char *allow)
{
	return pk_httpd_respond(conn, status, TEXT, text, strlen(text), false, allow, false);
}

static enum MHD_Result healthz(struct pk_httpd_probes *p, struct MHD_Connection *conn)
{
	(void)p;
	return plain(conn, MHD_HTTP_OK, "ok\n", NULL);
}

static enum MHD_Result readyz(struct pk_httpd_probes *p, struct MHD_Connection *conn)
{
	char why[120] = "not ready";
	if (p->cfg.ready != NULL && !p->cfg.ready(p->cfg.ud, why, sizeof(why) - 1)) {
		why[sizeof(why) - 2] = '\0';
		size_t n = strlen(why);
		why[n] = '\n';
		return pk_httpd_respond(conn, MHD_HTTP_SERVICE_UNAVAILABLE, TEXT, why, n + 1, false,
		                        NULL, false);
	}
	return plain(conn, MHD_HTTP_OK, "ok\n", NULL);
}

static enum MHD_Result metrics(struct pk_httpd_probes *p, struct MHD_Connection *conn)
{
	size_t len = 0;
	char *text = p->cfg.metrics != NULL ? p->cfg.metrics(p->cfg.ud, &len) : NULL;
	if (text == NULL)
		return plain(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "metrics unavailable\n", NULL);
	return pk_httpd_respond(conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", text,
	                        len, true, NULL, false);
}

static const struct route health_routes[] = {
    {"/healthz", healthz}, {"/readyz", readyz}, {NULL, NULL}};
static const struct route metrics_routes[] = {{"/metrics", metrics}, {NULL, NULL}};

/* Its route's answer to GET and HEAD (libmicrohttpd leaves the body out of a HEAD answer). */
static enum MHD_Result probe_request(void *ud, struct MHD_Connection *conn, const char *url,
                                     const char *method, const char *upload_data,
                                     size_t *upload_data_size, void **req)
{
	(void)upload_data;
	(void)upload_data_size;
	(void)req;
	const struct probe *pr = ud;
	const struct route *r = pr->routes;
	while (r->path != NULL && strcmp(url, r->path) != 0)
		r++;
	if (r->path == NULL)
		return plain(conn, MHD_HTTP_NOT_FOUND, "not found\n", NULL);
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return plain(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n",
		             "GET, HEAD");
	return r->answer(pr->p, conn);
}

static int start_probe(struct probe *pr, const char *name, const struct pk_hostport *at,
                       struct pk_httpd **out, struct pk_err *err)
{
	struct pk_httpd_config c = {
	    .name = name,
	    .address = *at,
	    .threads = 1,
	    .limits = {.max_connections = PK_HTTPD_PROBE_MAX_CONNECTIONS,
	               .header_timeout = PK_HTTPD_PROBE_TIMEOUT,
	               .request_timeout = PK_HTTPD_PROBE_TIMEOUT,
	               .idle_timeout = PK_HTTPD_PROBE_IDLE_TIMEOUT,
	               .connection_memory = 16384},
	    .handler = probe_request,
	    .ud = pr,
	};
	return pk_httpd_start(&c, out, err);
}

int pk_httpd_probes_start(const struct pk_httpd_probes_config *cfg, struct pk_httpd_probes **out,
                          struct pk_err *err)
{
	struct pk_httpd_probes *p = calloc(1, sizeof(*p));
	if (p == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	p->cfg = *cfg;
	p->health_probe = (struct probe){p, health_routes};
	p->metrics_probe = (struct probe){p, metrics_routes};
	int rc = start_probe(&p->health_probe, "health", &cfg->health_address, &p->health, err);
	if (rc == PK_OK && !cfg->metrics_off)
		rc = start_probe(&p->metrics_probe, "metrics", &cfg->metrics_address, &p->metrics,
		                 err);
	if (rc != PK_OK) {
		pk_httpd_probes_stop(p);
		return rc;
	}
	*out = p;
	return PK_OK;
}

uint16_t pk_httpd_probes_port(const struct pk_httpd_probes *p, bool metrics)
{
	return pk_httpd_port(metrics ? p->metrics : p->health);
}

void pk_httpd_probes_stop(struct pk_httpd_probes *p)
{
	if (p == NULL)
		return;
	pk_httpd_stop(p->health);
	pk_httpd_stop(p->metrics);
	free(p);
}

int pk_httpd_probes_flags(const struct pk_flag *table, const struct pk_flag_value *vals,
                          size_t health, size_t metrics, struct pk_httpd_probes_config *cfg,
                          struct pk_err *err)
{
	int rc = pk_flags_get_hostport(table, vals, health, &cfg->health_address, NULL, err);
	if (rc != PK_OK)
		return rc;
	return pk_flags_get_hostport(table, vals, metrics, &cfg->metrics_address, &cfg->metrics_off,
	                             err);
}

void pk_httpd_log_listening(const char *name, uint16_t port, const struct pk_hostport *at)
{
	pk_log_info("listening", PK_LOG_STR("listener", name), PK_LOG_UINT("port", port),
	            PK_LOG_STR("address", *at->host ? at->host : "all"));
}

void pk_httpd_log_probes(const struct pk_httpd_probes_config *cfg, uint16_t health_port,
                         uint16_t metrics_port)
{
	pk_httpd_log_listening("health", health_port, &cfg->health_address);
	if (cfg->metrics_off)
		pk_log_info("metrics off", PK_LOG_STR("flag", "--metrics-bind-address=0"));
	else
		pk_httpd_log_listening("metrics", metrics_port, &cfg->metrics_address);
}
