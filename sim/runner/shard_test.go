package runner

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/scenario"
)

func TestParseShard(t *testing.T) {
	if s, err := ParseShard("2/3"); err != nil || s != (Shard{K: 2, N: 3}) || s.String() != "2/3" {
		t.Errorf("ParseShard(2/3) = %v, %v", s, err)
	}
	for _, bad := range []string{"", "3", "0/3", "4/3", "1/0", "a/b", "-1/2", "1/2/3"} {
		if _, err := ParseShard(bad); err == nil {
			t.Errorf("ParseShard(%q): no error", bad)
		}
	}
}

// plainFiles are n scenario files of one run each, f0.yaml to f<n-1>.yaml.
func plainFiles(n int) []*scenario.File {
	var files []*scenario.File
	for i := range n {
		name := fmt.Sprintf("f%d", i)
		files = append(files, &scenario.File{Path: "dir/" + name + ".yaml", Scenario: &v1alpha1.Scenario{
			Metadata: v1alpha1.Metadata{Name: name}, Spec: v1alpha1.ScenarioSpec{Steps: []v1alpha1.Step{{Name: "only"}}},
		}})
	}
	return files
}

// shards returns the N shards' selections.
func shards(files []*scenario.File, n int, d Durations) [][]*scenario.File {
	var out [][]*scenario.File
	for k := 1; k <= n; k++ {
		out = append(out, Shard{K: k, N: n}.Select(files, d))
	}
	return out
}

// TestShardsPartition: every file is in exactly one shard, each shard keeps
// the files' order, and the same input gives the same shards.
func TestShardsPartition(t *testing.T) {
	files := plainFiles(10)
	got := shards(files, 3, nil)
	seen := map[*scenario.File]int{}
	for _, sh := range got {
		if !slices.IsSortedFunc(sh, func(a, b *scenario.File) int { return slices.Index(files, a) - slices.Index(files, b) }) {
			t.Errorf("a shard is out of the files' order: %v", paths(sh))
		}
		for _, f := range sh {
			seen[f]++
		}
	}
	for _, f := range files {
		if seen[f] != 1 {
			t.Errorf("%s is in %d shards, want 1", f.Path, seen[f])
		}
	}
	// Without durations, files of one run each are dealt in turn.
	if want := []string{"dir/f0.yaml", "dir/f3.yaml", "dir/f6.yaml", "dir/f9.yaml"}; !slices.Equal(paths(got[0]), want) {
		t.Errorf("shard 1/3 = %v, want %v", paths(got[0]), want)
	}
	for i, sh := range shards(files, 3, nil) {
		if !slices.Equal(paths(sh), paths(got[i])) {
			t.Errorf("shard %d/3 differs on a second selection", i+1)
		}
	}
	// More shards than files: the last ones hold none.
	if sh := (Shard{K: 3, N: 3}).Select(plainFiles(2), nil); len(sh) != 0 {
		t.Errorf("shard 3/3 of 2 files = %v, want none", paths(sh))
	}
}

// TestShardsBalancedByDurations: the durations of a previous run decide;
// a file it does not know weighs the mean run.
func TestShardsBalancedByDurations(t *testing.T) {
	files := plainFiles(4)
	d := Durations{}
	d.Add("dir/f0.yaml", 30*time.Second)
	d.Add("./dir/f1.yaml", 10*time.Second) // paths are compared cleaned
	d.Add("dir/f2.yaml", 10*time.Second)
	// f3 is new: it weighs the mean, (30+10+10)/3 s.
	got := shards(files, 2, d)
	if want := []string{"dir/f0.yaml"}; !slices.Equal(paths(got[0]), want) {
		t.Errorf("shard 1/2 = %v, want the 30 s file alone: %v", paths(got[0]), want)
	}
	if want := []string{"dir/f1.yaml", "dir/f2.yaml", "dir/f3.yaml"}; !slices.Equal(paths(got[1]), want) {
		t.Errorf("shard 2/2 = %v, want %v", paths(got[1]), want)
	}
}

func paths(files []*scenario.File) []string {
	var out []string
	for _, f := range files {
		out = append(out, f.Path)
	}
	return out
}
