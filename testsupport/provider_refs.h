/*
 * provider_refs.h - the owner references real infrastructure providers put
 * on their IPAddressClaims, as fixtures (JSON with ' for ") for the rule,
 * admission and lint suites.
 */
#ifndef PK_TEST_PROVIDER_REFS_H
#define PK_TEST_PROVIDER_REFS_H

/* sigs.k8s.io/cluster-api-provider-vsphere v1.14.0,
 * controllers/vspherevm_ipaddress_reconciler.go (createOrPatchIPAddressClaim): the VSphereVM
 * reference that EnsureOwnerRef adds, neither controller nor blockOwnerDeletion; finalizer
 * ip-claim-protection. */
#define CAPV_REF                                                                             \
	"{'apiVersion':'infrastructure.cluster.x-k8s.io/v1beta1','kind':'VSphereVM','name':" \
	"'vm-1','uid':'6f1c'}"
/* metal3-io/cluster-api-provider-metal3, baremetal/metal3data_manager.go: the Metal3Data with
 * controller: true and no blockOwnerDeletion. */
#define CAPM3_REF                                                                             \
	"{'apiVersion':'infrastructure.cluster.x-k8s.io/v1beta1','kind':'Metal3Data','name':" \
	"'data-1','uid':'8a2e','controller':true}"
/* sigs.k8s.io/cluster-api-provider-openstack v0.13.0, controllers/openstackserver_controller.go:
 * the OpenStackServer (v1alpha1), neither flag. */
#define CAPO_REF                                                                             \
	"{'apiVersion':'infrastructure.cluster.x-k8s.io/v1alpha1','kind':'OpenStackServer'," \
	"'name':'srv-1','uid':'3b7d'}"
/* github.com/ionos-cloud/cluster-api-provider-proxmox v0.7.0, pkg/kubernetes/ipam/ipam.go:
 * SetControllerReference, both flags. */
#define PROXMOX_REF                                                                         \
	"{'apiVersion':'infrastructure.cluster.x-k8s.io/v1alpha1','kind':'ProxmoxMachine'," \
	"'name':'pm-1','uid':'5c9f','controller':true,'blockOwnerDeletion':true}"

#endif
