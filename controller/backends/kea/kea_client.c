/* kea_client.c - one command to a Kea Control Agent; see kea_client.h. */
#include "kea_client.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

/* The answer's body as it arrives. */
struct body {
	char *data;
	size_t len, cap;
	bool too_large;
};

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
	struct body *b = ud;
	size_t add = size * n;
	if (b->len + add > PK_KEA_ANSWER_MAX) {
		b->too_large = true;
		return 0; /* ends the transfer */
	}
	if (b->len + add + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + add + 1)
			cap *= 2;
		char *d = realloc(b->data, cap);
		if (d == NULL)
			return 0;
		b->data = d;
		b->cap = cap;
	}
	memcpy(b->data + b->len, p, add);
	b->len += add;
	b->data[b->len] = '\0';
	return add;
}

static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	(void)dt, (void)dn, (void)ut, (void)un;
	const atomic_int *cancel = ud;
	return cancel != NULL && atomic_load(cancel) != 0; /* non-zero aborts */
}

static enum pk_kea_outcome fail(struct pk_kea_answer *out, enum pk_kea_outcome o, const char *fmt,
                                ...) PK_PRINTF(3, 4);

static enum pk_kea_outcome fail(struct pk_kea_answer *out, enum pk_kea_outcome o, const char *fmt,
                                ...)
{
	va_list ap;
	va_start(ap, fmt);
	out->outcome = o;
	vsnprintf(out->text, sizeof(out->text), fmt, ap);
	va_end(ap);
	return o;
}

enum pk_kea_outcome pk_kea_answer_parse(const char *data, size_t len, const char *service,
                                        struct pk_kea_answer *out)
{
	json_error_t je;
	memset(out, 0, sizeof(*out));
	json_t *doc = data != NULL ? json_loadb(data, len, 0, &je) : NULL;
	/* The agent answers its own failures (no such service, ...) as one object, not an
	 * array. */
	const json_t *first = json_is_array(doc) ? json_array_get(doc, 0) : doc;
	const json_t *rc = json_object_get(first, "result");
	if (!json_is_object(first) || !json_is_integer(rc)) {
		json_decref(doc);
		return fail(out, PK_KEA_BAD_ANSWER, "the %s service's answer is not Kea's result",
		            service);
	}
	out->outcome = PK_KEA_ANSWERED;
	out->result = (int)json_integer_value(rc);
	const char *text = json_string_value(json_object_get(first, "text"));
	snprintf(out->text, sizeof(out->text), "%s", text != NULL ? text : "");
	json_t *args = json_object_get(first, "arguments");
	out->arguments = json_is_object(args) ? json_incref(args) : NULL;
	json_decref(doc);
	return PK_KEA_ANSWERED;
}

/* The request's body; NULL when memory ran out. */
static char *request(const char *command, const char *service, const json_t *arguments)
{
	json_t *req = json_pack("{s:s, s:[s]}", "command", command, "service", service);
	if (req != NULL && arguments != NULL &&
	    json_object_set_new(req, "arguments", json_deep_copy(arguments)) != 0) {
		json_decref(req);
		return NULL;
	}
	char *text = req != NULL ? json_dumps(req, JSON_COMPACT) : NULL;
	json_decref(req);
	return text;
}

static void set_tls(CURL *h, const struct pk_kea_endpoint *ep)
{
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
	if (ep->ca_pem != NULL) {
		struct curl_blob b = {.data = (void *)(uintptr_t)ep->ca_pem,
		                      .len = ep->ca_len,
		                      .flags = CURL_BLOB_COPY};
		curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &b);
		curl_easy_setopt(h, CURLOPT_CAPATH, NULL);
	}
}

static enum pk_kea_outcome transfer_failed(CURLcode cc, const char *errbuf, const struct body *b,
                                           struct pk_kea_answer *out)
{
	const char *why = errbuf[0] != '\0' ? errbuf : curl_easy_strerror(cc);
	if (cc == CURLE_ABORTED_BY_CALLBACK)
		return fail(out, PK_KEA_CANCELLED, "%s", "cancelled");
	if (cc == CURLE_OPERATION_TIMEDOUT)
		return fail(out, PK_KEA_TIMEOUT, "no answer from the Kea control agent in time: %s",
		            why);
	if (b->too_large)
		return fail(out, PK_KEA_BAD_ANSWER, "%s", "the answer is larger than 4 MiB");
	if (cc == CURLE_OUT_OF_MEMORY || cc == CURLE_WRITE_ERROR)
		return fail(out, PK_KEA_NO_MEMORY, "%s", "out of memory");
	return fail(out, PK_KEA_UNREACHABLE, "cannot reach the Kea control agent: %s", why);
}

enum pk_kea_outcome pk_kea_command(const struct pk_kea_endpoint *ep, const char *command,
                                   const char *service, const json_t *arguments,
                                   struct pk_kea_answer *out)
{
	memset(out, 0, sizeof(*out));
	if (ep->cancel != NULL && atomic_load(ep->cancel) != 0)
		return fail(out, PK_KEA_CANCELLED, "%s", "cancelled");
	if (ep->user != NULL && strncmp(ep->url, "https://", 8) != 0)
		return fail(out, PK_KEA_UNREACHABLE, "%s: credentials are sent over https:// only",
		            ep->url);
	char *req = request(command, service, arguments);
	CURL *h = req != NULL ? curl_easy_init() : NULL;
	struct curl_slist *hdrs = curl_slist_append(NULL, "Content-Type: application/json");
	if (req == NULL || h == NULL || hdrs == NULL) {
		free(req);
		curl_easy_cleanup(h);
		curl_slist_free_all(hdrs);
		return fail(out, PK_KEA_NO_MEMORY, "%s", "out of memory");
	}
	struct body b = {0};
	char errbuf[CURL_ERROR_SIZE] = "";
	curl_easy_setopt(h, CURLOPT_URL, ep->url);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "https,http");
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, ep->timeout_ms > 0 ? ep->timeout_ms : 10000L);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, req);
	curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(req));
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(h, CURLOPT_XFERINFODATA, (void *)(uintptr_t)ep->cancel);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	set_tls(h, ep);
	if (ep->user != NULL) {
		curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(h, CURLOPT_USERNAME, ep->user);
		curl_easy_setopt(h, CURLOPT_PASSWORD, ep->password != NULL ? ep->password : "");
	}
	CURLcode cc = curl_easy_perform(h);
	long status = 0;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(h);
	curl_slist_free_all(hdrs);
	free(req);
	enum pk_kea_outcome o;
	if (cc != CURLE_OK)
		o = transfer_failed(cc, errbuf, &b, out);
	else if (status == 401 || status == 403)
		o = fail(out, PK_KEA_UNAUTHORIZED,
		         "the Kea control agent refused the credentials (HTTP %ld)", status);
	else if (status != 200)
		o = fail(out, PK_KEA_HTTP_ERROR, "the Kea control agent answered HTTP %ld", status);
	else
		o = pk_kea_answer_parse(b.data, b.len, service, out);
	out->http_status = status;
	free(b.data);
	return o;
}

void pk_kea_answer_clear(struct pk_kea_answer *a)
{
	if (a == NULL)
		return;
	json_decref(a->arguments);
	a->arguments = NULL;
}

const char *pk_kea_outcome_name(enum pk_kea_outcome o)
{
	switch (o) {
	case PK_KEA_ANSWERED:
		return "answered";
	case PK_KEA_UNREACHABLE:
		return "unreachable";
	case PK_KEA_TIMEOUT:
		return "timeout";
	case PK_KEA_UNAUTHORIZED:
		return "unauthorized";
	case PK_KEA_HTTP_ERROR:
		return "http error";
	case PK_KEA_BAD_ANSWER:
		return "bad answer";
	case PK_KEA_CANCELLED:
		return "cancelled";
	case PK_KEA_NO_MEMORY:
		return "no memory";
	}
	return "unknown";
}
