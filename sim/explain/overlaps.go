package explain

import (
	"fmt"
	"slices"
	"strings"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
)

// Overlaps lists every field that two or more of trainJob's runtimePatches
// entries set, sorted by path: the upstream validation discussed and
// deferred ("not allow to modify the same Pod spec field by two different
// managers"). It reads the entries' own content, trainingRuntimeSpec.template
// as a JobSet, flattened with the same rules as the Pod templates: an
// atomic list (tolerations) is one field, each map key (nodeSelector,
// labels, annotations) is a field of its own, and items of lists merged by
// key are matched by their key, so that two entries adding different
// volumes, env variables or containers do not overlap while two setting the
// same one do. A key alone does not count as setting an item, except for
// items that are nothing but their key (a scheduling gate, an image pull
// secret). It needs no cluster and does not run the trainer.
func Overlaps(trainJob *trainer.TrainJob) ([]Overlap, error) {
	by := map[string]*Overlap{}
	for _, e := range trainJob.Spec.RuntimePatches {
		if e.TrainingRuntimeSpec == nil || e.TrainingRuntimeSpec.Template == nil {
			continue
		}
		m, err := toMap(e.TrainingRuntimeSpec.Template)
		if err != nil {
			return nil, fmt.Errorf("failed to encode runtimePatches entry %s: %w", e.Manager, err)
		}
		f := newFlat()
		f.add("", m, jobSetMeta)
		for _, p := range f.order {
			o := by[p]
			if o == nil {
				o = &Overlap{Path: p}
				by[p] = o
			}
			o.Managers = append(o.Managers, e.Manager)
			o.Values = append(o.Values, f.leaves[p].value)
		}
	}
	var out []Overlap
	for _, o := range by {
		if len(o.Managers) > 1 {
			out = append(out, *o)
		}
	}
	slices.SortFunc(out, func(a, b Overlap) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// String describes an overlap in one line: the field and the managers.
func (o Overlap) String() string {
	return fmt.Sprintf("%s is set by %s", o.Path, strings.Join(o.Managers, " and "))
}
