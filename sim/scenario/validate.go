package scenario

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/trainersim/trainersim/fakegpu"
	"github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/fieldpath"
)

// jsonPatchOps are the operations of an RFC 6902 JSON patch (a patch
// body is free-form to the schema).
var jsonPatchOps = []string{"add", "remove", "replace", "move", "copy", "test"}

// maxFieldManager is the longest field manager the API server accepts.
const maxFieldManager = 128

// validator checks the meaning of a decoded scenario.
type validator struct {
	d        *decoder
	sc       *v1alpha1.Scenario
	fixtures *fixtures
	actors   map[string]bool
	steps    map[string]stepRef
	// completed: the steps whose kubelet action completed Pods, by their
	// selector.
	completed map[string]string
	// down: the components a component step crashed or stopped, by the
	// path of that step, until a step starts them.
	down map[string]string
	// built: Options.TrainerBuilt.
	built func(version string) error
	// unbuiltWarns: Options.UnbuiltWarns.
	unbuiltWarns bool
}

// stepRef is what update.from needs to know of a step or concurrent write.
type stepRef struct {
	path  string
	outer int  // index in spec.steps
	group bool // a concurrently step
	write bool // has a write or a get
}

func (v *validator) errorf(path, format string, args ...any) {
	v.d.errorf(v.d.node(path), path, format, args...)
}

// notef records a note at path: something the scenario leaves implicit
// that lint says, not a problem.
func (v *validator) notef(path, format string, args ...any) {
	v.d.notes = append(v.d.notes, v.at(path, format, args...))
}

// warnf records a warning at path: something this machine lacks to run
// the file, not a problem of the file.
func (v *validator) warnf(path, format string, args ...any) {
	v.d.warnings = append(v.d.warnings, v.at(path, format, args...))
}

func (v *validator) at(path, format string, args ...any) *Error {
	n := &Error{File: v.d.file, Field: path, Message: fmt.Sprintf(format, args...)}
	if node := v.d.node(path); node != nil {
		n.Line, n.Column = node.Line, node.Column
	}
	return n
}

func (v *validator) validate() {
	sc := v.sc
	if sc.APIVersion != v1alpha1.GroupVersion {
		v.errorf("apiVersion", "unsupported apiVersion %s, expected %q", quote(sc.APIVersion), v1alpha1.GroupVersion)
	}
	if sc.Kind != v1alpha1.Kind {
		v.errorf("kind", "unsupported kind %s, expected %q", quote(sc.Kind), v1alpha1.Kind)
	}
	v.metadata()
	if c := sc.Spec.Clusters; c != nil {
		if len(c.Only) == 0 {
			v.errorf("spec.clusters.only", "must name at least one cluster: %s", oneOf(v1alpha1.ClusterProviders))
		}
		if strings.TrimSpace(c.Reason) == "" {
			v.errorf("spec.clusters.reason", "must say why the scenario cannot hold on the other clusters")
		}
	}
	for i, ng := range sc.Spec.Nodes {
		v.nodeGroup(index("spec.nodes", i), ng)
	}
	for i, l := range sc.Spec.Lifecycle {
		v.lifecycle(index("spec.lifecycle", i), l)
	}
	if b := sc.Spec.CrashLoopBackOff; b != nil {
		v.crashLoopBackOff("spec.crashLoopBackOff", b)
	}
	v.declareActors()
	for i, s := range sc.Spec.Setup {
		v.setup(index("spec.setup", i), s)
	}
	if len(sc.Spec.Steps) == 0 {
		v.errorf("spec.steps", "a scenario needs at least one step")
	}
	v.declareSteps()
	for i, st := range sc.Spec.Steps {
		v.step(index("spec.steps", i), st, i, false)
	}
	v.trainerReleaseFields()
	v.components()
	v.webhooks()
	v.gates()
	v.views()
	v.reachedSince()
}

func (v *validator) metadata() {
	name := v.sc.Metadata.Name
	if name == "" {
		v.errorf("metadata.name", "must not be empty")
		return
	}
	if msgs := validation.IsDNS1123Label(name); len(msgs) > 0 {
		v.errorf("metadata.name", "invalid scenario name %s: %s (the name becomes part of a namespace name)", quote(name), strings.Join(msgs, "; "))
	}
}

func (v *validator) nodeGroup(path string, ng v1alpha1.NodeGroup) {
	if ng.Name != "" {
		if msgs := validation.IsDNS1123Label(ng.Name); len(msgs) > 0 {
			v.errorf(join(path, "name"), "invalid group name %s: %s", quote(ng.Name), strings.Join(msgs, "; "))
		}
	}
	for i, t := range ng.Taints {
		if t.Key == "" {
			v.errorf(join(index(join(path, "taints"), i), "key"), "must not be empty")
		}
	}
	if ng.Kubelet == fakegpu.KubeletHollow {
		v.hollow(join(path, "kubelet"))
	}
}

// hollow checks a node group of hollow kubelets, at path: simctl starts
// them with envtest, and their fake runtime runs every container until it
// is deleted, which no lifecycle rule, kubelet step or node step changes;
// each of those is a problem where it is written.
func (v *validator) hollow(path string) {
	v.needsEnvtest(path, "hollow kubelets are processes simctl starts beside the API server, which only envtest does")
	why := fmt.Sprintf("%s is hollow: a hollow kubelet's containers run until deleted and it renews its own node's Lease, so", strings.TrimSuffix(path, ".kubelet"))
	if len(v.sc.Spec.Lifecycle) > 0 {
		v.errorf("spec.lifecycle", "%s lifecycle rules have no effect on its Pods; leave the group simulated", why)
	}
	for i, st := range v.sc.Spec.Steps {
		switch {
		case st.Kubelet != nil:
			v.errorf(join(index("spec.steps", i), "kubelet"), "%s a kubelet step cannot act on its Pods; leave the group simulated", why)
		case st.Node != nil:
			v.errorf(join(index("spec.steps", i), "node"), "%s a node step cannot act on its nodes; leave the group simulated", why)
		}
	}
}

func (v *validator) lifecycle(path string, l v1alpha1.PodLifecycle) {
	v.labelSelector(join(path, "selector"), l.Selector, "a lifecycle rule must select its Pods by at least one label")
	switch {
	case l.SucceedAfter == nil && l.Fail == nil:
		v.errorf(path, "must give succeedAfter or fail")
	case l.SucceedAfter != nil && l.Fail != nil:
		v.errorf(join(path, "fail"), "a Pod cannot both succeed and fail: give succeedAfter or fail, not both")
	}
	if f := l.Fail; f != nil {
		if f.ExitCode < 1 || f.ExitCode > 255 {
			v.errorf(join(join(path, "fail"), "exitCode"), "must be 1 to 255 (a container that exits 0 succeeded), found %d", f.ExitCode)
		}
	}
}

// crashLoopBackOff: the simulated kubelet counts the back-off in whole
// seconds (lifecycle.trainersim.dev/back-off-*-seconds).
func (v *validator) crashLoopBackOff(path string, b *v1alpha1.CrashLoopBackOff) {
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"initial", b.Initial.Duration}, {"max", b.Max.Duration}} {
		if f.d < time.Second || f.d%time.Second != 0 {
			v.errorf(join(path, f.name), "must be whole seconds, at least 1s, found %s", f.d)
		}
	}
	if b.Max.Duration < b.Initial.Duration {
		v.errorf(join(path, "max"), "must be at least initial (%s), found %s", b.Initial.Duration, b.Max.Duration)
	}
}

func (v *validator) node(path string, n *v1alpha1.NodeAction) {
	if _, err := v1alpha1.ResolveNode(v.sc.Spec.Nodes, n.Name); err != nil {
		v.errorf(join(path, "name"), "%v", err)
	}
}

func (v *validator) kubelet(path, step string, k *v1alpha1.KubeletAction) {
	v.labelSelector(join(path, "pods"), k.Pods, "a kubelet step must select its Pods by at least one label")
	v.selectsJobSets(join(path, "pods"), k.Pods)
	if k.Action == v1alpha1.KubeletComplete {
		for _, f := range []struct {
			name string
			set  bool
		}{{"container", k.Container != ""}, {"exitCode", k.ExitCode != 0}, {"reason", k.Reason != ""}} {
			if f.set {
				v.errorf(join(path, f.name), "complete ends every container with exit code 0: %s is for fail and restart", f.name)
			}
		}
	}
	// A Pod that an earlier step completed is Succeeded for good: a
	// kubelet step on the same Pods asks for Succeeded to Running.
	key := labels.SelectorFromSet(k.Pods.MatchLabels).String()
	if done, ok := v.completed[key]; ok && len(k.Pods.MatchLabels) > 0 {
		v.errorf(join(path, "pods"), "impossible transition: step %s completed these Pods (Succeeded), a kubelet cannot %s them again", quote(done), k.Action)
	}
	if k.Action == v1alpha1.KubeletComplete && len(k.Pods.MatchLabels) > 0 {
		if v.completed == nil {
			v.completed = map[string]string{}
		}
		v.completed[key] = step
	}
}

// labelSelector checks a selector that must select by at least one label.
func (v *validator) labelSelector(path string, sel v1alpha1.LabelSelector, empty string) {
	if len(sel.MatchLabels) == 0 {
		v.errorf(join(path, "matchLabels"), "%s", empty)
	}
	for k, val := range sel.MatchLabels {
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			v.errorf(join(path, "matchLabels"), "invalid label key %s: %s", quote(k), strings.Join(msgs, "; "))
		}
		if msgs := validation.IsValidLabelValue(val); len(msgs) > 0 {
			v.errorf(join(path, "matchLabels"), "invalid value %s of label %s: %s", quote(val), quote(k), strings.Join(msgs, "; "))
		}
	}
}

func (v *validator) declareActors() {
	v.actors = map[string]bool{}
	first := map[string]int{}
	for i, a := range v.sc.Spec.Actors {
		path := index("spec.actors", i)
		switch prev, dup := first[a.Name]; {
		case a.Name == "":
			v.errorf(join(path, "name"), "must not be empty")
		case dup:
			v.errorf(join(path, "name"), "duplicate actor name %s (first declared by spec.actors[%d])", quote(a.Name), prev)
		default:
			first[a.Name] = i
			v.actors[a.Name] = true
		}
		switch {
		case a.FieldManager == "":
			v.errorf(join(path, "fieldManager"), "must not be empty")
		case len(a.FieldManager) > maxFieldManager:
			v.errorf(join(path, "fieldManager"), "is %d characters long; the API server accepts at most %d", len(a.FieldManager), maxFieldManager)
		}
		if len(a.Groups) > 0 && a.User == "" {
			v.errorf(join(path, "groups"), "groups are impersonated only along with a user: set user too")
		}
	}
}

func (v *validator) setup(path string, s v1alpha1.SetupObject) {
	switch {
	case s.Object == nil && s.Path == "":
		v.errorf(path, "a setup entry needs object or path")
	case s.Object != nil && s.Path != "":
		v.errorf(path, "a setup entry takes object or path, not both")
	case s.Object != nil:
		v.object(join(path, "object"), s.Object, true)
	default:
		if err := v.fixtures.find(s.Path); err != nil {
			v.errorf(join(path, "path"), "%v", err)
		}
	}
}

// declareSteps records every step and concurrent write by name, reporting
// empty and duplicate names.
func (v *validator) declareSteps() {
	v.steps = map[string]stepRef{}
	declare := func(path string, st v1alpha1.Step, outer int) {
		np := join(path, "name")
		if st.Name == "" {
			v.errorf(np, "must not be empty")
			return
		}
		if prev, dup := v.steps[st.Name]; dup {
			line := 0
			if n := v.d.node(join(prev.path, "name")); n != nil {
				line = n.Line
			}
			v.errorf(np, "duplicate step name %s (first used by %s at line %d)", quote(st.Name), prev.path, line)
			return
		}
		verb, ok := v1alpha1.VerbOf(&st)
		v.steps[st.Name] = stepRef{
			path:  path,
			outer: outer,
			group: verb.Group,
			write: ok && !verb.Group,
		}
	}
	for i, st := range v.sc.Spec.Steps {
		path := index("spec.steps", i)
		declare(path, st, i)
		if st.Concurrently != nil {
			for j, w := range st.Concurrently.Writes {
				declare(index(join(join(path, "concurrently"), "writes"), j), w, i)
			}
		}
	}
}

// verbChecks check the field of each verb of v1alpha1.Verbs, at path, the
// field's own path; inGroup says the step is a write of a concurrently group.
// Set by init: the check of concurrently checks its writes as steps.
var verbChecks map[string]func(v *validator, path string, st v1alpha1.Step, outer int, inGroup bool)

func init() {
	verbChecks = map[string]func(v *validator, path string, st v1alpha1.Step, outer int, inGroup bool){
		v1alpha1.VerbCreate: func(v *validator, path string, st v1alpha1.Step, _ int, _ bool) { v.object(path, st.Create, true) },
		v1alpha1.VerbApply:  func(v *validator, path string, st v1alpha1.Step, _ int, _ bool) { v.object(path, st.Apply, false) },
		v1alpha1.VerbPatch:  func(v *validator, path string, st v1alpha1.Step, outer int, _ bool) { v.patch(path, st, outer) },
		v1alpha1.VerbUpdate: func(v *validator, path string, st v1alpha1.Step, outer int, _ bool) { v.update(path, st, outer) },
		v1alpha1.VerbDelete: func(v *validator, path string, st v1alpha1.Step, _ int, _ bool) { v.writeTarget(path, *st.Delete) },
		v1alpha1.VerbGet:    func(v *validator, path string, st v1alpha1.Step, _ int, _ bool) { v.target(path, *st.Get) },
		v1alpha1.VerbNode:   func(v *validator, path string, st v1alpha1.Step, _ int, _ bool) { v.node(path, st.Node) },
		v1alpha1.VerbComponent: func(v *validator, path string, st v1alpha1.Step, _ int, _ bool) {
			v.component(path, st.Component)
		},
		v1alpha1.VerbKubelet: func(v *validator, path string, st v1alpha1.Step, _ int, _ bool) {
			v.kubelet(path, st.Name, st.Kubelet)
		},
		v1alpha1.VerbConcurrently: func(v *validator, path string, st v1alpha1.Step, outer int, inGroup bool) {
			if !inGroup { // a nested group is reported once, by step
				v.concurrently(path, st.Concurrently, outer)
			}
		},
	}
}

// LintsVerb reports whether the loader checks the field of the verb of a
// name: true for every verb of v1alpha1.Verbs.
func LintsVerb(name string) bool { return verbChecks[name] != nil }

// verbList names the verbs keep accepts, "a, b or c" (and: "a, b and c").
func verbList(keep func(v1alpha1.Verb) bool, and bool) string {
	names := v1alpha1.VerbNames(keep)
	if and {
		return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
	}
	return oneOf(names)
}

func isWrite(v v1alpha1.Verb) bool { return v.InGroup() }

// step checks a step of spec.steps (inGroup false) or a write of a
// concurrently group (inGroup true); outer is the index in spec.steps.
func (v *validator) step(path string, st v1alpha1.Step, outer int, inGroup bool) {
	verbs := v1alpha1.StepVerbs(&st)
	var names []string
	for _, vb := range verbs {
		names = append(names, vb.Name)
	}
	if len(verbs) > 1 {
		v.errorf(join(path, verbs[1].Name), "a step has at most one of %s; found %s", verbList(nil, false), strings.Join(names, " and "))
	}
	verb := v1alpha1.Verb{}
	if len(verbs) > 0 {
		verb = verbs[0]
	}
	switch {
	case inGroup && verb.Group:
		v.errorf(join(path, verb.Name), "%s cannot be nested", verb.Name)
	case inGroup && len(verbs) > 0 && !verb.Write:
		v.errorf(join(path, verb.Name), "%s is not a write: a concurrently group holds %s writes", verb.Name, verbList(isWrite, true))
	case inGroup && len(verbs) > 0 && st.Release != nil:
		v.errorf(join(path, "release"), "a release in a concurrently group is an entry of its own: put %s in another", verbs[0].Name)
	case inGroup && len(verbs) == 0 && st.Release == nil:
		v.errorf(path, "a concurrent write needs one of %s, or a release", verbList(isWrite, false))
	case !inGroup && len(verbs) == 0 && st.Expect == nil && st.Release == nil:
		v.errorf(path, "a step needs a write (%s), a release or an expect", verbList(nil, false))
	}
	if inGroup && st.Expect != nil {
		v.errorf(join(path, "expect"), "expect is not allowed inside concurrently: put it in a step after the group")
	}

	switch {
	case verb.Group && st.Actor != "" && !inGroup:
		v.errorf(join(path, "actor"), "a concurrently step has no actor of its own: set actor on each of its writes")
	case inGroup && st.Release != nil && st.Actor != "":
		v.errorf(join(path, "actor"), "a release lets a gate's component through: it has no actor")
	case st.Actor != "" && !v.actors[st.Actor]:
		v.errorf(join(path, "actor"), "unknown actor %s (%s)", quote(st.Actor), v.declaredActors())
	case inGroup && st.Actor == "" && st.Release == nil:
		v.errorf(path, "a concurrent write needs its own actor")
	}

	if st.Release != nil {
		v.release(join(path, "release"), st.Release, outer, inGroup)
	}
	if st.Force && st.Apply == nil {
		v.errorf(join(path, "force"), "force is only valid with apply")
	}
	if st.FieldValidation != "" && !verb.FieldValidation {
		v.errorf(join(path, "fieldValidation"), "fieldValidation is only valid with %s", verbList(func(v v1alpha1.Verb) bool { return v.FieldValidation }, false))
	}
	if st.ExpectError != nil {
		ep := join(path, "expectError")
		switch {
		case verb.Group:
			v.errorf(ep, "expectError is not valid on a %s step: put it on its writes", verb.Name)
		case len(verbs) == 1 && !verb.Write:
			v.errorf(ep, "expectError is not valid with %s: a %s is not a write", verb.Name, verb.Name)
		case len(verbs) == 0:
			v.errorf(ep, "expectError needs a write (%s)", verbList(isWrite, false))
		}
		v.expectError(ep, st.ExpectError)
	}

	for _, vb := range verbs {
		check := verbChecks[vb.Name]
		if check == nil {
			v.errorf(join(path, vb.Name), "internal error: the loader does not check %s", vb.Name)
			continue
		}
		check(v, join(path, vb.Name), st, outer, inGroup)
	}
	if st.Expect != nil && !inGroup {
		v.expect(join(path, "expect"), st.Expect)
	}
}

func (v *validator) declaredActors() string {
	if len(v.sc.Spec.Actors) == 0 {
		return "spec.actors declares none"
	}
	names := make([]string, 0, len(v.sc.Spec.Actors))
	for _, a := range v.sc.Spec.Actors {
		names = append(names, a.Name)
	}
	return "declared actors: " + strings.Join(names, ", ")
}

// object checks an object to create, apply or update: apiVersion, kind and
// metadata.name (or generateName, where the server generates the name).
func (v *validator) object(path string, o v1alpha1.Object, generateName bool) {
	for _, k := range []string{"apiVersion", "kind"} {
		if s, ok := v.str(path, o, k); ok && s == "" {
			v.errorf(path, "the object needs %s", k)
		}
	}
	raw, present := o["metadata"]
	meta, ok := raw.(map[string]any)
	if present && !ok && raw != nil {
		v.errorf(join(path, "metadata"), "expected a mapping, found %s", kindOf(raw))
		return
	}
	name, nameOK := v.str(join(path, "metadata"), meta, "name")
	gen, genOK := v.str(join(path, "metadata"), meta, "generateName")
	if !nameOK || !genOK || name != "" || (generateName && gen != "") {
		return
	}
	want := "metadata.name"
	if generateName {
		want = "metadata.name or metadata.generateName"
	}
	at := path
	if meta != nil {
		at = join(path, "metadata")
	}
	v.errorf(at, "the object needs %s", want)
}

// str returns m[key] when it is a string or absent (""); ok is false, with
// the problem recorded, when it is something else.
func (v *validator) str(path string, m map[string]any, key string) (s string, ok bool) {
	raw, present := m[key]
	if !present || raw == nil {
		return "", true
	}
	if s, ok = raw.(string); !ok {
		v.errorf(freeKey(path, key), "expected a string, found %s", kindOf(raw))
	}
	return s, ok
}

func (v *validator) target(path string, t v1alpha1.Target) {
	if t.Kind == "" {
		v.errorf(join(path, "kind"), "must not be empty")
	} else if t.APIVersion == "" && v1alpha1.DefaultAPIVersions[t.Kind] == "" {
		v.errorf(join(path, "kind"), "kind %s needs an apiVersion (only %s may omit it)", t.Kind, strings.Join(slices.Sorted(maps.Keys(v1alpha1.DefaultAPIVersions)), ", "))
	}
	if t.Selector != nil {
		v.errorf(join(path, "selector"), "only a patch or a delete target may use a selector")
	}
	if t.Name == "" {
		v.errorf(join(path, "name"), "must not be empty")
	}
}

// reached checks an object expectation with reached: a state to match,
// of an object the watches deliver every change of.
func (v *validator) reached(path string, o v1alpha1.ObjectExpectation) {
	apiVersion := cmp.Or(o.Target.APIVersion, v1alpha1.DefaultAPIVersions[o.Target.Kind])
	switch watched, ok := v1alpha1.WatchedKinds[o.Target.Kind]; {
	case o.Absent || o.Match == nil && len(o.MatchAny) == 0:
		v.errorf(join(path, "reached"), "reached needs a state to have reached: match or matchAny")
	case !ok || watched != apiVersion:
		v.errorf(join(path, "reached"), "reached needs every change of the object, which simctl watches only of %s", watchedKinds())
	case o.Target.Namespace != "":
		v.errorf(join(path, "reached"), "reached needs every change of the object, which simctl watches only in the scenario's namespace: leave target.namespace out")
	}
}

// reachedSince checks each object expectation's reachedSince: with
// reached, an earlier step of spec.steps that every Trainer release runs
// (on a release that skips it the states would count from nowhere).
func (v *validator) reachedSince() {
	for i, st := range v.sc.Spec.Steps {
		if st.Expect == nil {
			continue
		}
		for j, o := range st.Expect.Objects {
			if o.ReachedSince == "" {
				continue
			}
			path := join(index(join(join(index("spec.steps", i), "expect"), "objects"), j), "reachedSince")
			ref, ok := v.steps[o.ReachedSince]
			switch {
			case !o.Reached:
				v.errorf(path, "reachedSince is when reached begins to count: set reached: true")
			case !ok:
				v.errorf(path, "no step is named %s", quote(o.ReachedSince))
			case ref.path != index("spec.steps", ref.outer):
				v.errorf(path, "step %s is a write of a concurrently group: name a step of spec.steps", quote(o.ReachedSince))
			case ref.outer >= i:
				v.errorf(path, "step %s (%s) does not come before this one: reachedSince names an earlier step", quote(o.ReachedSince), ref.path)
			case v.sc.Spec.Steps[ref.outer].Trainer != nil:
				v.errorf(path, "step %s runs on some Trainer releases only (its trainer.versions): name a step every release runs", quote(o.ReachedSince))
			}
		}
	}
}

// watchedKinds lists v1alpha1.WatchedKinds for a message.
func watchedKinds() string {
	var kinds []string
	for _, k := range slices.Sorted(maps.Keys(v1alpha1.WatchedKinds)) {
		kinds = append(kinds, k+" ("+v1alpha1.WatchedKinds[k]+")")
	}
	return strings.Join(kinds, ", ")
}

// writeTarget checks the target of a patch or a delete: a name, or else a
// selector with at least one label.
func (v *validator) writeTarget(path string, t v1alpha1.Target) {
	if t.Selector == nil {
		v.target(path, t)
		return
	}
	if t.Kind == "" {
		v.errorf(join(path, "kind"), "must not be empty")
	}
	if t.Name != "" {
		v.errorf(join(path, "name"), "name and selector are exclusive")
	}
	if len(t.Selector.MatchLabels) == 0 {
		v.errorf(join(path, "selector"), "must have matchLabels")
	}
}

func (v *validator) patch(path string, st v1alpha1.Step, outer int) {
	p := st.Patch
	v.writeTarget(join(path, "target"), p.Target)
	if p.ResourceVersionFrom != "" {
		v.earlierStep(join(path, "resourceVersionFrom"), p.ResourceVersionFrom, st.Name, outer, "resourceVersionFrom", "a patch cannot carry its own resourceVersion", "object's resourceVersion could be carried")
		if p.Target.Selector != nil {
			v.errorf(join(path, "resourceVersionFrom"), "one resourceVersion cannot be carried to every object a selector matches: name one object")
		}
	}
	bp := join(path, "body")
	switch p.Type {
	case v1alpha1.PatchMerge:
		if _, ok := p.Body.(map[string]any); !ok {
			v.errorf(bp, "a merge patch body must be a mapping, found %s", kindOf(p.Body))
		}
	case v1alpha1.PatchJSON:
		ops, ok := p.Body.([]any)
		switch {
		case !ok:
			v.errorf(bp, "a json patch body must be a list of operations, found %s", kindOf(p.Body))
		case len(ops) == 0:
			v.errorf(bp, "a json patch body needs at least one operation")
		}
		for i, raw := range ops {
			v.jsonPatchOp(index(bp, i), raw)
		}
	}
}

// jsonPatchOp checks one operation of an RFC 6902 JSON patch.
func (v *validator) jsonPatchOp(path string, raw any) {
	op, ok := raw.(map[string]any)
	if !ok {
		v.errorf(path, "a json patch operation must be a mapping, found %s", kindOf(raw))
		return
	}
	name, ok := v.str(path, op, "op")
	switch {
	case !ok:
		return
	case name == "":
		v.errorf(path, "the operation needs op: %s", oneOf(jsonPatchOps))
		return
	case !slices.Contains(jsonPatchOps, name):
		v.errorf(join(path, "op"), "unknown op %s: must be %s", quote(name), oneOf(jsonPatchOps))
		return
	}
	pointer := func(key string) {
		raw, present := op[key]
		if !present || raw == nil {
			v.errorf(path, "the %s operation needs %s", name, key)
			return
		}
		s, ok := raw.(string)
		switch {
		case !ok:
			v.errorf(join(path, key), "expected a string, found %s", kindOf(raw))
		case s != "" && !strings.HasPrefix(s, "/"):
			v.errorf(join(path, key), "%s is not a JSON pointer: it must be empty or start with /", quote(s))
		}
	}
	pointer("path")
	switch name {
	case "move", "copy":
		pointer("from")
	case "add", "replace", "test":
		if _, present := op["value"]; !present {
			v.errorf(path, "the %s operation needs value", name)
		}
	}
}

func (v *validator) update(path string, st v1alpha1.Step, outer int) {
	u := st.Update
	switch {
	case u.Object != nil && u.From != "":
		v.errorf(path, "update takes object or from, not both")
	case u.Object == nil && u.From == "":
		v.errorf(path, "update needs object or from")
	}
	if u.Set != nil && u.From == "" {
		v.errorf(join(path, "set"), "set is only valid with from")
	}
	if u.Object != nil {
		v.object(join(path, "object"), u.Object, false)
	}
	if u.From == "" {
		return
	}
	v.earlierStep(join(path, "from"), u.From, st.Name, outer, "from", "a step cannot update from itself", "object could be the base")
}

// earlierStep checks a field (its name, at path fp) that names an earlier
// step's object: selfMsg is the message for a step naming itself, whose
// the end of the one for a step without a write or get.
func (v *validator) earlierStep(fp, from, self string, outer int, field, selfMsg, whose string) {
	ref, ok := v.steps[from]
	switch {
	case !ok:
		v.errorf(fp, "no step is named %s", quote(from))
	case from == self:
		v.errorf(fp, "%s: %s names an earlier step", selfMsg, field)
	case ref.outer > outer:
		v.errorf(fp, "step %s (%s) comes later: %s names an earlier step", quote(from), ref.path, field)
	case ref.outer == outer:
		v.errorf(fp, "step %s runs concurrently with this write: %s names an earlier step", quote(from), field)
	case ref.group:
		v.errorf(fp, "step %s is a concurrently group: name one of its writes", quote(from))
	case !ref.write:
		v.errorf(fp, "step %s has no write or get whose %s", quote(from), whose)
	}
}

func (v *validator) concurrently(path string, c *v1alpha1.Concurrently, outer int) {
	wp := join(path, "writes")
	if len(c.Writes) < 2 {
		v.errorf(wp, "a concurrently group needs at least 2 writes, found %d", len(c.Writes))
	}
	for i, w := range c.Writes {
		v.step(index(wp, i), w, outer, true)
	}
	if c.Outcomes != nil {
		v.outcomes(join(path, "outcomes"), c.Outcomes, len(c.Writes))
	}
	if c.Interleavings != nil {
		v.interleavings(join(path, "interleavings"), c, outer)
	}
}

func (v *validator) outcomes(op string, o *v1alpha1.Outcomes, writes int) {
	sum, set := 0, 0
	for _, n := range []struct {
		name string
		n    *int
	}{{"succeeded", o.Succeeded}, {"conflicts", o.Conflicts}, {"rejected", o.Rejected}} {
		if n.n == nil {
			continue
		}
		sum += *n.n
		set++
	}
	switch {
	case sum > writes:
		v.errorf(op, "outcomes count %d writes, but the group has %d", sum, writes)
	case set == 3 && sum != writes:
		v.errorf(op, "succeeded, conflicts and rejected add up to %d, but the group has %d writes", sum, writes)
	}
}

// interleavings checks the orders to explore and the cases, whose write
// names must be the group's.
func (v *validator) interleavings(path string, c *v1alpha1.Concurrently, outer int) {
	for i, st := range v.sc.Spec.Steps {
		if i < outer && st.Concurrently != nil && st.Concurrently.Interleavings != nil {
			v.errorf(path, "only one concurrently group of a scenario may explore interleavings; spec.steps[%d] does already", i)
			break
		}
	}
	il := c.Interleavings
	n := len(c.Writes)
	switch {
	case il.Orders.All && n > v1alpha1.MaxAllOrders:
		v.errorf(join(path, "orders"), "all orders of %d writes are %d runs of the scenario; all allows at most %d writes: give a number instead", n, v1alpha1.Permutations(n), v1alpha1.MaxAllOrders)
	case !il.Orders.All && il.Orders.N > v1alpha1.Permutations(n):
		v.errorf(join(path, "orders"), "%d orders asked, but %d writes have only %d", il.Orders.N, n, v1alpha1.Permutations(n))
	}
	writes := map[string]bool{}
	var names []string
	for _, w := range c.Writes {
		writes[w.Name] = true
		names = append(names, w.Name)
	}
	known := func(p, name string) {
		if !writes[name] {
			v.errorf(p, "%s is not a write of this group (writes: %s)", quote(name), strings.Join(names, ", "))
		}
	}
	seen := map[string]bool{}
	for i, cs := range il.Cases {
		cp := index(join(path, "cases"), i)
		switch {
		case cs.Name == "":
			v.errorf(join(cp, "name"), "must not be empty")
		case seen[cs.Name]:
			v.errorf(join(cp, "name"), "duplicate case name %s", quote(cs.Name))
		}
		seen[cs.Name] = true
		if cs.First == "" && len(cs.Order) == 0 {
			v.errorf(cp, "a case needs first or order to say which orders it is about")
		}
		if cs.First != "" {
			known(join(cp, "first"), cs.First)
		}
		if len(cs.Order) == 1 {
			v.errorf(join(cp, "order"), "order needs at least 2 writes, found 1")
		}
		inOrder := map[string]bool{}
		for j, name := range cs.Order {
			p := index(join(cp, "order"), j)
			known(p, name)
			if inOrder[name] {
				v.errorf(p, "%s is named twice", quote(name))
			}
			inOrder[name] = true
		}
		if cs.Outcomes == nil && cs.Expect == nil {
			v.errorf(cp, "a case needs outcomes or expect")
		}
		if cs.Outcomes != nil {
			v.outcomes(join(cp, "outcomes"), cs.Outcomes, n)
		}
		if cs.Expect != nil {
			v.expect(join(cp, "expect"), cs.Expect)
		}
	}
}

func (v *validator) expectError(path string, e *v1alpha1.ExpectError) {
	if e.Status != 0 && (e.Status < 100 || e.Status > 599) {
		v.errorf(join(path, "status"), "%d is not an HTTP status code (100 to 599)", e.Status)
	}
	v.messageMatches(join(path, "messageMatches"), e.MessageMatches)
}

// messageMatches checks a regular expression a message must match.
func (v *validator) messageMatches(path, expr string) {
	if _, err := regexp.Compile(expr); expr != "" && err != nil {
		v.errorf(path, "invalid regular expression: %v", err)
	}
}

func (v *validator) expect(path string, e *v1alpha1.Expect) {
	asserted := false
	for _, k := range v1alpha1.Expectations {
		if !k.In(e) {
			continue
		}
		asserted = true
		check := expectationChecks[k.Name]
		if check == nil {
			v.errorf(join(path, k.Name), "internal error: the loader does not check %s", k.Name)
			continue
		}
		check(v, join(path, k.Name), e)
	}
	if !asserted {
		v.errorf(path, "expect needs at least one of %s", oneOf(v1alpha1.ExpectationNames()))
	}
}

// expectationChecks check the field of each kind of v1alpha1.Expectations,
// at path, the field's own path.
var expectationChecks = map[string]func(v *validator, path string, e *v1alpha1.Expect){
	"pods": func(v *validator, pp string, e *v1alpha1.Expect) {
		p := e.Pods
		v.exact(join(pp, "exact"), p.Exact, "pods.all or pods.any", p.All, p.Any)
		if p.Selector != nil && (p.Count == nil || *p.Count > 0) {
			v.selectsJobSets(join(pp, "selector"), *p.Selector)
		}
	},
	"objects": func(v *validator, path string, e *v1alpha1.Expect) {
		for i, o := range e.Objects {
			op := index(path, i)
			v.target(join(op, "target"), o.Target)
			switch {
			case o.Absent && (o.Match != nil || len(o.MatchAny) > 0 || len(o.Exact) > 0):
				v.errorf(join(op, "absent"), "absent cannot be combined with match, matchAny or exact")
			case o.Match == nil && len(o.MatchAny) > 0:
				// Each alternative is matched with the exact paths.
				for j, alt := range o.MatchAny {
					v.exact(join(op, "exact"), o.Exact, fmt.Sprintf("matchAny[%d]", j), alt)
				}
			default:
				v.exact(join(op, "exact"), o.Exact, "match", o.Match)
			}
			if o.Reached {
				v.reached(op, o)
			}
		}
	},
	// Every field of an event expectation is an optional string the
	// decoder has checked; messageMatches must also compile.
	"events": func(v *validator, path string, e *v1alpha1.Expect) {
		for i, ev := range e.Events {
			v.messageMatches(join(index(path, i), "messageMatches"), ev.MessageMatches)
		}
	},
	"owners": func(v *validator, path string, e *v1alpha1.Expect) {
		for i, o := range e.Owners {
			op := index(path, i)
			v.target(join(op, "target"), o.Target)
			if _, err := fieldpath.Parse(o.Field); err != nil {
				v.errorf(join(op, "field"), "%v", err)
			}
			if o.Manager == "" {
				v.errorf(join(op, "manager"), "must not be empty")
			}
		}
	},
	"noOverlaps": func(v *validator, path string, e *v1alpha1.Expect) {
		if msgs := validation.IsDNS1123Subdomain(e.NoOverlaps); len(msgs) > 0 {
			v.errorf(path, "invalid TrainJob name %s: %s", quote(e.NoOverlaps), strings.Join(msgs, "; "))
		}
	},
	"requests": func(v *validator, path string, e *v1alpha1.Expect) {
		for i, r := range e.Requests {
			rp := index(path, i)
			switch {
			case slices.Contains(v.sc.Spec.Components, r.Component):
			case len(v.sc.Spec.Components) == 0:
				v.errorf(join(rp, "component"), "component %s is not in spec.components, which names none: add it there", quote(r.Component))
			default:
				v.errorf(join(rp, "component"), "unknown component %s: must be one of spec.components (%s)", quote(r.Component), strings.Join(v.sc.Spec.Components, ", "))
			}
			v.target(join(rp, "target"), r.Target)
			if r.Target.Namespace != "" {
				v.errorf(join(join(rp, "target"), "namespace"), "a component's requests are looked up in the scenario's namespace: leave namespace out")
			}
			if r.Target.Kind != "" && r.Target.Kind != "TrainJob" {
				v.errorf(join(join(rp, "target"), "kind"), "unsupported kind %s: the audit log records the components' requests to TrainJobs", quote(r.Target.Kind))
			}
			if r.Status < 100 || r.Status > 599 {
				v.errorf(join(rp, "status"), "must be an HTTP status code, found %d", r.Status)
			}
		}
	},
	"holding": func(v *validator, path string, e *v1alpha1.Expect) {
		for _, w := range v.sc.Spec.Webhooks {
			if w.Name == e.Holding && w.Hold != nil {
				return
			}
		}
		v.errorf(path, "no webhook of spec.webhooks named %s has a hold", quote(e.Holding))
	},
	"held": func(v *validator, path string, e *v1alpha1.Expect) {
		for i, h := range e.Held {
			hp := index(path, i)
			switch {
			case (h.Gate == "") == (h.View == ""):
				v.errorf(hp, "names a gate or a view, one of the two")
			case h.View != "" && v.viewOf(h.View) == nil:
				v.errorf(join(hp, "view"), "unknown view %s (%s)", quote(h.View), v.declaredViews())
			case h.Gate != "" && v.gate(h.Gate) == nil:
				v.errorf(join(hp, "gate"), "unknown gate %s (%s)", quote(h.Gate), v.declaredGates())
			}
			if h.Count < 0 {
				v.errorf(join(hp, "count"), "must not be negative, found %d", h.Count)
			}
		}
	},
}

// LintsExpectation reports whether the loader checks the expectation kind
// of a name: true for every kind of v1alpha1.Expectations.
func LintsExpectation(name string) bool { return expectationChecks[name] != nil }

// exact checks the exact paths of an expectation: each must parse and name
// something in one of the expected objects (what names nothing there would
// never be compared), as a path of the object the server returns, list
// items selected by key or position.
func (v *validator) exact(path string, exact []string, what string, expected ...v1alpha1.Object) {
	for i, s := range exact {
		ep := index(path, i)
		p, err := fieldpath.Parse(s)
		if err != nil {
			v.errorf(ep, "%v", err)
			continue
		}
		var problems []string
		found := false
		for _, o := range expected {
			if o == nil {
				continue
			}
			if _, err := fieldpath.Lookup(map[string]any(o), p); err != nil {
				if !slices.Contains(problems, err.Error()) {
					problems = append(problems, err.Error())
				}
				continue
			}
			found = true
			break
		}
		switch {
		case found:
		case len(problems) == 0:
			v.errorf(ep, "exact path %s needs %s to compare", strconv.Quote(s), what)
		default:
			v.errorf(ep, "exact path %s names nothing in %s: %s", strconv.Quote(s), what, strings.Join(problems, "; "))
		}
	}
}

// kindOf says what a decoded free-form value is, for messages.
func kindOf(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	case string:
		return "string " + quote(v)
	case bool:
		return "boolean " + strconv.FormatBool(v)
	default:
		return fmt.Sprintf("number %v", v)
	}
}

// oneOf formats allowed values: "a, b or c".
func oneOf(values []string) string {
	if len(values) == 1 {
		return values[0]
	}
	return strings.Join(values[:len(values)-1], ", ") + " or " + values[len(values)-1]
}
