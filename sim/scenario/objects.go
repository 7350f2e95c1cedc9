package scenario

import (
	"context"
	"fmt"
	"maps"
	"path"
	"reflect"
	"slices"
	"strings"

	fixturesfs "github.com/trainersim/trainersim/fixtures"
	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/fieldpath"
	"github.com/trainersim/trainersim/sim/manifests"
	"github.com/trainersim/trainersim/sim/releases"
)

// The Trainer objects a scenario writes, checked offline against the CRDs
// of the releases it holds for, as the API server would check them: what
// run would have refused (or pruned with a warning only) lint refuses,
// with the file, line and field.

// trainerGroup is the API group of the Trainer's kinds.
const trainerGroup = "trainer.kubeflow.org"

// trainerCRDs are the CRD files, under crds/trainer of a release's
// fixtures, of the Trainer's kinds.
var trainerCRDs = map[string]string{
	"TrainJob":               "trainer.kubeflow.org_trainjobs.yaml",
	"TrainingRuntime":        "trainer.kubeflow.org_trainingruntimes.yaml",
	"ClusterTrainingRuntime": "trainer.kubeflow.org_clustertrainingruntimes.yaml",
}

// crdObject checks obj, a Trainer object written at path, against the CRD
// of its kind in each release of versions: the apiVersion it serves; with
// unknown, the fields none of them knows (the API server drops them with a
// warning only): an error when it is a step's field or a near miss of a
// field the CRD has, a note otherwise; and, for a whole object, what each
// would refuse (required fields, types, enums, the CEL rules of a create).
// A field only some of the releases know is releaseFields' to report.
func (v *validator) crdObject(at string, obj map[string]any, whole, unknown bool, versions []string) {
	kind, _ := obj["kind"].(string)
	apiVersion, _ := obj["apiVersion"].(string)
	group, version, _ := strings.Cut(apiVersion, "/")
	file, trainerKind := trainerCRDs[kind]
	switch {
	case obj == nil || apiVersion == "" || kind == "":
		return // object() says so
	case group != trainerGroup && !trainerKind:
		return
	case group == trainerGroup && !trainerKind:
		v.errorf(join(at, "kind"), "kind %s is not a kind of %s: the Trainer's kinds are %s", quote(kind), trainerGroup, strings.Join(slices.Sorted(maps.Keys(trainerCRDs)), ", "))
		return
	case group != trainerGroup:
		v.errorf(join(at, "apiVersion"), "%s is %s/v1alpha1, not %s", kind, trainerGroup, quote(apiVersion))
		return
	}
	var schemas []*manifests.CRDSchema
	var held []string // the release of each schema
	for _, ver := range versions {
		release, err := releases.LookupTrainer(ver)
		if err != nil {
			continue // trainerVersions says so
		}
		s, err := manifests.ReadCRDSchema("Trainer "+ver, release.Fixtures(), path.Join(fixturesfs.CRDDir, "trainer", file), "v1alpha1")
		if err != nil {
			v.errorf(at, "internal error: %v", err)
			return
		}
		if !slices.Contains(s.Versions, version) {
			v.errorf(join(at, "apiVersion"), "%s is not served: the Trainer serves %s as %s", quote(apiVersion), kind, strings.Join(prefixed(trainerGroup+"/", s.Versions), ", "))
			return
		}
		schemas = append(schemas, s)
		held = append(held, ver)
	}
	if len(schemas) == 0 {
		return
	}
	// Unknown to every release: a field no Trainer has.
	pruned := map[string]int{}
	for _, s := range schemas {
		for _, p := range s.Prune(jsonObject(obj)) {
			pruned[p]++
		}
	}
	var typos []string
	for p, n := range pruned {
		if n == len(schemas) {
			typos = append(typos, p)
		}
	}
	slices.Sort(typos)
	refused := false
	for _, p := range typos {
		if unknown {
			refused = v.unknownObjectField(at, kind, p, schemas[len(schemas)-1]) || refused
		}
	}
	if !whole || refused {
		return
	}
	// What the releases would refuse, each problem once, with the
	// releases that refuse it.
	type problem struct{ field, msg string }
	var problems []problem
	refusedBy := map[problem][]string{}
	for i, s := range schemas {
		o := jsonObject(obj)
		s.Prune(o)
		s.Default(o)
		for _, e := range s.Validate(context.Background(), o) {
			p := problem{e.Field, e.ErrorBody()}
			if refusedBy[p] == nil {
				problems = append(problems, p)
			}
			refusedBy[p] = append(refusedBy[p], held[i])
		}
	}
	for _, p := range problems {
		by := "every Trainer release it holds for"
		if len(refusedBy[p]) < len(schemas) {
			by = "Trainer " + strings.Join(refusedBy[p], ", ")
		}
		v.errorf(fieldpath.Join(at, p.field), "%s: the %s CRD of %s refuses this %s, as the API server would", p.msg, kind, by, writeOf(at))
	}
}

// unknownObjectField reports p, a field of a kind's object at at that the
// CRD s does not know, and whether it is an error: a field of a step (one
// level too deep), or a near miss of a field the CRD has, is; any other is
// a note, as a scenario may write it to see it dropped.
func (v *validator) unknownObjectField(at, kind, p string, s *manifests.CRDSchema) bool {
	name := fieldpath.Last(p)
	if !strings.Contains(p, ".") && !strings.Contains(p, "[") && stepField(name) {
		v.errorf(fieldpath.Join(at, p), "unknown field %s of %s: %s is a field of the step, indented one level too deep, into the object %s sends; put it beside %s", quote(name), kind, name, writeOf(at), fieldpath.Last(at))
		return true
	}
	if c := closest(name, s.Fields(crdFieldPath(fieldpath.Parent(p)))); c != "" {
		v.errorf(fieldpath.Join(at, p), "unknown field %s of %s (did you mean %s?): no Trainer release's CRD has it, and the API server would drop it with a warning only", quote(name), kind, quote(c))
		return true
	}
	v.notef(fieldpath.Join(at, p), "%s is not a field of %s in any Trainer release's CRD: the API server drops it with a warning (set the step's fieldValidation to say what you expect: Warn, Ignore, or Strict with expectError)", quote(name), kind)
	return false
}

// stepField reports whether name is a field of a step.
func stepField(name string) bool {
	return slices.ContainsFunc(infoOf(reflect.TypeOf(v1alpha1.Step{})).fields, func(f structField) bool { return f.name == name })
}

// writeOf names the write of an object at path.
func writeOf(at string) string {
	switch fieldpath.Last(at) {
	case "create":
		return "create"
	case "apply":
		return "apply"
	}
	if strings.HasPrefix(at, "spec.setup[") {
		return "create" // the harness creates the setup's objects
	}
	return "update"
}

// jsonObject is a copy of obj with the numbers the API server's JSON
// decoding would give.
func jsonObject(obj map[string]any) map[string]any {
	out, _ := manifests.JSONValues(obj).(map[string]any)
	return out
}

// crdFieldPath is a printed path as CRDSchema.Fields takes it.
func crdFieldPath(p string) []string {
	parsed, err := fieldpath.Parse(p)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range parsed {
		if e.Kind == fieldpath.FieldKind {
			out = append(out, e.Name)
		} else {
			out = append(out, "[]")
		}
	}
	return out
}

func prefixed(prefix string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = prefix + n
	}
	return out
}

// jobSetNameLabel is the label JobSet puts on every Pod of a JobSet, whose
// name is its TrainJob's.
const jobSetNameLabel = "jobset.sigs.k8s.io/jobset-name"

// selectsJobSets checks that a selector at path that wants Pods of a
// JobSet by name (jobset.sigs.k8s.io/jobset-name) names a TrainJob or
// JobSet the scenario writes: otherwise no Pod ever matches, and run waits
// out its time to say so. A scenario that names one by generateName is
// not checked.
func (v *validator) selectsJobSets(path string, sel v1alpha1.LabelSelector) {
	want, ok := sel.MatchLabels[jobSetNameLabel]
	if !ok {
		return
	}
	names, complete := v.jobSetNames()
	if !complete || slices.Contains(names, want) {
		return
	}
	hint := "the scenario writes no TrainJob"
	if len(names) > 0 {
		hint = "the scenario's TrainJobs and JobSets are " + strings.Join(names, ", ")
		if c := closest(want, names); c != "" {
			hint = fmt.Sprintf("did you mean %s? %s", quote(c), hint)
		}
	}
	v.errorf(join(join(path, "matchLabels"), jobSetNameLabel), "%s=%s matches no Pod the scenario makes: JobSet names its Pods after the TrainJob (%s)", jobSetNameLabel, want, hint)
}

// jobSetNames returns the names of the TrainJobs and JobSets the scenario's
// setup and steps write, sorted; complete is false when one has no name
// of its own (generateName) or the setup reads a file.
func (v *validator) jobSetNames() (names []string, complete bool) {
	complete = true
	add := func(_ string, kind any, obj map[string]any, whole bool) {
		if (kind != "TrainJob" && kind != "JobSet") || !whole && obj == nil {
			return
		}
		meta, _ := obj["metadata"].(map[string]any)
		name, _ := meta["name"].(string)
		if gen, _ := meta["generateName"].(string); name == "" && gen != "" {
			complete = false
		}
		if name != "" && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	for i, s := range v.sc.Spec.Setup {
		if s.Path != "" {
			complete = false // a file's objects, which lint does not read
		}
		add(join(index("spec.setup", i), "object"), s.Object["kind"], s.Object, true)
	}
	for i, st := range v.sc.Spec.Steps {
		path := index("spec.steps", i)
		stepObjects(path, st, add)
		if c := st.Concurrently; c != nil {
			for j, w := range c.Writes {
				stepObjects(index(join(join(path, "concurrently"), "writes"), j), w, add)
			}
		}
	}
	slices.Sort(names)
	return names, complete
}
