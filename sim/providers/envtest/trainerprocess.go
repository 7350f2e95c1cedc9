package envtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/trainersim/trainersim/sim/identity"
	"github.com/trainersim/trainersim/sim/internal/assets"
	"github.com/trainersim/trainersim/sim/internal/proc"
	"github.com/trainersim/trainersim/sim/internal/startup"
	"github.com/trainersim/trainersim/sim/releases"
)

// A Trainer release other than the pinned one runs as two child processes,
// the release's trainer-controller-manager and the manager of the JobSet
// release it pins, configured as their own config files allow (the same
// fields a cluster's ConfigMaps set, the Trainer's controller concurrency as
// its manifests set it): webhook servers on loopback with
// envtest's serving certificate instead of their own certificate
// management, no leader election, no metrics server.

// trainerConfig is the Trainer's Configuration (config.trainer.kubeflow.org,
// the same in every supported release). The webhook server's certificate is
// read from controller-runtime's default directory under $TMPDIR, which the
// Trainer's configuration cannot change.
const trainerConfig = `apiVersion: config.trainer.kubeflow.org/v1alpha1
kind: Configuration
webhook:
  host: 127.0.0.1
  port: %d
metrics:
  bindAddress: "0"
health:
  healthProbeBindAddress: "0"
leaderElection:
  leaderElect: false
certManagement:
  enable: false
controller:
  groupKindConcurrency:
    TrainJob.trainer.kubeflow.org: 5
    TrainingRuntime.trainer.kubeflow.org: 1
    ClusterTrainingRuntime.trainer.kubeflow.org: 1
clientConnection:
  qps: 200
  burst: 400
`

// jobSetConfig is JobSet's Configuration (config.jobset.x-k8s.io).
const jobSetConfig = `apiVersion: config.jobset.x-k8s.io/v1alpha1
kind: Configuration
webhook:
  host: 127.0.0.1
  port: %d
  certDir: %s
metrics:
  bindAddress: "0"
health:
  healthProbeBindAddress: "0"
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
clientConnection:
  qps: 200
  burst: 400
`

// startReleaseControllers starts the release's Trainer and JobSet managers
// and returns once the API server reaches both webhook servers.
func (e *Environment) startReleaseControllers(ctx context.Context) error {
	since := e.now()
	bins, err := releaseBinaries(e.release)
	if err != nil {
		return err
	}
	if err := e.startReleaseManagers(ctx, bins, ""); err != nil {
		return err
	}
	e.ready(StepControllers, since)
	return nil
}

// startReleaseManagers starts e.release's two managers from bins, their
// files and logs named with suffix (an upgrade's), and returns once the
// API server reaches both webhook servers.
func (e *Environment) startReleaseManagers(ctx context.Context, bins map[string]string, suffix string) error {
	hooks := &e.env.WebhookInstallOptions
	// controller-runtime reads the Trainer's serving certificate from
	// $TMPDIR/k8s-webhook-server/serving-certs.
	tmp := filepath.Join(e.WorkDir, "trainer-tmp")
	if err := os.MkdirAll(filepath.Join(tmp, "k8s-webhook-server"), 0o755); err != nil {
		return err
	}
	if err := os.Symlink(hooks.LocalServingCertDir, filepath.Join(tmp, "k8s-webhook-server", "serving-certs")); err != nil && !os.IsExist(err) {
		return fmt.Errorf("failed to link the Trainer's serving certificate: %w", err)
	}
	managers := []struct {
		name, component, version, bin, config string
		env                                   []string
		probe                                 int
	}{
		{"trainer-controller-manager", identity.Trainer, e.release.Version, bins[binTrainerManager], fmt.Sprintf(trainerConfig, hooks.LocalServingPort), []string{"TMPDIR=" + tmp}, 0},
		{"jobset-controller-manager", identity.JobSet, e.release.JobSet, bins[binJobSetManager], fmt.Sprintf(jobSetConfig, e.jobSetWebhookPort, strconv.Quote(hooks.LocalServingCertDir)), nil, 1},
	}
	var started []*proc.Process
	for _, m := range managers {
		p, err := e.startManager(m.name+suffix, m.component, m.version, m.bin, m.config, m.env)
		if err != nil {
			return err
		}
		started = append(started, p)
	}
	e.mu.Lock()
	e.releaseProcesses = started
	e.mu.Unlock()
	for i, p := range started {
		probe := webhookProbes[managers[i].probe]
		if err := p.WaitUntil(ctx, startup.PollInterval, func(ctx context.Context) error { return webhookCalled(ctx, e.client, probe) }); err != nil {
			return err
		}
	}
	return nil
}

// startManager starts a controller manager (a Trainer release's, JobSet's,
// Kueue's) as a child process: its own kubeconfig, its config file written
// into the work directory, its log in logs/<name>.log (startProcess).
func (e *Environment) startManager(name, component, version, bin, config string, env []string) (*proc.Process, error) {
	configPath := filepath.Join(e.WorkDir, name+".config.yaml")
	if err := os.WriteFile(configPath, []byte(config), 0o644); err != nil {
		return nil, err
	}
	return e.startProcess(name, component, func(kubeconfig string) *proc.Process {
		return &proc.Process{
			Name: name + " " + version,
			Path: bin,
			Args: []string{"--config=" + configPath, "--zap-log-level=info"},
			Env:  append([]string{"KUBECONFIG=" + kubeconfig}, env...),
		}
	})
}

// Binary names of a release that runs as processes.
const (
	binTrainerManager = "trainer-controller-manager"
	binJobSetManager  = "jobset"
)

// releaseBinaries finds a release's two managers where `make assets` and
// `simctl assets` build them, bin/trainer/<version>/ and
// bin/jobset/<jobset version>/.
func releaseBinaries(r releases.Trainer) (map[string]string, error) {
	return assets.FindReleaseBinaries(map[string]string{
		binTrainerManager: assets.TrainerBinary(r.Version),
		binJobSetManager:  assets.JobSetBinary(r.JobSet),
	}, "Trainer "+r.Version)
}
