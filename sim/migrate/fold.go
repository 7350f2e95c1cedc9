package migrate

import (
	"fmt"
	"maps"
	"slices"

	"go.yaml.in/yaml/v4"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/trainersim/trainersim/sim/fieldpath"
	"github.com/trainersim/trainersim/sim/internal/smpmeta"
)

// jobPatch is the Pod template patch of one replicated job: the overrides
// that target it, folded in list order.
type jobPatch struct {
	name      string
	overrides []*override
	value     map[string]any
}

// fold groups the overrides by target job, in the order the jobs are first
// named, and folds each job's patches into one with the strategic merge of a
// Pod template, the later patch merged into the earlier ones as v2.1.0
// merges it into the runtime's template (trainingruntime.go:191-235).
// Applying the fold once gives what applying the overrides one after the
// other gives, except for the order of merged list items (checkOrder).
func (t *trainJob) fold(overrides []*override) []*jobPatch {
	var jobs []*jobPatch
	for _, o := range overrides {
		for _, name := range o.jobs {
			i := slices.IndexFunc(jobs, func(j *jobPatch) bool { return j.name == name })
			if i < 0 {
				i = len(jobs)
				jobs = append(jobs, &jobPatch{name: name})
			}
			jobs[i].overrides = append(jobs[i].overrides, o)
		}
	}
	for _, j := range jobs {
		for _, o := range j.overrides {
			patch := runtime.DeepCopyJSON(o.patch) // the merge may change its arguments
			if j.value == nil {
				j.value = patch
				continue
			}
			merged, err := strategicpatch.StrategicMergeMapPatch(j.value, patch, corev1.PodTemplateSpec{})
			if err != nil {
				t.errorf(o.node, o.path, "failed to merge the override into the ones before it for job %s: %v", j.name, err)
				continue
			}
			j.value = merged
		}
		t.checkOrder(j)
	}
	return jobs
}

// listUse is one override's items of a merged list: their keys in order.
type listUse struct {
	override *override
	keys     []string
	node     *yaml.Node
}

// checkOrder warns about every merged list (one merged by key) that two or
// more of a job's overrides set with different keys or keys in a different
// order. The strategic merge puts the patch's items in the patch's order
// and interleaves the items only the patched object has by where they were
// (normalizeElementOrder in apimachinery's strategicpatch), so merging the
// overrides one after the other orders the items by each patch in turn, and
// merging their fold orders them by the fold: the two agree when every
// override lists the same keys in the same order, or when the runtime has
// none of the items, and may not otherwise.
func (t *trainJob) checkOrder(j *jobPatch) {
	if len(j.overrides) < 2 {
		return
	}
	uses := map[string][]listUse{}
	var paths []string
	for _, o := range j.overrides {
		walkLists("", o.patch, o.guide, smpmeta.PodTemplate, func(path string, keys []string, n *yaml.Node) {
			if _, ok := uses[path]; !ok {
				paths = append(paths, path)
			}
			uses[path] = append(uses[path], listUse{override: o, keys: keys, node: nodeOr(n, o.node)})
		})
	}
	for _, p := range paths {
		us := uses[p]
		differs := slices.IndexFunc(us, func(u listUse) bool { return !slices.Equal(u.keys, us[0].keys) })
		if differs < 0 {
			continue
		}
		var os []*override
		var indexes []string
		for _, u := range us {
			os = append(os, u.override)
			indexes = append(indexes, fmt.Sprintf("[%d]", u.override.index))
		}
		verb := "both set"
		if len(us) > 2 {
			verb = "all set"
		}
		t.warn(Order, us[differs].node, os, []string{j.name}, p, fmt.Sprintf(
			"spec.podTemplateOverrides%s %s %s of job %s with different items: Trainer v2.1.0 merges them one after the other, the runtimePatches entry all at once, so if the runtime already has one of these items their order in the Pod can differ",
			joinAnd(indexes), verb, p, j.name))
	}
}

// walkLists calls fn with the path, the item keys and the node of every list
// merged by key in v (a patch, decoded JSON), guide being v as written and
// meta its type.
func walkLists(prefix string, v map[string]any, guide *yaml.Node, meta strategicpatch.LookupPatchMeta, fn func(path string, keys []string, n *yaml.Node)) {
	for _, k := range slices.Sorted(maps.Keys(v)) {
		path := fieldpath.AppendField(prefix, k)
		_, g := lookup(guide, k)
		switch child := v[k].(type) {
		case map[string]any:
			walkLists(path, child, g, smpmeta.Field(meta, k), fn)
		case []any:
			elem, mergeKey := smpmeta.Slice(meta, k)
			if mergeKey == "" || !smpmeta.AllObjects(child) {
				continue
			}
			keys := make([]string, len(child))
			for i, item := range child {
				keys[i] = fieldpath.KeyValue(item.(map[string]any)[mergeKey])
			}
			fn(path, keys, g)
			for i, item := range child {
				walkLists(fieldpath.AppendItem(path, mergeKey, keys[i]), item.(map[string]any), findItem(g, mergeKey, keys[i]), elem, fn)
			}
		}
	}
}
