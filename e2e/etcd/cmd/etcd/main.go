// Command etcd is the upstream etcd server of the pinned release, used as the
// storage of poolkeeper's loopback e2e control plane.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
