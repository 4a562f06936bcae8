/*
 * external_id.h - the ID of the record a backend made for an address in
 * another system (a lease, a reservation), kept on the address's IPAddress
 * as the annotation PK_EXTERNAL_ID_ANNOTATION so that it survives restarts
 * and clusterctl move. The controller writes it when it creates the
 * IPAddress and never changes it; the webhook refuses any other change
 * (pk_rules_check_ipaddress), so a tenant who may edit IPAddresses cannot
 * point a release at another's record. A backend still checks that the
 * record an ID names is the claim's before it acts on it.
 */
#ifndef PK_EXTERNAL_ID_H
#define PK_EXTERNAL_ID_H

#include <stdbool.h>

#include <jansson.h>

/* Room for an ID and its NUL: longer ones are not IDs poolkeeper wrote. */
#define PK_EXTERNAL_ID_MAX 256

/*
 * The external ID an object's annotations hold, or NULL when there is none
 * or it is not one poolkeeper could have written (not a string, empty, a
 * NUL inside, PK_EXTERNAL_ID_MAX bytes or more).
 */
const char *pk_external_id(const json_t *obj);

/* Whether the annotation is the same in both (both without it included): compared raw. */
bool pk_external_id_same(const json_t *a, const json_t *b);

#endif
