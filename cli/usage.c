/* usage.c - `poolkeeper usage`: each pool's counts and top consumers (usage.h). */
#include "usage.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "allocator.h"
#include "api.h"
#include "buf.h"
#include "flags.h"
#include "json.h"
#include "parse.h"
#include "pool.h"
#include "rules.h"
#include "strmap.h"

#define EXIT_USAGE 2

void pk_usage_free(struct pk_usage *u)
{
	for (size_t i = 0; i < u->n; i++)
		free(u->pools[i].top);
	free(u->pools);
	memset(u, 0, sizeof(*u));
}

/* The cluster an IPAddress is held for: its claim's, else PK_USAGE_NO_CLUSTER. */
static const char *consumer_of(const struct pk_live *l, const json_t *addr)
{
	const char *claim_name = pk_json_cstr(pk_json_path(addr, "spec", "claimRef", "name"));
	const json_t *claim = pk_live_claim(l, pk_live_namespace(addr), claim_name);
	bool from_label;
	const char *cluster = claim ? pk_rules_claim_cluster_name(claim, &from_label) : NULL;
	return cluster ? cluster : PK_USAGE_NO_CLUSTER;
}

/* Counts one more address for `cluster` in p->top (index+1 of each name in `seen`). */
static int count_consumer(struct pk_usage_pool *p, size_t *cap, struct pk_strmap *seen,
                          const char *cluster)
{
	uintptr_t at = (uintptr_t)pk_strmap_get(seen, cluster);
	if (at != 0) {
		p->top[at - 1].addresses++;
		return PK_OK;
	}
	if (pk_array_reserve(&p->top, cap, p->ntop + 1, sizeof(*p->top)) != PK_OK)
		return PK_ERR_NOMEM;
	p->top[p->ntop] = (struct pk_usage_consumer){cluster, 1};
	p->ntop++;
	return pk_strmap_put(seen, cluster, (void *)(uintptr_t)p->ntop, NULL);
}

static int cmp_consumer(const void *pa, const void *pb)
{
	const struct pk_usage_consumer *a = pa, *b = pb;
	if (a->addresses != b->addresses)
		return a->addresses > b->addresses ? -1 : 1;
	return strcmp(a->cluster, b->cluster);
}

/* Adopts every IPAddress of the pool into `alloc` and counts its consumers. */
static int hold_addresses(const struct pk_live *l, struct pk_usage_pool *p, enum pk_family fam,
                          struct pk_allocator *alloc, pk_u128 *other_family)
{
	struct pk_strmap *seen = pk_strmap_new();
	size_t cap = 0, i;
	json_t *addr;
	int rc = seen ? PK_OK : PK_ERR_NOMEM;
	json_array_foreach(l->addresses, i, addr)
	{
		if (rc != PK_OK)
			break;
		struct pk_addr a;
		struct pk_err err = {{0}};
		if (!pk_live_address_in_pool(addr, p->pool) ||
		    pk_address_parse(pk_json_cstr(pk_json_path(addr, "spec", "address")), &a, NULL,
		                     &err) != PK_OK)
			continue;
		if (a.family != fam)
			(*other_family)++;
		else if (pk_allocator_adopt(alloc, a.v) == PK_ERR_NOMEM)
			rc = PK_ERR_NOMEM;
		if (rc == PK_OK)
			rc = count_consumer(p, &cap, seen, consumer_of(l, addr));
	}
	pk_strmap_free(seen, NULL);
	return rc;
}

static int pool_usage(const struct pk_live *l, size_t top, struct pk_usage_pool *p)
{
	struct pk_pool dec;
	struct pk_violations v;
	pk_violations_init(&v);
	int rc = pk_pool_decode(pk_json_obj_at(p->pool, "spec"), &dec, &v);
	if (rc != PK_OK || dec.usable == NULL) {
		pk_pool_release(&dec);
		return rc;
	}
	struct pk_allocator *alloc = pk_allocator_new(dec.usable);
	pk_u128 other_family = 0;
	rc = alloc ? hold_addresses(l, p, dec.family, alloc, &other_family) : PK_ERR_NOMEM;
	if (rc == PK_OK) {
		struct pk_alloc_counts c;
		pk_allocator_counts(alloc, &c);
		p->valid = true;
		p->family = pk_address_family_name(dec.family);
		pk_count_format(c.total, p->total);
		pk_count_format(c.used, p->used);
		pk_count_format(pk_count_sub(c.total, c.used), p->free_);
		pk_u128_format(c.out_of_range + other_family, p->out_of_range);
		if (p->ntop > 1)
			qsort(p->top, p->ntop, sizeof(*p->top), cmp_consumer);
		if (p->ntop > top)
			p->ntop = top;
	}
	pk_allocator_free(alloc);
	pk_pool_release(&dec);
	return rc;
}

int pk_usage_compute(const struct pk_live *l, size_t top, struct pk_usage *out)
{
	size_t n = json_array_size(l->pools);
	memset(out, 0, sizeof(*out));
	out->pools = n ? calloc(n, sizeof(*out->pools)) : NULL;
	if (n && out->pools == NULL)
		return PK_ERR_NOMEM;
	out->n = n;
	for (size_t i = 0; i < n; i++) {
		out->pools[i].pool = json_array_get(l->pools, i);
		if (pool_usage(l, top, &out->pools[i]) != PK_OK) {
			pk_usage_free(out);
			return PK_ERR_NOMEM;
		}
	}
	return PK_OK;
}

/* ---- output ---- */

static const char *pool_ns(const json_t *pool)
{
	return pk_live_namespace(pool);
}

void pk_usage_write_text(FILE *f, const struct pk_usage *u)
{
	fprintf(f, "%-40s %-6s %-40s %-40s %-40s %s\n", "POOL", "FAMILY", "TOTAL", "USED", "FREE",
	        "TOP CONSUMERS");
	for (size_t i = 0; i < u->n; i++) {
		const struct pk_usage_pool *p = &u->pools[i];
		char what[PK_COUNT_STRLEN * 16];
		pk_live_describe(p->pool, what, sizeof(what));
		if (!p->valid) {
			fprintf(f, "%-40s %-6s %-40s %-40s %-40s %s\n", what, "-", "-", "-", "-",
			        "(the pool's spec does not decode: poolkeeper audit says why)");
			continue;
		}
		fprintf(f, "%-40s %-6s %-40s %-40s %-40s ", what, p->family, p->total, p->used,
		        p->free_);
		for (size_t k = 0; k < p->ntop; k++)
			fprintf(f, "%s%s (%zu)", k ? ", " : "", p->top[k].cluster,
			        p->top[k].addresses);
		if (p->ntop == 0)
			fputs("-", f);
		if (strcmp(p->out_of_range, "0") != 0)
			fprintf(f, "; %s held outside the pool", p->out_of_range);
		fputc('\n', f);
	}
}

static json_t *pool_json(const struct pk_usage_pool *p)
{
	const char *ns = pool_ns(p->pool);
	json_t *j = json_pack("{s:s?, s:s*, s:s, s:b}", "kind", pk_json_cstr_at(p->pool, "kind"),
	                      "namespace", *ns ? ns : NULL, "name", pk_live_name(p->pool), "valid",
	                      p->valid);
	json_t *cons = json_array();
	bool ok = j != NULL && cons != NULL;
	if (ok && p->valid) {
		json_t *counts =
		    json_pack("{s:s, s:s, s:s, s:s, s:s}", "family", p->family, "total", p->total,
		              "used", p->used, "free", p->free_, "outOfRange", p->out_of_range);
		ok = counts != NULL && json_object_update(j, counts) == 0;
		json_decref(counts);
	}
	for (size_t k = 0; ok && k < p->ntop; k++)
		ok = json_array_append_new(cons, json_pack("{s:s, s:I}", "cluster",
		                                           p->top[k].cluster, "addresses",
		                                           (json_int_t)p->top[k].addresses)) == 0;
	if (ok) {
		ok = json_object_set_new(j, "consumers", cons) == 0;
		cons = NULL;
	}
	json_decref(cons);
	if (!ok) {
		json_decref(j);
		return NULL;
	}
	return j;
}

json_t *pk_usage_to_json(const struct pk_usage *u)
{
	json_t *arr = json_array();
	for (size_t i = 0; arr != NULL && i < u->n; i++) {
		json_t *pj = pool_json(&u->pools[i]);
		if (pj == NULL || json_array_append_new(arr, pj) != 0) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr ? json_pack("{s:o}", "pools", arr) : NULL;
}

/* ---- the command ---- */

enum usage_flag { U_TOP = PK_LIVE_F_COMMON, U_COUNT };

static const struct pk_flag usage_flags[U_COUNT] = {
    [PK_LIVE_F_KUBECONFIG] = PK_FLAG_DEF_KUBECONFIG,
    [PK_LIVE_F_NS] = {"namespace", 'n', PK_FLAG_STRING, NULL, "NAME",
                      "only this namespace's pools and IPAddresses (cluster-scoped pools such "
                      "as GlobalIPPools always)"},
    [PK_LIVE_F_OUTPUT] = {"output", 'o', PK_FLAG_CHOICE, "text", "text|json",
                          "a table, or one JSON object"},
    [PK_LIVE_F_HELP] = PK_FLAG_DEF_HELP,
    [U_TOP] = {"top", 0, PK_FLAG_UINT, "5", "0..1000", "consumers shown per pool"},
};

static const char usage_summary[] =
    "Shows each pool of a live cluster (every kind of " PK_POOL_GROUP ") with its\n"
    "total, used and free addresses (exact, also for IPv6) and the clusters holding the\n"
    "most of them (a claim's spec.clusterName, else its " PK_CLUSTER_NAME_LABEL " label).\n"
    "See docs/audit.md.\n"
    "\n"
    "Exit status: 0 shown, 2 usage error or the cluster could not be read.";

static int usage_and_report(const struct pk_live *live, const struct pk_flag_value *vals,
                            const char *output)
{
	bool json = !strcmp(output, "json");
	struct pk_usage u;
	int status = EXIT_USAGE;
	if (pk_usage_compute(live, (size_t)pk_flags_get_num(vals, U_TOP), &u) != PK_OK) {
		fprintf(stderr, "poolkeeper usage: out of memory\n");
		return status;
	}
	if (!json) {
		pk_usage_write_text(stdout, &u);
		status = 0;
	} else if (pk_live_write_json("usage", pk_usage_to_json(&u)) == PK_OK) {
		status = 0;
	}
	pk_usage_free(&u);
	return status;
}

int pk_usage_main(int argc, char *argv[])
{
	static const struct pk_live_command cmd = {"usage",       usage_flags,
	                                           U_COUNT,       "poolkeeper usage [flags]",
	                                           usage_summary, usage_and_report};
	return pk_live_main(&cmd, argc, argv);
}
