package envtest

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"golang.org/x/sync/errgroup"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/trainersim/trainersim/fakegpu"
	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/identity"
	"github.com/trainersim/trainersim/sim/internal/proc"
	"github.com/trainersim/trainersim/sim/kwok"
)

// startNodes starts KWOK, creates the configured nodes and waits until each
// is Ready and no longer carries the node.kubernetes.io/not-ready taint.
func (e *Environment) startNodes(ctx context.Context, bin string) error {
	since := e.now()
	kubeconfig := filepath.Join(e.WorkDir, "kwok.kubeconfig")
	if err := e.componentKubeconfig(identity.Kwok, kubeconfig); err != nil {
		return err
	}
	// A process component: crashed, stopped and started again by
	// component steps. Its first start is ready once the nodes are; a
	// later one once it has renewed every node's Lease since it started
	// (within a renewal interval: releaseNodeLeases), as it must before it
	// manages a node's Pods.
	pc := &processComponent{component: identity.Kwok}
	var startedAt time.Time
	pc.start = func(n int) (*proc.Process, error) {
		name := identity.Kwok
		if n > 0 {
			name = fmt.Sprintf("%s-%d", identity.Kwok, n)
			if err := e.releaseNodeLeases(context.Background()); err != nil {
				return nil, err
			}
		}
		startedAt = time.Now()
		p, err := kwok.Start(name, bin, kubeconfig, e.WorkDir, e.LogDir(), e.Heartbeat)
		if err != nil {
			return nil, err
		}
		e.trackProcess(p)
		if e.nodes != nil {
			e.nodes.Kwok = p // the steps that add nodes are the run's own: it has KWOK to itself
		}
		return p, nil
	}
	pc.ready = func(ctx context.Context) error {
		if e.nodes == nil {
			return nil // the first start: the nodes' readiness says
		}
		return e.leasesRenewedSince(ctx, startedAt)
	}
	// The simulated kubelet's volume manager is KWOK's part in this
	// process: down while KWOK is, started again with an empty cache.
	cfg, err := e.componentConfig(identity.Kwok)
	if err != nil {
		return err
	}
	pc.part = &inProcessPart{run: func(ctx context.Context) (func(), error) {
		v, err := kwok.StartVolumes(ctx, cfg, e.logger.WithName("kwok-volumes"))
		if err != nil {
			return nil, err
		}
		return v.Stop, nil
	}}
	e.volumes = pc.part
	if err := pc.run(ctx); err != nil {
		return err
	}
	e.mu.Lock()
	e.processComponents = append(e.processComponents, pc)
	e.mu.Unlock()
	// Tell runs against this cluster (simctl run --kubeconfig) that its
	// nodes have a kwok.
	if e.lease, err = kwok.HoldLease(ctx, e.client, e.clock(), e.Versions(), nil); err != nil {
		return err
	}
	e.ready(cluster.StepKwok, since)

	pc.mu.Lock()
	e.nodes = &kwok.Pool{Client: e.client, Kwok: pc.p}
	pc.mu.Unlock()
	since = e.now()
	if _, err := e.AddNodes(ctx, e.Nodes); err != nil {
		return err
	}
	e.ready(cluster.StepNodes, since)
	return nil
}

// AddNodes creates nodes on a started environment and waits until each is
// Ready and schedulable: simulated ones (KWOK's), and hollow ones for the
// groups that ask for them (hollow.go). It returns their names, the
// simulated nodes' first.
func (e *Environment) AddNodes(ctx context.Context, groups []fakegpu.NodeGroup) ([]string, error) {
	var simulated, hollow []fakegpu.NodeGroup
	for _, g := range groups {
		if g.Kubelet == fakegpu.KubeletHollow {
			hollow = append(hollow, g)
		} else {
			simulated = append(simulated, g)
		}
	}
	if len(hollow) == 0 {
		return e.nodes.Add(ctx, groups)
	}
	var kwokNames, hollowNames []string
	g, gctx := errgroup.WithContext(ctx)
	if len(simulated) > 0 {
		g.Go(func() (err error) {
			kwokNames, err = e.nodes.Add(gctx, simulated)
			return err
		})
	}
	g.Go(func() (err error) {
		hollowNames, err = e.addHollowNodes(gctx, hollow)
		return err
	})
	err := g.Wait()
	return append(kwokNames, hollowNames...), err
}

// RemoveNodes deletes nodes without waiting for them to go; a hollow
// node's kubelet is stopped first.
func (e *Environment) RemoveNodes(ctx context.Context, names []string) error {
	rest, err := e.removeHollowNodes(ctx, names)
	return errors.Join(err, e.nodes.Remove(ctx, rest))
}

// managedNodes lists the nodes KWOK manages.
func (e *Environment) managedNodes(ctx context.Context) ([]corev1.Node, error) {
	var nodes corev1.NodeList
	err := e.client.List(ctx, &nodes, client.MatchingLabels{fakegpu.KwokNodeLabel: fakegpu.KwokNodeLabelValue, fakegpu.ManagedByLabel: fakegpu.ManagedByValue})
	return nodes.Items, err
}

// releaseNodeLeases clears the holder of the Lease of every node KWOK
// manages, before KWOK starts again. A kubelet holds its node's Lease as
// the node's name and, restarted, renews it at once; KWOK holds them as
// its hostname and a new UUID each start, and would wait for each Lease
// the crashed process held to expire (its duration, 40 s by Kubernetes'
// defaults) before renewing it, its nodes meanwhile left to the node
// lifecycle's grace. Written as simctl: the audit log shows it.
func (e *Environment) releaseNodeLeases(ctx context.Context) error {
	nodes, err := e.managedNodes(ctx)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: corev1.NamespaceNodeLease, Name: n.Name}}
		if err := e.client.Patch(ctx, lease, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"holderIdentity":null}}`))); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("failed to release the Lease of node %s for KWOK's start: %w", n.Name, err)
		}
	}
	return nil
}

// leasesRenewedSince returns nil once KWOK has renewed the Lease of every
// node it manages since a time: a KWOK started again serves its nodes.
func (e *Environment) leasesRenewedSince(ctx context.Context, since time.Time) error {
	nodes, err := e.managedNodes(ctx)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		var lease coordinationv1.Lease
		if err := e.client.Get(ctx, client.ObjectKey{Namespace: corev1.NamespaceNodeLease, Name: n.Name}, &lease); err != nil {
			return err
		}
		if t := lease.Spec.RenewTime; t == nil || t.Time.Before(since.Truncate(time.Microsecond)) {
			return fmt.Errorf("node %s: its Lease was last renewed before KWOK started again", n.Name)
		}
	}
	return nil
}
