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
 *                     generation, deletionTimestamp, finalizers,
 *                     labels only cluster.x-k8s.io/cluster-name,
 *                     annotations only clusterctl.cluster.x-k8s.io/delete-for-move
 *                     and cluster.x-k8s.io/paused
 *                   spec: poolRef, clusterName
 *                   status: addressRef, conditions (all of them: the status
 *                     patch is a merge patch, which replaces the whole list)
 *   IPAddress       metadata: name, namespace, uid, resourceVersion,
 *                     deletionTimestamp, finalizers, ownerReferences only
 *                     the controller ones (controller: true), and of those
 *                     only kind, uid and controller
 *                   spec
 *   IPPool, GlobalIPPool
 *                   metadata: name, namespace, uid, resourceVersion,
 *                     generation, deletionTimestamp, finalizers,
 *                     annotations only cluster.x-k8s.io/paused
 *                   spec, status
 *   Cluster         metadata: name, namespace, annotations only
 *                     cluster.x-k8s.io/paused
 *                   spec: paused
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
json_t *pk_trim_address(const json_t *obj);
json_t *pk_trim_pool(const json_t *obj);
json_t *pk_trim_cluster(const json_t *obj);

/*
 * An informer item: a trimmed object (one of the above's results, released
 * here; NULL gives NULL) packed (jpack.h) into one new block of `head`
 * bytes for the caller's header, the packed bytes, then `tail` bytes for
 * the caller's own (a key, say). The header and tail come zeroed; *len gets
 * the count of packed bytes, which start `head` bytes into the block (the
 * caller's flexible array member: head is offsetof it). NULL when memory
 * runs out or the object does not pack. The caller releases the block with
 * free().
 */
void *pk_trim_pack(json_t *trimmed, size_t head, size_t tail, size_t *len);

#endif
