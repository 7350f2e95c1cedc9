package kubeconfig

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/trainersim/trainersim/fakegpu"
	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/internal/assets"
	"github.com/trainersim/trainersim/sim/internal/startup"
	"github.com/trainersim/trainersim/sim/kwok"
)

// startKwok runs a kwok of this run against the cluster and takes the kwok
// lease, so that runs after it reuse it while it lives.
func (k *Kubeconfig) startKwok(ctx context.Context) error {
	bins, err := assets.Find(k.AssetsDir, assets.Kwok)
	if err != nil {
		return err
	}
	if k.WorkDir == "" {
		if k.WorkDir, err = startup.NewWorkDir(); err != nil {
			return err
		}
		k.ownWorkDir = true
	}
	logDir := filepath.Join(k.WorkDir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return fmt.Errorf("failed to create %s: %w", logDir, err)
	}
	// kwok gets the same credentials, in a file of its own with the
	// context chosen and every referenced file inlined.
	raw, err := clientConfig(k.Path, k.Context).RawConfig()
	if err != nil {
		return fmt.Errorf("failed to read kubeconfig %s: %w", k.Path, err)
	}
	if k.Context != "" {
		raw.CurrentContext = k.Context
	}
	if err := clientcmdapi.MinifyConfig(&raw); err != nil {
		return fmt.Errorf("failed to select the kubeconfig's context: %w", err)
	}
	if err := clientcmdapi.FlattenConfig(&raw); err != nil {
		return fmt.Errorf("failed to inline the kubeconfig's files: %w", err)
	}
	kubeconfig := filepath.Join(k.WorkDir, "kwok.kubeconfig")
	if err := clientcmd.WriteToFile(raw, kubeconfig); err != nil {
		return fmt.Errorf("failed to write kwok's kubeconfig: %w", err)
	}
	if k.kwok, err = kwok.Start("kwok", bins[assets.Kwok], kubeconfig, k.WorkDir, logDir, fakegpu.FastHeartbeat); err != nil {
		return err
	}
	k.lease, err = kwok.HoldLease(ctx, k.client, k.progress.Clock(), k.versions, map[string]string{cluster.RunLabel: k.runID})
	return err
}

// AddNodes creates simulated nodes, labelled with the run, and waits until
// each is Ready and schedulable.
func (k *Kubeconfig) AddNodes(ctx context.Context, groups []fakegpu.NodeGroup) ([]string, error) {
	return k.nodes.Add(ctx, groups)
}

// RemoveNodes deletes simulated nodes without waiting.
func (k *Kubeconfig) RemoveNodes(ctx context.Context, names []string) error {
	return k.nodes.Remove(ctx, names)
}
