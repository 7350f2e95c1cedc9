package explain

import (
	"context"
	"fmt"
	"slices"
	"strings"

	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"

	"github.com/trainersim/trainersim/sim/fieldpath"
	"github.com/trainersim/trainersim/sim/internal/smpmeta"
)

// Names of the first two layers.
const (
	runtimeLayer  = "runtime"
	trainJobLayer = "trainjob"
)

// jobSetMeta describes a JobSet, the shape of an entry's template.
var jobSetMeta = smpmeta.MustFromStruct(jobsetv1alpha2.JobSet{})

// podTemplatePath is the path of a replicated job's Pod template in a JobSet.
func podTemplatePath(replicatedJob string) string {
	return fieldpath.Path{
		fieldpath.Field("spec"), fieldpath.Field("replicatedJobs"), fieldpath.Item("name", replicatedJob),
		fieldpath.Field("template"), fieldpath.Field("spec"), fieldpath.Field("template"),
	}.String()
}

// Explain computes the layers of trainJob (see the package documentation)
// and the explanation of its final Pod templates.
func (e *Engine) Explain(ctx context.Context, trainJob *trainer.TrainJob) (*Result, error) {
	r, err := e.runtime(trainJob)
	if err != nil {
		return nil, err
	}
	src, tmpl, err := e.runtimeTemplate(ctx, trainJob)
	if err != nil {
		return nil, err
	}
	res := &Result{
		TrainJob: ObjectRef{Namespace: trainJob.Namespace, Name: trainJob.Name},
		Runtime:  src,
	}

	// Layer 0: the runtime's template, as the trainer converts it.
	specApply, err := templateApply(tmpl)
	if err != nil {
		return nil, err
	}
	specMap, err := toMap(specApply)
	if err != nil {
		return nil, fmt.Errorf("failed to encode the runtime's JobSet template: %w", err)
	}
	input, err := toMap(tmpl)
	if err != nil {
		return nil, fmt.Errorf("failed to encode the runtime's JobSet template: %w", err)
	}
	res.Layers = append(res.Layers, Layer{Index: 0, Kind: KindRuntime, Name: runtimeLayer, Input: input, PodTemplates: podTemplates(map[string]any{"spec": specMap})})

	// Layer 1 and on: the trainer's NewObjects with ever more entries.
	entries := trainJob.Spec.RuntimePatches
	for k := 0; k <= len(entries); k++ {
		tj := trainJob.DeepCopy()
		tj.Spec.RuntimePatches = tj.Spec.RuntimePatches[:k]
		objs, err := r.NewObjects(ctx, tj)
		if err != nil {
			return nil, fmt.Errorf("failed to build the objects of TrainJob %s/%s with %d of its runtimePatches entries: %w", trainJob.Namespace, trainJob.Name, k, err)
		}
		js := JobSet(objs)
		if js == nil {
			return nil, fmt.Errorf("TrainJob %s/%s with %d of its runtimePatches entries: %w", trainJob.Namespace, trainJob.Name, k, errNoJobSet)
		}
		jsMap, err := toMap(js)
		if err != nil {
			return nil, fmt.Errorf("failed to encode the JobSet of TrainJob %s/%s: %w", trainJob.Namespace, trainJob.Name, err)
		}
		l := Layer{Index: k + 1, Kind: KindTrainJob, Name: trainJobLayer, PodTemplates: podTemplates(jsMap)}
		if k == 0 {
			spec := trainJob.Spec.DeepCopy()
			spec.RuntimePatches = nil
			if l.Input, err = toMap(spec); err != nil {
				return nil, fmt.Errorf("failed to encode the TrainJob's spec: %w", err)
			}
		} else {
			entry := entries[k-1]
			l.Kind, l.Name = KindEntry, entry.Manager
			if entry.TrainingRuntimeSpec != nil {
				if l.Input, err = toMap(entry.TrainingRuntimeSpec); err != nil {
					return nil, fmt.Errorf("failed to encode entry %s: %w", entry.Manager, err)
				}
			}
		}
		res.Layers = append(res.Layers, l)
		res.JobSet = jsMap
	}

	attribute(res)
	if res.Overlaps, err = Overlaps(trainJob); err != nil {
		return nil, err
	}
	return res, nil
}

// podTemplates returns the Pod template of every replicated job of a JobSet
// (or of a {"spec": JobSetSpec}), in order.
func podTemplates(jobSet map[string]any) []PodTemplate {
	spec, _ := jobSet["spec"].(map[string]any)
	rjobs, _ := spec["replicatedJobs"].([]any)
	var out []PodTemplate
	for _, raw := range rjobs {
		rj, _ := raw.(map[string]any)
		name, _ := rj["name"].(string)
		t := map[string]any{}
		if job, ok := rj["template"].(map[string]any); ok {
			if js, ok := job["spec"].(map[string]any); ok {
				if pt, ok := js["template"].(map[string]any); ok {
					t = pt
				}
			}
		}
		out = append(out, PodTemplate{ReplicatedJob: name, Template: t})
	}
	return out
}

// flattenLayer flattens a layer's Pod templates under their JobSet paths.
func flattenLayer(l *Layer) *flat {
	f := newFlat()
	for _, pt := range l.PodTemplates {
		f.add(podTemplatePath(pt.ReplicatedJob), pt.Template, smpmeta.PodTemplate)
	}
	return f
}

// attribute compares successive layers and fills res.Layers[].Set,
// res.Fields and res.Overrides.
func attribute(res *Result) {
	setBy := map[string]int{}          // path -> layer that last set it
	overrode := map[string]*Previous{} // path -> what that layer replaced
	var prev *flat
	for i := range res.Layers {
		l := &res.Layers[i]
		cur := flattenLayer(l)
		if prev == nil {
			for _, p := range cur.order {
				setBy[p] = i
				l.Set = append(l.Set, p)
			}
			prev = cur
			continue
		}
		changed := map[string]bool{}
		for _, p := range cur.order {
			lf := cur.leaves[p]
			old, had := prev.leaves[p]
			switch {
			case !had:
				l.Set = append(l.Set, p)
				setBy[p] = i
				delete(overrode, p)
				changed[p] = true
			case old.canon != lf.canon:
				l.Set = append(l.Set, p)
				was := &Previous{Value: old.value, SetBy: res.Layers[setBy[p]].Name, Layer: setBy[p]}
				kind := Overwritten
				if lf.kind == atomicLeaf || old.kind == atomicLeaf {
					kind = Replaced
				}
				res.Overrides = append(res.Overrides, Override{Layer: i, By: l.Name, Kind: kind, Path: p, Old: was, New: lf.value})
				setBy[p] = i
				overrode[p] = was
				changed[p] = true
			}
		}
		for _, p := range prev.order {
			if _, still := cur.leaves[p]; still || cur.hasUnder(p) {
				// Still there, or an empty object that got content.
				continue
			}
			old := prev.leaves[p]
			res.Overrides = append(res.Overrides, Override{Layer: i, By: l.Name, Kind: Removed, Path: p,
				Old: &Previous{Value: old.value, SetBy: res.Layers[setBy[p]].Name, Layer: setBy[p]}})
			delete(setBy, p)
			delete(overrode, p)
			changed[p] = true
		}
		res.Overrides = append(res.Overrides, merges(i, l.Name, prev, cur, changed)...)
		prev = cur
	}

	for _, p := range prev.order {
		lf := prev.leaves[p]
		i := setBy[p]
		res.Fields = append(res.Fields, Field{Path: p, Value: lf.value, SetBy: res.Layers[i].Name, Layer: i, Overrode: overrode[p]})
	}
	slices.SortStableFunc(res.Fields, func(a, b Field) int { return strings.Compare(a.Path, b.Path) })
}

// merges reports the keyed lists of cur that already had items in prev and
// to which layer i added items or in which it changed items.
func merges(i int, by string, prev, cur *flat, changed map[string]bool) []Override {
	var out []Override
	for _, path := range sortedListPaths(cur.lists) {
		kl := cur.lists[path]
		before, ok := prev.lists[path]
		if !ok || len(before.items) == 0 {
			continue
		}
		o := Override{Layer: i, By: by, Kind: Merged, Path: path, MergeKey: kl.key}
		for j, item := range kl.items {
			id := kl.ids[j]
			switch {
			case !slices.Contains(before.items, item):
				o.Added = append(o.Added, id)
			case touched(item, changed):
				o.Updated = append(o.Updated, id)
			default:
				o.Kept = append(o.Kept, id)
			}
		}
		if len(o.Added) > 0 || len(o.Updated) > 0 {
			out = append(out, o)
		}
	}
	return out
}

// touched reports whether a changed path is the item or under it.
func touched(item string, changed map[string]bool) bool {
	for p := range changed {
		if p == item || strings.HasPrefix(p, item+".") || strings.HasPrefix(p, item+"[") {
			return true
		}
	}
	return false
}

func sortedListPaths(m map[string]*keyedList) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
