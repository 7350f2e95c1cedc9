package app

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trainersim/trainersim/internal/golden"
	"github.com/trainersim/trainersim/sim"
	"github.com/trainersim/trainersim/sim/providers/kind"
)

// run runs "simctl args..." with nothing on standard input and returns what
// it printed and its exit code.
func run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runWithStdin(t, "", args...)
}

// runWithStdin is run with stdin as standard input.
func runWithStdin(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := Run(context.Background(), Streams{In: strings.NewReader(stdin), Out: &out, Err: &errOut}, args)
	return out.String(), errOut.String(), ExitCode(err)
}

// TestCommandPages: docs/commands/ holds one page per command, each with
// the help `simctl CMD --help` prints, and nothing else.
func TestCommandPages(t *testing.T) {
	dir := filepath.Join("..", "..", "..", PagesDir)
	pages := Pages()
	for name, page := range pages {
		t.Run(name, func(t *testing.T) {
			golden.Check(t, filepath.Join(dir, name), page)
			args := strings.Fields(strings.ReplaceAll(strings.TrimSuffix(name, ".md"), "-", " "))[1:]
			out, _, code := run(t, append(args, "--help")...)
			if code != ExitOK {
				t.Fatalf("simctl %v --help: exit code %d, want 0", args, code)
			}
			if !strings.Contains(string(page), "```\n"+out+"```\n") {
				t.Errorf("the page %s does not hold what simctl %v --help prints:\n%s", name, args, out)
			}
		})
	}
	if len(pages) < 11 {
		t.Errorf("%d command pages, want one for simctl and each of its ten commands", len(pages))
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if _, ok := pages[filepath.Base(f)]; ok {
			continue
		}
		if golden.Updating() {
			if err := os.Remove(f); err != nil {
				t.Fatal(err)
			}
			continue
		}
		t.Errorf("%s is the page of no command: make update removes it", f)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name       string
		args       []string
		wantStderr string
	}{
		{"unknown command", []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"unknown flag", []string{"up", "--kubeconfig", "k", "--bogus"}, "unknown flag: --bogus"},
		{"missing kubeconfig", []string{"up"}, `required flag(s) "kubeconfig" not set`},
		{"unknown profile", []string{"up", "--kubeconfig", "k", "--nodes", "nvidia-b200=1"}, `unknown profile "nvidia-b200"`},
		{"negative Pod start delay", []string{"up", "--kubeconfig", "k", "--pods-start-after", "-1s"}, "--pods-start-after and --pods-succeed-after must not be negative"},
		{"bad count", []string{"smoke", "--nodes", "cpu=zero"}, `invalid --nodes`},
		{"extra argument", []string{"profiles", "extra"}, `unknown command "extra"`},
		{"unknown cluster", []string{"run", "--cluster", "minikube", "x.yaml"}, `invalid --cluster "minikube": envtest or kind`},
		{"kubeconfig with kind", []string{"smoke", "--cluster", "kind", "--kubeconfig", "k"}, `cannot be used with --cluster kind`},
		{"context without kubeconfig", []string{"smoke", "--context", "c"}, `--context needs --kubeconfig`},
		{"unisolated without kubeconfig", []string{"run", "--unisolated", "x.yaml"}, `--unisolated needs --kubeconfig`},
		{"clean without a cluster", []string{"clean"}, `give --kubeconfig PATH or --cluster kind`},
		{"create-missing without verify", []string{"migrate", "--create-missing", "x.yaml"}, `--create-missing creates what --verify's clusters need: give --verify too`},
		{"unknown trainer", []string{"smoke", "--trainer", "v2.0.1"}, `invalid --trainer: unsupported Trainer version v2.0.1: trainersim runs v2.1.0, v2.2.0, v2.2.1, v2.3.0`},
		{"another trainer on kind", []string{"run", "--trainer", "v2.1.0", "--cluster", "kind", "x.yaml"}, `--trainer v2.1.0: the kind provider has images of the Trainer v2.3.0 only`},
		{"unknown component", []string{"run", "--with", "volcano", "x.yaml"}, `invalid --with: unknown component "volcano": trainersim runs kueue`},
		{"component on an existing cluster", []string{"run", "--with", "kueue", "--kubeconfig", "k", "x.yaml"}, `--with starts components on the clusters simctl starts (envtest, kind); an existing cluster runs what it runs`},
		{"unknown layout", []string{"up", "--kubeconfig", "k", "--cluster", "kind", "--layout", "kueue"}, `invalid --layout: unknown layout "kueue": the kind cluster's layouts are trainer, kueue-e2e`},
		{"kind layout on envtest", []string{"up", "--kubeconfig", "k", "--layout", "kueue-e2e"}, `--layout kueue-e2e is a kind cluster's: use it with --cluster kind`},
		{"layout on run", []string{"run", "--cluster", "kind", "--layout", "kueue-e2e", "x.yaml"}, `unknown flag: --layout`},
		{"bad shard", []string{"run", "--shard", "4/3", "x.yaml"}, `invalid --shard: shard 4/3: want 1 <= K <= N`},
		{"shard durations without a shard", []string{"run", "--shard-durations", "d", "x.yaml"}, `--shard-durations balances --shard's slices: give --shard K/N too`},
		{"merge without an output", []string{"report", "--merge", "a", "b"}, `--merge writes the merged reports into --report-dir: give it`},
		{"report-dir without merge", []string{"report", "--report-dir", "out", "a"}, `--report-dir is where --merge writes`},
		{"audit log on an existing cluster", []string{"run", "--audit-log", "d", "--kubeconfig", "k", "x.yaml"}, `--audit-log records on a cluster simctl starts: an existing cluster's API server keeps its own audit log`},
		{"audit log on kind that holds one already", []string{"up", "--kubeconfig", "k", "--cluster", "kind", "--audit-log", "app_test.go"}, `already holds a log`},
		{"minimize without a file", []string{"minimize"}, `accepts 1 arg(s), received 0`},
		{"minimize of a file that is not there", []string{"minimize", "no-such.yaml"}, `no-such.yaml: no such file or directory`},
		{"minimize keeping a step the file does not have", []string{"minimize", "--keep", "no such step", "testdata/lint/good/train.yaml"}, `--keep "no such step": testdata/lint/good/train.yaml has no step of that name`},
		{"minimize of a file that does not lint", []string{"minimize", "testdata/lint/bad/problems.yaml"}, `invalid scenario:
testdata/lint/bad/problems.yaml:12:12: spec.steps[0].actor: unknown actor "kueue"`},
		{"audit log that is a directory", []string{"up", "--kubeconfig", "k", "--audit-log", "testdata"}, `invalid --audit-log: the audit log`},
		{"audit log that holds one already", []string{"up", "--kubeconfig", "k", "--audit-log", "app_test.go"}, `already holds a log: one file holds one cluster's requests; remove it or name another`},
		{"import without a log", []string{"import"}, `give the audit log with --audit-log FILE or DIR`},
		{"import of a file that is not there", []string{"import", "--audit-log", "no-such.log"}, `no-such.log: no such file or directory`},
		{"import of a file that is not a log", []string{"import", "--audit-log", "app_test.go"}, `app_test.go:1: not an audit event`},
		{"component steps on an existing cluster", []string{"run", "--kubeconfig", "k", "../../../scenarios/components/kwok-down-while-pods-start.yaml"}, `no selected scenario runs on the cluster of --kubeconfig, so the run would prove nothing:
  ../../../scenarios/components/kwok-down-while-pods-start.yaml: holds on envtest only: KWOK's process is killed and started again by simctl, which only envtest runs
without --kubeconfig, simctl starts envtest`},
		{"upgrades on kind", []string{"run", "--cluster", "kind", "../../../scenarios/upgrades"}, `no selected scenario runs on kind with Trainer v2.3.0, so the run would prove nothing:
  ../../../scenarios/upgrades/from-v2-1-0-under-running-work.yaml: holds on envtest only: the upgrade replaces`},
		{"scenarios of another release", []string{"run", "--trainer", "v2.1.0", "../../../scenarios/views/preemption-seen-as-one-change.yaml"}, `no selected scenario runs on envtest with Trainer v2.1.0, so the run would prove nothing:
  ../../../scenarios/views/preemption-seen-as-one-change.yaml: holds for Trainer >=v2.3.0; the cluster runs v2.1.0
--trainer picks the release envtest runs`},
		{"trainer-as without a checkout", []string{"smoke", "--trainer-as", "v2.3.0"}, `--trainer-as gives the release of the Trainer checkout compiled into simctl: this simctl runs the release v2.3.0, not a checkout`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := run(t, tc.args...)
			if code != ExitUsage {
				t.Errorf("exit code %d, want %d", code, ExitUsage)
			}
			if !strings.Contains(stderr, tc.wantStderr) {
				t.Errorf("stderr %q does not contain %q", stderr, tc.wantStderr)
			}
		})
	}
}

// TestComponentsOnKind: --with is taken on kind, whose provider installs
// the components, as on envtest.
func TestComponentsOnKind(t *testing.T) {
	f := clusterFlags{provider: sim.ClusterKind, kindName: "k", with: []string{"kueue"}}
	o, err := f.options("")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"kueue"}, o.Components); diff != "" {
		t.Errorf("components mismatch (-want +got):\n%s", diff)
	}
}

// TestLayoutOnKind: up's --layout reaches the kind provider; the default
// layout is the provider's default.
func TestLayoutOnKind(t *testing.T) {
	for flag, want := range map[string]string{kind.LayoutTrainer: "", kind.LayoutKueueE2E: kind.LayoutKueueE2E} {
		f := clusterFlags{provider: sim.ClusterKind, kindName: "k", layout: flag}
		o, err := f.options("")
		if err != nil {
			t.Fatal(err)
		}
		if got := sim.NewCluster(o).(*kind.Kind).Layout; got != want {
			t.Errorf("--layout %s: the kind cluster's layout is %q, want %q", flag, got, want)
		}
	}
}

func TestMissingAssetsIsAClusterError(t *testing.T) {
	t.Setenv("KUBEBUILDER_ASSETS", "")
	t.Chdir(t.TempDir())
	_, stderr, code := run(t, "smoke", "--assets", t.TempDir())
	if code != ExitCluster {
		t.Errorf("exit code %d, want %d", code, ExitCluster)
	}
	if !strings.Contains(stderr, "run 'simctl assets' (or 'make assets' in the trainersim checkout") {
		t.Errorf("stderr %q does not tell to run simctl assets", stderr)
	}
}

func TestUnreachableKubeconfigIsAClusterError(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	data := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\nusers:\n- name: u\n  user:\n    token: t\ncurrent-context: c\n"
	if err := os.WriteFile(kubeconfig, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"smoke", "--kubeconfig", kubeconfig},
		{"clean", "--kubeconfig", kubeconfig},
		{"import", "--audit-log", "../../../sim/auditimport/testdata/quota-full.audit.log", "--from-cluster", kubeconfig},
	} {
		_, stderr, code := run(t, args...)
		if code != ExitCluster {
			t.Errorf("%v: exit code %d, want %d", args, code, ExitCluster)
		}
		if !strings.Contains(stderr, "127.0.0.1:1") || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("%v: stderr %q is not one line naming the server", args, stderr)
		}
	}
	_, stderr, code := run(t, "smoke", "--kubeconfig", filepath.Join(dir, "missing"))
	if code != ExitCluster || !strings.Contains(stderr, "missing") {
		t.Errorf("a missing kubeconfig: exit code %d, stderr %q", code, stderr)
	}
}

func TestProfilesListsEveryProfile(t *testing.T) {
	out, _, code := run(t, "profiles")
	if code != ExitOK {
		t.Fatalf("exit code %d", code)
	}
	for _, want := range []string{"nvidia-h100-80gb   8", "nvidia-tesla-v100  4", "cpu                0"} {
		if !strings.Contains(out, want) {
			t.Errorf("profiles output lacks %q:\n%s", want, out)
		}
	}
}

// TestImportIntoANewFolder: -o into a folder that does not exist yet makes
// it and writes the scenario there.
func TestImportIntoANewFolder(t *testing.T) {
	out := filepath.Join(t.TempDir(), "new", "folder", "imported.yaml")
	_, stderr, code := run(t, "import", "--audit-log", "../../../sim/auditimport/testdata/lost-update.audit.log", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if data, err := os.ReadFile(out); err != nil || !strings.Contains(string(data), "kind: Scenario") {
		t.Errorf("%s: %v, %.80q", out, err, data)
	}
}
