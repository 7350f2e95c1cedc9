package kind

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	kindcluster "sigs.k8s.io/kind/pkg/cluster"
	"sigs.k8s.io/kind/pkg/cluster/nodeutils"
	kindlog "sigs.k8s.io/kind/pkg/log"

	"github.com/trainersim/trainersim/fakegpu"
	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/gate"
	"github.com/trainersim/trainersim/sim/internal/audit"
	"github.com/trainersim/trainersim/sim/internal/checkout"
	"github.com/trainersim/trainersim/sim/internal/startup"
	"github.com/trainersim/trainersim/sim/providers/kubeconfig"
	"github.com/trainersim/trainersim/sim/releases"
	"github.com/trainersim/trainersim/sim/webhooks"
)

// Defaults of the kind provider.
const (
	// DefaultKindName is the kind cluster's name when Kind.Name is empty.
	DefaultKindName = "trainersim"
	// KindNodeImage is the node image `make kind-images` builds.
	KindNodeImage = "trainersim.dev/kind-node:v" + releases.KubernetesVersion
	// kindCreateWait bounds kind's wait for the node to be Ready.
	kindCreateWait = 3 * time.Minute
)

// Steps of the kind provider's Start (then those of kubeconfig.Kubeconfig).
const (
	StepDocker     = "docker"
	StepKindCreate = "kind-cluster"
	StepImages     = "images-loaded"
	StepInstall    = "trainer+jobset-deployments"
	StepWebhooks   = "webhooks-serving"
)

// ErrKindTrainer is returned by Kind.Start for a Trainer release other than
// releases.TrainerVersion.
var ErrKindTrainer = errors.New("the kind provider has images of the Trainer " + releases.TrainerVersion + " only ('make kind-images'); other releases run on envtest")

// ErrKindNameTaken is returned by Kind.Start when a kind cluster of the name
// exists and is not one a killed simctl left behind.
var ErrKindNameTaken = errors.New("a kind cluster of this name already exists")

// Kind is a kind cluster that simctl creates (sigs.k8s.io/kind's Go API),
// with Kubeflow Trainer and JobSet installed as Deployments from their own
// manifests (fixtures.TrainerInstall), Kueue from its own when Components
// ask for it (fixtures.KueueInstall), the default runtimes, kwok as a
// Deployment, and the cluster-wide isolation policy; scenarios then run on
// it as on any existing cluster (Kubeconfig). Everything runs from images
// `make kind-images` built on this machine. The zero value of every field is
// a documented default.
type Kind struct {
	// Name is the kind cluster's name. Empty: DefaultKindName.
	Name string
	// NodeImage is the kind node image. Empty: KindNodeImage.
	NodeImage string
	// DockerHost is the Docker engine kind uses (DOCKER_HOST). Empty:
	// $DOCKER_HOST, else the one `make kind-docker` chose
	// (bin/kind-build/docker-host of the checkout), else docker's default.
	DockerHost string
	// KubeconfigPath is where the cluster's admin kubeconfig is written.
	// Empty: <WorkDir>/kubeconfig.
	KubeconfigPath string
	// WorkDir receives the kubeconfig. Empty: a new temporary directory
	// that Stop removes (unless Keep).
	WorkDir string
	// Keep leaves the cluster up after Stop.
	Keep bool
	// Trainer is the release to run; Start fails with ErrKindTrainer for
	// any but releases.TrainerVersion, the one `make kind-images` builds images of.
	// Empty: releases.TrainerVersion.
	Trainer string
	// Nodes are simulated node groups created by Start.
	Nodes []fakegpu.NodeGroup
	// Components are the optional components to install besides the
	// Trainer and JobSet (releases.Components): kueue installs Kueue
	// releases.KueueVersion from its own manifests and image. Empty: none.
	Components []string
	// Layout is where what is installed from which manifests: LayoutTrainer
	// or LayoutKueueE2E (layout.go), which runs Kueue whatever Components
	// say. Empty: LayoutTrainer.
	Layout string
	// StartTimeout bounds Start. Zero: cluster.DefaultStartTimeout.
	StartTimeout time.Duration
	// AuditLog, when set, is the file (new, in an existing directory, which
	// the node mounts) the API server writes its audit log to, with the
	// policy that records what a scenario can be rebuilt from
	// (audit.RecordPolicy), as envtest.Environment.AuditLog. Empty: the
	// components' writes only, in the work directory.
	AuditLog string
	// Progress, when set, is called once per step of Start as it is done.
	Progress func(cluster.StepTiming)
	// Clock measures start times. Nil: the real clock.
	Clock clock.PassiveClock
	// Heartbeat is how often KWOK renews the simulated nodes' Leases and
	// how long kube-controller-manager waits for a renewal, as
	// envtest.Environment.Heartbeat. Zero: fakegpu.FastHeartbeat.
	Heartbeat fakegpu.Heartbeat
	// Serve and ServeHost are kubeconfig.Kubeconfig's: find at start where
	// the node's API server reaches this machine (the Docker network's
	// gateway) to serve the scenarios' webhooks and gates there.
	Serve     bool
	ServeHost string

	// scenarios is the cluster as scenarios use it, once installed: a
	// kubeconfig.Kubeconfig of its admin kubeconfig, which every method of
	// cluster.Cluster but Start, Stop and AdminKubeconfig is.
	scenarios  *kubeconfig.Kubeconfig
	provider   *kindcluster.Provider
	created    bool
	ownWorkDir bool
	progress   startup.Progress
	// auditLog is the node's API server's audit log, read as it grows.
	auditOnce sync.Once
	auditLog  *audit.Log
}

var (
	_ cluster.Cluster        = (*Kind)(nil)
	_ cluster.Isolation      = (*Kind)(nil)
	_ cluster.WebhookServing = (*Kind)(nil)
	_ cluster.GateServing    = (*Kind)(nil)
)

// Images the kind cluster runs besides the node's own: the controllers'
// (names as their manifests give them) and kwok's, built by `make
// kind-images`.
func kindControllerImages() []string {
	return []string{
		"ghcr.io/kubeflow/trainer/trainer-controller-manager:" + releases.TrainerVersion,
		"registry.k8s.io/jobset/jobset:" + releases.JobSetVersion,
		releases.KwokImage,
	}
}

func (k *Kind) name() string {
	if k.Name == "" {
		return DefaultKindName
	}
	return k.Name
}

func (k *Kind) now() time.Time { return k.progress.Now() }

func (k *Kind) ready(name string, since time.Time) { k.progress.Ready(name, since) }

// Start creates the kind cluster, installs the Trainer, JobSet, kwok and the
// isolation policy, checks it as Kubeconfig does and creates Nodes. A
// cluster of the name that a killed simctl left is deleted first; any other
// is ErrKindNameTaken. On error nothing is left behind.
func (k *Kind) Start(ctx context.Context) (err error) {
	release, err := releases.LookupTrainer(k.Trainer)
	if err != nil {
		return err
	}
	if !release.InProcess() {
		return fmt.Errorf("cannot run the Trainer %s: %w", release.Version, ErrKindTrainer)
	}
	if err := releases.ValidateComponents(k.Components); err != nil {
		return err
	}
	if err := ValidateLayout(k.Layout); err != nil {
		return err
	}
	// The Trainer runs in the cluster: what this process logs through klog
	// and its other global loggers (the runner's watches, readiness checks)
	// is dropped; the runner records the server's warnings on its writes
	// itself.
	ctx, cancel := k.progress.Start(ctx, k.Clock, k.Progress, k.StartTimeout)
	defer cancel()
	defer func() {
		if err != nil {
			keep := k.Keep
			k.Keep = false
			_ = k.Stop()
			k.Keep = keep
		}
	}()

	since := k.now()
	if err := k.useDocker(ctx); err != nil {
		return err
	}
	k.provider = kindcluster.NewProvider(kindcluster.ProviderWithDocker(), kindcluster.ProviderWithLogger(kindlog.NoopLogger{}))
	loaded := append(kindControllerImages(), k.componentImages()...)
	images := append([]string{k.nodeImage()}, loaded...)
	// Nothing is pulled: where a registry is reachable, pull them first.
	if missing := missingImages(ctx, images); len(missing) > 0 {
		return fmt.Errorf("docker has no image %s: run 'make kind-images' in the trainersim checkout", strings.Join(missing, ", "))
	}
	k.ready(StepDocker, since)

	since = k.now()
	if err := removeStaleKind(k.provider, k.name()); err != nil {
		return err
	}
	// Claimed before the create, so that a SIGKILL during it leaves a
	// cluster the next run knows to delete.
	if err := claimKind(k.name(), k.Keep); err != nil {
		return err
	}
	if k.WorkDir == "" {
		if k.WorkDir, err = startup.NewWorkDir(); err != nil {
			return err
		}
		k.ownWorkDir = true
	}
	if k.KubeconfigPath == "" {
		k.KubeconfigPath = filepath.Join(k.WorkDir, "kubeconfig")
	}
	if err := k.writeAuditPolicy(); err != nil {
		return err
	}
	kindCfg := KindConfig(k.name(), k.nodeImage(), k.Heartbeat)
	withAuditLog(kindCfg, k.auditDir(), k.AuditLog)
	err = k.provider.Create(k.name(),
		kindcluster.CreateWithV1Alpha4Config(kindCfg),
		kindcluster.CreateWithKubeconfigPath(k.KubeconfigPath),
		kindcluster.CreateWithWaitForReady(kindCreateWait),
		kindcluster.CreateWithDisplayUsage(false),
		kindcluster.CreateWithDisplaySalutation(false))
	k.created = true // a failed create may leave its container
	if err != nil {
		return fmt.Errorf("failed to create kind cluster %s: %w", k.name(), err)
	}
	k.ready(StepKindCreate, since)

	since = k.now()
	if err := k.loadImages(ctx, loaded); err != nil {
		return err
	}
	k.ready(StepImages, since)

	cfg, err := kubeconfig.LoadKubeconfig(k.KubeconfigPath, "")
	if err != nil {
		return err
	}
	c, err := kubeconfig.NewClient(cfg)
	if err != nil {
		return err
	}
	in := &installer{client: c, progress: &k.progress, kueue: k.runsKueue(), layout: k.Layout, heartbeat: k.Heartbeat}
	if err := in.install(ctx); err != nil {
		return err
	}

	k.scenarios = &kubeconfig.Kubeconfig{
		Path: k.KubeconfigPath, Trainer: k.Trainer, Nodes: k.Nodes, StartTimeout: k.StartTimeout,
		Progress: k.Progress, Clock: k.Clock, Provider: cluster.Kind, Began: k.progress.Began(),
		Serve: k.Serve, ServeHost: k.ServeHost,
	}
	return k.scenarios.Start(ctx)
}

func (k *Kind) nodeImage() string {
	if k.NodeImage == "" {
		return KindNodeImage
	}
	return k.NodeImage
}

// Stop stops what runs scenarios, then deletes the cluster unless Keep.
func (k *Kind) Stop() error {
	var errs []error
	if k.scenarios != nil {
		errs = append(errs, k.scenarios.Stop())
		k.scenarios = nil
	}
	if k.created && !k.Keep && k.provider != nil {
		if err := k.provider.Delete(k.name(), k.KubeconfigPath); err != nil {
			errs = append(errs, fmt.Errorf("failed to delete kind cluster %s: %w", k.name(), err))
		} else {
			releaseKind(k.name())
		}
		k.created = false
	}
	if k.ownWorkDir && !k.Keep && k.WorkDir != "" {
		if err := os.RemoveAll(k.WorkDir); err != nil {
			errs = append(errs, fmt.Errorf("failed to remove work dir: %w", err))
		}
		k.WorkDir, k.ownWorkDir = "", false
	}
	return errors.Join(errs...)
}

// AdminKubeconfig is KubeconfigPath.
func (k *Kind) AdminKubeconfig() string { return k.KubeconfigPath }

// Config, Client, Scheme, Versions, AddNodes, RemoveNodes, IsolateNamespace
// and IsolateNodeGroup are those of the cluster as scenarios use it
// (kubeconfig.Kubeconfig); valid after Start.

// Config returns the admin rest.Config.
func (k *Kind) Config() *rest.Config { return k.scenarios.Config() }

// Client returns an admin client.
func (k *Kind) Client() client.Client { return k.scenarios.Client() }

// Scheme returns the scheme of Client.
func (k *Kind) Scheme() *apiruntime.Scheme { return k.scenarios.Scheme() }

// Versions says what runs.
func (k *Kind) Versions() cluster.Versions { return k.scenarios.Versions() }

// ServeWebhooks is cluster.WebhookServing, on the address where the node's
// API server reaches this machine.
func (k *Kind) ServeWebhooks() (*webhooks.Server, error) { return k.scenarios.ServeWebhooks() }

// ServeGates is cluster.GateServing, as ServeWebhooks.
func (k *Kind) ServeGates() (*gate.Server, error) { return k.scenarios.ServeGates() }

// AddNodes creates simulated nodes and waits until each is Ready.
func (k *Kind) AddNodes(ctx context.Context, groups []fakegpu.NodeGroup) ([]string, error) {
	return k.scenarios.AddNodes(ctx, groups)
}

// RemoveNodes deletes simulated nodes without waiting.
func (k *Kind) RemoveNodes(ctx context.Context, names []string) error {
	return k.scenarios.RemoveNodes(ctx, names)
}

// Isolated is cluster.Isolation: a kind cluster always isolates, with the
// cluster-wide policy Start installs.
func (k *Kind) Isolated() bool { return k.scenarios.Isolated() }

// IsolateNamespace labels a namespace for the cluster's isolation policy.
func (k *Kind) IsolateNamespace(ns *corev1.Namespace) { k.scenarios.IsolateNamespace(ns) }

// IsolateNodeGroup returns g as the nodes of the namespace's scenario.
func (k *Kind) IsolateNodeGroup(g fakegpu.NodeGroup, namespace string) fakegpu.NodeGroup {
	return k.scenarios.IsolateNodeGroup(g, namespace)
}

// useDocker points kind (which runs the docker CLI) at DockerHost and checks
// that the engine answers.
func (k *Kind) useDocker(ctx context.Context) error {
	host := k.DockerHost
	if host == "" && os.Getenv("DOCKER_HOST") == "" {
		host = projectDockerHost()
	}
	if host != "" {
		if err := os.Setenv("DOCKER_HOST", host); err != nil {
			return err
		}
	}
	if _, err := exec.LookPath("docker"); err != nil {
		return errors.New("docker is not installed: run 'make kind-docker' (it installs Debian's docker.io when it may)")
	}
	out, err := exec.CommandContext(ctx, "docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput()
	if err != nil {
		return fmt.Errorf("docker is not running (DOCKER_HOST=%q): %s: run 'make kind-docker'", os.Getenv("DOCKER_HOST"), firstLineOf(out))
	}
	return nil
}

// projectDockerHost is the DOCKER_HOST `make kind-docker` wrote into
// bin/kind-build/docker-host of the checkout the working directory is in.
func projectDockerHost() string {
	for _, dir := range checkout.Upward() {
		if data, err := os.ReadFile(filepath.Join(dir, "bin", "kind-build", "docker-host")); err == nil {
			return strings.TrimSpace(string(data))
		}
	}
	return ""
}

// firstLineOf is the first line of a command's output.
func firstLineOf(out []byte) string {
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line
}

// missingImages returns the images docker does not have.
func missingImages(ctx context.Context, images []string) []string {
	var missing []string
	for _, img := range images {
		if exec.CommandContext(ctx, "docker", "image", "inspect", "--format", "{{.Id}}", img).Run() != nil {
			missing = append(missing, img)
		}
	}
	return missing
}

// loadImages loads images from docker into the node's containerd, as `kind
// load docker-image` does: one archive of them all (docker save of every
// image at once, their shared layers once), imported once per node, rather
// than a save and an import per image.
func (k *Kind) loadImages(ctx context.Context, images []string) error {
	nodes, err := k.provider.ListInternalNodes(k.name())
	if err != nil {
		return fmt.Errorf("failed to list the nodes of kind cluster %s: %w", k.name(), err)
	}
	for _, n := range nodes {
		save := exec.CommandContext(ctx, "docker", append([]string{"save"}, images...)...)
		out, err := save.StdoutPipe()
		if err != nil {
			return err
		}
		if err := save.Start(); err != nil {
			return fmt.Errorf("failed to save images %s: %w", strings.Join(images, " "), err)
		}
		loadErr := nodeutils.LoadImageArchive(n, out)
		if err := save.Wait(); err != nil || loadErr != nil {
			return fmt.Errorf("failed to load images %s into %s: %w", strings.Join(images, " "), n.String(), errors.Join(err, loadErr))
		}
	}
	return nil
}

// KindConfig is the kind configuration of a single-node cluster of the
// node image: the API server published on 127.0.0.1 only, kube-proxy in
// nftables mode; with trainersim's node image (KindNodeImage) no default
// CNI (the image has a fixed one: kindnetd cannot be built offline); and,
// only when this machine needs them, the
// workarounds of ../shared/KIND-OFFLINE.md: containerd's
// restrict_oom_score_adj when the capability bounding set lacks
// CAP_SYS_RESOURCE, kubelet's failCgroupV1: false on a cgroup v1 host. The
// kubelet's syncFrequency is 10s (see below); kube-controller-manager's
// node-monitor grace period is hb's (zero: fakegpu.FastHeartbeat).
func KindConfig(name, nodeImage string, hb fakegpu.Heartbeat) *v1alpha4.Cluster {
	cfg := &v1alpha4.Cluster{
		TypeMeta: v1alpha4.TypeMeta{Kind: "cluster.Cluster", APIVersion: "kind.x-k8s.io/v1alpha4"},
		Name:     name,
		Networking: v1alpha4.Networking{
			APIServerAddress:  "127.0.0.1",
			DisableDefaultCNI: strings.HasPrefix(nodeImage, "trainersim.dev/"),
			KubeProxyMode:     v1alpha4.NFTablesProxyMode,
			PodSubnet:         "10.244.0.0/16",
		},
		Nodes: []v1alpha4.Node{{Role: v1alpha4.ControlPlaneRole, Image: nodeImage}},
	}
	if lacksCapSysResource() {
		cfg.ContainerdConfigPatches = append(cfg.ContainerdConfigPatches,
			"[plugins.\"io.containerd.grpc.v1.cri\"]\n  restrict_oom_score_adj = true")
	}
	// The Trainer's and JobSet's webhook certificates reach their Pods
	// through a Secret volume, which the kubelet refreshes every
	// syncFrequency (1m by default): at 10s the controllers are ready about
	// a minute sooner.
	kubelet := "kind: KubeletConfiguration\nsyncFrequency: 10s\n"
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err != nil {
		kubelet += "failCgroupV1: false\n"
	}
	cfg.KubeadmConfigPatches = append(cfg.KubeadmConfigPatches, kubelet)
	// The node-lifecycle controller's grace goes with how often kwok renews
	// the simulated nodes' Leases, as on envtest (fakegpu.Heartbeat).
	cfg.KubeadmConfigPatchesJSON6902 = append(cfg.KubeadmConfigPatchesJSON6902,
		clusterConfigurationPatch(addExtraArg("controllerManager", "node-monitor-grace-period", hb.OrFast().NodeMonitorGracePeriod.String())))
	return cfg
}

// lacksCapSysResource reports whether CAP_SYS_RESOURCE (bit 24) is missing
// from this process's capability bounding set.
func lacksCapSysResource() bool {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "CapBnd:"); ok {
			bnd, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && bnd&(1<<24) == 0
		}
	}
	return false
}
