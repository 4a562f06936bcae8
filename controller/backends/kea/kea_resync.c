/*
 * kea_resync.c - the Kea backend's periodic comparison of Kea's leases with
 * the IPAddresses (backend.h, resync). For each KeaServer and family it
 * pages through the leases (lease4-get-page, lease6-get-page):
 *
 *   - a lease of this owner whose claim has no IPAddress, and which no call
 *     of this process is about, is an orphan (a create whose answer was
 *     lost and whose claim went away, a claim deleted while its pool was
 *     unknown): it is deleted. While it is, the claim's record says a
 *     give-back is in flight, so a take of the same claim waits for it;
 *   - an IPAddress of a Kea pool whose address no lease of this owner holds
 *     lost its lease (deleted by hand in Kea): it is reported (log and the
 *     gauge poolkeeper_kea_leases_missing), never re-made behind the
 *     admin's back.
 */
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "kea_internal.h"
#include "log.h"

#define PAGE 500

/* An IPAddress of a Kea pool. */
struct ipa {
	char address[PK_ADDR_STRLEN];
	char pool[]; /* its pool key */
};

/* The IPAddresses of Kea pools: claim key -> struct ipa. */
struct addresses {
	struct kea_backend *b;
	struct pk_strmap *by_claim;
	int rc;
};

static int address_page(void *ud, const json_t *page)
{
	struct addresses *a = ud;
	size_t i;
	json_t *o;
	json_array_foreach(json_object_get(page, "items"), i, o)
	{
		char pk[PK_OBJECT_KEY_MAX], key[PK_OBJECT_KEY_MAX];
		struct pk_addr addr;
		if (!kea_address_of(a->b, o, key, pk, &addr))
			continue;
		struct ipa *x = malloc(sizeof(*x) + strlen(pk) + 1);
		if (x != NULL) {
			pk_address_format(&addr, x->address);
			memcpy(x->pool, pk, strlen(pk) + 1);
		}
		if (x == NULL || pk_strmap_put(a->by_claim, key, x, NULL) != PK_OK) {
			free(x);
			a->rc = PK_ERR_NOMEM;
			return -1;
		}
	}
	return 0;
}

/* What one server's pages came to. */
struct tally {
	unsigned orphans, deleted, failed;
	struct pk_strmap *leased; /* "<address>" of this owner's leases -> (void *)1 */
};

/* Deletes an orphan of claim key at address text, the claim's record marking it in flight. */
static void delete_orphan(struct kea_backend *b, const struct pk_kea_endpoint *ep, enum pk_family f,
                          const char *key, const char *text, struct tally *t)
{
	pthread_mutex_lock(&b->mu);
	struct kea_claim *c = kea_claim_get(b, key, false);
	bool busy = c != NULL;
	if (!busy && (c = kea_claim_get(b, key, true)) != NULL)
		c->call = KEA_GIVING_BACK; /* a take of the claim waits for this */
	pthread_mutex_unlock(&b->mu);
	if (busy || c == NULL)
		return; /* this process is working on the claim: not an orphan */
	t->orphans++;
	struct pk_kea_answer a;
	json_t *args = json_pack("{s:s}", "ip-address", text);
	if (args != NULL)
		pk_kea_command(ep, f == PK_FAMILY_V6 ? "lease6-del" : "lease4-del",
		               f == PK_FAMILY_V6 ? "dhcp6" : "dhcp4", args, &a);
	bool gone = args != NULL && a.outcome == PK_KEA_ANSWERED &&
	            (a.result == PK_KEA_SUCCESS || a.result == PK_KEA_EMPTY);
	json_decref(args);
	if (args != NULL)
		pk_kea_answer_clear(&a);
	if (gone) {
		t->deleted++;
		pk_log_info("Kea lease without an IPAddress deleted", PK_LOG_STR("claim", key),
		            PK_LOG_STR("address", text));
	} else {
		t->failed++;
	}
	pthread_mutex_lock(&b->mu);
	kea_claim_drop(b, key);
	pthread_mutex_unlock(&b->mu);
	b->host.queue_claim(b->host.ud, key, 0);
}

/* One page of leases; *next is the address to go on from, "" at the end. */
static int lease_page(struct kea_backend *b, const struct pk_kea_endpoint *ep, const char *owner,
                      enum pk_family f, struct pk_strmap *ipaddresses, char *from, struct tally *t)
{
	struct pk_kea_answer a;
	json_t *args = json_pack("{s:s, s:i}", "from", from, "limit", PAGE);
	if (args == NULL)
		return PK_ERR_NOMEM;
	pk_kea_command(ep, f == PK_FAMILY_V6 ? "lease6-get-page" : "lease4-get-page",
	               f == PK_FAMILY_V6 ? "dhcp6" : "dhcp4", args, &a);
	json_decref(args);
	from[0] = '\0';
	if (a.outcome != PK_KEA_ANSWERED ||
	    (a.result != PK_KEA_SUCCESS && a.result != PK_KEA_EMPTY)) {
		pk_log_warn("resync: Kea's leases cannot be read", PK_LOG_STR("error", a.text));
		pk_kea_answer_clear(&a);
		return PK_ERR_API;
	}
	const json_t *leases = json_object_get(a.arguments, "leases");
	size_t i;
	json_t *lease;
	json_array_foreach(leases, i, lease)
	{
		struct pk_kea_lease l;
		char key[PK_OBJECT_KEY_MAX], text[PK_ADDR_STRLEN];
		if (!pk_kea_lease_read(lease, owner, &l) || !l.ours)
			continue;
		pk_address_format(&l.address, text);
		pk_object_key(l.ns, l.name, key, sizeof(key));
		if (pk_strmap_get(ipaddresses, key) == NULL)
			delete_orphan(b, ep, f, key, text, t);
		else if (pk_strmap_put(t->leased, text, (void *)1, NULL) != PK_OK)
			break;
	}
	size_t n = json_array_size(leases);
	if (n == PAGE)
		snprintf(from, PK_ADDR_STRLEN, "%s",
		         pk_json_cstr_at(json_array_get(leases, n - 1), "ip-address"));
	pk_kea_answer_clear(&a);
	return PK_OK;
}

/* IPAddresses of the server's pools whose address no lease of this owner holds. */
struct missing_scan {
	struct kea_backend *b;
	const char *server;
	struct pk_strmap *leased;
	unsigned missing;
};

static void check_missing(void *ud, const char *key, void *value)
{
	struct missing_scan *m = ud;
	const struct ipa *x = value;
	const struct kea_pool *p = kea_pool_find(m->b, x->pool);
	if (p == NULL || strcmp(p->server, m->server) != 0 || pk_strmap_get(m->leased, x->address))
		return;
	m->missing++;
	pk_log_warn("IPAddress without its Kea lease: the address may be handed out by Kea",
	            PK_LOG_STR("ipaddress", key), PK_LOG_STR("address", x->address),
	            PK_LOG_STR("server", m->server));
}

/* One server's leases compared (b->mu not held); PK_OK or the first error. */
static int resync_server(struct kea_backend *b, const char *name, struct pk_strmap *ipaddresses,
                         unsigned *missing)
{
	struct kea_conn c;
	pthread_mutex_lock(&b->mu);
	bool known = kea_conn_copy(b, name, &c);
	pthread_mutex_unlock(&b->mu);
	struct tally t = {.leased = pk_strmap_new()};
	int rc = known && t.leased != NULL ? PK_OK : PK_ERR_NOMEM;
	atomic_int never = 0;
	struct pk_kea_endpoint ep = {.url = c.url,
	                             .ca_pem = c.ca,
	                             .ca_len = c.ca_len,
	                             .user = c.user,
	                             .password = c.password,
	                             .timeout_ms = b->host.call_timeout_ms,
	                             .cancel = &never};
	for (int fam = 0; rc == PK_OK && fam < 2; fam++) {
		enum pk_family f = fam == 0 ? PK_FAMILY_V4 : PK_FAMILY_V6;
		char from[PK_ADDR_STRLEN] = "start";
		while (rc == PK_OK && from[0] != '\0')
			rc = lease_page(b, &ep, c.owner, f, ipaddresses, from, &t);
	}
	if (rc == PK_OK) {
		struct missing_scan m = {b, name, t.leased, 0};
		pthread_mutex_lock(&b->mu);
		pk_strmap_foreach(ipaddresses, check_missing, &m);
		pthread_mutex_unlock(&b->mu);
		*missing += m.missing;
	}
	pk_log_info("resync: Kea's leases compared", PK_LOG_STR("server", name),
	            PK_LOG_UINT("orphansDeleted", t.deleted), PK_LOG_UINT("orphansLeft", t.failed));
	pk_strmap_free(t.leased, NULL);
	kea_conn_free(&c);
	return rc;
}

struct names {
	char **v;
	size_t n, cap;
	bool nomem;
};

static void add_name(void *ud, const char *key, void *value)
{
	struct names *n = ud;
	(void)value;
	if (n->n == n->cap) {
		size_t cap = n->cap ? 2 * n->cap : 8;
		char **v = realloc(n->v, cap * sizeof(*v));
		if (v == NULL) {
			n->nomem = true;
			return;
		}
		n->v = v;
		n->cap = cap;
	}
	if ((n->v[n->n] = strdup(key)) != NULL)
		n->n++;
	else
		n->nomem = true;
}

int kea_resync(void *self)
{
	struct kea_backend *b = self;
	struct addresses a = {b, pk_strmap_new(), PK_OK};
	if (a.by_claim == NULL)
		return PK_ERR_NOMEM;
	int rc = kea_list_addresses(b, address_page, &a);
	if (rc == PK_OK)
		rc = a.rc;
	struct names names = {0};
	pthread_mutex_lock(&b->mu);
	pk_strmap_foreach(b->servers, add_name, &names);
	pthread_mutex_unlock(&b->mu);
	unsigned missing = 0;
	for (size_t i = 0; i < names.n; i++) {
		if (rc == PK_OK)
			rc = resync_server(b, names.v[i], a.by_claim, &missing);
		free(names.v[i]);
	}
	free(names.v);
	pk_strmap_free(a.by_claim, free);
	if (rc == PK_OK)
		atomic_store(&b->leases_missing, missing);
	return rc == PK_OK && names.nomem ? PK_ERR_NOMEM : rc;
}
