/*
 * test_log.c - the daemons' log lines: text and JSON shapes, quoting and
 * escaping, the level threshold (arguments of a dropped event are never
 * evaluated), the errno variant, and long lines cut so they still parse.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <unistd.h>

#include "log.h"

static const struct pk_log_field END = PK_LOG_END;

static void test_text(void **state)
{
	(void)state;
	char buf[PK_LOG_LINE_MAX];
	struct pk_log_field f[] = {PK_LOG_STR("listener", "webhook"),
	                           PK_LOG_UINT("port", 9443),
	                           PK_LOG_INT("delta", -3),
	                           PK_LOG_BOOL("tls", true),
	                           PK_LOG_FLOAT("seconds", 0.25),
	                           PK_LOG_STR("reason", "a \"b\" c"),
	                           PK_LOG_STR("empty", ""),
	                           PK_LOG_STR("null", NULL),
	                           END};
	size_t n =
	    pk_log_format_line(buf, sizeof(buf), PK_LOG_TEXT, PK_LOG_INFO, 0, "listening", f);
	assert_int_equal(n, strlen(buf));
	assert_true(!strncmp(buf, "ts=", 3));
	assert_int_equal(buf[n - 1], '\n');
	assert_non_null(strstr(buf, "Z level=info msg=\"listening\" listener=webhook port=9443 "
	                            "delta=-3 tls=true seconds=0.25 reason=\"a \\\"b\\\" c\" "
	                            "empty=\"\" null=\"\"\n"));
	/* One event, one line: control bytes are escaped. */
	struct pk_log_field g[] = {PK_LOG_STR("v", "x\ny\r\tz\x01"), END};
	pk_log_format_line(buf, sizeof(buf), PK_LOG_TEXT, PK_LOG_WARN, 0, "m", g);
	assert_non_null(strstr(buf, "level=warn msg=\"m\" v=\"x\\ny\\r\\tz\\u0001\"\n"));
	assert_int_equal(strchr(buf, '\n'), buf + strlen(buf) - 1);
}

static void test_json(void **state)
{
	(void)state;
	char buf[PK_LOG_LINE_MAX];
	struct pk_log_field f[] = {
	    PK_LOG_STR("listener", "webhook"),  PK_LOG_UINT("port", 9443),
	    PK_LOG_BOOL("ok", false),           PK_LOG_FLOAT("nan", 0.0 / 0.0),
	    PK_LOG_STR("weird", "q\"\\\n\x7f"), END};
	pk_log_format_line(buf, sizeof(buf), PK_LOG_JSON, PK_LOG_ERROR, EACCES, "cannot \"open\"",
	                   f);
	json_error_t je;
	json_t *doc = json_loads(buf, 0, &je);
	if (doc == NULL)
		fail_msg("not JSON (%s): %s", je.text, buf);
	assert_string_equal(json_string_value(json_object_get(doc, "level")), "error");
	assert_string_equal(json_string_value(json_object_get(doc, "msg")), "cannot \"open\"");
	assert_string_equal(json_string_value(json_object_get(doc, "listener")), "webhook");
	assert_int_equal(json_integer_value(json_object_get(doc, "port")), 9443);
	assert_true(json_is_false(json_object_get(doc, "ok")));
	assert_true(json_is_null(json_object_get(doc, "nan")));
	assert_string_equal(json_string_value(json_object_get(doc, "weird")), "q\"\\\n\x7f");
	assert_string_equal(json_string_value(json_object_get(doc, "error")), strerror(EACCES));
	assert_non_null(json_object_get(doc, "ts"));
	/* Keys in order: ts, level, msg first. */
	assert_true(!strncmp(buf, "{\"ts\":\"", 7));
	assert_non_null(strstr(buf, "\",\"level\":\"error\",\"msg\":"));
	json_decref(doc);
}

static void test_cut(void **state)
{
	(void)state;
	static char big[3 * PK_LOG_LINE_MAX];
	memset(big, 'x', sizeof(big) - 1);
	big[100] = '"';
	big[sizeof(big) - 1] = '\0';
	struct pk_log_field f[] = {PK_LOG_STR("small", "kept"), PK_LOG_STR("big", big),
	                           PK_LOG_STR("after", "dropped"), END};
	char buf[PK_LOG_LINE_MAX];
	size_t n = pk_log_format_line(buf, sizeof(buf), PK_LOG_JSON, PK_LOG_INFO, 0, "m", f);
	assert_true(n < sizeof(buf));
	json_t *doc = json_loads(buf, 0, NULL);
	assert_non_null(doc);
	assert_string_equal(json_string_value(json_object_get(doc, "small")), "kept");
	assert_true(json_is_true(json_object_get(doc, "cut")));
	assert_null(json_object_get(doc, "big"));
	json_decref(doc);
	n = pk_log_format_line(buf, sizeof(buf), PK_LOG_TEXT, PK_LOG_INFO, 0, "m", f);
	assert_non_null(strstr(buf, "small=kept cut=true\n"));
	/* Tiny buffers never overflow. */
	char tiny[30];
	pk_log_format_line(tiny, sizeof(tiny), PK_LOG_JSON, PK_LOG_INFO, 0, "m", f);
	assert_true(strlen(tiny) < sizeof(tiny));
	pk_log_format_line(tiny, 4, PK_LOG_JSON, PK_LOG_INFO, 0, "m", f);
	assert_int_equal(tiny[0], '\0');
}

static int evaluated;
static const char *count_eval(void)
{
	evaluated++;
	return "v";
}

/* Reads what the log wrote to a pipe. */
static size_t drain(int fd, char *buf, size_t cap)
{
	size_t len = 0;
	ssize_t n;
	while (len + 1 < cap && (n = read(fd, buf + len, cap - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	return len;
}

static void test_levels_and_write(void **state)
{
	(void)state;
	int p[2];
	assert_int_equal(pipe(p), 0);
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	pk_log_set_fd(p[1]);
	pk_log_set_format(PK_LOG_TEXT);
	pk_log_set_level(PK_LOG_INFO);

	evaluated = 0;
	pk_log_debug("hidden", PK_LOG_STR("k", count_eval()));
	assert_int_equal(evaluated, 0);
	pk_log_info("shown", PK_LOG_STR("k", count_eval()));
	assert_int_equal(evaluated, 1);
	pk_log_warn("no fields");
	char buf[4096];
	drain(p[0], buf, sizeof(buf));
	assert_null(strstr(buf, "hidden"));
	assert_non_null(strstr(buf, "level=info msg=\"shown\" k=v\n"));
	assert_non_null(strstr(buf, "level=warn msg=\"no fields\"\n"));

	/* -v: debug shows; out-of-range levels are clamped. */
	pk_log_set_level((enum pk_log_level)(PK_LOG_INFO + 5));
	assert_true(pk_log_enabled(PK_LOG_DEBUG));
	pk_log_debug("now shown");
	pk_log_set_level(PK_LOG_ERROR);
	pk_log_warn("dropped");
	errno = ENOENT;
	pk_log_errno(PK_LOG_ERROR, "cannot open", PK_LOG_STR("file", "/x"));
	assert_int_equal(errno, ENOENT);
	pk_log_set_format(PK_LOG_JSON);
	pk_log_error("as json", PK_LOG_INT("n", 1));
	drain(p[0], buf, sizeof(buf));
	assert_non_null(strstr(buf, "level=debug msg=\"now shown\"\n"));
	assert_null(strstr(buf, "dropped"));
	char want[256];
	snprintf(want, sizeof(want), "msg=\"cannot open\" file=/x error=\"%s\"\n",
	         strerror(ENOENT));
	assert_non_null(strstr(buf, want));
	assert_non_null(strstr(buf, "\"msg\":\"as json\",\"n\":1}\n"));

	pk_log_set_fd(2);
	pk_log_set_format(PK_LOG_TEXT);
	pk_log_set_level(PK_LOG_INFO);
	close(p[0]);
	close(p[1]);
}

static void test_parse_format(void **state)
{
	(void)state;
	enum pk_log_format f;
	struct pk_err err = {{0}};
	assert_int_equal(pk_log_parse_format("text", &f, &err), PK_OK);
	assert_int_equal(f, PK_LOG_TEXT);
	assert_int_equal(pk_log_parse_format("json", &f, &err), PK_OK);
	assert_int_equal(f, PK_LOG_JSON);
	assert_int_equal(pk_log_parse_format("yaml", &f, &err), PK_ERR_INVALID);
	assert_non_null(strstr(err.msg, "--log-format"));
	assert_non_null(strstr(err.msg, "yaml"));
	assert_int_equal(pk_log_parse_format(NULL, &f, &err), PK_ERR_INVALID);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_text),         cmocka_unit_test(test_json),
	    cmocka_unit_test(test_cut),          cmocka_unit_test(test_levels_and_write),
	    cmocka_unit_test(test_parse_format),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
