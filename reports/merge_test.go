package reports

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trainersim/trainersim/results"
)

// shardRun is shard k/n of a run on envtest that started at start+offset
// and lasted d, with the named scenarios, passed.
func shardRun(shard string, offset, d time.Duration, names ...string) *results.Run {
	start := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	r := &results.Run{Started: start.Add(offset), Duration: d, Cluster: "envtest", KubernetesVersion: "v1.36.3", TrainerVersion: "v2.3.0", JobSetVersion: "v0.12.0", Shard: shard}
	for _, n := range names {
		r.Scenarios = append(r.Scenarios, results.Scenario{Name: n, Passed: true})
	}
	return r
}

func scenarioNames(r *results.Run) []string {
	var out []string
	for _, sc := range r.Scenarios {
		out = append(out, sc.Name)
	}
	return out
}

// TestMerge: shards given in any order merge into one run in shard order,
// from the first start to the last end; Kueue, which one shard started,
// is the merged run's.
func TestMerge(t *testing.T) {
	third := shardRun("3/3", 2*time.Second, 10*time.Second, "e")
	third.KueueVersion = "v0.19.1"
	first := shardRun("1/3", 0, 20*time.Second, "a", "b")
	second := shardRun("2/3", time.Second, 15*time.Second, "c", "d")
	second.Scenarios[1].Passed = false
	merged, err := Merge([]*results.Run{third, first, second}, []string{"s3", "s1", "s2"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a", "b", "c", "d", "e"}, scenarioNames(merged)); diff != "" {
		t.Errorf("scenarios mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"1/3", "2/3", "3/3"}, merged.Shards); diff != "" {
		t.Errorf("shards mismatch (-want +got):\n%s", diff)
	}
	if merged.Shard != "" || merged.Duration != 20*time.Second || !merged.Started.Equal(first.Started) || merged.KueueVersion != "v0.19.1" {
		t.Errorf("merged run: shard %q, started %s, duration %s, Kueue %q", merged.Shard, merged.Started, merged.Duration, merged.KueueVersion)
	}
	if merged.Passed() {
		t.Error("the merged run passed with a failed scenario")
	}
}

// TestMergeMissingShard: a shard of N that was not given is named, and the
// merged run does not pass, though every scenario it has passed.
func TestMergeMissingShard(t *testing.T) {
	merged, err := Merge([]*results.Run{shardRun("1/3", 0, time.Second, "a"), shardRun("3/3", 0, time.Second, "c")}, []string{"s1", "s3"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"2/3"}, merged.MissingShards); diff != "" {
		t.Errorf("missing shards mismatch (-want +got):\n%s", diff)
	}
	if merged.Passed() || !strings.Contains(merged.Incomplete(), "lacks shard 2/3") {
		t.Errorf("passed %v, incomplete %q: want a run that does not pass and says which shard it lacks", merged.Passed(), merged.Incomplete())
	}
	var html strings.Builder
	if err := WriteHTML(&html, merged); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"merged from shards 1/3, 3/3", "<strong>Shards missing.</strong>", "lacks shard 2/3: the scenarios of that shard have no result"} {
		if !strings.Contains(html.String(), want) {
			t.Errorf("report.html does not say %q", want)
		}
	}
	// The last shards missing are named too.
	if merged, err = Merge([]*results.Run{shardRun("1/3", 0, time.Second, "a")}, []string{"s1"}); err != nil || !cmp.Equal(merged.MissingShards, []string{"2/3", "3/3"}) {
		t.Errorf("Merge of shard 1/3 alone: missing %v, %v", merged.MissingShards, err)
	}
}

// TestMergeRefuses runs that are not shards of one run, naming them.
func TestMergeRefuses(t *testing.T) {
	other := shardRun("2/2", 0, time.Second, "b")
	other.TrainerVersion = "v2.2.1"
	for _, tc := range []struct {
		name string
		runs []*results.Run
		want string
	}{
		{"a whole run", []*results.Run{shardRun("1/2", 0, time.Second, "a"), shardRun("", 0, time.Second, "b")}, "y is not a shard's run"},
		{"other N", []*results.Run{shardRun("1/2", 0, time.Second, "a"), shardRun("2/3", 0, time.Second, "b")}, "x is shard 1/2 and y shard 2/3"},
		{"a shard twice", []*results.Run{shardRun("1/2", 0, time.Second, "a"), shardRun("1/2", 0, time.Second, "b")}, "both shard 1/2"},
		{"other versions", []*results.Run{shardRun("1/2", 0, time.Second, "a"), other}, "Trainer v2.2.1"},
		{"a scenario twice", []*results.Run{shardRun("1/2", 0, time.Second, "a"), shardRun("2/2", 0, time.Second, "a")}, "a is in shard 1/2 and in shard 2/2"},
	} {
		if _, err := Merge(tc.runs, []string{"x", "y"}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}
