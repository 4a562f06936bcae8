/*
 * kea_fixture.h - a real Kea for a suite: e2e/kea starts it on loopback in
 * a temporary folder of the suite's own (group setup) and takes it down
 * (group teardown); endpoint() reaches its agent as poolkeeper. Include
 * after <cmocka.h>.
 */
#ifndef PK_TEST_KEA_FIXTURE_H
#define PK_TEST_KEA_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kea_client.h"
#include "tempdir.h"

struct kea {
	char dir[256];
	char url[512];
	char password[512];
	char *ca;
	size_t ca_len;
};

static struct kea kea; /* the suite's one Kea */

/* Runs e2e/kea with its state in the test's folder; its exit status. */
static inline int run_kea(const char *args)
{
	char cmd[1024];
	snprintf(cmd, sizeof(cmd),
	         "PK_KEA_STATE='%s/kea' PK_E2E_LOG_DIR='%s/logs' '%s/e2e/kea' %s >'%s/out' 2>&1",
	         kea.dir, kea.dir, getenv("PK_SOURCE_DIR"), args, kea.dir);
	int rc = system(cmd);
	if (rc != 0) {
		snprintf(cmd, sizeof(cmd), "cat '%s/out' '%s'/logs/*.log >&2", kea.dir, kea.dir);
		(void)system(cmd);
	}
	return rc;
}

/* VALUE of NAME=VALUE in the state file. */
static inline void state_value(const char *name, char *out, size_t len)
{
	char path[512], line[512];
	snprintf(path, sizeof(path), "%s/kea/state.env", kea.dir);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	out[0] = '\0';
	size_t n = strlen(name);
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, name, n) == 0 && line[n] == '=') {
			line[strcspn(line, "\n")] = '\0';
			snprintf(out, len, "%s", line + n + 1);
		}
	fclose(f);
	assert_true(out[0] != '\0');
}

static inline char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	char *buf = calloc(1, 65536);
	assert_non_null(buf);
	*len = fread(buf, 1, 65535, f);
	fclose(f);
	return buf;
}

static inline int group_setup(void **state)
{
	(void)state;
	assert_int_equal(pk_test_tempdir_make(kea.dir, sizeof(kea.dir), "pk-kea"), 0);
	assert_int_equal(run_kea("up"), 0);
	state_value("KEA_URL", kea.url, sizeof(kea.url));
	state_value("KEA_PASSWORD", kea.password, sizeof(kea.password));
	char path[512];
	snprintf(path, sizeof(path), "%s/kea/pki/ca.crt", kea.dir);
	kea.ca = slurp(path, &kea.ca_len);
	return 0;
}

static inline int group_teardown(void **state)
{
	(void)state;
	(void)run_kea("down");
	free(kea.ca);
	return pk_test_tempdir_remove(kea.dir);
}

static inline struct pk_kea_endpoint endpoint(void)
{
	return (struct pk_kea_endpoint){.url = kea.url,
	                                .ca_pem = kea.ca,
	                                .ca_len = kea.ca_len,
	                                .user = "poolkeeper",
	                                .password = kea.password,
	                                .timeout_ms = 10000};
}

#endif
