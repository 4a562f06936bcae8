// Command etcdctl is the upstream etcdctl of the pinned etcd release, used by
// e2e tests that compact or inspect the control plane's storage.
package main

import (
	"go.etcd.io/etcd/etcdctl/v3/ctlv3"
)

func main() {
	ctlv3.MustStart()
}
