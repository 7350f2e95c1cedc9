package envtest

import (
	"cmp"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/trainersim/trainersim/fixtures"
	"github.com/trainersim/trainersim/sim/identity"
	"github.com/trainersim/trainersim/sim/internal/assets"
	"github.com/trainersim/trainersim/sim/internal/controlplane"
	"github.com/trainersim/trainersim/sim/internal/kueue"
	"github.com/trainersim/trainersim/sim/internal/proc"
	"github.com/trainersim/trainersim/sim/manifests"
	"github.com/trainersim/trainersim/sim/releases"
)

// Kueue as a component of an envtest cluster: the real Kueue manager, built
// by `make assets` from its module (hack/kueue/<version>), as a process of
// its own, with the TrainJob integration only. Its webhooks are served over
// TLS on loopback with envtest's serving certificate.

// kueueServing is how Kueue is served here (config.kueue.x-k8s.io/v1beta2
// Configuration, without what it does, which kueue.Configuration adds as on
// every cluster): its webhook server on loopback with envtest's serving
// certificate (its own certificate management off), no metrics or health
// endpoints, no leader election.
const kueueServing = `apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
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

// kueueMetricsCertDir is where Kueue reads its metrics server's certificate
// when its own certificate management is off, metrics server or not; no
// configuration moves it.
const kueueMetricsCertDir = "/etc/kueue/metrics/certs"

// kueueCheckoutVersion is the version a Kueue checkout runs as: the
// pseudo-version after its release, or what git describes when the release
// is not known.
func kueueCheckoutVersion(c releases.Checkout) string {
	return cmp.Or(c.Version(), c.Describe, "(devel)")
}

// pinnedKueueFixtures is the directory of the pinned release's CRDs,
// webhooks and RBAC in fixtures.FS.
func pinnedKueueFixtures() string {
	return path.Join(fixtures.ComponentsDir, releases.ComponentKueue, releases.KueueVersion)
}

// kueueSource is what the Kueue component is made of: its manager's
// binary, and a file system with its crds/, webhooks.yaml and rbac.yaml.
type kueueSource struct {
	bin      string
	fixtures fs.FS
	version  string
}

// findKueue returns the pinned release's Kueue (bin/kueue/<version>/kueue,
// which make assets builds, and the fixtures compiled in), or the Kueue
// checkout's that make build KUEUE_DIR=... built.
func findKueue() (kueueSource, error) {
	if c, ok := releases.KueueCheckout(); ok {
		bin := filepath.Join(c.Bin, "kueue")
		if err := proc.CheckExecutable(bin); err != nil {
			return kueueSource{}, fmt.Errorf("the Kueue checkout %s was built into %s, which has no kueue binary now (make build KUEUE_DIR=%s builds it): %w", c.Dir, c.Bin, c.Dir, err)
		}
		return kueueSource{bin: bin, fixtures: os.DirFS(c.Bin), version: kueueCheckoutVersion(c)}, nil
	}
	bins, err := assets.FindReleaseBinaries(map[string]string{"kueue": assets.KueueBinary(releases.KueueVersion)}, "Kueue "+releases.KueueVersion)
	if err != nil {
		return kueueSource{}, err
	}
	sub, err := fs.Sub(fixtures.FS, pinnedKueueFixtures())
	if err != nil {
		return kueueSource{}, err
	}
	return kueueSource{bin: bins["kueue"], fixtures: sub, version: releases.KueueVersion}, nil
}

// kueueCRDDir is the directory of Kueue's CRDs in its fixtures.
const kueueCRDDir = "crds"

// installKueueCRDs creates Kueue's CRDs (restored: they are in the
// snapshot, and only the wait is left) and waits until the API server
// serves them.
func installKueueCRDs(cfg *rest.Config, src kueueSource, restored bool) error {
	crds, err := manifests.ReadCRDs(src.fixtures, kueueCRDDir)
	if err != nil {
		return err
	}
	if restored {
		err = waitForCRDs(cfg, crds)
	} else {
		err = createCRDs(cfg, crds)
	}
	if err != nil {
		return fmt.Errorf("failed to install Kueue's CRDs: %w", err)
	}
	return nil
}

// startKueue installs Kueue's CRDs (restored: waits for the snapshot's),
// webhooks and RBAC and starts its manager, returning once the API server
// reaches its webhook server. A snapshot build installs the CRDs only.
func (e *Environment) startKueue(ctx context.Context, restored bool) error {
	since := e.now()
	src, err := findKueue()
	if err != nil {
		return err
	}
	if err := installKueueCRDs(e.cfg, src, restored); err != nil {
		return err
	}
	if e.snapshotBuild {
		return nil
	}
	port, err := controlplane.FreePort()
	if err != nil {
		return err
	}
	hooks := &e.env.WebhookInstallOptions
	opts := envtest.WebhookInstallOptions{
		LocalServingHost:    hooks.LocalServingHost,
		LocalServingPort:    port,
		LocalServingCertDir: hooks.LocalServingCertDir,
		LocalServingCAData:  hooks.LocalServingCAData,
	}
	muts, vals, err := manifests.ReadWebhooks(src.fixtures, "webhooks.yaml", "kueue-")
	if err != nil {
		return err
	}
	kueue.Narrow(muts, vals)
	opts.MutatingWebhooks, opts.ValidatingWebhooks = muts, vals
	if err := opts.ModifyWebhookDefinitions(); err != nil {
		return fmt.Errorf("failed to point Kueue's webhooks at its server: %w", err)
	}
	for _, m := range muts {
		for _, w := range m.Webhooks {
			if w.Name == kueue.TrainJobWebhook {
				e.kueueTrainJob = w.DeepCopy()
			}
		}
	}
	if err := opts.Install(e.cfg); err != nil {
		return fmt.Errorf("failed to install Kueue's webhooks: %w", err)
	}
	if err := ensureKueueMetricsCert(hooks.LocalServingCertDir); err != nil {
		return err
	}
	if err := installRBACFile(ctx, e.client, src.fixtures, "rbac.yaml"); err != nil {
		return err
	}
	config, err := kueue.Configuration(fmt.Appendf(nil, kueueServing, port, hooks.LocalServingCertDir))
	if err != nil {
		return err
	}
	probe := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta2",
		"kind":       "ResourceFlavor",
		"metadata":   map[string]any{"name": "trainersim-webhook-probe"},
	}}
	c := &processComponent{
		component: identity.Kueue,
		start: func(n int) (*proc.Process, error) {
			name := releases.ComponentKueue
			if n > 0 { // its log, config and kubeconfig beside the earlier ones'
				name = fmt.Sprintf("%s-%d", name, n)
			}
			return e.startManager(name, identity.Kueue, src.version, src.bin, string(config), nil)
		},
		ready: func(ctx context.Context) error { return webhookCalled(ctx, e.client, probe) },
	}
	if err := c.run(ctx); err != nil {
		return err
	}
	e.mu.Lock()
	e.processComponents = append(e.processComponents, c)
	e.mu.Unlock()
	e.ready(releases.ComponentKueue, since)
	return nil
}

// KueueTrainJobWebhook is cluster.KueueWebhooks.
func (e *Environment) KueueTrainJobWebhook(_ context.Context, namespace, suffix, policy string) (*admissionv1.MutatingWebhookConfiguration, error) {
	if e.kueueTrainJob == nil {
		return nil, fmt.Errorf("the kueue component does not run")
	}
	return kueue.OwnTrainJobWebhook(e.kueueTrainJob, namespace, suffix, policy), nil
}

// ensureKueueMetricsCert makes sure kueueMetricsCertDir holds a certificate
// and key (envtest's serving pair: the metrics server is off, any pair
// does). One already there is left as it is.
func ensureKueueMetricsCert(servingCertDir string) error {
	if _, err := os.Stat(filepath.Join(kueueMetricsCertDir, "tls.crt")); err == nil {
		return nil
	}
	if err := os.MkdirAll(kueueMetricsCertDir, 0o755); err != nil {
		return fmt.Errorf("Kueue reads a metrics certificate from %s, which cannot be created here: %w", kueueMetricsCertDir, err)
	}
	for _, f := range []string{"tls.crt", "tls.key"} {
		data, err := os.ReadFile(filepath.Join(servingCertDir, f))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(kueueMetricsCertDir, f), data, 0o600); err != nil {
			return fmt.Errorf("failed to write Kueue's metrics certificate: %w", err)
		}
	}
	return nil
}
