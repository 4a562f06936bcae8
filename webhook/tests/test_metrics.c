/* test_metrics.c - counters, the histogram and the exposition text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "metrics.h"

static void expect_line(const char *text, const char *line)
{
	char want[512];
	snprintf(want, sizeof(want), "\n%s\n", line);
	if (strstr(text, want) == NULL)
		fail_msg("no line \"%s\" in:\n%s", line, text);
}

static void test_empty(void **state)
{
	(void)state;
	struct pk_metrics *m = pk_metrics_new();
	size_t len = 0;
	char *t = pk_metrics_render(m, &len);
	assert_non_null(t);
	assert_int_equal(strlen(t), len);
	expect_line(
	    t, "poolkeeper_webhook_requests_total{endpoint=\"validate\",result=\"allowed\"} 0");
	expect_line(t, "poolkeeper_webhook_requests_total{endpoint=\"mutate\",result=\"error\"} 0");
	expect_line(t, "# TYPE poolkeeper_webhook_request_duration_seconds histogram");
	expect_line(t, "poolkeeper_webhook_certificate_reloads_total{result=\"failure\"} 0");
	expect_line(t, "poolkeeper_webhook_certificate_expiry_timestamp_seconds 0");
	assert_int_equal(t[len - 1], '\n');
	free(t);
	pk_metrics_free(m);
}

static void test_counts(void **state)
{
	(void)state;
	struct pk_metrics *m = pk_metrics_new();
	pk_metrics_observe_request(m, PK_ADMISSION_VALIDATE, PK_METRICS_ALLOWED, 0.0002);
	pk_metrics_observe_request(m, PK_ADMISSION_VALIDATE, PK_METRICS_ALLOWED, 0.003);
	pk_metrics_observe_request(m, PK_ADMISSION_VALIDATE, PK_METRICS_DENIED, 20);
	pk_metrics_observe_request(m, PK_ADMISSION_MUTATE, PK_METRICS_ERROR, -1); /* clamped */
	pk_metrics_observe_request(m, PK_ADMISSION_MUTATE, PK_METRICS_ERROR, 0.0 / 0.0);
	pk_metrics_observe_request(m, PK_ADMISSION_MUTATE, (enum pk_metrics_result)9, 0.1);
	pk_metrics_observe_request(NULL, PK_ADMISSION_MUTATE, PK_METRICS_ERROR, 0.1);
	pk_metrics_count_reload(m, true);
	pk_metrics_count_reload(m, false);
	pk_metrics_count_reload(m, false);
	pk_metrics_set_cert_expiry(m, 1893456000);
	assert_int_equal(pk_metrics_get_requests(m, PK_ADMISSION_VALIDATE, PK_METRICS_ALLOWED), 2);
	assert_int_equal(pk_metrics_get_requests(m, PK_ADMISSION_MUTATE, PK_METRICS_ERROR), 3);
	assert_int_equal(pk_metrics_get_reloads(m, false), 2);

	size_t len = 0;
	char *t = pk_metrics_render(m, &len);
	assert_non_null(t);
	expect_line(
	    t, "poolkeeper_webhook_requests_total{endpoint=\"validate\",result=\"allowed\"} 2");
	expect_line(t,
	            "poolkeeper_webhook_requests_total{endpoint=\"validate\",result=\"denied\"} 1");
	expect_line(t, "poolkeeper_webhook_requests_total{endpoint=\"mutate\",result=\"error\"} 3");
	/* Buckets are cumulative; 20 s only lands in +Inf. */
	expect_line(t, "poolkeeper_webhook_request_duration_seconds_bucket{endpoint=\"validate\","
	               "le=\"0.0005\"} 1");
	expect_line(t, "poolkeeper_webhook_request_duration_seconds_bucket{endpoint=\"validate\","
	               "le=\"0.005\"} 2");
	expect_line(t, "poolkeeper_webhook_request_duration_seconds_bucket{endpoint=\"validate\","
	               "le=\"10\"} 2");
	expect_line(t, "poolkeeper_webhook_request_duration_seconds_bucket{endpoint=\"validate\","
	               "le=\"+Inf\"} 3");
	expect_line(t,
	            "poolkeeper_webhook_request_duration_seconds_count{endpoint=\"validate\"} 3");
	expect_line(t, "poolkeeper_webhook_request_duration_seconds_bucket{endpoint=\"mutate\","
	               "le=\"0.0005\"} 2");
	expect_line(t, "poolkeeper_webhook_certificate_reloads_total{result=\"success\"} 1");
	expect_line(t, "poolkeeper_webhook_certificate_reloads_total{result=\"failure\"} 2");
	expect_line(t, "poolkeeper_webhook_certificate_expiry_timestamp_seconds 1893456000");
	assert_non_null(strstr(t, "poolkeeper_webhook_request_duration_seconds_sum{endpoint="
	                          "\"validate\"} 20.003200000"));
	free(t);
	pk_metrics_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_empty),
	    cmocka_unit_test(test_counts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
