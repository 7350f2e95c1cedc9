package sime2e_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/envfuncs"
	"sigs.k8s.io/e2e-framework/pkg/features"
	"sigs.k8s.io/e2e-framework/support"

	"github.com/trainersim/trainersim/fakegpu"
	"github.com/trainersim/trainersim/sim"
	"github.com/trainersim/trainersim/sim/sime2e"
)

// The loader's lines for the bad inputs of these tests.
const (
	missingLine   = "testdata/missing.yaml: failed to read file: no such file or directory"
	badActorLine  = `testdata/unknown-actor.yaml:12:12: spec.steps[0].actor: unknown actor "kueue" (declared actors: sdk)`
	childSuiteEnv = "SIME2E_TEST_SUITE"
	childSuite    = "suite"    // TestMain: Setup creates the cluster
	childFeatures = "features" // no Setup: the features alone
	childPathsEnv = "SIME2E_TEST_PATHS"
	childTestName = "TestChild" // what the child runs
	klogErrorLine = `^E\d{4} [0-9:.]+ +\d+ \S+\] `
	setupFailure  = "Setup failure: "
)

// TestMain runs the tests, or, in the child process of a test that sets
// $SIME2E_TEST_SUITE, the suite a user would write with the paths of
// $SIME2E_TEST_PATHS: "suite" declares the scenarios at package level and
// creates the cluster in Setup; "features" tests the features without a
// cluster.
func TestMain(m *testing.M) {
	switch os.Getenv(childSuiteEnv) {
	case childSuite:
		trainersim := sime2e.NewProvider(sim.ClusterOptions{})
		childFeats = trainersim.Scenarios(strings.Split(os.Getenv(childPathsEnv), ",")...)
		testenv = env.NewWithConfig(envconf.New())
		testenv.Setup(envfuncs.CreateCluster(trainersim, "trainersim"))
		testenv.Finish(envfuncs.DestroyCluster("trainersim"))
		os.Exit(testenv.Run(m))
	case childFeatures:
		childFeats = sime2e.NewProvider(sim.ClusterOptions{}).Scenarios(strings.Split(os.Getenv(childPathsEnv), ",")...)
		testenv = env.NewWithConfig(envconf.New())
	}
	os.Exit(m.Run())
}

var (
	testenv    env.Environment
	childFeats []features.Feature
)

// TestChild is the test of the child processes; it does nothing in the
// parent.
func TestChild(t *testing.T) {
	if testenv == nil {
		return
	}
	testenv.Test(t, childFeats...)
}

// child runs this test binary as a user's suite (TestMain's modes) with a
// temporary directory of its own, and returns its output and its exit code.
func child(t *testing.T, mode string, paths ...string) (out string, code int, tmp string) {
	t.Helper()
	tmp = t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^"+childTestName+"$", "-test.v")
	cmd.Env = append(os.Environ(), childSuiteEnv+"="+mode, childPathsEnv+"="+strings.Join(paths, ","), "TMPDIR="+tmp)
	b, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("failed to run the child suite: %v", err)
	}
	return string(b), cmd.ProcessState.ExitCode(), tmp
}

// leftBehind fails the test when the child left files in its temporary
// directory or a process that names it is still running.
func leftBehind(t *testing.T, tmp string) {
	t.Helper()
	entries, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("the child left %s in its temporary directory", filepath.Join(tmp, e.Name()))
	}
	cmdlines, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range cmdlines {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the process ended
		}
		if strings.Contains(string(b), tmp) {
			t.Errorf("a process still runs in the child's temporary directory: %s", strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
}

// TestBadScenarioFileStartsNoCluster: declared before Setup, a path that
// does not exist and a file that does not load keep the cluster from
// starting; e2e-framework reports the Setup failure with the loader's
// lines, one per problem, and nothing is left behind.
func TestBadScenarioFileStartsNoCluster(t *testing.T) {
	for _, tc := range []struct {
		path, line string
	}{
		{"testdata/missing.yaml", missingLine},
		{"testdata/unknown-actor.yaml", badActorLine},
	} {
		t.Run(filepath.Base(tc.path), func(t *testing.T) {
			out, code, tmp := child(t, childSuite, tc.path)
			if code != 1 {
				t.Errorf("the suite exited with %d, want 1 (e2e-framework's Setup failure):\n%s", code, out)
			}
			var said []string
			for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
				if l != "FAIL" {
					said = append(said, l)
				}
			}
			if len(said) != 1 {
				t.Fatalf("the suite said %d lines besides FAIL, want the one Setup failure:\n%s", len(said), out)
			}
			want := regexp.MustCompile(klogErrorLine + regexp.QuoteMeta(setupFailure+tc.line) + "$")
			if !want.MatchString(said[0]) {
				t.Errorf("the suite said\n%s\nwant klog's Setup failure with the loader's line\n%s", said[0], tc.line)
			}
			if strings.Contains(out, "=== RUN") {
				t.Errorf("tests ran after the Setup failure:\n%s", out)
			}
			leftBehind(t, tmp)
		})
	}
}

// TestBadScenarioFileFailsItsFeature: tested without a cluster, a path
// that does not load gives one feature, which fails with the loader's line.
func TestBadScenarioFileFailsItsFeature(t *testing.T) {
	out, code, tmp := child(t, childFeatures, "testdata/unknown-actor.yaml")
	if code != 1 {
		t.Errorf("the suite exited with %d, want 1:\n%s", code, out)
	}
	for _, want := range []string{
		"--- FAIL: TestChild/" + strings.ReplaceAll(sime2e.LoadFeature, " ", "_") + "/load",
		"features.go:",
		badActorLine,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the suite's output lacks %q:\n%s", want, out)
		}
	}
	leftBehind(t, tmp)
}

// TestRefusals: what the provider cannot do, it refuses with a reason, and
// starts nothing.
func TestRefusals(t *testing.T) {
	ctx := context.Background()
	// A kubeconfig whose current context is not the one the options name.
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	raw := clientcmdapi.NewConfig()
	raw.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	raw.AuthInfos["u"] = &clientcmdapi.AuthInfo{}
	raw.Contexts["staging"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	raw.Contexts["ci"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	raw.CurrentContext = "staging"
	if err := clientcmd.WriteToFile(*raw, kubeconfig); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opts sim.ClusterOptions
		do   func(p *sime2e.Provider) error
		want string
	}{
		{"a context other than the kubeconfig's current one", sim.ClusterOptions{Kubeconfig: kubeconfig, Context: "ci"}, func(p *sime2e.Provider) error {
			_, err := p.Create(ctx)
			return err
		}, `e2e-framework reaches the cluster through the current context of ` + kubeconfig + ` ("staging"), not ClusterOptions.Context ("ci"): give a kubeconfig whose current context is the cluster's`},
		{"another Kubernetes version", sim.ClusterOptions{}, func(p *sime2e.Provider) error {
			_, err := p.WithVersion("v1.30.0").Create(ctx)
			return err
		}, "trainersim runs Kubernetes v1.36.3 only, not v1.30.0: leave WithVersion out, or choose the Trainer release with sim.ClusterOptions.Trainer"},
		{"arguments", sim.ClusterOptions{}, func(p *sime2e.Provider) error {
			_, err := p.Create(ctx, "--image", "kindest/node")
			return err
		}, `the trainersim cluster provider takes no arguments (got ["--image" "kindest/node"]): describe the cluster with sim.ClusterOptions in sime2e.NewProvider`},
		{"a configuration file", sim.ClusterOptions{}, func(p *sime2e.Provider) error {
			_, err := p.CreateWithConfig(ctx, "kind.yaml")
			return err
		}, "the trainersim cluster provider reads no configuration file (got kind.yaml): describe the cluster with sim.ClusterOptions in sime2e.NewProvider and create it with envfuncs.CreateCluster"},
		{"an image", sim.ClusterOptions{}, func(p *sime2e.Provider) error {
			return p.LoadImage(ctx, "example.com/trainer:dev")
		}, "load image example.com/trainer:dev: trainersim runs no container, so it loads no image: KWOK reports the Pods on simulated nodes Running without pulling anything, and the Trainer and JobSet run in this process (envtest) or from images built for kind"},
		{"an image archive", sim.ClusterOptions{}, func(p *sime2e.Provider) error {
			_, err := envfuncs.LoadImageArchiveToCluster("trainersim", "images.tar")(context.WithValue(ctx, support.ClusterNameContextKey("trainersim"), p), nil)
			return err
		}, "load image archive: load image archive images.tar: trainersim runs no container"},
		{"a kubeconfig before Create", sim.ClusterOptions{}, func(p *sime2e.Provider) error {
			_, err := p.GenerateKubeconfig()
			return err
		}, `the trainersim cluster "trainersim" is not running: create it first (envfuncs.CreateCluster)`},
		{"logs before Create", sim.ClusterOptions{}, func(p *sime2e.Provider) error {
			return p.ExportLogs(ctx, t.TempDir())
		}, `the trainersim cluster "trainersim" is not running: its logs are exported while it runs, before envfuncs.DestroyCluster`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := sime2e.NewProvider(tc.opts)
			p.WithName("trainersim")
			err := tc.do(p)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("got %v\nwant %s", err, tc.want)
			}
			if p.Cluster() != nil || p.GetKubeconfig() != "" || p.KubernetesRestConfig() != nil {
				t.Error("a cluster runs after the refusal")
			}
		})
	}
}

// TestCreateAndDestroy: envfuncs.CreateCluster starts an envtest cluster
// that the environment's kubeconfig and client reach, and
// envfuncs.DestroyCluster leaves no file and no process behind.
func TestCreateAndDestroy(t *testing.T) {
	logs := t.TempDir()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // the cluster's work directory and certificates
	cfg := envconf.New()
	p := sime2e.NewProvider(sim.ClusterOptions{Nodes: []fakegpu.NodeGroup{{Profile: "cpu", Count: 1}}})
	// Declared before Create, a scenario that takes no node unreachable:
	// the cluster gets the Kubernetes defaults' heartbeat.
	_ = p.Scenarios("../../scenarios/scheduling/gpu-toleration.yaml")
	ctx, err := envfuncs.CreateCluster(p, "trainersim")(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	destroyed := false
	defer func() {
		if !destroyed {
			_ = p.Destroy(context.Background())
		}
	}()

	if got, want := cfg.KubeconfigFile(), p.GetKubeconfig(); got != want || !strings.HasPrefix(got, tmp+string(filepath.Separator)) {
		t.Errorf("the environment's kubeconfig is %q, want the cluster's %q in its work directory under %s", got, want, tmp)
	}
	kubeconfig, err := clientcmd.LoadFromFile(cfg.KubeconfigFile())
	if err != nil {
		t.Fatal(err)
	}
	kctx, ok := kubeconfig.Contexts[p.GetKubectlContext()]
	if !ok {
		t.Fatalf("the kubeconfig has no context %q (GetKubectlContext)", p.GetKubectlContext())
	}
	if got, want := kubeconfig.Clusters[kctx.Cluster].Server, strings.TrimSuffix(p.KubernetesRestConfig().Host, "/"); got != want {
		t.Errorf("the kubeconfig's server is %s, KubernetesRestConfig's %s", got, want)
	}
	var nodes corev1.NodeList
	if err := cfg.Client().Resources().List(ctx, &nodes); err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 1 || nodes.Items[0].Labels[fakegpu.ProfileLabel] != "cpu" {
		t.Errorf("the environment's client lists %d nodes, want the one cpu node of the options", len(nodes.Items))
	}
	for _, n := range nodes.Items {
		// KWOK creates the node's Lease once it manages the node.
		var lease coordinationv1.Lease
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			return cfg.Client().Resources().Get(ctx, n.Name, corev1.NamespaceNodeLease, &lease) == nil, nil
		}); err != nil {
			t.Fatalf("node %s has no Lease: %v", n.Name, err)
		}
		if d := ptr.Deref(lease.Spec.LeaseDurationSeconds, 0); int(d) != fakegpu.KubernetesHeartbeat.NodeLeaseDurationSeconds {
			t.Errorf("node %s's Lease lasts %d s, want the Kubernetes defaults' %d", n.Name, d, fakegpu.KubernetesHeartbeat.NodeLeaseDurationSeconds)
		}
	}

	if err := p.ExportLogs(ctx, filepath.Join(logs, "out")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"controllers.log", "kube-scheduler.log", "kube-controller-manager.log"} {
		if _, err := os.Stat(filepath.Join(logs, "out", name)); err != nil {
			t.Errorf("the exported logs lack %s: %v", name, err)
		}
	}
	if _, err := p.Create(ctx); err == nil || !strings.Contains(err.Error(), "was created already") {
		t.Errorf("a second Create gave %v, want a refusal", err)
	}

	if _, err := envfuncs.DestroyCluster("trainersim")(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	destroyed = true
	if p.Cluster() != nil || p.GetKubeconfig() != "" {
		t.Error("the provider still has a cluster after Destroy")
	}
	if err := p.Destroy(ctx); err != nil {
		t.Errorf("a second Destroy: %v", err)
	}
	leftBehind(t, tmp)
}
