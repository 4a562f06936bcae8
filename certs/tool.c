/* tool.c - read, decide, check with a dry run, write: one run of poolkeeper-certs. */
#include "tool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "base64.h"
#include "log.h"
#include "outdir.h"
#include "secrets.h"

#define MAX_ATTEMPTS 3

/* The webhook configurations as read, and the patch each needs (NULL: none). */
struct configs {
	json_t *obj[PK_CABUNDLE_MAX_CONFIGS];
	json_t *patch[PK_CABUNDLE_MAX_CONFIGS];
	size_t changed[PK_CABUNDLE_MAX_CONFIGS];
};

static void configs_free(struct configs *c)
{
	for (size_t i = 0; i < PK_CABUNDLE_MAX_CONFIGS; i++) {
		json_decref(c->obj[i]);
		json_decref(c->patch[i]);
	}
	memset(c, 0, sizeof(*c));
}

static int configs_read(const struct pk_tool_opts *o, struct configs *c, struct pk_err *err)
{
	for (size_t i = 0; i < o->nconfigs; i++) {
		int rc = pk_cabundle_get(o->client, &o->configs[i], &c->obj[i], err);
		if (rc != PK_OK)
			return rc;
	}
	return PK_OK;
}

/* The patches that bring every configuration to the bundle. */
static int configs_plan(const struct pk_tool_opts *o, struct configs *c,
                        const struct pk_renew_pem *bundle, struct pk_err *err)
{
	if (o->nconfigs == 0)
		return PK_OK;
	char *b64 = pk_base64_encode(bundle->pem, bundle->len);
	if (b64 == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	int rc = PK_OK;
	for (size_t i = 0; i < o->nconfigs; i++) {
		size_t total = 0;
		c->patch[i] = pk_cabundle_patch(c->obj[i], b64, &c->changed[i], &total);
		if (c->changed[i] == SIZE_MAX) {
			rc = pk_err_set(err, PK_ERR_NOMEM, "out of memory");
			break;
		}
		if (total == 0)
			pk_log_warn("webhook configuration has no webhooks",
			            PK_LOG_STR("kind", pk_cabundle_kind(&o->configs[i])),
			            PK_LOG_STR("name", o->configs[i].name));
	}
	free(b64);
	return rc;
}

static bool configs_pending(const struct pk_tool_opts *o, const struct configs *c)
{
	for (size_t i = 0; i < o->nconfigs; i++)
		if (c->patch[i] != NULL)
			return true;
	return false;
}

static int configs_apply(const struct pk_tool_opts *o, const struct configs *c, bool dry_run,
                         struct pk_tool_outcome *out, struct pk_err *err)
{
	for (size_t i = 0; i < o->nconfigs; i++) {
		if (c->patch[i] == NULL)
			continue;
		int rc = pk_cabundle_apply(o->client, &o->configs[i], c->patch[i], dry_run, err);
		if (rc != PK_OK)
			return rc;
		if (dry_run)
			continue;
		out->configs_patched++;
		out->webhooks_patched += (unsigned)c->changed[i];
		pk_log_info(
		    "caBundle patched", PK_LOG_STR("kind", pk_cabundle_kind(&o->configs[i])),
		    PK_LOG_STR("name", o->configs[i].name), PK_LOG_UINT("webhooks", c->changed[i]));
	}
	return PK_OK;
}

static void log_plan(const struct pk_renew_result *r)
{
	char t[32];
	pk_pki_format_time(r->ca_not_after, t);
	if (r->new_ca)
		pk_log_info("new CA", PK_LOG_STR("reason", r->ca_reason), PK_LOG_STR("notAfter", t),
		            PK_LOG_UINT("bundle", r->bundle_count));
	else
		pk_log_info("CA kept", PK_LOG_STR("notAfter", t),
		            PK_LOG_UINT("bundle", r->bundle_count));
	pk_pki_format_time(r->serving_not_after, t);
	if (r->new_serving)
		pk_log_info("serving certificate issued", PK_LOG_STR("reason", r->serving_reason),
		            PK_LOG_STR("notAfter", t), PK_LOG_STR("serial", r->serving_serial));
	else
		pk_log_info("serving certificate kept", PK_LOG_STR("notAfter", t),
		            PK_LOG_STR("serial", r->serving_serial));
}

/* ---- Secrets ---- */

enum { K_CA_CRT, K_TLS_CRT, K_TLS_KEY, K_COUNT };
static const char *const data_keys[K_COUNT] = {"ca.crt", "tls.crt", "tls.key"};

/* One Secret as read: the object and its three values decoded. */
struct secret {
	const char *name;
	json_t *obj;
	char *v[K_COUNT];
	size_t len[K_COUNT];
	char where[K_COUNT][320];
};

static void secret_free(struct secret *s)
{
	json_decref(s->obj);
	for (int k = 0; k < K_COUNT; k++)
		free(s->v[k]);
	s->obj = NULL;
	memset(s->v, 0, sizeof(s->v));
}

static int secret_read(const struct pk_tool_opts *o, struct secret *s, struct pk_err *err)
{
	int rc = pk_secrets_get(o->client, o->namespace, s->name, &s->obj, err);
	for (int k = 0; rc == PK_OK && k < K_COUNT; k++) {
		snprintf(s->where[k], sizeof(s->where[k]), PK_SECRET_KIND " %s/%s key %s",
		         o->namespace, s->name, data_keys[k]);
		rc = pk_secrets_value(s->obj, data_keys[k], s->where[k], &s->v[k], &s->len[k], err);
	}
	return rc;
}

/* The Secret holds each of the values (other keys do not matter). */
static bool secret_holds(const struct secret *s, const struct pk_renew_pem *want[K_COUNT])
{
	if (s->obj == NULL)
		return false;
	for (int k = 0; k < K_COUNT; k++)
		if (!pk_renew_same(want[k], s->v[k], s->len[k]))
			return false;
	return true;
}

static int secret_write(const struct pk_tool_opts *o, const struct secret *s,
                        const struct pk_renew_pem *want[K_COUNT], bool dry_run,
                        struct pk_tool_outcome *out, struct pk_err *err)
{
	struct pk_secret_kv kv[K_COUNT];
	for (int k = 0; k < K_COUNT; k++)
		kv[k] = (struct pk_secret_kv){data_keys[k], want[k]->pem, want[k]->len};
	json_t *obj = pk_secrets_build(s->obj, o->namespace, s->name, kv, K_COUNT);
	if (obj == NULL)
		return pk_err_set(err, PK_ERR_NOMEM, "out of memory");
	int rc =
	    pk_secrets_write(o->client, o->namespace, s->name, obj, s->obj == NULL, dry_run, err);
	json_decref(obj);
	if (rc == PK_OK && !dry_run) {
		out->secrets_written++;
		char name[320];
		snprintf(name, sizeof(name), "%s/%s", o->namespace, s->name);
		pk_log_info(s->obj == NULL ? PK_SECRET_KIND " created" : PK_SECRET_KIND " updated",
		            PK_LOG_STR("secret", name));
	}
	return rc;
}

static int run_secrets_once(const struct pk_tool_opts *o, time_t now, struct pk_tool_outcome *out,
                            struct pk_err *err)
{
	char ca_name[PK_SECRET_NAME_MAX + 4];
	if (o->ca_secret == NULL)
		snprintf(ca_name, sizeof(ca_name), "%s-ca", o->secret);
	struct secret ca = {.name = o->ca_secret != NULL ? o->ca_secret : ca_name};
	struct secret tls = {.name = o->secret};
	struct configs cfg;
	struct pk_renew_result r;
	memset(&cfg, 0, sizeof(cfg));
	memset(&r, 0, sizeof(r));
	int rc;
	if ((rc = secret_read(o, &ca, err)) != PK_OK || (rc = secret_read(o, &tls, err)) != PK_OK ||
	    (rc = configs_read(o, &cfg, err)) != PK_OK)
		goto out;

	/* The CA Secret's ca.crt is the bundle; its tls.crt stands in when ca.crt is absent. */
	int bk = ca.v[K_CA_CRT] != NULL ? K_CA_CRT : K_TLS_CRT;
	struct pk_renew_have have = {
	    .bundle = {ca.v[bk], ca.len[bk], ca.where[bk]},
	    .ca_key = {ca.v[K_TLS_KEY], ca.len[K_TLS_KEY], ca.where[K_TLS_KEY]},
	    .tls_crt = {tls.v[K_TLS_CRT], tls.len[K_TLS_CRT], tls.where[K_TLS_CRT]},
	    .tls_key = {tls.v[K_TLS_KEY], tls.len[K_TLS_KEY], tls.where[K_TLS_KEY]},
	};
	if ((rc = pk_renew_plan(&o->policy, &have, now, &r, err)) != PK_OK)
		goto out;
	out->new_ca = r.new_ca;
	out->new_serving = r.new_serving;
	log_plan(&r);

	const struct pk_renew_pem *ca_want[K_COUNT] = {&r.bundle, &r.ca_crt, &r.ca_key};
	const struct pk_renew_pem *tls_want[K_COUNT] = {&r.bundle, &r.tls_crt, &r.tls_key};
	bool ca_write = !secret_holds(&ca, ca_want);
	bool tls_write = !secret_holds(&tls, tls_want);
	if ((rc = configs_plan(o, &cfg, &r.bundle, err)) != PK_OK)
		goto out;
	if (!ca_write && !tls_write && !configs_pending(o, &cfg)) {
		pk_log_info("up to date: nothing written");
		goto out;
	}
	/* Every write is checked (RBAC, admission, validation) before the first one is made. */
	for (int dry = 1; dry >= 0; dry--) {
		if ((ca_write && (rc = secret_write(o, &ca, ca_want, dry, out, err)) != PK_OK) ||
		    (tls_write && (rc = secret_write(o, &tls, tls_want, dry, out, err)) != PK_OK) ||
		    (rc = configs_apply(o, &cfg, dry, out, err)) != PK_OK)
			goto out;
	}
out:
	pk_renew_result_free(&r);
	configs_free(&cfg);
	secret_free(&ca);
	secret_free(&tls);
	return rc;
}

/* ---- files ---- */

enum { F_CA_CRT, F_CA_KEY, F_TLS_KEY, F_TLS_CRT, F_COUNT };
/* The write order: the bundle before the CA key (a new CA's key is never stored without its
 * certificate), the key before the certificate. */
static const char *const file_names[F_COUNT] = {"ca.crt", "ca.key", "tls.key", "tls.crt"};
static const mode_t file_modes[F_COUNT] = {PK_OUTDIR_CERT_MODE, PK_OUTDIR_KEY_MODE,
                                           PK_OUTDIR_KEY_MODE, PK_OUTDIR_CERT_MODE};

static int run_files_once(const struct pk_tool_opts *o, time_t now, struct pk_tool_outcome *out,
                          struct pk_err *err)
{
	char *v[F_COUNT] = {0};
	size_t len[F_COUNT] = {0};
	mode_t mode[F_COUNT] = {0};
	char where[F_COUNT][4200];
	struct configs cfg;
	struct pk_renew_result r;
	memset(&cfg, 0, sizeof(cfg));
	memset(&r, 0, sizeof(r));
	int rc = pk_outdir_prepare(o->out_dir, err);
	for (int f = 0; rc == PK_OK && f < F_COUNT; f++) {
		snprintf(where[f], sizeof(where[f]), "%s/%s", o->out_dir, file_names[f]);
		rc = pk_outdir_read(o->out_dir, file_names[f], &v[f], &len[f], &mode[f], err);
	}
	if (rc != PK_OK || (rc = configs_read(o, &cfg, err)) != PK_OK)
		goto out;
	struct pk_renew_have have = {
	    .bundle = {v[F_CA_CRT], len[F_CA_CRT], where[F_CA_CRT]},
	    .ca_key = {v[F_CA_KEY], len[F_CA_KEY], where[F_CA_KEY]},
	    .tls_crt = {v[F_TLS_CRT], len[F_TLS_CRT], where[F_TLS_CRT]},
	    .tls_key = {v[F_TLS_KEY], len[F_TLS_KEY], where[F_TLS_KEY]},
	};
	if ((rc = pk_renew_plan(&o->policy, &have, now, &r, err)) != PK_OK)
		goto out;
	out->new_ca = r.new_ca;
	out->new_serving = r.new_serving;
	log_plan(&r);
	const struct pk_renew_pem *want[F_COUNT] = {&r.bundle, &r.ca_key, &r.tls_key, &r.tls_crt};
	if ((rc = configs_plan(o, &cfg, &r.bundle, err)) != PK_OK ||
	    (rc = configs_apply(o, &cfg, true, out, err)) != PK_OK)
		goto out;
	for (int f = 0; f < F_COUNT; f++) {
		if (!pk_renew_same(want[f], v[f], len[f])) {
			rc = pk_outdir_write(o->out_dir, file_names[f], want[f]->pem, want[f]->len,
			                     file_modes[f], err);
			if (rc != PK_OK)
				goto out;
			out->files_written++;
			pk_log_info(v[f] == NULL ? "file created" : "file replaced",
			            PK_LOG_STR("file", where[f]));
		} else if (file_modes[f] == PK_OUTDIR_KEY_MODE && (mode[f] & 077) != 0) {
			/* A private key readable by others is exposed: narrow it. */
			if ((rc = pk_outdir_chmod(o->out_dir, file_names[f], file_modes[f], err)) !=
			    PK_OK)
				goto out;
			out->files_written++;
			pk_log_warn("private key was readable by others; mode set to 0600",
			            PK_LOG_STR("file", where[f]));
		}
	}
	if ((rc = configs_apply(o, &cfg, false, out, err)) != PK_OK)
		goto out;
	if (out->files_written == 0 && out->configs_patched == 0)
		pk_log_info("up to date: nothing written");
out:
	pk_renew_result_free(&r);
	configs_free(&cfg);
	for (int f = 0; f < F_COUNT; f++)
		free(v[f]);
	return rc;
}

int pk_tool_run(const struct pk_tool_opts *o, struct pk_tool_outcome *out, struct pk_err *err)
{
	memset(out, 0, sizeof(*out));
	if ((o->secret == NULL) == (o->out_dir == NULL))
		return pk_err_set(err, PK_ERR_INVALID, "exactly one of a Secret and a folder");
	if ((o->secret != NULL || o->nconfigs > 0) && o->client == NULL)
		return pk_err_set(err, PK_ERR_INVALID, "no API access");
	if (o->nconfigs > PK_CABUNDLE_MAX_CONFIGS)
		return pk_err_set(err, PK_ERR_INVALID, "more than %d webhook configurations",
		                  PK_CABUNDLE_MAX_CONFIGS);
	time_t now = o->now != 0 ? o->now : time(NULL);
	int rc;
	for (;;) {
		struct pk_tool_outcome once = {0};
		rc = o->secret != NULL ? run_secrets_once(o, now, &once, err)
		                       : run_files_once(o, now, &once, err);
		once.attempts = out->attempts + 1;
		*out = once;
		if (rc != PK_ERR_IN_USE)
			break;
		if (out->attempts == MAX_ATTEMPTS) {
			char last[PK_ERR_MSG_MAX];
			memcpy(last, err->msg, sizeof(last));
			return pk_err_set(err, PK_ERR_INVALID,
			                  "%.400s; still changing after %d attempts", last,
			                  MAX_ATTEMPTS);
		}
		pk_log_info("changed by another writer meanwhile; reading again",
		            PK_LOG_STR("detail", err->msg));
	}
	return rc;
}
