/* test_metrics.c - counters, the histogram, the repair counters' label bounds and the
 * exposition text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
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
	expect_line(t, "poolkeeper_webhook_cache_oversized_objects_total 0");
	assert_int_equal(t[len - 1], '\n');
	free(t);
	pk_metrics_free(m);
}

static unsigned long long three(void *ud)
{
	assert_ptr_equal(ud, &three);
	return 3;
}

/* The cache's count of objects over its cap, read at each render. */
static void test_oversized_source(void **state)
{
	(void)state;
	struct pk_metrics *m = pk_metrics_new();
	pk_metrics_set_oversized_source(m, three, (void *)&three);
	size_t len = 0;
	char *t = pk_metrics_render(m, &len);
	assert_non_null(t);
	expect_line(t, "# TYPE poolkeeper_webhook_cache_oversized_objects_total counter");
	expect_line(t, "poolkeeper_webhook_cache_oversized_objects_total 3");
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

static void expect_no(const char *text, const char *part)
{
	if (strstr(text, part) != NULL)
		fail_msg("\"%s\" should not be in:\n%s", part, text);
}

static void test_repairs(void **state)
{
	(void)state;
	struct pk_metrics *m = pk_metrics_new();
	size_t len = 0;
	char *t = pk_metrics_render(m, &len);
	/* no repair yet: the families are declared, with no series and no "other" */
	expect_line(t, "# TYPE poolkeeper_webhook_claim_repairs_total counter");
	expect_line(t, "# TYPE poolkeeper_webhook_claim_repairs_skipped_total counter");
	assert_non_null(strstr(t, "# HELP poolkeeper_webhook_claim_repairs_total "));
	expect_no(t, "owner_kind=");
	free(t);

	pk_metrics_count_repair(m, "VSphereVM", "controller");
	pk_metrics_count_repair(m, "VSphereVM", "blockOwnerDeletion");
	pk_metrics_count_repair(m, "VSphereVM", "blockOwnerDeletion");
	pk_metrics_count_repair(m, "Metal3Data", "clusterName");
	pk_metrics_count_repair(m, "OpenStackServer", "skipped:permission");
	pk_metrics_count_repair(m, "VSphereVM", "skipped:timeout");
	pk_metrics_count_repair(m, "VSphereVM", "skipped:timeout");
	/* untrusted kinds never become label values of their own */
	pk_metrics_count_repair(m, "Bad\"Kind\n", "controller");
	pk_metrics_count_repair(m, "with-dash", "controller");
	pk_metrics_count_repair(m, "", "controller");
	pk_metrics_count_repair(m, NULL, "clusterName");
	pk_metrics_count_repair(m,
	                        "K123456789012345678901234567890123456789012345678901234567890123",
	                        "controller"); /* 64 characters */
	/* what is not a repair is not counted; NULL metrics are fine */
	pk_metrics_count_repair(m, "VSphereVM", "uid");
	pk_metrics_count_repair(m, "VSphereVM", NULL);
	pk_metrics_count_repair(NULL, "VSphereVM", "controller");

	assert_int_equal(pk_metrics_get_repairs(m, "VSphereVM", "controller"), 1);
	assert_int_equal(pk_metrics_get_repairs(m, "VSphereVM", "blockOwnerDeletion"), 2);
	assert_int_equal(pk_metrics_get_repairs(m, "VSphereVM", "clusterName"), 0);
	assert_int_equal(pk_metrics_get_repairs(m, "Metal3Data", "clusterName"), 1);
	assert_int_equal(pk_metrics_get_repairs(m, "OpenStackServer", "skipped:permission"), 1);
	assert_int_equal(pk_metrics_get_repairs(m, "VSphereVM", "skipped:timeout"), 2);
	assert_int_equal(pk_metrics_get_repairs(m, "other", "controller"), 4);
	assert_int_equal(pk_metrics_get_repairs(m, "other", "clusterName"), 1);
	assert_int_equal(pk_metrics_get_repairs(m, "with-dash", "controller"), 0);

	t = pk_metrics_render(m, &len);
	expect_line(t, "poolkeeper_webhook_claim_repairs_total{owner_kind=\"VSphereVM\","
	               "repair=\"controller\"} 1");
	expect_line(t, "poolkeeper_webhook_claim_repairs_total{owner_kind=\"VSphereVM\","
	               "repair=\"blockOwnerDeletion\"} 2");
	expect_line(t, "poolkeeper_webhook_claim_repairs_total{owner_kind=\"Metal3Data\","
	               "repair=\"clusterName\"} 1");
	expect_line(t, "poolkeeper_webhook_claim_repairs_total{owner_kind=\"other\","
	               "repair=\"controller\"} 4");
	expect_line(t, "poolkeeper_webhook_claim_repairs_skipped_total{owner_kind="
	               "\"OpenStackServer\",reason=\"permission\"} 1");
	expect_line(t, "poolkeeper_webhook_claim_repairs_skipped_total{owner_kind=\"VSphereVM\","
	               "reason=\"permission\"} 0");
	/* a permission check with no answer within the review's deadline */
	expect_line(t, "poolkeeper_webhook_claim_repairs_skipped_total{owner_kind=\"VSphereVM\","
	               "reason=\"timeout\"} 2");
	expect_line(t, "poolkeeper_webhook_claim_repairs_skipped_total{owner_kind="
	               "\"OpenStackServer\",reason=\"timeout\"} 0");
	expect_no(t, "Bad");
	expect_no(t, "with-dash");
	expect_no(t, "repair=\"skipped");
	free(t);
	pk_metrics_free(m);
}

/* At most PK_METRICS_REPAIR_KINDS kinds have a series; later ones count as "other". */
static void test_repair_kinds_bounded(void **state)
{
	(void)state;
	struct pk_metrics *m = pk_metrics_new();
	char kind[32];
	for (int i = 0; i < PK_METRICS_REPAIR_KINDS + 10; i++) {
		snprintf(kind, sizeof(kind), "Kind%d", i);
		pk_metrics_count_repair(m, kind, "controller");
	}
	snprintf(kind, sizeof(kind), "Kind%d", PK_METRICS_REPAIR_KINDS - 1);
	assert_int_equal(pk_metrics_get_repairs(m, kind, "controller"), 1);
	snprintf(kind, sizeof(kind), "Kind%d", PK_METRICS_REPAIR_KINDS);
	assert_int_equal(pk_metrics_get_repairs(m, kind, "controller"), 0);
	assert_int_equal(pk_metrics_get_repairs(m, "other", "controller"), 10);
	/* a kind that has its series keeps counting there */
	pk_metrics_count_repair(m, "Kind0", "controller");
	assert_int_equal(pk_metrics_get_repairs(m, "Kind0", "controller"), 2);
	size_t len = 0;
	char *t = pk_metrics_render(m, &len);
	size_t series = 0;
	for (const char *p = t;
	     (p = strstr(p, "\npoolkeeper_webhook_claim_repairs_total{")) != NULL; p++)
		series++;
	assert_int_equal(series, (PK_METRICS_REPAIR_KINDS + 1) * 3);
	expect_line(t, "poolkeeper_webhook_claim_repairs_total{owner_kind=\"other\","
	               "repair=\"controller\"} 10");
	free(t);
	pk_metrics_free(m);
}

#define THREADS 8
#define PER     2000

static void *count_many(void *ud)
{
	struct pk_metrics *m = ud;
	char kind[32];
	for (int i = 0; i < PER; i++) {
		snprintf(kind, sizeof(kind), "Kind%d", i % 100);
		pk_metrics_count_repair(m, kind, "blockOwnerDeletion");
	}
	return NULL;
}

/* Threads racing to add kinds: every count lands once, no kind gets two series. */
static void test_repairs_threads(void **state)
{
	(void)state;
	struct pk_metrics *m = pk_metrics_new();
	pthread_t th[THREADS];
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, count_many, m), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	uint64_t total = pk_metrics_get_repairs(m, "other", "blockOwnerDeletion");
	char kind[32];
	for (int k = 0; k < 100; k++) {
		snprintf(kind, sizeof(kind), "Kind%d", k);
		total += pk_metrics_get_repairs(m, kind, "blockOwnerDeletion");
	}
	assert_int_equal(total, THREADS * PER);
	size_t len = 0;
	char *t = pk_metrics_render(m, &len);
	size_t series = 0;
	for (const char *p = t; (p = strstr(p, "repair=\"blockOwnerDeletion\"}")) != NULL; p++)
		series++;
	assert_int_equal(series, PK_METRICS_REPAIR_KINDS + 1);
	free(t);
	pk_metrics_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_empty),           cmocka_unit_test(test_counts),
	    cmocka_unit_test(test_repairs),         cmocka_unit_test(test_repair_kinds_bounded),
	    cmocka_unit_test(test_repairs_threads), cmocka_unit_test(test_oversized_source),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
