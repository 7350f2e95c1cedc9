package sim

import (
	"os"
	"time"

	"github.com/trainersim/trainersim/fakegpu"
	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/internal/audit"
	"github.com/trainersim/trainersim/sim/internal/proc"
	"github.com/trainersim/trainersim/sim/internal/proclog"
	"github.com/trainersim/trainersim/sim/providers/envtest"
	"github.com/trainersim/trainersim/sim/providers/kind"
	"github.com/trainersim/trainersim/sim/providers/kubeconfig"
)

// Cluster names, as --cluster takes them (the provider names of
// sim/cluster).
const (
	ClusterEnvtest    = cluster.Envtest
	ClusterKubeconfig = cluster.Kubeconfig
	ClusterKind       = cluster.Kind
)

// KubeconfigEnv is the environment variable that points the ginkgo adapter
// (go test ./scenarios/...), and the e2e-framework adapter given
// ClusterOptionsFromEnv, at an existing cluster instead of envtest.
const KubeconfigEnv = "TRAINERSIM_KUBECONFIG"

// ClusterOptions describe the cluster a command or a suite runs on. The
// zero value is an envtest cluster with the default settings.
type ClusterOptions struct {
	// Provider is ClusterEnvtest (the default when empty) or ClusterKind;
	// Kubeconfig set means ClusterKubeconfig.
	Provider string
	// Kubeconfig, when set, is an existing cluster to run on (Kubeconfig).
	Kubeconfig string
	// KindName is Kind.Name, KindNodeImage Kind.NodeImage; Keep is
	// Kind.Keep (sim/providers/kind).
	KindName      string
	KindNodeImage string
	Keep          bool
	// Context is the kubeconfig's context. Empty: its current context.
	Context string
	// Nodes are the simulated nodes created at start.
	Nodes []fakegpu.NodeGroup
	// AssetsDir, WorkDir and StartTimeout are as on envtest.Environment.
	AssetsDir    string
	WorkDir      string
	StartTimeout time.Duration
	// KubeconfigOut is where an envtest cluster writes its admin kubeconfig.
	KubeconfigOut string
	// Unisolated is kubeconfig.Kubeconfig.Unisolated.
	Unisolated bool
	// Progress is called as each step of Start is done.
	Progress func(cluster.StepTiming)
	// Trainer is envtest.Environment.Trainer, kind.Kind.Trainer or
	// kubeconfig.Kubeconfig.Trainer.
	Trainer string
	// TrainerAs is envtest.Environment.TrainerAs: the release a Trainer
	// checkout compiled in descends from. Only envtest runs it.
	TrainerAs string
	// Serve and ServeHost are kubeconfig.Kubeconfig's and kind.Kind's: find
	// at start where the cluster's API server reaches this machine to
	// serve the scenarios' webhooks and gates (envtest serves them on
	// loopback, which its API server reaches).
	Serve     bool
	ServeHost string
	// Components is envtest.Environment.Components and kind.Kind.Components:
	// the optional components to start. An existing cluster runs what it
	// runs: the kubeconfig provider leaves them out.
	Components []string
	// Layout is kind.Kind.Layout: where what is installed on a kind
	// cluster. Empty: the Trainer's own install.
	Layout string
	// AuditLog is envtest.Environment.AuditLog and kind.Kind.AuditLog: the file of a recorded
	// run's audit log. Empty: none recorded.
	AuditLog string
	// Heartbeat is envtest.Environment.Heartbeat and kind.Kind.Heartbeat:
	// the simulated nodes' Lease renewals and the node-lifecycle
	// controller's grace. Zero: fakegpu.FastHeartbeat. An existing cluster
	// keeps its own grace; the KWOK simctl starts there renews fast.
	Heartbeat fakegpu.Heartbeat
	// Views is envtest.Environment.Views: the components whose watches
	// are viewable. Only envtest stands between them and the API server.
	Views []string
}

// ClusterName is the name of the provider the options choose, as
// cluster.Versions names it: cluster.Envtest, cluster.Kind or
// cluster.Kubeconfig.
func (o ClusterOptions) ClusterName() string {
	switch {
	case o.Provider == ClusterKind:
		return cluster.Kind
	case o.Kubeconfig != "":
		return cluster.Kubeconfig
	}
	return cluster.Envtest
}

// NewCluster returns the (not yet started) cluster the options describe.
func NewCluster(o ClusterOptions) cluster.Cluster {
	if o.Provider == ClusterKind {
		return &kind.Kind{Name: o.KindName, NodeImage: o.KindNodeImage, Keep: o.Keep, Trainer: o.Trainer, Components: o.Components, KubeconfigPath: o.KubeconfigOut, WorkDir: o.WorkDir, Nodes: o.Nodes, StartTimeout: o.StartTimeout, Progress: o.Progress, Serve: o.Serve, ServeHost: o.ServeHost, Layout: o.Layout, AuditLog: o.AuditLog, Heartbeat: o.Heartbeat}
	}
	if o.Kubeconfig != "" {
		return &kubeconfig.Kubeconfig{Serve: o.Serve, ServeHost: o.ServeHost, Trainer: o.Trainer, Path: o.Kubeconfig, Context: o.Context, Nodes: o.Nodes, AssetsDir: o.AssetsDir, WorkDir: o.WorkDir, StartTimeout: o.StartTimeout, Unisolated: o.Unisolated, Progress: o.Progress}
	}
	return &envtest.Environment{Trainer: o.Trainer, TrainerAs: o.TrainerAs, Components: o.Components, AssetsDir: o.AssetsDir, Nodes: o.Nodes, WorkDir: o.WorkDir, KubeconfigPath: o.KubeconfigOut, StartTimeout: o.StartTimeout, Progress: o.Progress, AuditLog: o.AuditLog, Heartbeat: o.Heartbeat, Views: o.Views}
}

// ClusterEnv is the environment variable that chooses the ginkgo adapter's
// provider: envtest (the default) or kind.
const ClusterEnv = "TRAINERSIM_CLUSTER"

// TrainerEnv is the environment variable that chooses the ginkgo adapter's
// Trainer release: the one envtest runs, the one a kind cluster or an
// existing cluster must run (ClusterOptions.Trainer).
const TrainerEnv = "TRAINERSIM_TRAINER"

// TrainerAsEnv is the environment variable that gives the ginkgo adapter's
// ClusterOptions.TrainerAs: the release a Trainer checkout compiled in
// descends from (make test TRAINER_DIR=... TRAINER_AS=...).
const TrainerAsEnv = "TRAINERSIM_TRAINER_AS"

// ClusterOptionsFromEnv returns the options of the ginkgo adapter (and of
// the e2e-framework adapter's sime2e.NewProvider(ClusterOptionsFromEnv())):
// $TRAINERSIM_KUBECONFIG (KubeconfigEnv) names an existing cluster;
// $TRAINERSIM_CLUSTER=kind (ClusterEnv) creates a kind cluster; neither,
// envtest. $TRAINERSIM_TRAINER (TrainerEnv; empty: the pinned one) is the
// Trainer release envtest runs; kind and an existing cluster refuse to
// start unless they run it. $TRAINERSIM_TRAINER_AS (TrainerAsEnv) is
// TrainerAs.
func ClusterOptionsFromEnv() ClusterOptions {
	return ClusterOptions{Kubeconfig: os.Getenv(KubeconfigEnv), Provider: os.Getenv(ClusterEnv), Trainer: os.Getenv(TrainerEnv), TrainerAs: os.Getenv(TrainerAsEnv)}
}

// CheckAuditLog checks that path can take a recorded run's audit log
// (ClusterOptions.AuditLog): a file that does not exist yet, its directory
// then created, or an empty one.
func CheckAuditLog(path string) error { return audit.CheckNewLog(path) }

// RouteProcessLogs keeps the process's global loggers (klog, where
// client-go writes; controller-runtime's global logger; the standard
// library's log, where net/http servers write TLS handshake errors) off
// standard error for the rest of the process: their lines go to the log
// file of the envtest cluster running at the time (logs/controllers.log of
// its work dir) and are dropped while none runs. simctl calls it before
// anything else, and the ginkgo adapter for the suite it declares; the
// e2e-framework adapter routes them the same way when it creates a cluster,
// but to standard error while no envtest cluster runs (e2e-framework
// reports a failed Setup through klog). A program with loggers of its own
// does not call it, and starting a cluster leaves them as they are.
func RouteProcessLogs() { proclog.Install() }

// TuneGC sets this process's Go garbage collector as the harness sets the
// cluster's processes' (GOGC=400, GOMEMLIMIT an eighth of the machine's
// memory, at least 1 GiB), where the environment
// sets neither: for a program that runs the in-process controllers, as
// simctl does. A test suite that starts clusters need not call it.
func TuneGC() { proc.TuneGC() }

// TrainerBuilt says whether a cluster simctl starts with envtest can run a
// Trainer release (an upgrade step's to): nil, or why not, naming the make
// target that builds it. For scenario.Options.TrainerBuilt.
func TrainerBuilt(version string) error { return envtest.TrainerBuilt(version) }
