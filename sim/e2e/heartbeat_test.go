package e2e_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/trainersim/trainersim/fakegpu"
	"github.com/trainersim/trainersim/sim/providers/envtest"
)

// The node Leases KWOK holds are those of the cluster's heartbeat: a
// kubelet's 40 s with the Kubernetes defaults, 16 s with the fast one (the
// zero value, the suite's cluster).
var _ = Describe("the simulated nodes' heartbeat", func() {
	leaseSeconds := func(ctx context.Context, c client.Client, node string) func() *int32 {
		return func() *int32 {
			var l coordinationv1.Lease
			if err := c.Get(ctx, client.ObjectKey{Namespace: corev1.NamespaceNodeLease, Name: node}, &l); err != nil || l.Spec.RenewTime == nil {
				return nil
			}
			return l.Spec.LeaseDurationSeconds
		}
	}

	// The node both clusters make of their cpu group (fakegpu: the
	// profile, then the index): the suite's own, not a scenario's, whose
	// Lease a node step may hold, and which a spec may delete.
	const node = "cpu-0"
	// KWOK creates a node's Lease once it manages the node, after the
	// start waited for the node to be schedulable; on a loaded machine
	// (make test runs packages side by side) that can take seconds.
	const leaseWait = 30 * time.Second

	It("is the fast one on a cluster that does not say", func(ctx SpecContext) {
		// A node of the suite's: a spec adding nodes would change what the
		// scheduler of other specs counts.
		Eventually(leaseSeconds(ctx, k8s, node)).WithTimeout(leaseWait).Should(HaveValue(BeEquivalentTo(fakegpu.FastHeartbeat.NodeLeaseDurationSeconds)))
	})

	It("is the kubelet's default on a cluster started with the Kubernetes heartbeat", func(ctx SpecContext) {
		own := &envtest.Environment{Heartbeat: fakegpu.KubernetesHeartbeat, Nodes: []fakegpu.NodeGroup{{Profile: "cpu", Count: 1}}}
		Expect(own.Start(ctx)).To(Succeed())
		DeferCleanup(own.Stop)
		Eventually(leaseSeconds(ctx, own.Client(), node)).WithTimeout(leaseWait).Should(HaveValue(BeEquivalentTo(40)))
	})
})
