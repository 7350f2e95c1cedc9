package envtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/trainersim/trainersim/sim/internal/controlplane"
)

func (e *Environment) startControllerManager(ctx context.Context, bin string) error {
	// The root CA every namespace's kube-root-ca.crt carries: the API
	// server's serving CA, as kubeadm's ca.crt.
	rootCA := filepath.Join(e.WorkDir, "ca.crt")
	if err := os.WriteFile(rootCA, e.cfg.CAData, 0o644); err != nil {
		return fmt.Errorf("failed to write the root CA: %w", err)
	}
	saKey := filepath.Join(e.WorkDir, "kube-apiserver-certs", "sa-signer.key")
	return e.startComponent(ctx, controlplane.NewControllerManager(bin, e.WorkDir, e.LogDir(), saKey, rootCA, e.Heartbeat))
}
