package envtest

import (
	"context"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/trainersim/trainersim/fixtures"
	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/identity"
	"github.com/trainersim/trainersim/sim/internal/storage"
	"github.com/trainersim/trainersim/sim/manifests"
	"github.com/trainersim/trainersim/sim/policy"
)

// What the envtest provider installs into its API server: the components'
// identities and RBAC, the CRDs, the webhook configurations, the default
// runtimes, the isolation policy and the default StorageClass.

// StepRBAC is the step that gives the components their
// ServiceAccounts and roles.
const StepRBAC = "rbac"

// installRBAC creates the ServiceAccounts and roles of the Trainer, JobSet,
// KWOK and the provisioner from their manifests (restored: they are in the
// snapshot). Kueue's come with Kueue (startKueue); kube-scheduler's and
// kube-controller-manager's are the API server's bootstrap policy.
func (e *Environment) installRBAC(ctx context.Context, done chan struct{}, restored bool) error {
	since := e.now()
	if !restored {
		for _, m := range []struct {
			fsys fs.FS
			path string
		}{
			{e.release.Fixtures(), fixtures.TrainerRBAC},
			{fixtures.FS, fixtures.KwokRBAC},
			{fixtures.FS, fixtures.KwokVolumesRBAC},
			{fixtures.FS, fixtures.ProvisionerRBAC},
		} {
			if err := installRBACFile(ctx, e.client, m.fsys, m.path); err != nil {
				return err
			}
		}
	}
	close(done)
	e.ready(StepRBAC, since)
	return nil
}

// installRBACFile creates the objects of an RBAC manifest.
func installRBACFile(ctx context.Context, c client.Client, fsys fs.FS, path string) error {
	objs, err := identity.ReadRBAC(fsys, path)
	if err != nil {
		return err
	}
	return identity.Install(ctx, c, objs)
}

// installCRDs creates the release's CRDs (restored: they are in the
// snapshot, and only the wait is left) and waits until the API server
// serves their resources.
func (e *Environment) installCRDs(done chan struct{}, restored bool) error {
	since := e.now()
	crds, err := manifests.ReadCRDs(e.release.Fixtures(), fixtures.CRDDir)
	if err != nil {
		return err
	}
	if restored {
		err = waitForCRDs(e.cfg, crds)
	} else {
		err = createCRDs(e.cfg, crds)
	}
	if err != nil {
		return err
	}
	close(done)
	e.ready(StepCRDs, since)
	return nil
}

// Bounds of the wait until the API server serves new CRDs' resources.
const (
	crdReadyTimeout = time.Minute
	crdPollInterval = 20 * time.Millisecond
)

// createCRDs creates crds and waits until the API server serves their
// resources. Each is created by a request of its own, side by side: the API
// server compiles every CRD's schema and CEL rules on create, which
// dominates.
func createCRDs(cfg *rest.Config, crds []*apiextensionsv1.CustomResourceDefinition) error {
	var g errgroup.Group
	for _, crd := range crds {
		g.Go(func() error { return envtest.CreateCRDs(cfg, []*apiextensionsv1.CustomResourceDefinition{crd}) })
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("failed to create CRDs: %w", err)
	}
	return waitForCRDs(cfg, crds)
}

// waitForCRDs waits until the API server serves the resources of crds and
// their watch caches are ready.
func waitForCRDs(cfg *rest.Config, crds []*apiextensionsv1.CustomResourceDefinition) error {
	if err := envtest.WaitForCRDs(cfg, crds, envtest.CRDInstallOptions{MaxTime: crdReadyTimeout, PollInterval: crdPollInterval}); err != nil {
		return fmt.Errorf("failed to wait for CRDs: %w", err)
	}
	return waitForWatchCaches(cfg, crds)
}

// waitForWatchCaches waits until the API server's watch cache of each of
// crds' resources is ready. The API server makes a custom resource's watch
// cache at the first request for it and fills it from etcd in the
// background; until then a watch is answered 429 "storage is
// (re)initializing", Retry-After a second. A component that starts before
// lists from etcd, watches from that list's resourceVersion, is told to
// retry, and when a write landed between its list and the cache's fill
// its retry is answered 410 "too old resource version" and it lists again,
// a second or two later: in a scenario's first step. A view then misses
// what the list shows (a run saw the Trainer build a JobSet for a TrainJob
// its view held). So the components start once a watch is served: then
// their lists and watches are the cache's, as on a cluster that has run a
// while.
func waitForWatchCaches(cfg *rest.Config, crds []*apiextensionsv1.CustomResourceDefinition) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("failed to create a client: %w", err)
	}
	rc := cs.Discovery().RESTClient()
	ctx, cancel := context.WithTimeout(context.Background(), crdReadyTimeout)
	defer cancel()
	var g errgroup.Group
	for _, crd := range crds {
		path := "/apis/" + crd.Spec.Group + "/" + servedVersion(crd) + "/" + crd.Spec.Names.Plural
		g.Go(func() error {
			var last error
			err := wait.PollUntilContextCancel(ctx, crdPollInterval, true, func(ctx context.Context) (bool, error) {
				// resourceVersion 0: served from the cache, whatever it
				// holds, once it is ready. No retry after the 429's
				// second: the cache fills in milliseconds.
				body, err := rc.Get().AbsPath(path).Param("watch", "true").Param("resourceVersion", "0").Param("timeoutSeconds", "1").MaxRetries(0).Stream(ctx)
				if err != nil {
					last = err
					return false, nil
				}
				_ = body.Close()
				return true, nil
			})
			if err != nil {
				return fmt.Errorf("the API server's watch cache of %s is not ready: %w (%v)", path, err, last)
			}
			return nil
		})
	}
	return g.Wait()
}

// servedVersion returns a version crd serves: its storage version if it
// serves it.
func servedVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	version := ""
	for _, v := range crd.Spec.Versions {
		if v.Served && (version == "" || v.Storage) {
			version = v.Name
		}
	}
	return version
}

func (e *Environment) installWebhookConfigs(done chan struct{}) error {
	since := e.now()
	// envtest's Start already chose the serving host, port and certificate
	// (with no webhooks to install); point the configurations at them.
	opts := &e.env.WebhookInstallOptions
	// The Trainer's are named as its manifests install them
	// (defaulter.trainer.kubeflow.org, validator.trainer.kubeflow.org), JobSet's
	// as its config/default's namePrefix makes them: names order the mutating
	// webhooks the API server calls.
	if err := readWebhookConfigs(opts, e.release); err != nil {
		return err
	}
	if err := opts.ModifyWebhookDefinitions(); err != nil {
		return fmt.Errorf("failed to point webhook configurations at the local server: %w", err)
	}
	if e.jobSetWebhookPort != 0 {
		if err := pointJobSetWebhooks(opts, e.jobSetWebhookPort); err != nil {
			return err
		}
	}
	if err := opts.Install(e.cfg); err != nil {
		return fmt.Errorf("failed to install webhook configurations: %w", err)
	}
	close(done)
	e.ready(StepWebhookConfigs, since)
	return nil
}

// pointJobSetWebhooks points the JobSet webhook configurations (manifests.ReadWebhooks
// prefix "jobset-"), which ModifyWebhookDefinitions pointed at envtest's
// serving port, at the port of a JobSet manager of its own.
func pointJobSetWebhooks(opts *envtest.WebhookInstallOptions, port int) error {
	repoint := func(name string, cc *admissionv1.WebhookClientConfig) error {
		if !strings.HasPrefix(name, "jobset-") {
			return nil
		}
		if cc.URL == nil {
			return fmt.Errorf("webhook configuration %s has no URL", name)
		}
		u, err := url.Parse(*cc.URL)
		if err != nil {
			return fmt.Errorf("webhook configuration %s: %w", name, err)
		}
		u.Host = net.JoinHostPort(u.Hostname(), strconv.Itoa(port))
		cc.URL = ptr.To(u.String())
		return nil
	}
	for _, m := range opts.MutatingWebhooks {
		for i := range m.Webhooks {
			if err := repoint(m.Name, &m.Webhooks[i].ClientConfig); err != nil {
				return err
			}
		}
	}
	for _, v := range opts.ValidatingWebhooks {
		for i := range v.Webhooks {
			if err := repoint(v.Name, &v.Webhooks[i].ClientConfig); err != nil {
				return err
			}
		}
	}
	return nil
}

// installRuntimes creates the Trainer's default ClusterTrainingRuntimes,
// through the Trainer's validating webhook like on a real cluster.
func (e *Environment) installRuntimes(ctx context.Context) error {
	since := e.now()
	objs, err := manifests.ReadObjects(e.release.Fixtures(), fixtures.RuntimeDir)
	if err != nil {
		return err
	}
	if err := e.waitPastCreateGrace(ctx, runtimeCRD); err != nil {
		return err
	}
	for _, o := range objs {
		if err := e.client.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("failed to create %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	e.ready(cluster.StepRuntimes, since)
	return nil
}

// runtimeCRD is the CRD of the default runtimes.
const runtimeCRD = "clustertrainingruntimes.trainer.kubeflow.org"

// crdCreateGrace is how long after a CRD becomes Established the API server
// delays every create of its resource by a flat two seconds
// (apiextensions-apiserver's crdHandler, for HA API servers to catch up).
const crdCreateGrace = 2 * time.Second

// waitPastCreateGrace waits until the API server no longer delays creates of
// the CRD's resource. The server compares against the Established
// condition's second-precision time, so this wait is shorter than its sleep.
func (e *Environment) waitPastCreateGrace(ctx context.Context, name string) error {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := e.client.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
		return fmt.Errorf("failed to get CRD %s: %w", name, err)
	}
	for _, c := range crd.Status.Conditions {
		if c.Type != apiextensionsv1.Established {
			continue
		}
		wait := c.LastTransitionTime.Add(crdCreateGrace).Sub(e.now())
		if wait <= 0 {
			return nil
		}
		select {
		case <-time.After(wait):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return fmt.Errorf("CRD %s is not Established", name)
}

// installIsolationPolicy installs the cluster-wide isolation policy for runs
// against this cluster (simctl run --kubeconfig), which need it because they
// do not use the PodNodeSelector annotations of IsolateNamespace. A
// snapshot build only creates it (waiting for it needs a namespace, which
// a snapshot must not hold); a start on the snapshot only waits for it.
func (e *Environment) installIsolationPolicy(ctx context.Context, restored bool) error {
	since := e.now()
	if !restored {
		if err := policy.ClusterIsolation.Create(ctx, e.client); err != nil {
			return err
		}
	}
	if !e.snapshotBuild {
		probe := func(ns *corev1.Namespace) { metav1.SetMetaDataLabel(&ns.ObjectMeta, cluster.IsolationKey, ns.Name) }
		if err := policy.ClusterIsolation.WaitEffective(ctx, e.client, probe); err != nil {
			return err
		}
	}
	e.ready(cluster.StepIsolation, since)
	return nil
}

// installStorageClass creates the default StorageClass, kind's "standard"
// with the in-process provisioner's name (storage.DefaultStorageClass). A
// start on the snapshot only checks that the snapshot holds it.
func (e *Environment) installStorageClass(ctx context.Context, restored bool) error {
	since := e.now()
	class := storage.DefaultStorageClass()
	if restored {
		if err := e.client.Get(ctx, client.ObjectKeyFromObject(class), class); err != nil {
			return fmt.Errorf("failed to get StorageClass %s from the snapshot: %w", class.Name, err)
		}
	} else if err := e.client.Create(ctx, class); err != nil {
		return fmt.Errorf("failed to create StorageClass %s: %w", class.Name, err)
	}
	e.ready(StepStorageClass, since)
	return nil
}
