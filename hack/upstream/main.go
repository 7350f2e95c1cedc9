// Command upstream runs other projects' e2e suites, unchanged, against
// clusters simctl starts (make test-upstream): each suite is built from the
// module cache at the version this repository pins, a cluster is started
// with `simctl up` and the options the suite needs, the suite's own set-up
// manifests are applied, and the suite runs with ginkgo's JSON report. It
// prints, per suite, the specs passed and failed and those that cannot run
// here with the reason, and writes the same to REPORT_DIR/summary.txt.
// Exit status: 0 every spec run passed, 1 one failed or a suite could not
// be built or run, 2 usage.
//
//	go run ./hack/upstream [-suites trainer,jobset,kueue] [-simctl bin/simctl] [-report-dir reports/upstream]
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/trainersim/trainersim/fakegpu"
	"github.com/trainersim/trainersim/sim/manifests"
)

// upReadyLine is the line simctl up prints once the cluster is ready.
const upReadyLine = "press Ctrl-C to stop"

// upStartTimeout bounds simctl up's start (its own --start-timeout is
// shorter; this only catches a hung process).
const upStartTimeout = 10 * time.Minute

// suiteTimeout bounds one suite's run (ginkgo's --timeout).
const suiteTimeout = 30 * time.Minute

func main() {
	names := flag.String("suites", "trainer,jobset,kueue", "the suites to run, comma-separated: "+strings.Join(suiteNames(), ", "))
	simctl := flag.String("simctl", "bin/simctl", "the simctl binary that starts the clusters")
	reportDir := flag.String("report-dir", "reports/upstream", "where each suite's log, JSON report and the summary go")
	flag.Parse()
	var chosen []suite
	for _, n := range strings.Split(*names, ",") {
		i := slices.IndexFunc(suites, func(s suite) bool { return s.Name == n })
		if i < 0 {
			fmt.Fprintf(os.Stderr, "upstream: unknown suite %q; the suites are %s\n", n, strings.Join(suiteNames(), ", "))
			os.Exit(2)
		}
		chosen = append(chosen, suites[i])
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := os.MkdirAll(*reportDir, 0o755); err != nil {
		fmt.Fprintf(os.Stderr, "upstream: %v\n", err)
		os.Exit(1)
	}
	simctlPath, err := filepath.Abs(*simctl)
	if err == nil {
		// The suites run in their packages' directories.
		*reportDir, err = filepath.Abs(*reportDir)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "upstream: %v\n", err)
		os.Exit(1)
	}
	var figures []figure
	for _, s := range chosen {
		fmt.Printf("== %s\n", s.Title)
		f := runSuite(ctx, s, simctlPath, *reportDir)
		fmt.Println(f.line())
		figures = append(figures, f)
	}
	summary := summarize(figures)
	fmt.Print("\n" + summary)
	if err := os.WriteFile(filepath.Join(*reportDir, "summary.txt"), []byte(summary), 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "upstream: %v\n", err)
		os.Exit(1)
	}
	for _, f := range figures {
		if !f.ok() {
			os.Exit(1)
		}
	}
}

func suiteNames() []string {
	var names []string
	for _, s := range suites {
		names = append(names, s.Name)
	}
	return names
}

// runSuite builds, starts a cluster for, and runs one suite.
func runSuite(ctx context.Context, s suite, simctl, reportDir string) figure {
	f := figure{suite: s}
	dir, version, err := moduleDir(ctx, s)
	if err != nil {
		f.err = err
		return f
	}
	f.version = version
	bin := filepath.Join(reportDir, s.Name+".test")
	fmt.Printf("building %s@%s %s\n", s.Module, version, s.Package)
	if err := build(ctx, dir, s.Package, bin); err != nil {
		f.err = fmt.Errorf("the %s suite does not build against %s: %w", s.Name, version, err)
		return f
	}
	kubeconfig := filepath.Join(reportDir, s.Name+".kubeconfig")
	up, err := startUp(ctx, simctl, kubeconfig, s.Up, filepath.Join(reportDir, s.Name+".up.log"))
	if err != nil {
		f.err = err
		return f
	}
	defer func() {
		if err := up.stop(); err != nil && f.err == nil {
			f.err = err
		}
	}()
	if err := setUp(ctx, kubeconfig, dir, s); err != nil {
		f.err = err
		return f
	}
	jsonReport := filepath.Join(reportDir, s.Name+".json")
	if err := runTests(ctx, s, bin, filepath.Join(dir, s.Package), kubeconfig, jsonReport, filepath.Join(reportDir, s.Name+".log")); err != nil {
		f.err = err
	}
	specs, err := readReport(jsonReport, s.LabelFilter)
	if err != nil {
		if f.err == nil {
			f.err = err
		}
		return f
	}
	f.specs = specs
	return f
}

// moduleDir finds the suite's module in the module cache at the version
// its pin directory's go.mod requires, downloading it when missing.
func moduleDir(ctx context.Context, s suite) (dir, version string, err error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", s.Module)
	cmd.Dir = s.PinDir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.Output()
	if err != nil {
		return "", "", fmt.Errorf("failed to find %s as %s/go.mod pins it: %w%s", s.Module, s.PinDir, err, stderrOf(err))
	}
	var m struct{ Dir, Version string }
	if err := json.Unmarshal(out, &m); err != nil {
		return "", "", fmt.Errorf("go mod download %s: %w", s.Module, err)
	}
	return m.Dir, m.Version, nil
}

// build compiles the suite's test binary in its own module, with the
// versions its go.mod and go.sum pin (no workspace, nothing changed).
func build(ctx context.Context, moduleDir, pkg, bin string) error {
	abs, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "go", "test", "-c", "-o", abs, pkg)
	cmd.Dir = moduleDir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s", lastLines(string(out), 5))
	}
	return nil
}

// upProcess is a running simctl up.
type upProcess struct {
	cmd  *exec.Cmd
	done chan error
	log  string
}

// startUp starts simctl up and returns once it printed that the cluster is
// ready; if it exits first, the error has the end of its output, which is
// also in logPath.
func startUp(ctx context.Context, simctl, kubeconfig string, flags []string, logPath string) (*upProcess, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	args := append([]string{"up", "--kubeconfig", kubeconfig}, flags...)
	fmt.Printf("simctl %s\n", strings.Join(args, " "))
	cmd := exec.Command(simctl, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("failed to start %s: %w", simctl, err)
	}
	up := &upProcess{cmd: cmd, done: make(chan error, 1), log: logPath}
	ready, logged := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(logged)
		sc := bufio.NewScanner(pr)
		sc.Buffer(nil, 1<<20)
		signalled := false
		for sc.Scan() {
			fmt.Fprintln(logFile, sc.Text())
			if !signalled && strings.Contains(sc.Text(), upReadyLine) {
				signalled = true
				close(ready)
			}
		}
		// A line too long for the scanner: keep simctl from blocking on
		// a full pipe.
		_, _ = io.Copy(logFile, pr)
		logFile.Close()
	}()
	go func() {
		err := cmd.Wait()
		pw.Close()
		up.done <- err
	}()
	select {
	case <-ready:
		return up, nil
	case err := <-up.done:
		up.done <- err
		<-logged
		out, _ := os.ReadFile(logPath)
		return nil, fmt.Errorf("simctl up exited before the cluster was ready (%v); the end of %s:\n%s", err, logPath, lastLines(string(out), 5))
	case <-time.After(upStartTimeout):
		_ = up.stop()
		return nil, fmt.Errorf("simctl up was not ready within %s; see %s", upStartTimeout, logPath)
	case <-ctx.Done():
		_ = up.stop()
		return nil, ctx.Err()
	}
}

// stop interrupts simctl up, as Ctrl-C does, and waits until it has
// stopped everything it started.
func (u *upProcess) stop() error {
	_ = u.cmd.Process.Signal(os.Interrupt)
	if err := <-u.done; err != nil {
		return fmt.Errorf("simctl up did not stop cleanly (%v); see %s", err, u.log)
	}
	return nil
}

// setUp taints the real nodes when the suite asks, and applies its set-up
// manifests with server-side apply, as `kubectl apply --server-side -f`
// does.
func setUp(ctx context.Context, kubeconfig, moduleDir string, s suite) error {
	restCfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	c, err := client.New(restCfg, client.Options{})
	if err != nil {
		return err
	}
	if s.TaintRealNodes {
		if err := taintRealNodes(ctx, c); err != nil {
			return err
		}
	}
	for _, f := range s.Setup {
		data, err := os.ReadFile(filepath.Join(moduleDir, f))
		if err != nil {
			return fmt.Errorf("set-up manifest %s: %w", f, err)
		}
		objs, err := manifests.Decode(data)
		if err != nil {
			return fmt.Errorf("set-up manifest %s: %w", f, err)
		}
		for _, o := range objs {
			if err := c.Patch(ctx, o, client.Apply, client.FieldOwner("kubectl"), client.ForceOwnership); err != nil {
				return fmt.Errorf("failed to apply %s %s from %s: %w", o.GetKind(), o.GetName(), f, err)
			}
		}
		fmt.Printf("applied %s\n", f)
	}
	return nil
}

// taintRealNodes taints every node that is not a simulated one (the KWOK
// label selector) as kubeadm taints a control-plane node.
func taintRealNodes(ctx context.Context, c client.Client) error {
	simulated, err := labels.Parse(fakegpu.KwokNodeLabelSelector)
	if err != nil {
		return err
	}
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		return fmt.Errorf("failed to list nodes: %w", err)
	}
	taint := corev1.Taint{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}
	for _, n := range nodes.Items {
		if simulated.Matches(labels.Set(n.Labels)) || slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.MatchTaint(&taint) }) {
			continue
		}
		base := n.DeepCopy()
		n.Spec.Taints = append(n.Spec.Taints, taint)
		if err := c.Patch(ctx, &n, client.MergeFrom(base)); err != nil {
			return fmt.Errorf("failed to taint node %s: %w", n.Name, err)
		}
		fmt.Printf("tainted node %s %s:%s\n", n.Name, taint.Key, taint.Effect)
	}
	return nil
}

// runTests runs the suite's binary against the cluster, with the specs
// that cannot run here skipped by name.
func runTests(ctx context.Context, s suite, bin, pkgDir, kubeconfig, jsonReport, logPath string) error {
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	args := []string{"-test.timeout", "0", "-ginkgo.v", "-ginkgo.no-color", "-ginkgo.timeout", suiteTimeout.String(), "-ginkgo.json-report", jsonReport}
	if re := skipPattern(s.CannotRun); re != "" {
		args = append(args, "-ginkgo.skip", re)
	}
	if s.LabelFilter != "" {
		args = append(args, "-ginkgo.label-filter", s.LabelFilter)
	}
	abs, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, abs, args...)
	// go test runs a test binary in its package's directory: suites find
	// their module's files from there (Kueue's, its test images).
	cmd.Dir = pkgDir
	cmd.Env = append(append(os.Environ(), "KUBECONFIG="+kubeconfig), s.Env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	fmt.Printf("running %s (log: %s)\n", filepath.Base(bin), logPath)
	err = cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return nil // failed specs are in the report
	}
	return err
}

// skipPattern is ginkgo's --skip for the specs that cannot run.
func skipPattern(cannot []cannotRun) string {
	var parts []string
	for _, c := range cannot {
		parts = append(parts, "("+c.Spec.String()+")")
	}
	return strings.Join(parts, "|")
}
