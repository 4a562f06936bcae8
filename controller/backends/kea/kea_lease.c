/* kea_lease.c - the Kea backend's lease key and user-context; see kea_lease.h. */
#include "kea_lease.h"

#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>

#include "json.h"

/* "aa:bb:..." of n bytes into out (3n bytes). */
static void hex_pairs(const unsigned char *b, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[3 * i] = digits[b[i] >> 4];
		out[3 * i + 1] = digits[b[i] & 15];
		out[3 * i + 2] = i + 1 < n ? ':' : '\0';
	}
}

static const char *or_empty(const char *s)
{
	return s != NULL ? s : "";
}

void pk_kea_key_of(const struct pk_kea_claim *c, struct pk_kea_key *out)
{
	/* The four parts, each followed by a NUL: no two claims make one input. */
	const char *parts[4] = {or_empty(c->owner), or_empty(c->ns), or_empty(c->name),
	                        or_empty(c->cluster)};
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	bool ok = ctx != NULL && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1;
	for (size_t i = 0; ok && i < 4; i++)
		ok = EVP_DigestUpdate(ctx, parts[i], strlen(parts[i]) + 1) == 1;
	ok = ok && EVP_DigestFinal_ex(ctx, md, &mdlen) == 1 && mdlen >= 32;
	EVP_MD_CTX_free(ctx);
	if (!ok) /* no digest (no memory): a key no claim can share is impossible; zero it */
		memset(md, 0, sizeof(md));
	unsigned char duid[18], cid[23], hw[6];
	duid[0] = 0x00;
	duid[1] = 0x04; /* DUID-UUID */
	memcpy(duid + 2, md, 16);
	duid[2 + 6] = (unsigned char)((duid[2 + 6] & 0x0f) | 0x80); /* a UUID of version 8 */
	duid[2 + 8] = (unsigned char)((duid[2 + 8] & 0x3f) | 0x80); /* RFC 4122 variant */
	out->iaid = (uint32_t)md[16] << 24 | (uint32_t)md[17] << 16 | (uint32_t)md[18] << 8 |
	            (uint32_t)md[19];
	cid[0] = 0xff; /* RFC 4361: IAID and DUID */
	memcpy(cid + 1, md + 16, 4);
	memcpy(cid + 5, duid, sizeof(duid));
	hw[0] = 0x02; /* locally administered, unicast */
	memcpy(hw + 1, md + 20, 5);
	hex_pairs(duid, sizeof(duid), out->duid);
	hex_pairs(cid, sizeof(cid), out->client_id);
	hex_pairs(hw, sizeof(hw), out->hw_address);
}

/* {"poolkeeper": {...}} of claim c; NULL when memory ran out. */
static json_t *context_of(const struct pk_kea_claim *c)
{
	char claim[64 + 1 + 254];
	snprintf(claim, sizeof(claim), "%s/%s", or_empty(c->ns), or_empty(c->name));
	json_t *pk = json_pack("{s:s, s:s, s:s}", "owner", or_empty(c->owner), "claim", claim,
	                       "pool", or_empty(c->pool));
	if (pk != NULL && c->cluster != NULL &&
	    json_object_set_new(pk, "cluster", json_string(c->cluster)) != 0)
		goto nomem;
	if (pk != NULL && c->uid != NULL &&
	    json_object_set_new(pk, "uid", json_string(c->uid)) != 0)
		goto nomem;
	return pk != NULL ? json_pack("{s:o}", PK_KEA_CONTEXT, pk) : NULL;
nomem:
	json_decref(pk);
	return NULL;
}

json_t *pk_kea_lease_add_args(const struct pk_kea_claim *c, const struct pk_addr *a)
{
	struct pk_kea_key k;
	char text[PK_ADDR_STRLEN], hostname[64 + 254];
	pk_kea_key_of(c, &k);
	pk_address_format(a, text);
	/* What Kea's own tools show; DNS updates stay off (fqdn-fwd, fqdn-rev false). */
	snprintf(hostname, sizeof(hostname), "%s", or_empty(c->name));
	json_t *ctx = context_of(c);
	if (ctx == NULL)
		return NULL;
	if (a->family == PK_FAMILY_V4)
		return json_pack("{s:s, s:s, s:s, s:s, s:I, s:o}", "ip-address", text, "hw-address",
		                 k.hw_address, "client-id", k.client_id, "hostname", hostname,
		                 "valid-lft", (json_int_t)4294967295LL, "user-context", ctx);
	return json_pack("{s:s, s:s, s:I, s:s, s:s, s:I, s:I, s:o}", "ip-address", text, "duid",
	                 k.duid, "iaid", (json_int_t)k.iaid, "type", "IA_NA", "hostname", hostname,
	                 "valid-lft", (json_int_t)4294967295LL, "preferred-lft",
	                 (json_int_t)4294967295LL, "user-context", ctx);
}

/* Splits "<ns>/<name>" at its one slash; false when it is not that. */
static bool split_claim(const char *claim, char *ns, size_t nslen, const char **name)
{
	const char *slash = claim != NULL ? strchr(claim, '/') : NULL;
	if (slash == NULL || slash == claim || slash[1] == '\0' || strchr(slash + 1, '/') != NULL ||
	    (size_t)(slash - claim) >= nslen)
		return false;
	memcpy(ns, claim, (size_t)(slash - claim));
	ns[slash - claim] = '\0';
	*name = slash + 1;
	return true;
}

/* Whether the lease's key is the one derived from the claim it names. */
static bool key_matches(const json_t *lease, enum pk_family f, const struct pk_kea_claim *c)
{
	struct pk_kea_key k;
	pk_kea_key_of(c, &k);
	if (f == PK_FAMILY_V4) {
		const char *cid = pk_json_cstr_at(lease, "client-id");
		return cid != NULL && strcmp(cid, k.client_id) == 0;
	}
	const char *duid = pk_json_cstr_at(lease, "duid");
	const json_t *iaid = json_object_get(lease, "iaid");
	return duid != NULL && strcmp(duid, k.duid) == 0 && json_is_integer(iaid) &&
	       json_integer_value(iaid) == (json_int_t)k.iaid;
}

bool pk_kea_lease_read(const json_t *lease, const char *owner, struct pk_kea_lease *out)
{
	struct pk_err err;
	memset(out, 0, sizeof(*out));
	const char *ip = pk_json_cstr_at(lease, "ip-address");
	if (ip == NULL || pk_address_parse(ip, &out->address, "ip-address", &err) != PK_OK)
		return false;
	const json_t *ctx = json_object_get(json_object_get(lease, "user-context"), PK_KEA_CONTEXT);
	const char *lease_owner = pk_json_cstr_at(ctx, "owner");
	const char *claim = pk_json_cstr_at(ctx, "claim");
	const char *name;
	if (!json_is_object(ctx) || strcmp(or_empty(lease_owner), or_empty(owner)) != 0 ||
	    !split_claim(claim, out->ns, sizeof(out->ns), &name))
		return true; /* someone else's */
	struct pk_kea_claim c = {.owner = owner,
	                         .ns = out->ns,
	                         .name = name,
	                         .cluster = pk_json_cstr_at(ctx, "cluster")};
	if (!key_matches(lease, out->address.family, &c)) {
		out->ns[0] = '\0';
		return true; /* names a claim, yet was not made for it */
	}
	out->ours = true;
	out->name = name;
	out->cluster = c.cluster;
	out->uid = pk_json_cstr_at(ctx, "uid");
	out->pool = pk_json_cstr_at(ctx, "pool");
	return true;
}
