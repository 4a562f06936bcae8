/* test_registry.c - --backends: the names this build has, and clear errors for the rest. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "registry.h"

static void test_default_and_find(void **state)
{
	(void)state;
	const struct pk_registry_entry *out[PK_REGISTRY_MAX];
	size_t n = 0;
	struct pk_err err;
	assert_int_equal(pk_registry_parse(PK_REGISTRY_DEFAULT, out, &n, &err), PK_OK);
	assert_int_equal(n, 1);
	assert_string_equal(out[0]->name, "incluster");
	assert_ptr_equal(out[0], pk_registry_find("incluster"));
	assert_non_null(out[0]->create);
	assert_null(pk_registry_find("kea"));
	assert_null(pk_registry_find(""));
	assert_null(pk_registry_find(NULL));
}

/* Each bad list is refused with the value, the bad name and the names this build has. */
static void test_bad_lists(void **state)
{
	(void)state;
	static const struct {
		const char *list, *want;
	} bad[] = {
	    {"", "--backends: empty; name at least one backend (this build has: incluster)"},
	    {"kea",
	     "--backends \"kea\": \"kea\" is not a backend of this build (it has: incluster)"},
	    {"incluster,", "--backends \"incluster,\": \"\" is not a backend of this build"},
	    {",incluster", "\"\" is not a backend of this build"},
	    {"incluster, incluster", "\" incluster\" is not a backend of this build"},
	    {"InCluster", "\"InCluster\" is not a backend of this build"},
	    {"incluster,incluster",
	     "--backends \"incluster,incluster\": \"incluster\" is named twice"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const struct pk_registry_entry *out[PK_REGISTRY_MAX];
		size_t n = 7;
		struct pk_err err = {{0}};
		if (pk_registry_parse(bad[i].list, out, &n, &err) != PK_ERR_INVALID)
			fail_msg("\"%s\" was accepted", bad[i].list);
		if (strstr(err.msg, bad[i].want) == NULL)
			fail_msg("\"%s\": %s; want %s", bad[i].list, err.msg, bad[i].want);
	}
	const struct pk_registry_entry *out[PK_REGISTRY_MAX];
	size_t n = 0;
	struct pk_err err;
	assert_int_equal(pk_registry_parse(NULL, out, &n, &err), PK_ERR_INVALID);
	assert_int_equal(n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_default_and_find),
	    cmocka_unit_test(test_bad_lists),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
