package app

import (
	"bytes"
	"encoding/xml"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trainersim/trainersim/reports"
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
		{[]string{"explore", "--kind", "restart,shuffle", "../../../scenarios/examples/"}, `--kind "shuffle": the kinds of plan are restart, down, stale, flip, coalesce`},
		{[]string{"explore", "--plan", "(", "../../../scenarios/examples/"}, "invalid --plan"},
		{[]string{"explore", "--plan", "no-such-plan", "../../../scenarios/examples/"}, "or no plan matches --plan"},
		{[]string{"explore", "--found", "../../../scenarios/found", "--known", "../../../scenarios", "../../../scenarios/examples/"}, "--found sets --known to its folder"},
		{[]string{"explore", "--found", "../../../scenarios/examples", "../../../scenarios/examples/"}, "no scenario there carries the annotation"},
		{[]string{"explore", "--found", "../../../scenarios/found", "../../../scenarios/examples/"}, "no plan"},
	} {
		_, stderr, code := run(t, append(c.args, "-o", t.TempDir())...)
		if code != ExitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("simctl %s: exit %d, %q; want exit %d and %q", strings.Join(c.args, " "), code, stderr, ExitUsage, c.want)
		}
	}
}

// TestKnownFindings: a finding's file moved to a --known folder is known
// by its plan, and by each other plan its annotation names; a folder that
// does not exist knows none.
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
	known, order, err := knownFindings(dir)
	if err != nil {
		t.Fatal(err)
	}
	if known[p.ID()] != path || len(known) != 1 || !slices.Equal(order[path], []string{p.ID()}) {
		t.Errorf("known findings %v (order %v), want %s at %s", known, order, p.ID(), path)
	}
	// A kept scenario that names the other plans that found it: each is
	// known, in its order.
	kept, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	kept = []byte(strings.Replace(string(kept), explore.PlanAnnotation+": "+p.ID(), explore.PlanAnnotation+": "+p.ID()+" other-plan", 1))
	if err := os.WriteFile(path, kept, 0o644); err != nil {
		t.Fatal(err)
	}
	known, order, err = knownFindings(dir)
	if err != nil || known["other-plan"] != path || known[p.ID()] != path || !slices.Equal(order[path], []string{p.ID(), "other-plan"}) {
		t.Errorf("known findings %v (order %v, %v), want %s and other-plan at %s, in that order", known, order, err, p.ID(), path)
	}
	if none, _, err := knownFindings(filepath.Join(dir, "absent")); err != nil || len(none) != 0 {
		t.Errorf("a folder that does not exist: %v, %v", none, err)
	}
}

// TestRefindPlans: of each kept finding, the first plan it names that the
// reference runs made; one none of whose plans was made is unmade.
func TestRefindPlans(t *testing.T) {
	a := explore.Plan{Scenario: "s", Kind: explore.Restart, Component: "trainer", Step: 0}
	b := explore.Plan{Scenario: "s", Kind: explore.Down, Component: "kueue", Step: 1}
	order := map[string][]string{
		"found/one.yaml":  {"s--flip-trainer-step-1-00000000", b.ID(), a.ID()},
		"found/two.yaml":  {a.ID()},
		"found/gone.yaml": {"s--flip-kueue-step-2-11111111"},
	}
	plans, refind, unmade := refindPlans([]explore.Plan{a, b}, order)
	var ids []string
	for _, p := range plans {
		ids = append(ids, p.ID())
	}
	if !slices.Equal(ids, []string{b.ID(), a.ID()}) || refind[b.ID()] != "found/one.yaml" || refind[a.ID()] != "found/two.yaml" || !slices.Equal(unmade, []string{"found/gone.yaml"}) {
		t.Errorf("plans %v, refind %v, unmade %v", ids, refind, unmade)
	}
}

// TestKeptKinds: --found runs only the kinds of the kept plans (a kind
// whose plans need a view makes the cluster stand between its component
// and the API server).
func TestKeptKinds(t *testing.T) {
	kept := map[string]string{"real-kueue-x--flip-trainer-step-1-f992e0e3": "a.yaml", "y--restart-kube-scheduler-step-2": "b.yaml"}
	got := keptKinds(kept)
	slices.Sort(got)
	if !slices.Equal(got, []string{"flip", "restart"}) {
		t.Errorf("kinds %v, want [flip restart]", got)
	}
}

// TestLostFindings: a run of a kept finding's plan that did not end as a
// confirmed finding is lost, and so are a plan --found was to run again
// that did not run and a finding none of whose plans was made; a run that
// found it again, and a run of another plan, are not.
func TestLostFindings(t *testing.T) {
	x := &explorer{known: map[string]string{"kept": "scenarios/found/kept.yaml", "kept-again": "scenarios/found/again.yaml", "not-run": "scenarios/found/cut.yaml"},
		refind: map[string]string{"kept-again": "scenarios/found/again.yaml", "not-run": "scenarios/found/cut.yaml"}, unmade: []string{"scenarios/found/gone.yaml"}}
	x.report.Run = []exploredRun{
		{Plan: "kept", Verdict: explore.Verdict{Kind: explore.Same}},
		{Plan: "kept-again", Verdict: explore.Verdict{Kind: explore.Found}, Confirm: &exploreConfirm{Runs: 2, Same: 2, Known: "scenarios/found/again.yaml"}},
		{Plan: "other", Verdict: explore.Verdict{Kind: explore.Same}},
	}
	got := x.lost()
	if len(got) != 3 || !strings.Contains(got[0], "kept in scenarios/found/kept.yaml, this time same") || !strings.HasPrefix(got[1], "LOST not-run: kept in scenarios/found/cut.yaml, and the plan did not run") ||
		!strings.HasPrefix(got[2], "LOST scenarios/found/gone.yaml: none of the plans it names was made") {
		t.Errorf("lost:\n%s\nwant the run of kept, the plan not-run and the finding gone", strings.Join(got, "\n"))
	}
}

// TestExploreJUnit: junit.xml fails the plan of a new confirmed finding
// only, as explore's exit does; a plan not carried out is skipped, a known
// finding and a false positive pass and say so.
func TestExploreJUnit(t *testing.T) {
	found := explore.Verdict{Kind: explore.Found, FailedStep: "3: the Pods run", Failure: "not true within 30s"}
	runs := []exploredRun{
		{Plan: "a-restart-trainer-1", File: "a.yaml", Does: "restart the Trainer after step 1", Verdict: explore.Verdict{Kind: explore.Same}},
		{Plan: "a-down-jobset-2", File: "a.yaml", Does: "JobSet down for step 2", Verdict: explore.Verdict{Kind: explore.NotCarriedOut, FailedStep: "explore: JobSet is down", Failure: "timeout"}},
		{Plan: "b-restart-kueue-1", File: "b.yaml", Does: "restart Kueue after step 1", Verdict: found, Confirm: &exploreConfirm{Runs: 2, Same: 2, Scenario: "out/findings/b-restart-kueue-1.yaml", Minimized: "out/findings/b-restart-kueue-1.min.yaml"}},
		{Plan: "b-restart-kueue-2", File: "b.yaml", Does: "restart Kueue after step 2", Verdict: found, Confirm: &exploreConfirm{Runs: 2, Same: 2, Known: "scenarios/found/b.yaml"}},
		{Plan: "b-restart-kueue-3", File: "b.yaml", Does: "restart Kueue after step 3", Verdict: found, Confirm: &exploreConfirm{Runs: 2, Same: 1}},
	}
	var out bytes.Buffer
	if err := reports.WriteJUnitCases(&out, "simctl explore", time.Now(), time.Minute, exploreCases(runs)); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Skipped  int `xml:"skipped,attr"`
		Suite    struct {
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
					Text    string `xml:",chardata"`
				} `xml:"failure"`
				Skipped *struct{} `xml:"skipped"`
				Out     string    `xml:"system-out"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("junit.xml does not parse: %v\n%s", err, out.String())
	}
	if doc.Tests != 5 || doc.Failures != 1 || doc.Skipped != 1 || len(doc.Suite.Cases) != 5 {
		t.Fatalf("tests %d, failures %d, skipped %d; want 5, 1, 1:\n%s", doc.Tests, doc.Failures, doc.Skipped, out.String())
	}
	cases := doc.Suite.Cases
	if f := cases[2].Failure; f == nil || !strings.Contains(f.Text, "replay: simctl run out/findings/b-restart-kueue-1.yaml") || !strings.Contains(f.Message, "3: the Pods run") ||
		!strings.Contains(f.Text, "shortened: simctl run out/findings/b-restart-kueue-1.min.yaml") {
		t.Errorf("the new confirmed finding's case %q: failure %+v, want its step, its replay line and the shortened file's", cases[2].Name, f)
	}
	if cases[1].Skipped == nil {
		t.Errorf("the plan not carried out, %q, is not skipped", cases[1].Name)
	}
	if cases[3].Failure != nil || !strings.Contains(cases[3].Out, "known: scenarios/found/b.yaml") {
		t.Errorf("the known finding's case: failure %+v, out %q; want a pass that names the known scenario", cases[3].Failure, cases[3].Out)
	}
	if cases[4].Failure != nil || !strings.Contains(cases[4].Out, "not confirmed (1 of 2") {
		t.Errorf("the false positive's case: failure %+v, out %q; want a pass that says it was not confirmed", cases[4].Failure, cases[4].Out)
	}
}

// TestExploreHTML: explore.html counts the verdicts, shows each finding
// with what differed and, once confirmed, its replay line, and escapes
// what the runs said.
func TestExploreHTML(t *testing.T) {
	differs := explore.Verdict{Kind: explore.Found, Differences: []explore.Difference{{Key: "pod low-node-0-0-*", Want: "Running nvidia-h100-80gb", Got: "Pending <script>"}}}
	report := exploreReport{
		Started: time.Date(2026, 12, 3, 17, 0, 0, 0, time.UTC), Duration: 90 * time.Second, Plans: 7, Merged: 1,
		NotExplored: map[string]string{"c.yaml": "its reference run failed at step \"1\""},
		Run: []exploredRun{
			{Plan: "a-restart-trainer-1", File: "a.yaml", Does: "trainer restarts after step 1", Verdict: explore.Verdict{Kind: explore.Same}},
			{Plan: "b-stale-kueue-1", File: "b.yaml", Does: "kueue restarts after step 1 and lists trainjobs as they were before its write", Verdict: differs,
				Confirm: &exploreConfirm{Runs: 2, Same: 2, Scenario: "out/findings/b-stale-kueue-1.yaml", MinimizeProblem: "a verification run <ended> otherwise"}},
			{Plan: "b-restart-kueue-2", File: "b.yaml", Does: "kueue restarts after step 2", Verdict: explore.Verdict{Kind: explore.Found, FailedStep: "3: the Pods run", Failure: "not true within 30s"},
				Confirm: &exploreConfirm{Runs: 2, Same: 1, Others: []string{"failed at 4: the end"}}},
		},
	}
	var out bytes.Buffer
	if err := writeExploreHTML(&out, report); err != nil {
		t.Fatal(err)
	}
	page := out.String()
	for _, want := range []string{
		"<th>run</th><td>3</td>", "<th>same as written</th><td>1</td>", "<th>found</th><td>2</td>",
		"<th>confirmed</th><td>1</td>", "<th>not confirmed (false positives)</th><td>1</td>", "<th>down plans merged</th><td>1</td>",
		"Replay: <code>simctl run out/findings/b-stale-kueue-1.yaml</code>",
		"<td>pod low-node-0-0-*</td><td>Pending &lt;script&gt;</td><td>Running nvidia-h100-80gb</td>",
		"not confirmed (a false positive): 1 of 2 runs ended the same way", "A confirmation run ended otherwise: failed at 4: the end",
		"Failed at step <code>3: the Pods run</code>", "<td><code>c.yaml</code></td>",
		"Minimize: a verification run &lt;ended&gt; otherwise",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("explore.html lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "<script>") {
		t.Errorf("explore.html has a run's text unescaped")
	}
	if n := strings.Count(page, "class=\"found\""); n != 2+2 {
		t.Errorf("%d elements marked found, want 2 findings' headings and their 2 rows", n)
	}
}
