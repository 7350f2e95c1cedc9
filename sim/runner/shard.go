package runner

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/trainersim/trainersim/sim/scenario"
)

// Shard is the K-th of N slices of a corpus (simctl run --shard K/N), for CI
// machines that each run one: every scenario is in exactly one slice, the
// same one on every machine given the same scenarios, and the slices are
// balanced by how long their scenarios take.
type Shard struct {
	// K is the slice, from 1; N how many there are.
	K, N int
}

// ParseShard reads K/N, 1 <= K <= N.
func ParseShard(s string) (Shard, error) {
	k, n, ok := strings.Cut(s, "/")
	sh := Shard{}
	var errK, errN error
	sh.K, errK = strconv.Atoi(k)
	sh.N, errN = strconv.Atoi(n)
	if !ok || errK != nil || errN != nil {
		return Shard{}, fmt.Errorf("%q is not K/N (the K-th of N shards, 1/3 say)", s)
	}
	if sh.N < 1 || sh.K < 1 || sh.K > sh.N {
		return Shard{}, fmt.Errorf("shard %s: want 1 <= K <= N", s)
	}
	return sh, nil
}

// String is K/N.
func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.K, s.N) }

// Durations are how long each scenario file's runs took in a previous run
// (its report), by the file's path, to balance shards by.
type Durations map[string]time.Duration

// Add adds a run of the file that took d.
func (d Durations) Add(file string, took time.Duration) { d[filepath.Clean(file)] += took }

// Select returns the files of the shard, in their order. The files are
// dealt, longest first, each to the slice with the least time so far (the
// lowest K on a tie): a file weighs what its runs took in durations, or,
// when durations has none of it, its number of runs (Plans) times the mean
// time of a run of the files it has. Without durations every run weighs
// the same, so files are dealt in their order by their number of runs. The
// result depends on the files and durations only: every machine computes
// the same slices.
func (s Shard) Select(files []*scenario.File, durations Durations) []*scenario.File {
	runs := map[*scenario.File]int{}
	for _, p := range Plans(files, nil) {
		runs[p.File]++
	}
	var known time.Duration
	knownRuns := 0
	for _, f := range files {
		if d, ok := durations[filepath.Clean(f.Path)]; ok {
			known += d
			knownRuns += runs[f]
		}
	}
	perRun := time.Second
	if knownRuns > 0 {
		perRun = known / time.Duration(knownRuns)
	}
	weight := func(f *scenario.File) time.Duration {
		if d, ok := durations[filepath.Clean(f.Path)]; ok {
			return d
		}
		return perRun * time.Duration(runs[f])
	}
	order := make([]int, len(files))
	for i := range order {
		order[i] = i
	}
	// Longest first; equal weights keep the files' order.
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(weight(files[b]), weight(files[a])) })
	load := make([]time.Duration, s.N)
	slice := make([]int, len(files))
	for _, i := range order {
		k := slices.Index(load, slices.Min(load))
		slice[i] = k + 1
		load[k] += weight(files[i])
	}
	var out []*scenario.File
	for i, f := range files {
		if slice[i] == s.K {
			out = append(out, f)
		}
	}
	return out
}
