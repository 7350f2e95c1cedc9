package scenario

import (
	"slices"
	"strings"

	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
)

// Trainer releases: spec.trainer and a step's trainer, and the TrainJob
// fields each release has (v1alpha1.TrainJobFields).

// trainerVersions checks a trainer range at path and returns the supported
// releases in it that are also in within (nil: no further restriction). A
// nil t returns within, or every supported release.
func (v *validator) trainerVersions(path string, t *v1alpha1.Trainer, within []string) []string {
	if within == nil {
		within = v1alpha1.TrainerVersions
	}
	if t == nil {
		return within
	}
	r, err := v1alpha1.ParseVersionRange(t.Versions)
	if err != nil {
		v.errorf(join(path, "versions"), "%v", err)
		return within
	}
	var out []string
	for _, ver := range r.Supported() {
		if slices.Contains(within, ver) {
			out = append(out, ver)
		}
	}
	if len(out) == 0 {
		v.errorf(join(path, "versions"), "range %s holds no Trainer release this scenario can run on (of %s)", quote(t.Versions), strings.Join(within, ", "))
		return within
	}
	return out
}

// impliedVersions gives a scenario without spec.trainer the range of
// Trainer releases its TrainJob fields imply (runtimePatches: >=v2.2.0,
// podTemplateOverrides: <v2.2.0), with a note that says so, so that a file
// written before releases came into the format runs where it can and is
// skipped elsewhere. Fields of no common release leave it without one: the
// checks below then name them.
func (v *validator) impliedVersions() {
	if v.sc.Spec.Trainer != nil {
		return
	}
	releases := v1alpha1.TrainerVersions
	var ranges, found []string
	first := ""
	for _, f := range v1alpha1.TrainJobFields {
		at := v.fieldUses(f.Path)
		if len(at) == 0 {
			continue
		}
		r := v1alpha1.MustParseVersionRange(f.Versions)
		releases = slices.DeleteFunc(slices.Clone(releases), func(ver string) bool { return !r.Contains(ver) })
		if !slices.Contains(ranges, f.Versions) {
			ranges = append(ranges, f.Versions)
		}
		found = append(found, f.Path+" "+f.Versions)
		if first == "" {
			first = at[0]
		}
	}
	if len(found) == 0 || len(releases) == 0 || len(releases) == len(v1alpha1.TrainerVersions) {
		return
	}
	versions := strings.Join(ranges, " ")
	if strings.Contains(versions, "||") {
		versions = "=" + strings.Join(releases, " || =")
	}
	v.sc.Spec.Trainer = &v1alpha1.Trainer{Versions: versions}
	v.notef(first, "spec.trainer.versions is not given: the TrainJob fields the scenario writes (%s) imply %s, so it runs on Trainer %s and is skipped on the others; set spec.trainer.versions to say so", strings.Join(found, ", "), quote(versions), strings.Join(releases, ", "))
}

// fieldUses returns where the scenario's TrainJob objects, in its setup and
// its steps, set a dotted field.
func (v *validator) fieldUses(field string) []string {
	parts := strings.Split(field, ".")
	var out []string
	add := func(path string, kind any, obj map[string]any, _ bool) {
		if kind == "TrainJob" && obj != nil {
			out = append(out, findField(obj, parts, path)...)
		}
	}
	steps := func(path string, st v1alpha1.Step) {
		stepObjects(path, st, add)
		if c := st.Concurrently; c != nil {
			for j, w := range c.Writes {
				stepObjects(index(join(join(path, "concurrently"), "writes"), j), w, add)
			}
		}
	}
	for i, s := range v.sc.Spec.Setup {
		add(join(index("spec.setup", i), "object"), s.Object["kind"], s.Object, true)
	}
	for i, st := range v.sc.Spec.Steps {
		steps(index("spec.steps", i), st)
	}
	return out
}

// trainerReleaseFields checks the TrainJob objects of the scenario's setup
// and steps against the releases each holds for.
func (v *validator) trainerReleaseFields() {
	v.impliedVersions()
	spec := v.sc.Spec
	all := v.trainerVersions("spec.trainer", spec.Trainer, nil)
	for i, s := range spec.Setup {
		at := join(index("spec.setup", i), "object")
		v.releaseFields(at, s.Object["kind"], s.Object, all)
		v.crdObject(at, s.Object, true, true, all)
	}
	for i, st := range spec.Steps {
		path := index("spec.steps", i)
		versions := v.trainerVersions(join(path, "trainer"), st.Trainer, all)
		v.stepReleaseFields(path, st, versions)
		if st.Concurrently == nil {
			continue
		}
		for j, w := range st.Concurrently.Writes {
			wp := index(join(join(path, "concurrently"), "writes"), j)
			if w.Trainer != nil {
				v.errorf(join(wp, "trainer"), "a concurrent write cannot have a trainer range of its own: set it on the concurrently step")
			}
			v.stepReleaseFields(wp, w, versions)
		}
	}
}

// stepReleaseFields checks the objects a step writes against the releases
// of versions: the versioned TrainJob fields, and the CRDs.
func (v *validator) stepReleaseFields(path string, st v1alpha1.Step, versions []string) {
	stepObjects(path, st, func(at string, kind any, obj map[string]any, whole bool) {
		v.releaseFields(at, kind, obj, versions)
		// A step that expects its write refused asserts what the CRD
		// refuses; one that sets fieldValidation says what becomes of the
		// fields the CRD does not know.
		if st.ExpectError == nil && (at == join(path, "create") || at == join(path, "apply") || at == join(join(path, "update"), "object")) {
			v.crdObject(at, obj, whole, st.FieldValidation == "", versions)
		}
	})
}

// stepObjects calls fn with each object a step writes, the path it is at,
// its kind, and whether it is a whole object (a create's, an update's
// object) rather than part of one (an apply's configuration, an update's
// set, a merge patch).
func stepObjects(path string, st v1alpha1.Step, fn func(at string, kind any, obj map[string]any, whole bool)) {
	fn(join(path, "create"), st.Create["kind"], st.Create, true)
	fn(join(path, "apply"), st.Apply["kind"], st.Apply, false)
	if u := st.Update; u != nil {
		fn(join(join(path, "update"), "object"), u.Object["kind"], u.Object, true)
		// set is merged into an object of the kind its from step wrote.
		fn(join(join(path, "update"), "set"), "TrainJob", u.Set, false)
	}
	if p := st.Patch; p != nil && p.Type == v1alpha1.PatchMerge {
		if body, ok := p.Body.(map[string]any); ok {
			fn(join(join(path, "patch"), "body"), p.Target.Kind, body, false)
		}
	}
}

// releaseFields reports each versioned TrainJob field of obj (at path) that
// one of versions lacks.
func (v *validator) releaseFields(path string, kind any, obj map[string]any, versions []string) {
	if kind != "TrainJob" || obj == nil {
		return
	}
	for _, f := range v1alpha1.TrainJobFields {
		r := v1alpha1.MustParseVersionRange(f.Versions)
		var lacking []string
		for _, ver := range versions {
			if !r.Contains(ver) {
				lacking = append(lacking, ver)
			}
		}
		if len(lacking) == 0 {
			continue
		}
		for _, at := range findField(obj, strings.Split(f.Path, "."), path) {
			v.errorf(at, "exists in Trainer %s only, not in %s, which this step holds for: narrow spec.trainer.versions or the step's trainer.versions", f.Versions, strings.Join(lacking, ", "))
		}
	}
}

// findField returns the paths under at where the dotted field exists in
// obj; a part ending in [] is a list whose every element is searched.
func findField(obj any, parts []string, at string) []string {
	if len(parts) == 0 {
		return []string{at}
	}
	m, ok := obj.(map[string]any)
	if !ok {
		return nil
	}
	name, list := strings.CutSuffix(parts[0], "[]")
	val, ok := m[name]
	if !ok {
		return nil
	}
	if !list {
		return findField(val, parts[1:], join(at, name))
	}
	items, _ := val.([]any)
	var out []string
	for i, item := range items {
		out = append(out, findField(item, parts[1:], index(join(at, name), i))...)
	}
	return out
}
