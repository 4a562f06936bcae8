/* fuzz_kea_answer.c - any bytes as a Kea Control Agent's answer (pk_kea_answer_parse): read or
 * refused, never a crash or a leak; an answer read has a text that is a C string. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kea_client.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pk_kea_answer a;
	enum pk_kea_outcome o = pk_kea_answer_parse((const char *)data, size, "dhcp4", &a);
	if (o == PK_KEA_ANSWERED && strlen(a.text) >= sizeof(a.text))
		__builtin_trap();
	if (o != PK_KEA_ANSWERED && a.arguments != NULL)
		__builtin_trap();
	pk_kea_answer_clear(&a);
	return 0;
}
