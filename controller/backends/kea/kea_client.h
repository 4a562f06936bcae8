/*
 * kea_client.h - one command to an ISC Kea Control Agent (kea-ctrl-agent):
 * an HTTPS POST of {"command", "service": [service], "arguments"} with basic
 * authentication, answered with a JSON array holding one result per
 * service ({"result", "text", "arguments"}). Kea's result codes: 0 success,
 * 1 error (a lease that already exists, an address in no subnet), 2 the
 * command is not supported (its hook is not loaded), 3 nothing found.
 *
 * pk_kea_command blocks for at most the endpoint's deadline, and ends at
 * once when its cancel flag is set (from any thread). It never reads more
 * than PK_KEA_ANSWER_MAX bytes of an answer.
 *
 * Threading: any thread; calls share nothing.
 */
#ifndef PK_KEA_CLIENT_H
#define PK_KEA_CLIENT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "pk.h"

/* The largest answer read (a page of leases is well below it). */
#define PK_KEA_ANSWER_MAX (4u << 20)

/* Kea's result codes. */
#define PK_KEA_SUCCESS     0
#define PK_KEA_ERROR       1
#define PK_KEA_UNSUPPORTED 2
#define PK_KEA_EMPTY       3

/* Where and how to reach the agent (borrowed for the call). */
struct pk_kea_endpoint {
	const char *url;    /* "https://host:port/" (http:// only when no password is sent) */
	const char *ca_pem; /* PEM bundle that signs the agent's certificate; NULL: the system's */
	size_t ca_len;      /* its length */
	const char *user;   /* NULL: no authentication */
	const char *password;     /* with user */
	long timeout_ms;          /* the whole call's deadline (> 0) */
	const atomic_int *cancel; /* non-zero ends the call at once; NULL: never */
};

/* How a call ended. */
enum pk_kea_outcome {
	PK_KEA_ANSWERED = 0, /* the service answered: see result */
	PK_KEA_UNREACHABLE,  /* no connection, or TLS refused (the agent's certificate, ...) */
	PK_KEA_TIMEOUT,      /* no whole answer by the deadline */
	PK_KEA_UNAUTHORIZED, /* HTTP 401 or 403: the credentials are wrong */
	PK_KEA_HTTP_ERROR,   /* another HTTP status than 200 */
	PK_KEA_BAD_ANSWER,   /* not Kea's JSON array of results, or too large */
	PK_KEA_CANCELLED,    /* the cancel flag was set */
	PK_KEA_NO_MEMORY,
};

struct pk_kea_answer {
	enum pk_kea_outcome outcome;
	long http_status;          /* 0: none */
	int result;                /* PK_KEA_ANSWERED: Kea's result code */
	char text[PK_ERR_MSG_MAX]; /* Kea's text, or what went wrong */
	json_t *arguments;         /* owned; NULL when the answer had none */
};

/* Sends command to service with arguments (NULL: none); *out says how it ended. Returns
 * out->outcome. */
enum pk_kea_outcome pk_kea_command(const struct pk_kea_endpoint *ep, const char *command,
                                   const char *service, const json_t *arguments,
                                   struct pk_kea_answer *out);

/* Reads an answer's body (the first result of Kea's array, or the agent's own result object):
 * PK_KEA_ANSWERED with result, text and arguments, or PK_KEA_BAD_ANSWER. */
enum pk_kea_outcome pk_kea_answer_parse(const char *data, size_t len, const char *service,
                                        struct pk_kea_answer *out);

/* Releases what an answer holds (NULL is fine). */
void pk_kea_answer_clear(struct pk_kea_answer *a);

/* A word for an outcome ("answered", "unreachable", ...). */
const char *pk_kea_outcome_name(enum pk_kea_outcome o);

#endif
