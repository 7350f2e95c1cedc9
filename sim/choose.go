package sim

import (
	"os"
	"time"

	"github.com/trainersim/trainersim/fakegpu"
)

// Cluster names, as --cluster takes them.
const (
	ClusterEnvtest    = "envtest"
	ClusterKubeconfig = "kubeconfig"
)

// KubeconfigEnv is the environment variable that points the ginkgo adapter
// (go test ./scenarios/...) at an existing cluster instead of envtest.
const KubeconfigEnv = "TRAINERSIM_KUBECONFIG"

// ClusterOptions describe the cluster a command or a suite runs on. The
// zero value is an envtest cluster with the default settings.
type ClusterOptions struct {
	// Kubeconfig, when set, is an existing cluster to run on (Kubeconfig);
	// empty: a new envtest cluster (Environment).
	Kubeconfig string
	// Context is the kubeconfig's context. Empty: its current context.
	Context string
	// Nodes are the simulated nodes created at start.
	Nodes []fakegpu.NodeGroup
	// AssetsDir, WorkDir and StartTimeout are as on Environment.
	AssetsDir    string
	WorkDir      string
	StartTimeout time.Duration
	// KubeconfigOut is where an envtest cluster writes its admin kubeconfig.
	KubeconfigOut string
	// Unisolated is Kubeconfig.Unisolated.
	Unisolated bool
	// Progress is called as each component becomes ready.
	Progress func(ComponentTiming)
}

// NewCluster returns the (not yet started) cluster the options describe.
func NewCluster(o ClusterOptions) Cluster {
	if o.Kubeconfig != "" {
		return &Kubeconfig{Path: o.Kubeconfig, Context: o.Context, Nodes: o.Nodes, AssetsDir: o.AssetsDir, WorkDir: o.WorkDir, StartTimeout: o.StartTimeout, Unisolated: o.Unisolated, Progress: o.Progress}
	}
	return &Environment{AssetsDir: o.AssetsDir, Nodes: o.Nodes, WorkDir: o.WorkDir, KubeconfigPath: o.KubeconfigOut, StartTimeout: o.StartTimeout, Progress: o.Progress}
}

// ClusterOptionsFromEnv returns the options of the ginkgo adapter:
// $TRAINERSIM_KUBECONFIG (KubeconfigEnv) names an existing cluster; unset,
// envtest.
func ClusterOptionsFromEnv() ClusterOptions {
	return ClusterOptions{Kubeconfig: os.Getenv(KubeconfigEnv)}
}
