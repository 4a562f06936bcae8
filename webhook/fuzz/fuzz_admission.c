/*
 * fuzz_admission.c - libFuzzer target for the AdmissionReview handler, both
 * endpoints, with and without API lookups. Every answer must be a response
 * the server can send: an AdmissionReview with allowed set (HTTP 200) or an
 * error object (HTTP 400/413).
 */
#include <stdlib.h>
#include <string.h>

#include "admission.h"

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
	struct pk_admission_lookup lk = {obj, list_pools, list_pool_addresses, get_pool, get_claim};
	const struct pk_admission_config cfgs[] = {
	    {PK_ENFORCE_DENY, PK_ENFORCE_WARN, NULL},
	    {PK_ENFORCE_WARN, PK_ENFORCE_DENY, &lk},
	};
	for (int c = 0; c < 2; c++)
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
