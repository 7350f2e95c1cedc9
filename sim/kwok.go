package sim

// KWOK, the simulated kubelet of every trainersim node, as a child process:
// the envtest provider runs one, and so does the kubeconfig provider when
// nothing in the cluster plays the kubelet for trainersim's nodes yet.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/trainersim/trainersim/fakegpu"
	"github.com/trainersim/trainersim/sim/identity"
	"github.com/trainersim/trainersim/sim/internal/proc"
)

// startKwok starts kwok against the API server of the kubeconfig at
// kubeconfig, with its configuration and an empty work directory of its own
// under workDir, logging to logDir/kwok.log.
func startKwok(bin, kubeconfig, workDir, logDir string) (*proc.Process, error) {
	config := filepath.Join(workDir, "kwok.yaml")
	if err := os.WriteFile(config, fakegpu.KwokConfig(), 0o644); err != nil {
		return nil, fmt.Errorf("failed to write kwok config: %w", err)
	}
	// kwok would also read ~/.kwok/kwok.yaml; give it an empty work dir.
	kwokDir := filepath.Join(workDir, "kwok")
	if err := os.MkdirAll(kwokDir, 0o755); err != nil {
		return nil, fmt.Errorf("failed to create kwok work dir: %w", err)
	}
	kwok := &proc.Process{
		Name:    ComponentKwok,
		Path:    bin,
		Args:    fakegpu.KwokArgs(kubeconfig, config),
		Env:     []string{fakegpu.KwokWorkDirEnv + "=" + kwokDir},
		LogPath: filepath.Join(logDir, "kwok.log"),
	}
	if err := kwok.Start(); err != nil {
		return nil, err
	}
	return kwok, nil
}

// startNodes starts KWOK, creates the configured nodes and waits until each
// is Ready and no longer carries the node.kubernetes.io/not-ready taint.
func (e *Environment) startNodes(ctx context.Context, bin string) error {
	since := e.now()
	kubeconfig := filepath.Join(e.WorkDir, "kwok.kubeconfig")
	if err := e.componentKubeconfig(identity.Kwok, kubeconfig); err != nil {
		return err
	}
	kwok, err := startKwok(bin, kubeconfig, e.WorkDir, e.LogDir())
	if err != nil {
		return err
	}
	e.trackProcess(kwok)
	// Tell runs against this cluster (simctl run --kubeconfig) that its
	// nodes have a kwok.
	if e.lease, err = holdKwokLease(ctx, e.client, e.clock(), e.Versions(), nil); err != nil {
		return err
	}
	e.ready(ComponentKwok, since)

	e.nodes = &nodePool{client: e.client, kwok: kwok}
	since = e.now()
	if _, err := e.AddNodes(ctx, e.Nodes); err != nil {
		return err
	}
	e.ready(ComponentNodes, since)
	return nil
}
