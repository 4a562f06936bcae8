/*
 * fuzz_kube_status.c - libFuzzer target for decoding failed API answers:
 * any body with any status code must give a reason, a bounded message and
 * no crash or leak (the body is what a hostile or broken server sends).
 *
 * Input layout: bytes 0-1 are the HTTP status code (big-endian, mod 600),
 * the rest is the body.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	long code = ((long)data[0] << 8 | data[1]) % 600;
	struct pk_kube_error e;
	enum pk_kube_reason r = pk_kube_status_decode(code, (const char *)data + 2, size - 2, &e);
	if ((unsigned)r > PK_KUBE_UNKNOWN || strlen(e.message) >= sizeof(e.message) ||
	    strlen(e.status_reason) >= sizeof(e.status_reason) || e.retry_after_s < 0)
		abort();
	if (r == PK_KUBE_OK && (code < 200 || code >= 300))
		abort();
	if (pk_kube_reason_name(r) == NULL)
		abort();
	return 0;
}
