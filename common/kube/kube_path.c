/* kube_path.c - request paths and queries, each segment percent-encoded. */
#include <stdio.h>
#include <string.h>

#include "kube_client_int.h"

static bool unreserved(unsigned char ch)
{
	return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
	       ch == '-' || ch == '.' || ch == '_' || ch == '~';
}

/* Appends s percent-encoded at buf[*o]. */
static int put_escaped(char *buf, size_t len, size_t *o, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (unreserved(*p)) {
			if (*o + 1 >= len)
				return PK_ERR_TOO_BIG;
			buf[(*o)++] = (char)*p;
		} else {
			if (*o + 3 >= len)
				return PK_ERR_TOO_BIG;
			buf[(*o)++] = '%';
			buf[(*o)++] = hex[*p >> 4];
			buf[(*o)++] = hex[*p & 15];
		}
	}
	buf[*o] = '\0';
	return PK_OK;
}

int pk_kube_path_put_raw(char *buf, size_t len, size_t *o, const char *s)
{
	size_t n = strlen(s);
	if (*o + n + 1 > len)
		return PK_ERR_TOO_BIG;
	memcpy(buf + *o, s, n + 1);
	*o += n;
	return PK_OK;
}

static bool bad_segment(const char *s)
{
	return s == NULL || s[0] == '\0' || strcmp(s, ".") == 0 || strcmp(s, "..") == 0;
}

int pk_kube_path_put_segment(char *buf, size_t len, size_t *o, const char *s)
{
	if (bad_segment(s))
		return PK_ERR_INVALID;
	int rc = pk_kube_path_put_raw(buf, len, o, "/");
	return rc == PK_OK ? put_escaped(buf, len, o, s) : rc;
}

int pk_kube_ref_path(const struct pk_kube_ref *r, char *buf, size_t len)
{
	size_t o = 0;
	int rc;
	if (len == 0)
		return PK_ERR_TOO_BIG;
	buf[0] = '\0';
	if (bad_segment(r->version) || bad_segment(r->resource))
		return PK_ERR_INVALID;
	if (r->group == NULL || r->group[0] == '\0') {
		rc = pk_kube_path_put_raw(buf, len, &o, "/api");
	} else {
		rc = pk_kube_path_put_raw(buf, len, &o, "/apis");
		if (rc == PK_OK)
			rc = pk_kube_path_put_segment(buf, len, &o, r->group);
	}
	if (rc == PK_OK)
		rc = pk_kube_path_put_segment(buf, len, &o, r->version);
	if (rc == PK_OK && r->namespace != NULL) {
		rc = pk_kube_path_put_raw(buf, len, &o, "/namespaces");
		if (rc == PK_OK)
			rc = pk_kube_path_put_segment(buf, len, &o, r->namespace);
	}
	if (rc == PK_OK)
		rc = pk_kube_path_put_segment(buf, len, &o, r->resource);
	if (rc == PK_OK && r->name != NULL)
		rc = pk_kube_path_put_segment(buf, len, &o, r->name);
	if (rc == PK_OK && r->subresource != NULL) {
		if (r->name == NULL)
			return PK_ERR_INVALID;
		rc = pk_kube_path_put_segment(buf, len, &o, r->subresource);
	}
	if (rc != PK_OK)
		buf[0] = '\0';
	return rc;
}

int pk_kube_query_add(char *buf, size_t len, const char *key, const char *value)
{
	size_t o = strlen(buf);
	size_t keep = o;
	int rc = pk_kube_path_put_raw(buf, len, &o, strchr(buf, '?') ? "&" : "?");
	if (rc == PK_OK)
		rc = put_escaped(buf, len, &o, key);
	if (rc == PK_OK)
		rc = pk_kube_path_put_raw(buf, len, &o, "=");
	if (rc == PK_OK)
		rc = put_escaped(buf, len, &o, value);
	if (rc != PK_OK)
		buf[keep] = '\0';
	return rc;
}

enum pk_kube_reason pk_kube_client_build_path(const struct pk_kube_ref *r, char *buf, size_t len,
                                              struct pk_kube_error *e)
{
	int rc = pk_kube_ref_path(r, buf, len);
	if (rc != PK_OK)
		return pk_kube_error_set(
		    e, PK_KUBE_BAD_REQUEST, 0, "cannot build a request path: %s",
		    rc == PK_ERR_TOO_BIG ? "too long"
		                         : "empty, \".\" or \"..\" name, or no "
		                           "version or resource");
	return PK_KUBE_OK;
}

enum pk_kube_reason pk_kube_client_add_query(char *buf, size_t len, const char *k, const char *v,
                                             struct pk_kube_error *e)
{
	if (v == NULL)
		return PK_KUBE_OK;
	if (pk_kube_query_add(buf, len, k, v) != PK_OK)
		return pk_kube_error_set(e, PK_KUBE_BAD_REQUEST, 0, "query too long");
	return PK_KUBE_OK;
}

void pk_kube_quote_object(const char *ns, const char *name, char *buf, size_t len)
{
	char qn[300] = "", qns[300] = "";
	if (name != NULL)
		pk_text_quote(name, strlen(name), qn, sizeof(qn));
	if (ns != NULL)
		pk_text_quote(ns, strlen(ns), qns, sizeof(qns));
	snprintf(buf, len, "%s%s%s", qns, ns ? "/" : "", name ? qn : "(name unreadable)");
}
