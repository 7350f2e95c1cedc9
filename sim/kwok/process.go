package kwok

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/trainersim/trainersim/fakegpu"
	"github.com/trainersim/trainersim/sim/internal/proc"
)

// Start starts kwok, as the process of a name, against the API server of
// the kubeconfig at kubeconfig, with its configuration and an empty work
// directory of its own under workDir, logging to logDir/<name>.log,
// renewing node Leases as hb says (zero: fakegpu.FastHeartbeat).
func Start(name, bin, kubeconfig, workDir, logDir string, hb fakegpu.Heartbeat) (*proc.Process, error) {
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
		Name:    name,
		Path:    bin,
		Args:    fakegpu.KwokArgs(kubeconfig, config, hb),
		Env:     []string{fakegpu.KwokWorkDirEnv + "=" + kwokDir},
		LogPath: filepath.Join(logDir, name+".log"),
	}
	if err := kwok.Start(); err != nil {
		return nil, err
	}
	return kwok, nil
}
