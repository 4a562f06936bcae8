/*
 * testcerts.h - throwaway PKI for the webhook's tests: a CA and serving
 * pairs for 127.0.0.1/localhost, made with the openssl command line in a
 * temporary folder. Header-only so each test file stays one module's.
 */
#ifndef PK_TESTCERTS_H
#define PK_TESTCERTS_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tempdir.h"

struct testpki {
	char dir[256];
	char ca[300];   /* CA certificate */
	char cert[300]; /* serving certificate (the file the webhook watches) */
	char key[300];  /* its key */
};

static inline bool testpki_run(const char *cmd)
{
	int rc = system(cmd);
	if (rc != 0)
		fprintf(stderr, "testpki: command failed (%d): %s\n", rc, cmd);
	return rc == 0;
}

/*
 * Issues a pair with subject CN=`cn` into `crt` and `key`: written beside
 * them and renamed into place (certificate first, then key), the way a
 * careful writer replaces them.
 */
static inline bool testpki_issue(const struct testpki *p, const char *cn, const char *crt,
                                 const char *key)
{
	char cmd[2048];
	snprintf(cmd, sizeof(cmd),
	         "cd '%s' && openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
	         "-keyout next.key -out next.csr -subj '/CN=%s' 2>/dev/null && "
	         "printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' > next.ext && "
	         "openssl x509 -req -in next.csr -CA ca.crt -CAkey ca.key -CAcreateserial "
	         "-days 2 -extfile next.ext -out next.crt 2>/dev/null && "
	         "mv next.crt '%s' && mv next.key '%s'",
	         p->dir, cn, crt, key);
	return testpki_run(cmd);
}

/* A CA and a first pair (CN=`cn`) in a new temporary folder. */
static inline bool testpki_init(struct testpki *p, const char *cn)
{
	if (pk_test_tempdir_make(p->dir, sizeof(p->dir), "pk-webhook") != 0)
		return false;
	snprintf(p->ca, sizeof(p->ca), "%s/ca.crt", p->dir);
	snprintf(p->cert, sizeof(p->cert), "%s/tls.crt", p->dir);
	snprintf(p->key, sizeof(p->key), "%s/tls.key", p->dir);
	char cmd[1024];
	snprintf(cmd, sizeof(cmd),
	         "cd '%s' && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 "
	         "-nodes -keyout ca.key -out ca.crt -subj '/CN=poolkeeper-test-ca' -days 2 "
	         "2>/dev/null",
	         p->dir);
	return testpki_run(cmd) && testpki_issue(p, cn, p->cert, p->key);
}

static inline void testpki_cleanup(struct testpki *p)
{
	if (p->dir[0] != '\0')
		(void)pk_test_tempdir_remove(p->dir);
}

static inline bool testpki_write(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (f == NULL)
		return false;
	bool ok = fputs(text, f) >= 0;
	return fclose(f) == 0 && ok;
}

#endif
