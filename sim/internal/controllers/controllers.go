// Package controllers wires the real Kubeflow Trainer and JobSet controllers
// and webhooks into controller-runtime managers, one each, the way the
// Trainer's own integration framework (test/integration/framework) and
// JobSet's main.go do: each manager has its own client, so each project acts
// as its own user, as its Deployment does on a cluster. Nothing here
// re-implements either project: it only calls their setup code.
package controllers

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	ctrlpkg "sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	jobsetcontrollers "sigs.k8s.io/jobset/pkg/controllers"
	jobsetwebhooks "sigs.k8s.io/jobset/pkg/webhooks"
	schedulerpluginsv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	trainercontroller "github.com/kubeflow/trainer/v2/pkg/controller"
	trainerwebhooks "github.com/kubeflow/trainer/v2/pkg/webhooks"

	"github.com/trainersim/trainersim/sim/internal/trainerruntime"
)

// NewScheme returns a private scheme with the types the Trainer's and
// JobSet's managers register in their main packages, plus
// CustomResourceDefinitions, which the harness reads.
func NewScheme() (*apiruntime.Scheme, error) {
	s := apiruntime.NewScheme()
	for _, add := range []func(*apiruntime.Scheme) error{
		clientgoscheme.AddToScheme,
		apiextensionsv1.AddToScheme,
		trainer.AddToScheme,
		jobsetv1alpha2.AddToScheme,
		schedulerpluginsv1alpha1.AddToScheme,
		volcanov1beta1.AddToScheme,
	} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("failed to build scheme: %w", err)
		}
	}
	return s, nil
}

// Options configures NewTrainerManager and NewJobSetManager.
type Options struct {
	// Config reaches the API server as the project's user.
	Config *rest.Config
	// Scheme is the scheme from NewScheme.
	Scheme *apiruntime.Scheme
	// WebhookHost, WebhookPort and WebhookCertDir are where the webhook
	// server listens and the serving certificate it uses (from envtest's
	// WebhookInstallOptions).
	WebhookHost    string
	WebhookPort    int
	WebhookCertDir string
	// Logger receives the controllers' logs.
	Logger logr.Logger
	// OnBuild, when set, is called after every successful NewObjects of the
	// trainer's runtimes (trainerruntime.Observe). Nil: the controllers and
	// webhooks get the trainer's runtimes themselves, undecorated. The
	// Trainer's manager only.
	OnBuild trainerruntime.BuildHook
	// Progress, when set, observes how far the Trainer's controllers have
	// got (its cache's handlers and its controllers' queues). The
	// Trainer's manager only: JobSet's controllers take no options.
	Progress *Progress
}

// trainerConcurrency is the groupKindConcurrency of manifests/base/manager/
// controller_manager_config.yaml, the same in every supported release, set
// as the Trainer's main sets it. controller-runtime applies it only to a
// controller built with For; the Trainer's TrainJob controller is built
// with WatchesRawSource, so it reconciles TrainJobs with one worker, as its
// Deployment does (sim/runner/componentlocks.go relies on that).
var trainerConcurrency = map[string]int{
	"TrainJob.trainer.kubeflow.org":               5,
	"TrainingRuntime.trainer.kubeflow.org":        1,
	"ClusterTrainingRuntime.trainer.kubeflow.org": 1,
}

// newManager builds a manager with o's client, logger and webhook server,
// no metrics, probes or leader election; concurrency, when set, is its
// controllers' groupKindConcurrency.
func newManager(o Options, concurrency map[string]int) (ctrl.Manager, error) {
	var newCache cache.NewCacheFunc
	if o.Progress != nil {
		newCache = o.Progress.NewCache
	}
	mgr, err := ctrl.NewManager(o.Config, ctrl.Options{
		NewCache:               newCache,
		Scheme:                 o.Scheme,
		Logger:                 o.Logger,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Several environments may live in one process (benchmarks, tests):
		// controller names repeat, as in the Trainer's integration framework.
		Controller: config.Controller{SkipNameValidation: ptr.To(true), GroupKindConcurrency: concurrency},
		WebhookServer: webhook.NewServer(webhook.Options{
			Host:    o.WebhookHost,
			Port:    o.WebhookPort,
			CertDir: o.WebhookCertDir,
		}),
	})
	if err != nil {
		return nil, fmt.Errorf("failed to create manager: %w", err)
	}
	return mgr, nil
}

// NewTrainerManager builds a manager running the Trainer controllers and
// webhooks (runtimecore.New through trainerruntime.New,
// controller.SetupControllers, webhooks.Setup). ctx bounds the field
// indexers and must live as long as the manager.
func NewTrainerManager(ctx context.Context, o Options) (ctrl.Manager, error) {
	mgr, err := newManager(o, trainerConcurrency)
	if err != nil {
		return nil, err
	}
	runtimes, err := trainerruntime.New(ctx, mgr.GetClient(), mgr.GetFieldIndexer())
	if err != nil {
		return nil, err
	}
	if o.OnBuild != nil {
		runtimes = trainerruntime.Observe(runtimes, o.OnBuild)
	}
	options := ctrlpkg.Options{SkipNameValidation: ptr.To(true)}
	if o.Progress != nil {
		options.NewQueue = o.Progress.NewQueue(mgr.GetControllerOptions())
	}
	if name, err := trainercontroller.SetupControllers(mgr, runtimes, options); err != nil {
		return nil, fmt.Errorf("failed to set up trainer controller %s: %w", name, err)
	}
	if name, err := trainerwebhooks.Setup(mgr, runtimes); err != nil {
		return nil, fmt.Errorf("failed to set up trainer webhook %s: %w", name, err)
	}
	return mgr, nil
}

// NewJobSetManager builds a manager running the JobSet controllers and
// webhooks (SetupJobSetIndexes, SetupPodIndexes, the JobSet and Pod
// reconcilers, webhooks.Setup). ctx bounds the field indexers and must live
// as long as the manager.
func NewJobSetManager(ctx context.Context, o Options) (ctrl.Manager, error) {
	mgr, err := newManager(o, nil)
	if err != nil {
		return nil, err
	}
	if err := jobsetcontrollers.SetupJobSetIndexes(ctx, mgr.GetFieldIndexer()); err != nil {
		return nil, fmt.Errorf("failed to set up jobset indexes: %w", err)
	}
	if err := jobsetcontrollers.SetupPodIndexes(ctx, mgr.GetFieldIndexer()); err != nil {
		return nil, fmt.Errorf("failed to set up jobset pod indexes: %w", err)
	}
	jobSets := jobsetcontrollers.NewJobSetReconciler(mgr.GetClient(), mgr.GetScheme(), mgr.GetEventRecorder("jobset"))
	if err := jobSets.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("failed to set up jobset controller: %w", err)
	}
	pods := jobsetcontrollers.NewPodReconciler(mgr.GetClient(), mgr.GetScheme(), mgr.GetEventRecorder("pod"))
	if err := pods.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("failed to set up jobset pod controller: %w", err)
	}
	if err := jobsetwebhooks.Setup(mgr); err != nil {
		return nil, fmt.Errorf("failed to set up jobset webhooks: %w", err)
	}
	return mgr, nil
}
