// CoreDNS with only the plugins the sandbox's real node uses: cluster names from the apiserver
// (kubernetes), answered from a cache, errors logged, readiness on /ready. No forward plugin:
// a pod's other names get no answer, so no query leaves the machine.
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/ready"
)

func main() {
	coremain.Run()
}
