package reports

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/trainersim/trainersim/results"
)

// Merge merges the runs of the shards of one corpus (simctl run --shard K/N,
// one per CI machine, say) into the Run one run of the whole corpus would
// have made: every shard's results, in the order of the shards; started
// when the first shard started and lasting until the last one ended;
// interrupted or unfinished if a shard was. A shard of the N that no run
// is of is named in MissingShards, and the merged run does not pass.
//
// Runs that are not shards of one run are an error, which names them: a run
// without a shard, shards of different N, a shard given twice, shards that
// ran other versions or on another kind of cluster (Kueue aside, which a
// shard starts only when its scenarios ask for it), a scenario in two
// shards.
func Merge(runs []*results.Run, names []string) (*results.Run, error) {
	if len(runs) == 0 {
		return nil, fmt.Errorf("no shard to merge")
	}
	type shard struct{ k, n int }
	parse := func(i int) (shard, error) {
		k, n, _ := strings.Cut(runs[i].Shard, "/")
		var s shard
		var errK, errN error
		s.k, errK = strconv.Atoi(k)
		s.n, errN = strconv.Atoi(n)
		if runs[i].Shard == "" || errK != nil || errN != nil || s.k < 1 || s.k > s.n {
			return s, fmt.Errorf("%s is not a shard's run (simctl run --shard K/N): it ran every scenario it was given", names[i])
		}
		return s, nil
	}
	order := make([]int, len(runs))
	ks := make([]shard, len(runs))
	kueue := ""
	for i := range runs {
		s, err := parse(i)
		if err != nil {
			return nil, err
		}
		ks[i], order[i] = s, i
		first := runs[0]
		switch {
		case s.n != ks[0].n:
			return nil, fmt.Errorf("%s is shard %s and %s shard %s: shards of one run share their N", names[0], first.Shard, names[i], runs[i].Shard)
		case runs[i].Cluster != first.Cluster || runs[i].KubernetesVersion != first.KubernetesVersion ||
			runs[i].TrainerVersion != first.TrainerVersion || runs[i].JobSetVersion != first.JobSetVersion ||
			runs[i].TrainerCheckout != first.TrainerCheckout || runs[i].KueueCheckout != first.KueueCheckout ||
			// A shard starts Kueue only when its scenarios ask for it.
			runs[i].KueueVersion != "" && kueue != "" && runs[i].KueueVersion != kueue:
			return nil, fmt.Errorf("%s ran %s and %s ran %s: shards of one run run the same cluster and versions", names[0], describe(first), names[i], describe(runs[i]))
		}
		if kueue == "" {
			kueue = runs[i].KueueVersion
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return ks[a].k - ks[b].k })
	merged := &results.Run{}
	*merged = *runs[order[0]]
	merged.Shard, merged.Scenarios, merged.NotReported, merged.Problems = "", nil, nil, nil
	var end time.Time
	owner := map[string]string{}
	next := 1
	for _, i := range order {
		r := runs[i]
		if ks[i].k < next {
			return nil, fmt.Errorf("%s and another run are both shard %s", names[i], r.Shard)
		}
		for ; next < ks[i].k; next++ {
			merged.MissingShards = append(merged.MissingShards, fmt.Sprintf("%d/%d", next, ks[i].n))
		}
		next++
		merged.Shards = append(merged.Shards, r.Shard)
		for _, sc := range r.Scenarios {
			if other, ok := owner[sc.Name]; ok {
				return nil, fmt.Errorf("%s is in shard %s and in shard %s: the shards were not cut from the same scenarios", sc.Name, other, r.Shard)
			}
			owner[sc.Name] = r.Shard
		}
		merged.Scenarios = append(merged.Scenarios, r.Scenarios...)
		merged.NotReported = append(merged.NotReported, r.NotReported...)
		for _, p := range r.Problems {
			merged.Problems = append(merged.Problems, "shard "+r.Shard+": "+p)
		}
		merged.Interrupted = merged.Interrupted || r.Interrupted
		merged.Unfinished = merged.Unfinished || r.Unfinished
		if r.Started.Before(merged.Started) {
			merged.Started = r.Started
		}
		if e := r.Started.Add(r.Duration); e.After(end) {
			end = e
		}
	}
	for n := ks[0].n; next <= n; next++ {
		merged.MissingShards = append(merged.MissingShards, fmt.Sprintf("%d/%d", next, n))
	}
	merged.Duration = end.Sub(merged.Started)
	merged.KueueVersion = kueue
	return merged, nil
}

// describe names what a run ran.
func describe(r *results.Run) string {
	s := fmt.Sprintf("%s, Kubernetes %s, Trainer %s, JobSet %s", r.Cluster, r.KubernetesVersion, r.TrainerVersion, r.JobSetVersion)
	if r.KueueVersion != "" {
		s += ", Kueue " + r.KueueVersion
	}
	if r.TrainerCheckout != "" {
		s += ", " + r.TrainerCheckout
	}
	if r.KueueCheckout != "" {
		s += ", " + r.KueueCheckout
	}
	return s
}
