/*
 * fuzz_lookup.c - libFuzzer target for the checks on a tenant's owner
 * reference before the webhook asks discovery about it: the input is split
 * at newlines into namespace, apiVersion, kind and name (missing parts are
 * NULL). Whatever they hold, nothing crashes; what is accepted yields a
 * discovery path of exactly "/api/<version>" or "/apis/<group>/<version>"
 * with nothing that could change it (no "..", '?', '#', '%', '\\', space or
 * control character); what is refused says why and leaves the target empty.
 */
#include <stdlib.h>
#include <string.h>

#include "permission.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_path(const struct pk_owner_target *t)
{
	const char *p = t->path;
	for (const char *c = p; *c != '\0'; c++)
		if (*c <= ' ' || *c >= 0x7f || strchr("?#%\\", *c) != NULL)
			abort();
	if (strstr(p, "..") != NULL || strstr(p, "//") != NULL)
		abort();
	char want[400];
	if (t->group[0] == '\0')
		snprintf(want, sizeof(want), "/api/%s", t->version);
	else
		snprintf(want, sizeof(want), "/apis/%s/%s", t->group, t->version);
	if (strcmp(p, want) != 0 || strchr(t->group, '/') != NULL ||
	    strchr(t->version, '/') != NULL || t->version[0] == '\0')
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 1);
	if (buf == NULL)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0'; /* a NUL inside ends that part early, as a C string would */
	char *part[4] = {NULL, NULL, NULL, NULL};
	char *s = buf;
	for (int i = 0; i < 4 && s != NULL; i++) {
		part[i] = s;
		s = strchr(s, '\n');
		if (s != NULL)
			*s++ = '\0';
	}
	struct pk_owner_target t;
	struct pk_err err = {{0}};
	int rc = pk_permission_owner_target(part[0], part[1], part[2], part[3], &t, &err);
	if (rc == PK_OK) {
		check_path(&t);
	} else {
		static const struct pk_owner_target zero;
		if (rc != PK_ERR_INVALID || err.msg[0] == '\0' || memcmp(&t, &zero, sizeof(t)) != 0)
			abort();
	}
	free(buf);
	return 0;
}
