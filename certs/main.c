/*
 * main.c - poolkeeper-certs: flags, API access, one run (tool.c), exit
 * status: 0 done (or nothing to do), 1 failed (one error line naming the
 * object and the cause), 2 a usage error (naming the flag and the value).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cabundle.h"
#include "daemon.h"
#include "flags.h"
#include "kube_client.h"
#include "kube_config.h"
#include "log.h"
#include "parse.h"
#include "pki.h"
#include "san.h"
#include "secrets.h"
#include "tool.h"

#ifndef PK_VERSION
#error "PK_VERSION (the CMake project version) must be defined"
#endif

enum {
	F_KUBECONFIG,
	F_NAMESPACE,
	F_SERVICE,
	F_DOMAIN,
	F_DNS,
	F_IP,
	F_SECRET,
	F_CA_SECRET,
	F_OUT_DIR,
	F_WEBHOOK_CFG,
	F_VALIDITY,
	F_CA_VALIDITY,
	F_RENEW_BEFORE,
	F_CA_RENEW_BEFORE,
	F_RENEW,
	F_RENEW_CA,
	F_KEY_TYPE,
	F_COUNT,
};

static const struct pk_flag flags[F_COUNT] = {
    [F_KUBECONFIG] = PK_FLAG_DEF_KUBECONFIG,
    [F_NAMESPACE] = {"namespace", 0, PK_FLAG_STRING, NULL, "NS",
                     "namespace of the Service and of the Secrets"},
    [F_SERVICE] = {"service", 0, PK_FLAG_STRING, NULL, "NAME",
                   "the webhook's Service: the certificate names svc, svc.ns, svc.ns.svc and "
                   "svc.ns.svc.<cluster-domain>"},
    [F_DOMAIN] = {"cluster-domain", 0, PK_FLAG_STRING, "cluster.local", "DOMAIN",
                  "the cluster's DNS domain; empty leaves out the fourth Service name"},
    [F_DNS] = {"dns", 0, PK_FLAG_STRING, NULL, "NAME",
               "another DNS name for the certificate (repeatable)"},
    [F_IP] = {"ip", 0, PK_FLAG_STRING, NULL, "ADDR",
              "an IPv4 or IPv6 address for the certificate (repeatable)"},
    [F_SECRET] = {"secret", 0, PK_FLAG_STRING, NULL, "NAME",
                  "keep the serving pair in this kubernetes.io/tls Secret (tls.crt, tls.key, "
                  "ca.crt)"},
    [F_CA_SECRET] = {"ca-secret", 0, PK_FLAG_STRING, NULL, "NAME",
                     "keep the CA key pair and bundle in this Secret; default <secret>-ca"},
    [F_OUT_DIR] = {"out-dir", 0, PK_FLAG_STRING, NULL, "DIR",
                   "keep ca.crt, ca.key, tls.crt and tls.key in this folder instead (keys "
                   "0600)"},
    [F_WEBHOOK_CFG] = {"webhook-configuration", 0, PK_FLAG_STRING, NULL, "KIND/NAME",
                       "validating/NAME or mutating/NAME: set caBundle in each of its "
                       "webhooks (repeatable)"},
    [F_VALIDITY] = {"validity-days", 0, PK_FLAG_UINT, "365", "1..36500",
                    "lifetime of a serving certificate"},
    [F_CA_VALIDITY] = {"ca-validity-days", 0, PK_FLAG_UINT, "3650", "1..36500", "lifetime of a CA"},
    [F_RENEW_BEFORE] = {"renew-before-days", 0, PK_FLAG_UINT, "30", "0..36500",
                        "re-issue the serving certificate this close to its expiry"},
    [F_CA_RENEW_BEFORE] = {"ca-renew-before-days", 0, PK_FLAG_UINT, "90", "0..36500",
                           "make a new CA this close to the CA's expiry; the old one stays "
                           "in the bundle until it expires"},
    [F_RENEW] = {"renew", 0, PK_FLAG_BOOL, NULL, NULL,
                 "re-issue the serving pair now (same CA); also replaces stored material "
                 "that cannot be used"},
    [F_RENEW_CA] = {"renew-ca", 0, PK_FLAG_BOOL, NULL, NULL,
                    "make a new CA now, and a serving pair under it"},
    [F_KEY_TYPE] = {"key-type", 0, PK_FLAG_CHOICE, "ecdsa-p256", PK_PKI_KEY_TYPES,
                    "algorithm of new private keys"},
};

#define PROGRAM "poolkeeper-certs"
#define USAGE                                                                                      \
	PROGRAM " [--kubeconfig F] --namespace NS --service NAME [--dns NAME]... [--ip ADDR]...\n" \
	        "         (--secret NAME | --out-dir DIR) [--webhook-configuration KIND/NAME]... " \
	        "[flags]"
#define SUMMARY                                                                                \
	"Creates or keeps the CA and serving certificate of poolkeeper's webhook, in Secrets " \
	"or files, and sets caBundle in its webhook configurations. A valid certificate is "   \
	"kept: running it again changes nothing."

struct options {
	const char *kubeconfig;
	const char *namespace;
	const char *service;
	const char *domain;
	const char *secret;
	const char *ca_secret;
	const char *out_dir;
	struct pk_san names;
	struct pk_webhook_config configs[PK_CABUNDLE_MAX_CONFIGS];
	size_t nconfigs;
	struct pk_renew_policy policy;
};

/*
 * Every value of the repeatable flag `idx` into out[0..max], refused past
 * `max` naming the flag; *n is how many.
 */
static int collect(const struct pk_daemon_args *a, size_t idx, const char **out, size_t max,
                   size_t *n, struct pk_err *err)
{
	int rc = pk_flags_collect(a->table, a->n, a->argc, a->argv, idx, out, max, n, err);
	if (rc == PK_OK && *n > max)
		return pk_err_set(err, PK_ERR_INVALID, "--%s is given more than %zu times",
		                  flags[idx].name, max);
	return rc;
}

static int usage(struct pk_err *err, const char *flag, const char *value, const char *msg)
{
	char q[300];
	pk_text_quote(value, strlen(value), q, sizeof(q));
	if (strncmp(msg, "must", 4) == 0)
		return pk_err_set(err, PK_ERR_INVALID, "--%s %s", flag, msg);
	return pk_err_set(err, PK_ERR_INVALID, "--%s \"%s\": %s", flag, q, msg);
}

static int parse_names(const struct pk_daemon_args *a, struct options *o, struct pk_err *err)
{
	struct pk_err e = {{0}};
	const char *vals[PK_SAN_MAX + 1];
	size_t n;
	int rc;
	if (o->service != NULL) {
		if (pk_san_check_service(o->service, &e) != PK_OK)
			return usage(err, "service", o->service, e.msg);
		if (pk_parse_dns_name(o->domain, true, &e) != PK_OK && *o->domain != '\0')
			return usage(err, "cluster-domain", o->domain, e.msg);
		if (pk_san_add_service(&o->names, o->service, o->namespace, o->domain, &e) != PK_OK)
			return usage(err, "service", o->service, e.msg);
	}
	if ((rc = collect(a, F_DNS, vals, PK_SAN_MAX, &n, err)) != PK_OK)
		return rc;
	for (size_t i = 0; i < n; i++)
		if (pk_san_add_dns(&o->names, vals[i], &e) != PK_OK)
			return usage(err, "dns", vals[i], e.msg);
	if ((rc = collect(a, F_IP, vals, PK_SAN_MAX, &n, err)) != PK_OK)
		return rc;
	for (size_t i = 0; i < n; i++)
		if (pk_san_add_ip(&o->names, vals[i], &e) != PK_OK)
			return usage(err, "ip", vals[i], e.msg);
	if (o->names.ndns + o->names.nip == 0)
		return pk_err_set(
		    err, PK_ERR_INVALID,
		    "the certificate needs a name: give --service (with --namespace), "
		    "--dns or --ip");
	if ((rc = collect(a, F_WEBHOOK_CFG, vals, PK_CABUNDLE_MAX_CONFIGS, &n, err)) != PK_OK)
		return rc;
	for (size_t i = 0; i < n; i++) {
		if ((rc = pk_cabundle_parse(vals[i], &o->configs[i], err)) != PK_OK)
			return rc;
		for (size_t j = 0; j < i; j++)
			if (o->configs[j].mutating == o->configs[i].mutating &&
			    strcmp(o->configs[j].name, o->configs[i].name) == 0)
				return usage(err, "webhook-configuration", vals[i], "given twice");
	}
	o->nconfigs = n;
	return PK_OK;
}

/* Where the material is kept: --secret (with --namespace) or --out-dir, and the names. */
static int check_store(const struct options *o, struct pk_err *err)
{
	struct pk_err e = {{0}};
	if ((o->secret != NULL) == (o->out_dir != NULL))
		return pk_err_set(err, PK_ERR_INVALID,
		                  o->secret != NULL ? "--secret and --out-dir exclude each other"
		                                    : "one of --secret NAME and --out-dir DIR is "
		                                      "required");
	if (o->out_dir != NULL && *o->out_dir == '\0')
		return pk_err_set(err, PK_ERR_INVALID, "--out-dir must not be empty");
	if ((o->secret != NULL || o->service != NULL) && o->namespace == NULL)
		return pk_err_set(err, PK_ERR_INVALID, "--namespace is required with %s",
		                  o->secret != NULL ? "--secret" : "--service");
	if (o->namespace != NULL && pk_parse_dns_name(o->namespace, false, &e) != PK_OK)
		return usage(err, "namespace", o->namespace, e.msg);
	if (o->secret == NULL)
		return o->ca_secret == NULL
		           ? PK_OK
		           : pk_err_set(err, PK_ERR_INVALID, "--ca-secret needs --secret");
	if (pk_parse_dns_name(o->secret, true, &e) != PK_OK)
		return usage(err, "secret", o->secret, e.msg);
	if (o->ca_secret == NULL && strlen(o->secret) + 3 > PK_SECRET_NAME_MAX)
		return usage(err, "secret", o->secret,
		             "too long to name the CA Secret <secret>-ca; give --ca-secret");
	if (o->ca_secret != NULL && pk_parse_dns_name(o->ca_secret, true, &e) != PK_OK)
		return usage(err, "ca-secret", o->ca_secret, e.msg);
	if (o->ca_secret != NULL && strcmp(o->ca_secret, o->secret) == 0)
		return usage(err, "ca-secret", o->ca_secret,
		             "must differ from --secret: the webhook must never see the CA key");
	return PK_OK;
}

/* A CA that is always due would be replaced, and added to the bundle, on every run. */
static int check_policy(const struct pk_renew_policy *p, struct pk_err *err)
{
	if (p->ca_renew_before_days >= p->ca_validity_days)
		return pk_err_set(
		    err, PK_ERR_INVALID,
		    "--ca-renew-before-days (%u) must be less than --ca-validity-days "
		    "(%u), or every run makes a new CA",
		    p->ca_renew_before_days, p->ca_validity_days);
	if (p->renew_before_days >= p->ca_validity_days)
		return pk_err_set(err, PK_ERR_INVALID,
		                  "--renew-before-days (%u) must be less than --ca-validity-days "
		                  "(%u), or every run makes a new CA",
		                  p->renew_before_days, p->ca_validity_days);
	return PK_OK;
}

/* The flags into the options (pk_daemon_options_fn): what the table cannot check. */
static int read_options(void *opts, const struct pk_daemon_args *args, struct pk_err *err)
{
	const struct pk_flag_value *vals = args->vals;
	struct options *o = opts;
	o->kubeconfig = pk_flags_get_string(flags, vals, F_KUBECONFIG);
	o->namespace = pk_flags_get_string(flags, vals, F_NAMESPACE);
	o->service = pk_flags_get_string(flags, vals, F_SERVICE);
	o->domain = pk_flags_get_string(flags, vals, F_DOMAIN);
	o->secret = pk_flags_get_string(flags, vals, F_SECRET);
	o->ca_secret = pk_flags_get_string(flags, vals, F_CA_SECRET);
	o->out_dir = pk_flags_get_string(flags, vals, F_OUT_DIR);
	struct pk_renew_policy *p = &o->policy;
	p->validity_days = (unsigned)pk_flags_get_num(vals, F_VALIDITY);
	p->ca_validity_days = (unsigned)pk_flags_get_num(vals, F_CA_VALIDITY);
	p->renew_before_days = (unsigned)pk_flags_get_num(vals, F_RENEW_BEFORE);
	p->ca_renew_before_days = (unsigned)pk_flags_get_num(vals, F_CA_RENEW_BEFORE);
	p->renew = pk_flags_get_bool(vals, F_RENEW);
	p->renew_ca = pk_flags_get_bool(vals, F_RENEW_CA);
	if (pk_pki_parse_key_type(pk_flags_get_string(flags, vals, F_KEY_TYPE), &p->key_type) !=
	    PK_OK)
		return pk_err_set(err, PK_ERR_INVALID, "--key-type must be one of %s",
		                  PK_PKI_KEY_TYPES);
	int rc;
	if ((rc = check_store(o, err)) != PK_OK || (rc = check_policy(p, err)) != PK_OK ||
	    (rc = parse_names(args, o, err)) != PK_OK)
		return rc;
	p->names = &o->names;
	return PK_OK;
}

int main(int argc, char **argv)
{
	struct options o;
	struct pk_err err = {{0}};
	memset(&o, 0, sizeof(o));
	pk_san_init(&o.names);
	const struct pk_daemon d = {PROGRAM, PK_VERSION,   USAGE, SUMMARY, flags,
	                            F_COUNT, read_options, &o,    false};
	int status = pk_daemon_start(&d, argc, argv);
	if (status != PK_DAEMON_RUN) {
		pk_san_free(&o.names);
		return status;
	}
	status = 1;
	struct pk_kube_log klog;
	pk_log_kube_sink(&klog);
	struct pk_kube_config *cfg = NULL;
	struct pk_kube_client *client = NULL;
	if (o.secret != NULL || o.nconfigs > 0) {
		struct pk_kube_config_opts co = {
		    .path = o.kubeconfig, .log = &klog, .allow_exec = true};
		if (pk_kube_config_load(&co, &cfg, &err) != PK_OK ||
		    pk_kube_client_new(cfg, NULL, &client, &err) != PK_OK) {
			pk_log_error("cannot set up API access", PK_LOG_STR("error", err.msg));
			goto out;
		}
		pk_log_debug("API access", PK_LOG_STR("server", pk_kube_config_server(cfg)),
		             PK_LOG_STR("source", pk_kube_config_source(cfg)));
	}
	char names[1024];
	pk_san_format(&o.names, names, sizeof(names));
	pk_log_info(PROGRAM " " PK_VERSION,
	            PK_LOG_STR("store", o.secret != NULL ? "secret" : "files"),
	            PK_LOG_STR("names", names));

	struct pk_tool_opts to = {
	    .namespace = o.namespace,
	    .secret = o.secret,
	    .ca_secret = o.ca_secret,
	    .out_dir = o.out_dir,
	    .configs = o.configs,
	    .nconfigs = o.nconfigs,
	    .policy = o.policy,
	    .client = client,
	};
	struct pk_tool_outcome outcome;
	if (pk_tool_run(&to, &outcome, &err) != PK_OK) {
		pk_log_error("failed", PK_LOG_STR("error", err.msg));
		goto out;
	}
	pk_log_info("done", PK_LOG_BOOL("newCA", outcome.new_ca),
	            PK_LOG_BOOL("newServingCertificate", outcome.new_serving),
	            PK_LOG_UINT("secretsWritten", outcome.secrets_written),
	            PK_LOG_UINT("filesWritten", outcome.files_written),
	            PK_LOG_UINT("configurationsPatched", outcome.configs_patched));
	status = 0;
out:
	pk_kube_client_free(client);
	pk_kube_config_free(cfg);
	pk_san_free(&o.names);
	return status;
}
