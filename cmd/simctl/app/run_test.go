package app

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trainersim/trainersim/fakegpu"
	"github.com/trainersim/trainersim/results"
	"github.com/trainersim/trainersim/sim"
	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/runner"
	"github.com/trainersim/trainersim/sim/scenario"
)

func TestPrintScenario(t *testing.T) {
	failed := &results.Scenario{
		Name:      "rmw [order kueue > policy, seed 1]",
		File:      "scenarios/rmw.yaml",
		Namespace: "rmw-4f1c2a",
		Duration:  1234 * time.Millisecond,
		Failure:   `step "race": outcomes: 1 succeeded, want 2`,
	}
	for _, tc := range []struct {
		name string
		kept bool
		want string
	}{
		{name: "run", want: "FAIL  rmw [order kueue > policy, seed 1] (1.2s)  scenarios/rmw.yaml\n" +
			"      step \"race\": outcomes: 1 succeeded, want 2\n"},
		{name: "kept: the namespace to look in", kept: true, want: "FAIL  rmw [order kueue > policy, seed 1] (1.2s)  scenarios/rmw.yaml\n" +
			"      namespace rmw-4f1c2a\n" +
			"      step \"race\": outcomes: 1 succeeded, want 2\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			printScenario(&out, failed, tc.kept)
			if diff := cmp.Diff(tc.want, out.String()); diff != "" {
				t.Errorf("output mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSeedWithoutInterleavingsWarns(t *testing.T) {
	t.Setenv("KUBEBUILDER_ASSETS", "")
	scenarios, err := filepath.Abs("testdata/lint/good/train.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fixtures, err := filepath.Abs("../../../fixtures")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	// No assets: the run stops at the cluster, after the scenarios are
	// loaded and the warning is printed.
	_, stderr, code := run(t, "run", "--seed", "3", "--assets", t.TempDir(), "--fixtures", fixtures, scenarios)
	if code != ExitCluster {
		t.Errorf("exit code %d, want %d; stderr: %s", code, ExitCluster, stderr)
	}
	if !strings.Contains(stderr, "warning: --seed has no effect: no selected scenario explores interleavings") {
		t.Errorf("stderr %q does not warn that --seed does nothing", stderr)
	}
}

// TestPrintStepWarnings: with -v, the server's warnings on a write are
// printed under the write's line, and only there.
func TestPrintStepWarnings(t *testing.T) {
	sc := &results.Scenario{Name: "pruned"}
	st := &results.Step{Name: "create", Kind: "concurrently", Passed: true, Duration: 42 * time.Millisecond, Writes: []results.Write{
		{Verb: "create", Target: "TrainJob ns/a", FieldManager: "kubeflow-sdk", Status: 201,
			Warnings: []string{`unknown field "spec.suspended"`, `unknown field "spec.numNode"`}},
		{Verb: "create", Target: "TrainJob ns/b", FieldManager: "kueue-admission", Status: 201},
	}}
	var out bytes.Buffer
	printStep(&out, sc, st)
	want := "  ok    pruned / create (concurrently, 40ms)\n" +
		"          create TrainJob ns/a as kubeflow-sdk: HTTP 201\n" +
		"            warning: unknown field \"spec.suspended\"\n" +
		"            warning: unknown field \"spec.numNode\"\n" +
		"          create TrainJob ns/b as kueue-admission: HTTP 201\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("output mismatch (-want +got):\n%s", diff)
	}
}

// TestRunsApart: the runs that keep other runs off a cluster get a second
// cluster only when simctl starts and discards an envtest one, at a
// --parallel above 1, with another run left to run beside them, and
// neither --keep, --audit-log nor --one-cluster asks for one cluster; a
// run skipped on the cluster needs none.
func TestRunsApart(t *testing.T) {
	file := func(name string, spec v1alpha1.ScenarioSpec) *scenario.File {
		return &scenario.File{Path: name + ".yaml", Scenario: &v1alpha1.Scenario{Metadata: v1alpha1.Metadata{Name: name}, Spec: spec}}
	}
	crash := v1alpha1.ScenarioSpec{Steps: []v1alpha1.Step{{Component: &v1alpha1.ComponentAction{Name: "kube-scheduler", Action: "crash"}}}}
	old := crash
	old.Trainer = &v1alpha1.Trainer{Versions: "<v2.0.0"}
	apart, plain, skipped := file("apart", crash), file("plain", v1alpha1.ScenarioSpec{}), file("skipped", old)
	envtest := sim.ClusterOptions{}
	for _, tc := range []struct {
		name  string
		files []*scenario.File
		f     runFlags
		o     sim.ClusterOptions
		want  int
	}{
		{"beside another run", []*scenario.File{apart, plain, apart}, runFlags{}, envtest, 2},
		{"alone", []*scenario.File{apart}, runFlags{}, envtest, 0},
		{"skipped", []*scenario.File{skipped, plain}, runFlags{}, envtest, 0},
		{"--one-cluster", []*scenario.File{apart, plain}, runFlags{oneCluster: true}, envtest, 0},
		{"--keep", []*scenario.File{apart, plain}, runFlags{keep: true}, envtest, 0},
		{"--parallel 1", []*scenario.File{apart, plain}, runFlags{parallel: 1}, envtest, 0},
		{"--audit-log", []*scenario.File{apart, plain}, runFlags{}, sim.ClusterOptions{AuditLog: "/tmp/audit.log"}, 0},
		{"--kubeconfig", []*scenario.File{apart, plain}, runFlags{}, sim.ClusterOptions{Kubeconfig: "/tmp/kubeconfig"}, 0},
		{"kind", []*scenario.File{apart, plain}, runFlags{}, sim.ClusterOptions{Provider: sim.ClusterKind}, 0},
	} {
		if got, _, _ := runsApart(runner.Plans(tc.files, nil), tc.f, tc.o); got != tc.want {
			t.Errorf("%s: %d runs apart, want %d", tc.name, got, tc.want)
		}
	}
	// The files of each cluster, each once.
	_, onApart, here := runsApart(runner.Plans([]*scenario.File{apart, plain, apart, skipped}, nil), runFlags{}, envtest)
	if !slices.Equal(onApart, []*scenario.File{apart}) || !slices.Equal(here, []*scenario.File{plain}) {
		t.Errorf("files: apart %v, here %v; want [apart.yaml], [plain.yaml]", onApart, here)
	}
}

// TestApartOptions: the second cluster runs what its scenarios need: the
// fast heartbeat only when one of them takes a node unreachable, Kueue
// only when one runs it (or --with asks for it), their views.
func TestApartOptions(t *testing.T) {
	file := func(spec v1alpha1.ScenarioSpec) *scenario.File {
		return &scenario.File{Path: "a.yaml", Scenario: &v1alpha1.Scenario{Metadata: v1alpha1.Metadata{Name: "a"}, Spec: spec}}
	}
	first := sim.ClusterOptions{WorkDir: "/w", Components: []string{"kueue"}, Heartbeat: fakegpu.FastHeartbeat, Views: []string{"trainer"}}
	crash := file(v1alpha1.ScenarioSpec{Steps: []v1alpha1.Step{{Component: &v1alpha1.ComponentAction{Name: "trainer", Action: "crash"}}}})
	o := apartOptions(first, nil, []*scenario.File{crash})
	if o.WorkDir != "/w/second-cluster" || len(o.Components) != 0 || o.Heartbeat != fakegpu.KubernetesHeartbeat || len(o.Views) != 0 {
		t.Errorf("a crash alone: %+v", o)
	}
	unreachable := file(v1alpha1.ScenarioSpec{Components: []string{"kueue"}, Views: []v1alpha1.View{{Component: "kueue"}},
		Steps: []v1alpha1.Step{{Node: &v1alpha1.NodeAction{Action: v1alpha1.NodeUnreachable}}}})
	o = apartOptions(first, []string{"kueue"}, []*scenario.File{crash, unreachable})
	if !slices.Equal(o.Components, []string{"kueue"}) || o.Heartbeat != fakegpu.FastHeartbeat || !slices.Equal(o.Views, []string{"kueue"}) {
		t.Errorf("with a node unreachable, Kueue and its view: %+v", o)
	}
}
