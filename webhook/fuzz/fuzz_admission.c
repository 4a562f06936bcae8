/*
 * fuzz_admission.c - libFuzzer target for the AdmissionReview handler, both
 * endpoints, with and without API lookups. Every answer must be a response
 * the server can send: an AdmissionReview with allowed set (HTTP 200) or an
 * error object (HTTP 400/413).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission.h"

/* Allowed for a kind of even length, refused for odd, an error past 20 bytes: every branch. */
static int may_block_owner_deletion(void *ctx, const json_t *user_info, const char *ns,
                                    const char *api_version, const char *kind, const char *name,
                                    bool *allowed, char *rule, size_t rule_len, struct pk_err *err)
{
	(void)ctx;
	(void)user_info;
	(void)ns;
	(void)api_version;
	(void)name;
	if (strlen(kind) > 20)
		return pk_err_set(err, PK_ERR_INVALID, "review failed for %s", kind);
	*allowed = strlen(kind) % 2 == 0;
	snprintf(rule, rule_len, "update on %s/finalizers", kind);
	return PK_OK;
}

static void count_repair(void *ctx, const char *owner_kind, const char *what)
{
	(void)ctx;
	if (owner_kind == NULL || what == NULL)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int list_pools(void *ctx, const char *kind, const char *ns, json_t **items,
                      struct pk_err *err)
{
	(void)ns;
	(void)err;
	if (kind == NULL)
		abort();
	/* the request's own object, as if it were already stored: overlap with itself */
	*items = json_pack("[O]", (json_t *)ctx);
	return PK_OK;
}

static int list_pool_addresses(void *ctx, const char *kind, const char *ns, const char *name,
                               json_t **items, struct pk_err *err)
{
	(void)ctx;
	(void)ns;
	(void)err;
	/* the lookups' contract: a pool is always named */
	if (kind == NULL || name == NULL)
		abort();
	*items = json_pack("[{s:{s:s}}, {s:{s:i}}, {}]", "spec", "address", "10.0.0.7", "spec",
	                   "address", 5);
	return PK_OK;
}

static int get_pool(void *ctx, const char *kind, const char *ns, const char *name, json_t **obj,
                    struct pk_err *err)
{
	(void)ns;
	(void)err;
	if (kind == NULL || name == NULL)
		abort();
	*obj = json_incref((json_t *)ctx);
	return PK_OK;
}

static int get_claim(void *ctx, const char *ns, const char *name, json_t **obj, struct pk_err *err)
{
	(void)err;
	/* the lookups' contract: one claim, named, in a namespace */
	if (ns == NULL || name == NULL)
		abort();
	/* the request's own object stands in for the claim: any JSON must be survived */
	*obj = json_incref((json_t *)ctx);
	return PK_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 1 << 20)
		return 0;
	json_t *ctx = json_loadb((const char *)data, size, 0, NULL);
	json_t *obj = json_object_get(json_object_get(ctx, "request"), "object");
	if (obj == NULL)
		obj = json_object();
	else
		json_incref(obj);
	struct pk_admission_lookup lk = {.ctx = obj,
	                                 .list_pools = list_pools,
	                                 .list_pool_addresses = list_pool_addresses,
	                                 .get_pool = get_pool,
	                                 .get_claim = get_claim,
	                                 .may_block_owner_deletion = may_block_owner_deletion};
	const struct pk_admission_config cfgs[] = {
	    {.claims = PK_ENFORCE_DENY, .foreign_claims = PK_ENFORCE_WARN},
	    {.claims = PK_ENFORCE_WARN, .foreign_claims = PK_ENFORCE_DENY, .lookup = &lk},
	    {.claims = PK_ENFORCE_REPAIR,
	     .foreign_claims = PK_ENFORCE_IGNORE,
	     .lookup = &lk,
	     .count_repair = count_repair},
	    {.claims = PK_ENFORCE_REPAIR, .foreign_claims = PK_ENFORCE_WARN},
	};
	for (size_t c = 0; c < sizeof(cfgs) / sizeof(cfgs[0]); c++)
		for (int ep = PK_ADMISSION_VALIDATE; ep <= PK_ADMISSION_MUTATE; ep++) {
			int http = 0;
			json_t *resp = NULL;
			pk_admission_review(&cfgs[c], (enum pk_admission_endpoint)ep,
			                    (const char *)data, size, &http, &resp);
			if (resp == NULL)
				abort();
			if (http == 200) {
				const json_t *r = json_object_get(resp, "response");
				if (!json_is_boolean(json_object_get(r, "allowed")) ||
				    !json_is_string(json_object_get(r, "uid")))
					abort();
			} else if ((http != 400 && http != 413) ||
			           !json_is_string(json_object_get(resp, "error"))) {
				abort();
			}
			char *text = json_dumps(resp, JSON_COMPACT);
			if (text == NULL)
				abort();
			free(text);
			json_decref(resp);
		}
	json_decref(obj);
	json_decref(ctx);
	return 0;
}
