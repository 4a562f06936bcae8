/*
 * test_apierr.c - failed API requests as one line: each class of failure
 * names the object and the verb, and the ones an operator fixes (RBAC,
 * credentials, reachability) say so.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "apierr.h"

static void test_lines(void **state)
{
	(void)state;
	static const struct {
		enum pk_kube_reason reason;
		long code;
		const char *ns;
		const char *want;
	} v[] = {
	    {PK_KUBE_FORBIDDEN, 403, "ns1",
	     "Secret ns1/s: get: forbidden: the identity needs \"get\" on secrets in namespace "
	     "ns1 (RBAC, or an admission policy refused it): server says"},
	    {PK_KUBE_FORBIDDEN, 403, NULL,
	     "Secret ns1/s: get: forbidden: the identity needs \"get\" on secrets "
	     "(cluster-scoped)"},
	    {PK_KUBE_UNAUTHORIZED, 401, "ns1",
	     "Secret ns1/s: get: unauthorized: the API server did not accept the credentials: "
	     "server says"},
	    {PK_KUBE_CONNECTION, 0, "ns1",
	     "Secret ns1/s: get: API server unreachable: server says"},
	    {PK_KUBE_TIMEOUT, 504, "ns1", "Secret ns1/s: get: timed out: server says"},
	    {PK_KUBE_INVALID, 422, "ns1", "Secret ns1/s: get: Invalid (HTTP 422): server says"},
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct pk_kube_error e = {.reason = v[i].reason, .code = v[i].code};
		snprintf(e.message, sizeof(e.message), "server says");
		struct pk_err err = {{0}};
		assert_int_equal(pk_apierr(&err, "Secret ns1/s", "get", "secrets", v[i].ns, &e),
		                 PK_ERR_INVALID);
		if (strstr(err.msg, v[i].want) == NULL)
			fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err.msg, v[i].want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_lines),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
