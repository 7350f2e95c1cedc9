// Command coredns is CoreDNS with only the plugins that the Corefile written by
// kubeadm uses (errors, health, ready, kubernetes, prometheus, forward, cache,
// loop, reload, loadbalance) plus log and whoami for debugging: the cluster DNS
// of the kind node image. Building upstream's main would compile every plugin,
// cloud providers' SDKs included, for nothing.
//
// The order in which plugins run is CoreDNS's own (dnsserver.Directives); a
// plugin that is not imported here is simply not available to a Corefile.
package main

import (
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
	_ "github.com/coredns/coredns/plugin/whoami"

	"github.com/coredns/coredns/coremain"
)

func main() {
	coremain.Run()
}
