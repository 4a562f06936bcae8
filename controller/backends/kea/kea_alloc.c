/* kea_alloc.c - one claim's lease at Kea, found or made, and given back; see kea_alloc.h. */
#include "kea_alloc.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "json.h"

static const char *service_of(enum pk_family f)
{
	return f == PK_FAMILY_V6 ? "dhcp6" : "dhcp4";
}

void pk_kea_failure(const struct pk_kea_answer *a, const char *doing, struct pk_backend_result *res)
{
	switch (a->outcome) {
	case PK_KEA_ANSWERED:
		if (a->result == PK_KEA_UNSUPPORTED)
			pk_backend_result_set(res, PK_BACKEND_PERMANENT, PK_KEA_REASON_NO_COMMANDS,
			                      "%s: Kea does not know the command (load the "
			                      "lease_cmds hook): %s",
			                      doing, a->text);
		else if (strstr(a->text, "unable to forward command") != NULL)
			pk_backend_result_set(res, PK_BACKEND_TRANSIENT, PK_KEA_REASON_UNAVAILABLE,
			                      "%s: %s", doing, a->text);
		else
			pk_backend_result_set(res, PK_BACKEND_PERMANENT, PK_KEA_REASON_REFUSED,
			                      "%s: Kea answered: %s", doing, a->text);
		return;
	case PK_KEA_UNAUTHORIZED:
		pk_backend_result_set(res, PK_BACKEND_PERMANENT, PK_KEA_REASON_CREDENTIALS,
		                      "%s: %s", doing, a->text);
		return;
	case PK_KEA_NO_MEMORY:
		pk_backend_result_set(res, PK_BACKEND_TRANSIENT, NULL, "%s: out of memory", doing);
		return;
	case PK_KEA_CANCELLED:
		/* Leadership lost, or stopping: another process answers for the claim now. */
		pk_backend_result_set(res, PK_BACKEND_TRANSIENT, NULL, "%s: cancelled", doing);
		return;
	case PK_KEA_UNREACHABLE:
	case PK_KEA_TIMEOUT:
	case PK_KEA_HTTP_ERROR:
	case PK_KEA_BAD_ANSWER:
		break;
	}
	pk_backend_result_set(res, PK_BACKEND_TRANSIENT, PK_KEA_REASON_UNREACHABLE, "%s: %s", doing,
	                      a->text);
}

/* Looks the claim's key up in the family's service; *leases is Kea's list (owned), or NULL. */
static bool look_up(const struct pk_kea_endpoint *ep, enum pk_family f,
                    const struct pk_kea_claim *c, json_t **leases, struct pk_backend_result *res)
{
	struct pk_kea_key k;
	struct pk_kea_answer a;
	pk_kea_key_of(c, &k);
	json_t *args = f == PK_FAMILY_V6 ? json_pack("{s:s}", "duid", k.duid)
	                                 : json_pack("{s:s}", "client-id", k.client_id);
	*leases = NULL;
	if (args == NULL) {
		pk_backend_result_set(res, PK_BACKEND_TRANSIENT, NULL, "out of memory");
		return false;
	}
	pk_kea_command(ep, f == PK_FAMILY_V6 ? "lease6-get-by-duid" : "lease4-get-by-client-id",
	               service_of(f), args, &a);
	json_decref(args);
	bool ok = a.outcome == PK_KEA_ANSWERED &&
	          (a.result == PK_KEA_SUCCESS || a.result == PK_KEA_EMPTY);
	if (!ok)
		pk_kea_failure(&a, "looking up the claim's lease", res);
	else if (a.result == PK_KEA_SUCCESS)
		*leases = json_incref(json_object_get(a.arguments, "leases"));
	pk_kea_answer_clear(&a);
	return ok;
}

/* Whether a lease Kea listed is the claim's, in the pool's subnet (its address in *addr). */
static bool claims_lease(const json_t *lease, const struct pk_kea_claim *c, long subnet_id,
                         struct pk_addr *addr)
{
	struct pk_kea_lease l;
	const json_t *sid = json_object_get(lease, "subnet-id");
	if (!pk_kea_lease_read(lease, c->owner, &l) || !l.ours || strcmp(l.ns, c->ns) != 0 ||
	    strcmp(l.name, c->name) != 0)
		return false;
	if (subnet_id > 0 && (!json_is_integer(sid) || json_integer_value(sid) != subnet_id))
		return false;
	*addr = l.address;
	return true;
}

static int64_t now_s(void)
{
	return (int64_t)time(NULL);
}

static void mark_used(struct pk_kea_pool *pool, pk_u128 v)
{
	pthread_mutex_lock(pool->mu);
	int rc = pk_allocator_adopt(pool->alloc, v);
	pthread_mutex_unlock(pool->mu);
	(void)rc; /* PK_ERR_IN_USE: known as used already */
}

/* The address is free again (in pool's memory). */
static void mark_free(struct pk_kea_pool *pool, pk_u128 v)
{
	pthread_mutex_lock(pool->mu);
	int rc = pk_allocator_release(pool->alloc, v, 0, now_s());
	pthread_mutex_unlock(pool->mu);
	(void)rc; /* PK_ERR_NOT_HELD: not known as used */
}

/* Kea's words for a taken address (lease4-add and lease6-add alike). */
static bool already_exists(const struct pk_kea_answer *a)
{
	return a->outcome == PK_KEA_ANSWERED && a->result == PK_KEA_ERROR &&
	       strstr(a->text, "already exists") != NULL;
}

void pk_kea_take(const struct pk_kea_endpoint *ep, struct pk_kea_pool *pool,
                 const struct pk_kea_claim *c, struct pk_kea_taken *out,
                 struct pk_backend_result *res)
{
	json_t *leases = NULL;
	memset(out, 0, sizeof(*out));
	pk_backend_result_set(res, PK_BACKEND_OK, NULL, "%s", "");
	if (!look_up(ep, pool->family, c, &leases, res))
		return;
	size_t i;
	json_t *lease;
	json_array_foreach(leases, i, lease)
	{
		if (claims_lease(lease, c, pool->subnet_id, &out->address)) {
			json_decref(leases);
			mark_used(pool, out->address.v);
			return; /* made by an earlier try whose answer was lost */
		}
	}
	json_decref(leases);
	const char *command = pool->family == PK_FAMILY_V6 ? "lease6-add" : "lease4-add";
	for (int tries = 0; tries < PK_KEA_TAKE_TRIES; tries++) {
		pk_u128 cand;
		pthread_mutex_lock(pool->mu);
		int rc = pk_allocator_next(pool->alloc, now_s(), &cand);
		pthread_mutex_unlock(pool->mu);
		if (rc != PK_OK) {
			pk_backend_result_set(
			    res, PK_BACKEND_EXHAUSTED, PK_REASON_POOL_EXHAUSTED,
			    "%s has no free address: every usable one is leased in "
			    "Kea; the claim is retried when one is released",
			    pool->key);
			return;
		}
		struct pk_addr a = {.v = cand, .family = pool->family};
		json_t *args = pk_kea_lease_add_args(c, &a);
		if (args != NULL && pool->subnet_id > 0)
			json_object_set_new(args, "subnet-id", json_integer(pool->subnet_id));
		struct pk_kea_answer ans = {0};
		if (args != NULL)
			pk_kea_command(ep, command, service_of(pool->family), args, &ans);
		json_decref(args);
		if (args != NULL && ans.outcome == PK_KEA_ANSWERED &&
		    ans.result == PK_KEA_SUCCESS) {
			pk_kea_answer_clear(&ans);
			out->address = a;
			out->made = true;
			return;
		}
		if (args != NULL && already_exists(&ans)) {
			pk_kea_answer_clear(&ans);
			continue; /* another holder's: it stays used */
		}
		mark_free(pool, cand); /* not taken here */
		char doing[PK_ADDR_STRLEN + 32];
		char text[PK_ADDR_STRLEN];
		snprintf(doing, sizeof(doing), "leasing %s", pk_address_format(&a, text));
		if (args == NULL)
			pk_backend_result_set(res, PK_BACKEND_TRANSIENT, NULL, "out of memory");
		else
			pk_kea_failure(&ans, doing, res);
		pk_kea_answer_clear(&ans);
		return;
	}
	pk_backend_result_set(res, PK_BACKEND_TRANSIENT, PK_KEA_REASON_BUSY,
	                      "%s: the %d lowest free addresses were taken in Kea by others "
	                      "meanwhile; trying again",
	                      pool->key, PK_KEA_TAKE_TRIES);
}

void pk_kea_give_back(const struct pk_kea_endpoint *ep, struct pk_kea_pool *pool,
                      enum pk_family family, const struct pk_kea_claim *c, unsigned *released,
                      struct pk_backend_result *res)
{
	json_t *leases = NULL;
	*released = 0;
	pk_backend_result_set(res, PK_BACKEND_OK, NULL, "%s", "");
	if (!look_up(ep, family, c, &leases, res))
		return;
	size_t i;
	json_t *lease;
	json_array_foreach(leases, i, lease)
	{
		struct pk_addr addr;
		char text[PK_ADDR_STRLEN];
		if (!claims_lease(lease, c, 0, &addr))
			continue;
		json_t *args = json_pack("{s:s}", "ip-address", pk_address_format(&addr, text));
		struct pk_kea_answer a = {0};
		if (args != NULL)
			pk_kea_command(ep, family == PK_FAMILY_V6 ? "lease6-del" : "lease4-del",
			               service_of(family), args, &a);
		json_decref(args);
		bool gone = args != NULL && a.outcome == PK_KEA_ANSWERED &&
		            (a.result == PK_KEA_SUCCESS || a.result == PK_KEA_EMPTY);
		if (!gone) {
			char doing[PK_ADDR_STRLEN + 32];
			snprintf(doing, sizeof(doing), "releasing %s", text);
			if (args == NULL)
				pk_backend_result_set(res, PK_BACKEND_TRANSIENT, NULL,
				                      "out of memory");
			else
				pk_kea_failure(&a, doing, res);
			pk_kea_answer_clear(&a);
			break;
		}
		pk_kea_answer_clear(&a);
		(*released)++;
		if (pool != NULL)
			mark_free(pool, addr.v);
	}
	json_decref(leases);
}
