package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trainersim/trainersim/sim/explore"
	"github.com/trainersim/trainersim/sim/scenario"
)

// TestExplorePlansLint: every plan of every corpus scenario is a scenario
// simctl lint accepts, and a finding's file loads as one, its header
// saying what was found and how to replay it.
func TestExplorePlansLint(t *testing.T) {
	files, err := scenario.LoadPaths([]string{"../../../scenarios"}, scenario.Options{FixturesDir: "../../../fixtures"})
	if err != nil {
		t.Fatal(err)
	}
	plans := 0
	for _, f := range files {
		for _, p := range explore.Plans(f.Scenario, explore.Components(f.Scenario, true)) {
			plans++
			run := &exploredRun{Plan: p.ID(), File: f.Path, Does: p.String(), plan: p, sc: p.Apply(f.Scenario),
				Verdict: explore.Verdict{Kind: explore.Found, FailedStep: "a step", Failure: "not true within 30s"},
				Confirm: &exploreConfirm{Runs: 2, Same: 2}}
			path := filepath.Join(t.TempDir(), p.ID()+".yaml")
			if err := writeFinding(path, run); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := scenario.Load(path, data, scenario.Options{FixturesDir: f.FixturesDir}); err != nil {
				t.Fatalf("plan %s of %s does not lint:\n%v", p.ID(), f.Path, err)
			}
			if !strings.Contains(string(data), "# Confirmed in 2 of 2 runs. Replay: simctl run "+path) {
				t.Fatalf("the finding's header lacks its replay line:\n%s", data[:300])
			}
		}
	}
	if plans < 100 {
		t.Errorf("%d plans in the corpus, want at least 100", plans)
	}
}

// TestExploreRefusesBeforeTheCluster: bad input is refused before a
// cluster starts, with what to do.
func TestExploreRefusesBeforeTheCluster(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"explore", "../../../scenarios/components/"}, "no plan: every scenario selected has a component step of its own"},
		{[]string{"explore", "--cluster", "kind", "../../../scenarios/examples/"}, "explore runs on envtest only"},
		{[]string{"explore", "--confirm", "0", "../../../scenarios/examples/"}, "--confirm at least 1"},
		{[]string{"explore", "--run", "no-such-scenario", "../../../scenarios/examples/"}, "no scenario selected"},
	} {
		_, stderr, code := run(t, append(c.args, "-o", t.TempDir())...)
		if code != ExitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("simctl %s: exit %d, %q; want exit %d and %q", strings.Join(c.args, " "), code, stderr, ExitUsage, c.want)
		}
	}
}

// TestKnownFindings: a finding's file moved to a --known folder is known
// by its plan; a folder that does not exist knows none.
func TestKnownFindings(t *testing.T) {
	files, err := scenario.LoadPaths([]string{"../../../scenarios/examples/first-scenario.yaml"}, scenario.Options{FixturesDir: "../../../fixtures"})
	if err != nil {
		t.Fatal(err)
	}
	p := explore.Plans(files[0].Scenario, explore.Components(files[0].Scenario, false))[0]
	dir := t.TempDir()
	path := filepath.Join(dir, p.ID()+".yaml")
	run := &exploredRun{Plan: p.ID(), File: files[0].Path, Does: p.String(), plan: p, sc: p.Apply(files[0].Scenario), Confirm: &exploreConfirm{Runs: 2, Same: 2}}
	if err := writeFinding(path, run); err != nil {
		t.Fatal(err)
	}
	known, err := knownFindings(dir)
	if err != nil {
		t.Fatal(err)
	}
	if known[p.ID()] != path || len(known) != 1 {
		t.Errorf("known findings %v, want %s at %s", known, p.ID(), path)
	}
	if none, err := knownFindings(filepath.Join(dir, "absent")); err != nil || len(none) != 0 {
		t.Errorf("a folder that does not exist: %v, %v", none, err)
	}
}
