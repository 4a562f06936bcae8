/*
 * trim.h - the informers' cached copy of an API object: only the members
 * the controller reads (decide.c, objects.c and the claim reconciler), so that the
 * informers' stores stay small (the webhook's caches keep the same copies),
 * and the packed item that holds one (pk_trim_pack). A claim as the API server returns it is
 * mostly metadata.managedFields and the last-applied annotation; neither
 * is read.
 *
 * Kept, for each kind (a member is kept as it is, whatever its JSON type,
 * unless "only" names what is kept of it; an object left empty is left out):
 *
 *   IPAddressClaim  apiVersion (the IPAddress's owner reference)
 *                   metadata: name, namespace, uid, resourceVersion,
 *                     generation, deletionTimestamp, finalizers (below),
 *                     labels only cluster.x-k8s.io/cluster-name,
 *                     annotations only clusterctl.cluster.x-k8s.io/delete-for-move
 *                     and cluster.x-k8s.io/paused, each with the value ""
 *                     (only the key is read, as CAPI's HasPaused does; the
 *                     same for the pools' and the Cluster's annotation)
 *                   spec: poolRef, clusterName
 *                   status: addressRef, conditions (all of them: the status
 *                     patch is a merge patch, which replaces the whole list)
 *   IPAddress       metadata: name, namespace, uid, resourceVersion,
 *                     deletionTimestamp, finalizers (below), ownerReferences only
 *                     the controller ones (controller: true), and of those
 *                     only kind, uid and controller; annotations: the external
 *                     ID (external_id.h), a string shorter than PK_EXTERNAL_ID_MAX
 *                   spec
 *   IPPool, GlobalIPPool
 *                   metadata: name, namespace, uid, resourceVersion,
 *                     generation, deletionTimestamp, finalizers (below),
 *                     annotations only cluster.x-k8s.io/paused
 *                   spec, status
 *   Cluster         metadata: name, namespace, annotations only
 *                     cluster.x-k8s.io/paused
 *                   spec: paused
 *
 * metadata.finalizers keeps only what poolkeeper reads of it: whether its
 * own finalizers (api.h: release-address, protect-address, protect-pool)
 * are there and at which index, since a finalizer comes off by a JSON
 * patch that tests the value at its index (controller/objects.c). The first
 * entry of each is kept; each run of other entries (another party's, a
 * second copy, a string holding a NUL) becomes its length, a JSON integer:
 *   ["a/x", "b/y", "ipam.poolkeeper.io/release-address", "c/z"]
 * keeps as [2, "ipam.poolkeeper.io/release-address", 1], and 4,300 other
 * finalizers (a tenant's 1.2 MB claim) as [4300]. A member that is not a
 * list is left out. Readers count an integer n as n entries; an object
 * from the API server never holds one (ObjectMeta.Finalizers is []string).
 *
 * A claim on another provider's pool (pk_trim_foreign_claim; the caches
 * tell it with pk_pool_kind_of_ref, as decide.c does) keeps
 * only metadata name, namespace, uid and resourceVersion: the controller
 * decides "not ours" for a claim without a poolkeeper poolRef, and the
 * webhook's IPAddress check answers "no such claim" alike for a missing
 * claim and a claim on another pool (address_rules.c).
 *
 * Every reader in decide.c, objects.c and reconcile.c answers the same for
 * the trimmed object as for the whole one (controller/tests/test_trim.c
 * checks the facts and every patch built from both); a new reader of
 * another member needs it added here.
 *
 * Pure: no I/O, no logging. Each function returns a new object (reference
 * count 1, sharing nothing with obj; the caller releases it with
 * json_decref), or NULL when obj is not a JSON object or memory runs out.
 */
#ifndef PK_TRIM_H
#define PK_TRIM_H

#include <stddef.h>

#include <jansson.h>

json_t *pk_trim_claim(const json_t *obj);
json_t *pk_trim_foreign_claim(const json_t *obj);
json_t *pk_trim_address(const json_t *obj);
json_t *pk_trim_pool(const json_t *obj);
json_t *pk_trim_cluster(const json_t *obj);
/* A backend's connection object or Secret (controller/backend.h, watches): identity,
 * generation, spec, data and type. */
json_t *pk_trim_connection(const json_t *obj);

/*
 * The cap on one cached object: the packed bytes (jpack.h) of its trimmed
 * copy. The biggest legitimate one is a pool at its CRD's maxima (1,024
 * addresses and 1,024 excluded entries of 91 characters, a quarantine of
 * 1,024 addresses, a Ready condition of 1 KiB): 244 KB packed
 * (common/tests/test_trim_pack.c builds it and wants a quarter of margin
 * at least; the cap gives it twice its size). A trimmed claim or IPAddress
 * packs into about 300 bytes. An object over the cap is kept as its
 * identity only (name, namespace, uid, resourceVersion): a claim with no
 * pool, a pool with no spec, an IPAddress with no spec or owner. It is
 * never stored whole, and pk_trim_pack says so for the caller to report.
 */
#define PK_TRIM_MAX_BYTES (512u << 10)

/*
 * An informer item: a trimmed object (one of the above's results, released
 * here; NULL gives NULL) packed (jpack.h) into one new block of `head`
 * bytes for the caller's header, the packed bytes, then `tail` bytes for
 * the caller's own (a key, say). The header and tail come zeroed; *len gets
 * the count of packed bytes, which start `head` bytes into the block (the
 * caller's flexible array member: head is offsetof it). When the packed
 * object is over PK_TRIM_MAX_BYTES, the block holds its identity instead
 * and *over gets the size the object packed to (0 otherwise). NULL when
 * memory runs out or the object does not pack. The caller releases the
 * block with free().
 */
void *pk_trim_pack(json_t *trimmed, size_t head, size_t tail, size_t *len, size_t *over);

#endif
