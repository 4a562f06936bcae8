/*
 * test_kea_client.c - one command to a Kea Control Agent, over HTTPS with
 * basic authentication, against a scripted server on loopback (the
 * client's error handling): Kea's answer read (its array and the agent's
 * own object), credentials refused, other HTTP statuses, answers that are
 * not Kea's or too large, the deadline, cancellation from another thread,
 * nothing listening, an agent certificate of another CA, and a password
 * never sent over plain http. test_kea_real.c runs the same client against
 * a real Kea.
 */
#define _GNU_SOURCE /* strcasestr */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "kea_client.h"
#include "kube_fakeserver.h"

struct fixture {
	struct fake_server fs;
	struct fs_pki pki, other;
	struct fs_response next; /* what the server answers */
	char url[64];
	atomic_int cancel;
};

static void respond(void *ud, int index, const struct fs_request *req, struct fs_response *out)
{
	(void)index, (void)req;
	*out = ((struct fixture *)ud)->next;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	assert_int_equal(fs_pki_new(&f->pki, "kea-test-ca"), 0);
	assert_int_equal(fs_pki_new(&f->other, "another-ca"), 0);
	SSL_CTX *tls = fs_pki_server_ctx(&f->pki);
	assert_non_null(tls);
	assert_int_equal(fs_start_tls(&f->fs, respond, f, tls), 0);
	SSL_CTX_free(tls);
	snprintf(f->url, sizeof(f->url), "https://127.0.0.1:%d/", f->fs.port);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	fs_stop(&f->fs);
	fs_pki_free(&f->pki);
	fs_pki_free(&f->other);
	free(f);
	return 0;
}

static struct pk_kea_endpoint endpoint(struct fixture *f)
{
	return (struct pk_kea_endpoint){.url = f->url,
	                                .ca_pem = f->pki.ca_pem,
	                                .ca_len = strlen(f->pki.ca_pem),
	                                .user = "poolkeeper",
	                                .password = "s3cret",
	                                .timeout_ms = 5000,
	                                .cancel = &f->cancel};
}

static void answer(struct fixture *f, int status, const char *body)
{
	f->next = (struct fs_response){.status = status, .body = body};
}

static void reads_keas_answer_and_sends_the_command(void **state)
{
	struct fixture *f = *state;
	answer(f, 200,
	       "[ { \"result\": 0, \"text\": \"Lease for address 10.77.0.5 added.\", "
	       "\"arguments\": {\"ip-address\": \"10.77.0.5\"} } ]");
	struct pk_kea_endpoint ep = endpoint(f);
	json_t *args = json_pack("{s:s}", "ip-address", "10.77.0.5");
	struct pk_kea_answer a;
	assert_int_equal(pk_kea_command(&ep, "lease4-add", "dhcp4", args, &a), PK_KEA_ANSWERED);
	assert_int_equal(a.result, PK_KEA_SUCCESS);
	assert_int_equal(a.http_status, 200);
	assert_string_equal(a.text, "Lease for address 10.77.0.5 added.");
	assert_string_equal(json_string_value(json_object_get(a.arguments, "ip-address")),
	                    "10.77.0.5");
	pk_kea_answer_clear(&a);
	json_decref(args);
	assert_int_equal(f->fs.nreq, 1);
	const struct fs_request *r = &f->fs.reqs[0];
	assert_string_equal(r->method, "POST");
	json_t *sent = json_loads(r->body, 0, NULL);
	assert_string_equal(json_string_value(json_object_get(sent, "command")), "lease4-add");
	assert_string_equal(json_string_value(json_array_get(json_object_get(sent, "service"), 0)),
	                    "dhcp4");
	assert_non_null(json_object_get(json_object_get(sent, "arguments"), "ip-address"));
	json_decref(sent);
	/* poolkeeper:s3cret, and Kea's content type (the agent refuses any other). */
	assert_non_null(strcasestr(r->headers, "Authorization: Basic cG9vbGtlZXBlcjpzM2NyZXQ="));
	assert_non_null(strcasestr(r->headers, "Content-Type: application/json"));
}

/* Result codes other than success are answers too; the agent's own failures come as one
 * object, not an array. */
static void keas_failures_are_answers(void **state)
{
	struct fixture *f = *state;
	struct pk_kea_endpoint ep = endpoint(f);
	struct pk_kea_answer a;
	answer(f, 200, "[{\"result\": 1, \"text\": \"IPv4 lease already exists.\"}]");
	assert_int_equal(pk_kea_command(&ep, "lease4-add", "dhcp4", NULL, &a), PK_KEA_ANSWERED);
	assert_int_equal(a.result, PK_KEA_ERROR);
	assert_string_equal(a.text, "IPv4 lease already exists.");
	assert_null(a.arguments);
	answer(f, 200,
	       "{\"result\": 1, \"text\": \"unable to forward command to the dhcp6 "
	       "service\"}");
	assert_int_equal(pk_kea_command(&ep, "lease6-add", "dhcp6", NULL, &a), PK_KEA_ANSWERED);
	assert_int_equal(a.result, PK_KEA_ERROR);
	assert_non_null(strstr(a.text, "dhcp6 service"));
}

static void refused_credentials_and_other_statuses(void **state)
{
	struct fixture *f = *state;
	struct pk_kea_endpoint ep = endpoint(f);
	struct pk_kea_answer a;
	answer(f, 401, "{ \"result\": 401, \"text\": \"Unauthorized\" }");
	assert_int_equal(pk_kea_command(&ep, "version-get", "dhcp4", NULL, &a),
	                 PK_KEA_UNAUTHORIZED);
	assert_non_null(strstr(a.text, "refused the credentials (HTTP 401)"));
	answer(f, 403, "");
	assert_int_equal(pk_kea_command(&ep, "version-get", "dhcp4", NULL, &a),
	                 PK_KEA_UNAUTHORIZED);
	answer(f, 503, "busy");
	assert_int_equal(pk_kea_command(&ep, "version-get", "dhcp4", NULL, &a), PK_KEA_HTTP_ERROR);
	assert_non_null(strstr(a.text, "HTTP 503"));
	assert_int_equal(a.http_status, 503);
}

static void answers_that_are_not_keas(void **state)
{
	struct fixture *f = *state;
	struct pk_kea_endpoint ep = endpoint(f);
	struct pk_kea_answer a;
	static const char *const bad[] = {
	    "", "not json", "[]", "[1]", "[{\"text\": \"x\"}]", "{\"result\": \"0\"}", "null"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		answer(f, 200, bad[i]);
		if (pk_kea_command(&ep, "version-get", "dhcp4", NULL, &a) != PK_KEA_BAD_ANSWER)
			fail_msg("read \"%s\" as an answer", bad[i]);
		assert_non_null(strstr(a.text, "dhcp4 service's answer is not Kea's result"));
		assert_null(a.arguments);
	}
	/* Larger than PK_KEA_ANSWER_MAX: the read stops there. */
	size_t n = PK_KEA_ANSWER_MAX + 1024;
	char *huge = malloc(n + 1);
	assert_non_null(huge);
	memset(huge, ' ', n);
	huge[0] = '[';
	huge[n] = '\0';
	f->next = (struct fs_response){.status = 200, .body = huge, .body_len = n};
	assert_int_equal(pk_kea_command(&ep, "lease4-get-page", "dhcp4", NULL, &a),
	                 PK_KEA_BAD_ANSWER);
	assert_non_null(strstr(a.text, "larger than 4 MiB"));
	free(huge);
}

static void the_deadline_ends_a_slow_call(void **state)
{
	struct fixture *f = *state;
	struct pk_kea_endpoint ep = endpoint(f);
	ep.timeout_ms = 300;
	struct pk_kea_answer a;
	f->next =
	    (struct fs_response){.status = 200, .body = "[{\"result\": 0}]", .delay_ms = 2000};
	/* Ended before the answer came (TIMEOUT, not ANSWERED). */
	assert_int_equal(pk_kea_command(&ep, "version-get", "dhcp4", NULL, &a), PK_KEA_TIMEOUT);
	assert_non_null(strstr(a.text, "no answer from the Kea control agent in time"));
}

static void *cancel_later(void *arg)
{
	struct fixture *f = arg;
	fs_sleep_ms(200);
	atomic_store(&f->cancel, 1);
	return NULL;
}

static void cancel_ends_a_call_at_once(void **state)
{
	struct fixture *f = *state;
	struct pk_kea_endpoint ep = endpoint(f);
	struct pk_kea_answer a;
	f->next =
	    (struct fs_response){.status = 200, .body = "[{\"result\": 0}]", .delay_ms = 2000};
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, cancel_later, f), 0);
	/* Ended before the answer came (CANCELLED, not ANSWERED). */
	assert_int_equal(pk_kea_command(&ep, "version-get", "dhcp4", NULL, &a), PK_KEA_CANCELLED);
	pthread_join(t, NULL);
	/* Once cancelled, nothing more is sent. */
	int before = f->fs.nreq;
	assert_int_equal(pk_kea_command(&ep, "version-get", "dhcp4", NULL, &a), PK_KEA_CANCELLED);
	assert_int_equal(f->fs.nreq, before);
}

static void unreachable_and_untrusted_agents(void **state)
{
	struct fixture *f = *state;
	struct pk_kea_endpoint ep = endpoint(f);
	struct pk_kea_answer a;
	char url[64];
	snprintf(url, sizeof(url), "https://127.0.0.1:%d/", fs_closed_port());
	ep.url = url;
	assert_int_equal(pk_kea_command(&ep, "version-get", "dhcp4", NULL, &a), PK_KEA_UNREACHABLE);
	assert_non_null(strstr(a.text, "cannot reach the Kea control agent"));
	/* The agent's certificate is not of the CA the endpoint trusts: no request is read. */
	ep = endpoint(f);
	ep.ca_pem = f->other.ca_pem;
	ep.ca_len = strlen(f->other.ca_pem);
	answer(f, 200, "[{\"result\": 0}]");
	assert_int_equal(pk_kea_command(&ep, "version-get", "dhcp4", NULL, &a), PK_KEA_UNREACHABLE);
	assert_int_equal(f->fs.nreq, 0);
	/* A password is never sent in the clear. */
	ep = endpoint(f);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/", f->fs.port);
	ep.url = url;
	assert_int_equal(pk_kea_command(&ep, "version-get", "dhcp4", NULL, &a), PK_KEA_UNREACHABLE);
	assert_non_null(strstr(a.text, "credentials are sent over https:// only"));
	assert_int_equal(f->fs.nreq, 0);
	assert_string_equal(pk_kea_outcome_name(PK_KEA_UNREACHABLE), "unreachable");
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN); /* the server answers calls the client gave up on */
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(reads_keas_answer_and_sends_the_command, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(keas_failures_are_answers, setup, teardown),
	    cmocka_unit_test_setup_teardown(refused_credentials_and_other_statuses, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(answers_that_are_not_keas, setup, teardown),
	    cmocka_unit_test_setup_teardown(the_deadline_ends_a_slow_call, setup, teardown),
	    cmocka_unit_test_setup_teardown(cancel_ends_a_call_at_once, setup, teardown),
	    cmocka_unit_test_setup_teardown(unreachable_and_untrusted_agents, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
