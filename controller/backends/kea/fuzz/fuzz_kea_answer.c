/* fuzz_kea_answer.c - any bytes as a Kea Control Agent's answer (pk_kea_answer_parse), and
 * each lease in it as the backend reads it (pk_kea_lease_read): read or refused, never a crash
 * or a leak; a lease read as ours names a claim. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kea_client.h"
#include "kea_lease.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pk_kea_answer a;
	enum pk_kea_outcome o = pk_kea_answer_parse((const char *)data, size, "dhcp4", &a);
	if (o == PK_KEA_ANSWERED && strlen(a.text) >= sizeof(a.text))
		__builtin_trap();
	if (o != PK_KEA_ANSWERED && a.arguments != NULL)
		__builtin_trap();
	size_t i;
	json_t *lease;
	json_array_foreach(json_object_get(a.arguments, "leases"), i, lease)
	{
		struct pk_kea_lease l;
		if (pk_kea_lease_read(lease, "mgmt-a", &l) && l.ours &&
		    (l.ns[0] == '\0' || l.name == NULL || l.name[0] == '\0'))
			__builtin_trap();
	}
	pk_kea_answer_clear(&a);
	return 0;
}
