package envtest

import (
	"context"
	"path/filepath"

	"github.com/trainersim/trainersim/fakegpu"
	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/identity"
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
	p, err := kwok.Start(bin, kubeconfig, e.WorkDir, e.LogDir(), e.Heartbeat)
	if err != nil {
		return err
	}
	e.trackProcess(p)
	cfg, err := e.componentConfig(identity.Kwok)
	if err != nil {
		return err
	}
	if e.volumes, err = kwok.StartVolumes(ctx, cfg, e.logger.WithName("kwok-volumes")); err != nil {
		return err
	}
	// Tell runs against this cluster (simctl run --kubeconfig) that its
	// nodes have a kwok.
	if e.lease, err = kwok.HoldLease(ctx, e.client, e.clock(), e.Versions(), nil); err != nil {
		return err
	}
	e.ready(cluster.StepKwok, since)

	e.nodes = &kwok.Pool{Client: e.client, Kwok: p}
	since = e.now()
	if _, err := e.AddNodes(ctx, e.Nodes); err != nil {
		return err
	}
	e.ready(cluster.StepNodes, since)
	return nil
}

// AddNodes creates simulated nodes on a started environment and waits until
// each is Ready and schedulable. It returns their names.
func (e *Environment) AddNodes(ctx context.Context, groups []fakegpu.NodeGroup) ([]string, error) {
	return e.nodes.Add(ctx, groups)
}

// RemoveNodes deletes simulated nodes without waiting.
func (e *Environment) RemoveNodes(ctx context.Context, names []string) error {
	return e.nodes.Remove(ctx, names)
}
