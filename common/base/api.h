/*
 * api.h - the Kubernetes API names poolkeeper reads and writes, spelled
 * once: groups, versions, kinds, resources (plurals), finalizers, labels
 * and annotations. Every part of poolkeeper (the pure rules, the client's
 * packed caches, the daemons, the CLI) names them through these macros.
 */
#ifndef PK_API_H
#define PK_API_H

/* poolkeeper's own pools: ipam.poolkeeper.io/v1alpha1. */
#define PK_POOL_GROUP           "ipam.poolkeeper.io"
#define PK_POOL_VERSION         "v1alpha1"
#define PK_POOL_API_VERSION     PK_POOL_GROUP "/" PK_POOL_VERSION
#define PK_POOL_KIND            "IPPool"
#define PK_GLOBAL_POOL_KIND     "GlobalIPPool"
#define PK_POOL_RESOURCE        "ippools"
#define PK_GLOBAL_POOL_RESOURCE "globalippools"
/* The Kea backend's connection object (controller/backends/kea): where a Kea Control Agent
 * is, and the Secret of its credentials. */
#define PK_KEA_SERVER_KIND     "KeaServer"
#define PK_KEA_SERVER_RESOURCE "keaservers"

/* Cluster API's IPAM kinds: ipam.cluster.x-k8s.io, v1beta2 preferred over v1beta1. */
#define PK_CAPI_IPAM_GROUP  "ipam.cluster.x-k8s.io"
#define PK_CAPI_V1BETA2     "v1beta2"
#define PK_CAPI_V1BETA1     "v1beta1"
#define PK_CAPI_V1ALPHA1    "v1alpha1" /* still served for both kinds; CAPM3 creates claims */
#define PK_CLAIM_KIND       "IPAddressClaim"
#define PK_ADDRESS_KIND     "IPAddress"
#define PK_CLAIM_RESOURCE   "ipaddressclaims"
#define PK_ADDRESS_RESOURCE "ipaddresses"

/* Cluster API's core group: Clusters. */
#define PK_CAPI_CORE_GROUP  "cluster.x-k8s.io"
#define PK_CLUSTER_KIND     "Cluster"
#define PK_CLUSTER_RESOURCE "clusters"

/* Finalizers poolkeeper owns. */
#define PK_CLAIM_FINALIZER   "ipam.poolkeeper.io/release-address"
#define PK_ADDRESS_FINALIZER "ipam.poolkeeper.io/protect-address"
#define PK_POOL_FINALIZER    "ipam.poolkeeper.io/protect-pool"

/* Labels and annotations. */
#define PK_CLUSTER_NAME_LABEL                "cluster.x-k8s.io/cluster-name"
#define PK_WATCH_FILTER_LABEL                "cluster.x-k8s.io/watch-filter"
#define PK_PROVIDER_LABEL                    "cluster.x-k8s.io/provider"
#define PK_MANAGED_BY_LABEL                  "app.kubernetes.io/managed-by"
#define PK_PAUSED_ANNOTATION                 "cluster.x-k8s.io/paused"
#define PK_DELETE_FOR_MOVE_ANNOTATION        "clusterctl.cluster.x-k8s.io/delete-for-move"
#define PK_SKIP_DELETE_PROTECTION_ANNOTATION "ipam.poolkeeper.io/skip-delete-protection"
/* On an IPAddress: the ID of the record a backend made for the address in another system. */
#define PK_EXTERNAL_ID_ANNOTATION "ipam.poolkeeper.io/external-id"

/* Kubernetes' own kinds poolkeeper reads or writes: the core group's Secrets (poolkeeper-certs),
 * the admission webhook configurations (their caBundle), and the access review the mutating
 * webhook asks before it sets blockOwnerDeletion. */
#define PK_CORE_VERSION                   "v1"
#define PK_SECRET_KIND                    "Secret"
#define PK_SECRET_RESOURCE                "secrets"
#define PK_ADMISSIONREG_GROUP             "admissionregistration.k8s.io"
#define PK_ADMISSIONREG_VERSION           "v1"
#define PK_VALIDATING_WEBHOOK_KIND        "ValidatingWebhookConfiguration"
#define PK_MUTATING_WEBHOOK_KIND          "MutatingWebhookConfiguration"
#define PK_VALIDATING_WEBHOOK_RESOURCE    "validatingwebhookconfigurations"
#define PK_MUTATING_WEBHOOK_RESOURCE      "mutatingwebhookconfigurations"
#define PK_AUTHORIZATION_GROUP            "authorization.k8s.io"
#define PK_AUTHORIZATION_VERSION          "v1"
#define PK_SUBJECT_ACCESS_REVIEW_KIND     "SubjectAccessReview"
#define PK_SUBJECT_ACCESS_REVIEW_RESOURCE "subjectaccessreviews"

/* The controller's name in its Events (reportingController). */
#define PK_CONTROLLER_NAME "ipam.poolkeeper.io/poolkeeper-controller"

/* Kubernetes' admission webhooks: what the API server sends and expects back. */
#define PK_ADMISSION_API_VERSION "admission.k8s.io/v1"
#define PK_ADMISSION_REVIEW_KIND "AdmissionReview"

#endif
