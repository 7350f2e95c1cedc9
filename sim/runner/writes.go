package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	jsonpatch "github.com/evanphx/json-patch/v5"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/trainersim/trainersim/results"
	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/manifests"
	"github.com/trainersim/trainersim/sim/probe"
)

// AdminFieldManager is the field manager of steps without an actor.
const AdminFieldManager = "simctl"

// actor is who sends a write.
type actor struct {
	name         string
	fieldManager string
	client       dynamic.Interface
}

// actor returns the client of a named actor ("" is the admin), made once
// per scenario.
func (s *scenarioRun) actor(name string) (*actor, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a, ok := s.actors[name]; ok {
		return a, nil
	}
	a, err := s.newActor(name)
	if err != nil {
		return nil, err
	}
	if s.actors == nil {
		s.actors = map[string]*actor{}
	}
	s.actors[name] = a
	return a, nil
}

func (s *scenarioRun) newActor(name string) (*actor, error) {
	cfg := s.cluster.Config()
	a := &actor{name: "admin", fieldManager: AdminFieldManager}
	if name != "" {
		var found *v1alpha1.Actor
		for i := range s.sc.Spec.Actors {
			if s.sc.Spec.Actors[i].Name == name {
				found = &s.sc.Spec.Actors[i]
			}
		}
		if found == nil {
			return nil, fmt.Errorf("unknown actor %q", name)
		}
		a.name, a.fieldManager = found.Name, found.FieldManager
		if found.User != "" {
			cfg.Impersonate = rest.ImpersonationConfig{UserName: found.User, Groups: found.Groups}
		}
	}
	c, err := dynamic.NewForConfig(recordingAnswers(cfg))
	if err != nil {
		return nil, fmt.Errorf("failed to create client for actor %s: %w", a.name, err)
	}
	a.client = c
	return a, nil
}

// resource resolves apiVersion and kind to a namespaced or cluster resource.
func (s *scenarioRun) resource(c dynamic.Interface, apiVersion, kind, namespace string) (dynamic.ResourceInterface, bool, error) {
	if apiVersion == "" {
		apiVersion = v1alpha1.DefaultAPIVersions[kind]
	}
	if apiVersion == "" {
		return nil, false, fmt.Errorf("kind %s needs an apiVersion", kind)
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, false, fmt.Errorf("invalid apiVersion %q: %w", apiVersion, err)
	}
	mapping, err := s.cluster.Client().RESTMapper().RESTMapping(gv.WithKind(kind).GroupKind(), gv.Version)
	if err != nil {
		return nil, false, fmt.Errorf("failed to find resource of %s %s: %w", apiVersion, kind, err)
	}
	if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		return c.Resource(mapping.Resource), false, nil
	}
	if namespace == "" {
		namespace = s.ns
	}
	return c.Resource(mapping.Resource).Namespace(namespace), true, nil
}

// get reads a target as the admin.
func (s *scenarioRun) get(ctx context.Context, t v1alpha1.Target) (*unstructured.Unstructured, error) {
	admin, err := s.actor("")
	if err != nil {
		return nil, err
	}
	ri, _, err := s.resource(admin.client, t.APIVersion, t.Kind, t.Namespace)
	if err != nil {
		return nil, err
	}
	return ri.Get(ctx, t.Name, metav1.GetOptions{})
}

// createSetup creates the scenario's setup objects as the admin and
// records each create in s.setup, like a step's write.
func (s *scenarioRun) createSetup(ctx context.Context) error {
	admin, err := s.actor("")
	if err != nil {
		return err
	}
	var runtimes []*unstructured.Unstructured
	for i, so := range s.sc.Spec.Setup {
		objs := []map[string]any{so.Object}
		if so.Path != "" {
			if objs, err = readFixture(s.fixturesDir, so.Path); err != nil {
				return err
			}
		}
		for _, o := range objs {
			p := &prepared{verb: createVerb, write: results.Write{Actor: admin.name, FieldManager: admin.fieldManager}}
			u, ri, err := s.objectWrite(admin, p, deepCopy(o))
			if err != nil {
				return fmt.Errorf("setup[%d]: %w", i, err)
			}
			p.do = func(ctx context.Context) (*unstructured.Unstructured, error) {
				return ri.Create(ctx, u, metav1.CreateOptions{FieldManager: admin.fieldManager})
			}
			err = s.send(ctx, p, "")
			p.write.Expected = err == nil
			s.setup = append(s.setup, p.write)
			if err != nil {
				return fmt.Errorf("setup[%d]: failed to create %s %s: %w", i, u.GetKind(), u.GetName(), err)
			}
			if k := u.GetKind(); (k == "TrainingRuntime" || k == "ClusterTrainingRuntime") && u.GroupVersionKind().Group == "trainer.kubeflow.org" {
				runtimes = append(runtimes, u)
			}
		}
	}
	return probe.WaitRuntimesSeen(ctx, s.cluster.Client(), s.ns, runtimes)
}

// readFixture reads the objects of a setup path, in dir: where the loader
// found it (scenario.File.FixturesDir).
func readFixture(dir, path string) ([]map[string]any, error) {
	data, err := os.ReadFile(filepath.Join(dir, path))
	if err != nil {
		return nil, fmt.Errorf("failed to read fixture %s: %w", path, err)
	}
	decoded, err := manifests.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("failed to decode fixture %s: %w", path, err)
	}
	objs := make([]map[string]any, len(decoded))
	for i, u := range decoded {
		objs[i] = u.Object
	}
	return objs, nil
}

func deepCopy(o map[string]any) map[string]any {
	c, _ := normalize(o).(map[string]any)
	if c == nil {
		c = map[string]any{}
	}
	return c
}

// createVerb is the verb of the setup's creates.
var createVerb, _ = v1alpha1.LookupVerb(v1alpha1.VerbCreate)

// prepared is a write ready to send, as the runner keeps it: its verb, its
// target and what it sends, typed; do sends it. send fills in write, the
// result the reports show, from them and from the server's answers.
type prepared struct {
	verb   v1alpha1.Verb
	target writeTarget
	// sent is what the write sends: the object, the configuration, the
	// patch, the kubelet's or the node's action; nil for nothing.
	sent  any
	write results.Write
	do    func(ctx context.Context) (*unstructured.Unstructured, error)
}

// writeTarget is what a write is to: one object, the objects a selector
// matches, or a gate (kind "gate").
type writeTarget struct {
	kind, namespace, name string
	// selector, when set, is the label selector of the objects written,
	// instead of name.
	selector string
	// subresource is the subresource written (status), if any.
	subresource string
}

// String is the target as reports print it: "Kind namespace/name",
// "Kind namespace/[selector] status", "Node name", "gate name".
func (t writeTarget) String() string {
	where := t.name
	if t.selector != "" {
		where = "[" + t.selector + "]"
	}
	if t.namespace != "" {
		where = t.namespace + "/" + where
	}
	out := t.kind + " " + where
	if t.subresource != "" {
		out += " " + t.subresource
	}
	return out
}

// setTarget records the target of a write to one object.
func (p *prepared) setTarget(kind, ns, name, scenarioNS string) {
	if ns == "" {
		ns = scenarioNS
	}
	p.target = writeTarget{kind: kind, namespace: ns, name: name}
}

// record fills in the result's verb, target and body (as YAML) from the
// prepared write.
func (p *prepared) record() {
	if p.verb.Name != "" {
		p.write.Verb = p.verb.Name
	}
	p.write.Target = p.target.String()
	if p.sent == nil {
		return
	}
	if b, err := yaml.Marshal(p.sent); err == nil {
		p.write.Body = string(b)
	}
}

// writer builds the request of one verb: it records target and body in
// p.write and sets p.do.
type writer func(s *scenarioRun, a *actor, st *v1alpha1.Step, p *prepared) error

// writers are the runner's side of every verb of v1alpha1.Verbs but the
// group, concurrently, which step runs itself.
var writers = map[string]writer{
	v1alpha1.VerbCreate: func(s *scenarioRun, a *actor, st *v1alpha1.Step, p *prepared) error {
		u, ri, err := s.objectWrite(a, p, deepCopy(st.Create))
		if err != nil {
			return err
		}
		p.do = func(ctx context.Context) (*unstructured.Unstructured, error) {
			return ri.Create(ctx, u, metav1.CreateOptions{FieldManager: a.fieldManager, FieldValidation: st.FieldValidation})
		}
		return nil
	},
	v1alpha1.VerbApply: func(s *scenarioRun, a *actor, st *v1alpha1.Step, p *prepared) error {
		p.write.PatchType = "apply"
		u, ri, err := s.objectWrite(a, p, deepCopy(st.Apply))
		if err != nil {
			return err
		}
		// A patch of the apply type rather than client-go's Apply, whose
		// ApplyOptions cannot carry fieldValidation.
		body, err := json.Marshal(u.Object)
		if err != nil {
			return fmt.Errorf("failed to encode apply body: %w", err)
		}
		p.do = func(ctx context.Context) (*unstructured.Unstructured, error) {
			return ri.Patch(ctx, u.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: a.fieldManager, Force: &st.Force, FieldValidation: st.FieldValidation})
		}
		return nil
	},
	v1alpha1.VerbPatch: func(s *scenarioRun, a *actor, st *v1alpha1.Step, p *prepared) error {
		t := st.Patch.Target
		ri, _, err := s.resource(a.client, t.APIVersion, t.Kind, t.Namespace)
		if err != nil {
			return err
		}
		p.setTarget(t.Kind, t.Namespace, t.Name, s.ns)
		patchBody, err := s.patchBody(st.Patch)
		if err != nil {
			return err
		}
		body, err := json.Marshal(patchBody)
		if err != nil {
			return fmt.Errorf("failed to encode patch body: %w", err)
		}
		p.sent = patchBody
		pt := types.MergePatchType
		if st.Patch.Type == v1alpha1.PatchJSON {
			pt = types.JSONPatchType
		}
		p.write.PatchType = st.Patch.Type
		if m, ok := patchBody.(map[string]any); ok {
			if md, ok := m["metadata"].(map[string]any); ok {
				p.write.ResourceVersionBefore, _ = md["resourceVersion"].(string)
			}
		}
		if rv, ok := s.fromResourceVersion(st.Patch.ResourceVersionFrom); ok {
			p.write.ResourceVersionBefore = rv
		}
		patch := func(ctx context.Context, name string) (*unstructured.Unstructured, error) {
			return ri.Patch(ctx, name, pt, body, metav1.PatchOptions{FieldManager: a.fieldManager, FieldValidation: st.FieldValidation})
		}
		p.do = func(ctx context.Context) (*unstructured.Unstructured, error) { return patch(ctx, t.Name) }
		if t.Selector != nil {
			p.target = selectorTarget(&t, s.ns)
			p.do = func(ctx context.Context) (*unstructured.Unstructured, error) { return forEach(ctx, ri, &t, patch) }
		}
		return nil
	},
	v1alpha1.VerbUpdate: func(s *scenarioRun, a *actor, st *v1alpha1.Step, p *prepared) error {
		obj, err := s.updateBody(st.Update)
		if err != nil {
			return err
		}
		u, ri, err := s.objectWrite(a, p, obj)
		if err != nil {
			return err
		}
		p.do = func(ctx context.Context) (*unstructured.Unstructured, error) {
			return ri.Update(ctx, u, metav1.UpdateOptions{FieldManager: a.fieldManager, FieldValidation: st.FieldValidation})
		}
		return nil
	},
	v1alpha1.VerbDelete: func(s *scenarioRun, a *actor, st *v1alpha1.Step, p *prepared) error {
		t := st.Delete
		ri, _, err := s.resource(a.client, t.APIVersion, t.Kind, t.Namespace)
		if err != nil {
			return err
		}
		p.setTarget(t.Kind, t.Namespace, t.Name, s.ns)
		del := func(ctx context.Context, name string) (*unstructured.Unstructured, error) {
			return nil, ri.Delete(ctx, name, metav1.DeleteOptions{})
		}
		p.do = func(ctx context.Context) (*unstructured.Unstructured, error) { return del(ctx, t.Name) }
		if t.Selector != nil {
			p.target = selectorTarget(t, s.ns)
			p.do = func(ctx context.Context) (*unstructured.Unstructured, error) { return forEach(ctx, ri, t, del) }
		}
		return nil
	},
	v1alpha1.VerbKubelet:   kubeletWrite,
	v1alpha1.VerbNode:      nodeWrite,
	v1alpha1.VerbComponent: componentWrite,
	v1alpha1.VerbGet: func(s *scenarioRun, a *actor, st *v1alpha1.Step, p *prepared) error {
		t := st.Get
		ri, _, err := s.resource(a.client, t.APIVersion, t.Kind, t.Namespace)
		if err != nil {
			return err
		}
		p.setTarget(t.Kind, t.Namespace, t.Name, s.ns)
		p.do = func(ctx context.Context) (*unstructured.Unstructured, error) {
			return ri.Get(ctx, t.Name, metav1.GetOptions{})
		}
		return nil
	},
}

// HandlesVerb reports whether the runner can run a step of the verb of a
// name: true for every verb of v1alpha1.Verbs.
func HandlesVerb(name string) bool {
	v, ok := v1alpha1.LookupVerb(name)
	return ok && (v.Group || writers[name] != nil)
}

// prepare builds the request of a write step without sending it.
func (s *scenarioRun) prepare(st *v1alpha1.Step) (*prepared, error) {
	verb, ok := v1alpha1.VerbOf(st)
	w := writers[verb.Name]
	if !ok || w == nil {
		return nil, errors.New("step has no write")
	}
	a, err := s.actor(st.Actor)
	if err != nil {
		return nil, err
	}
	p := &prepared{verb: verb, write: results.Write{Actor: a.name, FieldManager: a.fieldManager}}
	if err := w(s, a, st, p); err != nil {
		return nil, err
	}
	return p, nil
}

// objectWrite prepares a write that sends a whole object (create, apply,
// update): it resolves the resource, puts a namespaced object without a
// namespace into the scenario's, and records target, body and the
// resourceVersion sent.
func (s *scenarioRun) objectWrite(a *actor, p *prepared, obj map[string]any) (*unstructured.Unstructured, dynamic.ResourceInterface, error) {
	u := &unstructured.Unstructured{Object: obj}
	ri, namespaced, err := s.resource(a.client, u.GetAPIVersion(), u.GetKind(), u.GetNamespace())
	if err != nil {
		return nil, nil, err
	}
	if namespaced && u.GetNamespace() == "" {
		u.SetNamespace(s.ns)
	}
	p.target = writeTarget{kind: u.GetKind(), namespace: u.GetNamespace(), name: u.GetName()}
	p.sent = u.Object
	p.write.ResourceVersionBefore = u.GetResourceVersion()
	return u, ri, nil
}

// selectorTarget is the target of a write to every object a selector
// matches.
func selectorTarget(t *v1alpha1.Target, ns string) writeTarget {
	if t.Namespace != "" {
		ns = t.Namespace
	}
	return writeTarget{kind: t.Kind, namespace: ns, selector: labels.SelectorFromSet(t.Selector.MatchLabels).String()}
}

// forEach sends one request per object the target's selector matches, in
// name order. The first refusal ends it and is returned, naming the object;
// nothing is retried. No match at all is an error too.
func forEach(ctx context.Context, ri dynamic.ResourceInterface, t *v1alpha1.Target, send func(context.Context, string) (*unstructured.Unstructured, error)) (*unstructured.Unstructured, error) {
	sel := labels.SelectorFromSet(t.Selector.MatchLabels).String()
	list, err := ri.List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, err
	}
	if len(list.Items) == 0 {
		return nil, fmt.Errorf("no %s matches the selector %s", t.Kind, sel)
	}
	names := make([]string, 0, len(list.Items))
	for _, o := range list.Items {
		names = append(names, o.GetName())
	}
	sort.Strings(names)
	var last *unstructured.Unstructured
	for _, name := range names {
		if last, err = send(ctx, name); err != nil {
			return nil, fmt.Errorf("%s %s: %w", t.Kind, name, err)
		}
	}
	return last, nil
}

// updateBody is update.object, or the object of update.from with update.set
// merged in, resourceVersion kept.
// fromResourceVersion is the resourceVersion of the object an earlier step
// returned; false for "" or a step that returned none.
func (s *scenarioRun) fromResourceVersion(step string) (string, bool) {
	if step == "" {
		return "", false
	}
	s.mu.Lock()
	obj, ok := s.objects[step]
	s.mu.Unlock()
	if !ok {
		return "", false
	}
	rv, _, _ := unstructured.NestedString(obj, "metadata", "resourceVersion")
	return rv, rv != ""
}

// patchBody is the body a patch step sends: its body, carrying the
// resourceVersion of resourceVersionFrom's object when it names one.
func (s *scenarioRun) patchBody(p *v1alpha1.Patch) (any, error) {
	if p.ResourceVersionFrom == "" {
		return p.Body, nil
	}
	rv, ok := s.fromResourceVersion(p.ResourceVersionFrom)
	if !ok {
		return nil, fmt.Errorf("patch.resourceVersionFrom: step %q returned no object with a resourceVersion", p.ResourceVersionFrom)
	}
	switch body := p.Body.(type) {
	case map[string]any:
		out := deepCopy(body)
		md, _ := out["metadata"].(map[string]any)
		if md == nil {
			md = map[string]any{}
		}
		md["resourceVersion"] = rv
		out["metadata"] = md
		return out, nil
	case []any:
		return append(slices.Clone(body), map[string]any{"op": "replace", "path": "/metadata/resourceVersion", "value": rv}), nil
	}
	return nil, fmt.Errorf("patch.resourceVersionFrom: a %T body cannot carry a resourceVersion", p.Body)
}

func (s *scenarioRun) updateBody(u *v1alpha1.Update) (map[string]any, error) {
	if u.From == "" {
		return deepCopy(u.Object), nil
	}
	s.mu.Lock()
	base, ok := s.objects[u.From]
	s.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("update.from: step %q returned no object", u.From)
	}
	if len(u.Set) == 0 {
		return deepCopy(base), nil
	}
	orig, err := json.Marshal(base)
	if err != nil {
		return nil, err
	}
	set, err := json.Marshal(u.Set)
	if err != nil {
		return nil, err
	}
	merged, err := jsonpatch.MergePatch(orig, set)
	if err != nil {
		return nil, fmt.Errorf("failed to merge update.set: %w", err)
	}
	out := map[string]any{}
	if err := json.Unmarshal(merged, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// send sends a prepared write once and records the outcome, the server's
// warnings included.
func (s *scenarioRun) send(ctx context.Context, p *prepared, stepName string) error {
	ctx, answers := withAnswers(ctx)
	p.write.Started = s.clock.Now()
	obj, err := p.do(ctx)
	p.write.Duration = s.clock.Since(p.write.Started)
	p.record()
	p.write.Warnings = answers.warnings()
	if p.target.kind == "TrainJob" && p.verb.Write {
		s.mu.Lock()
		s.trainJobWritten = true
		s.mu.Unlock()
	}
	if err == nil {
		// The status of the server's last answer: 201 for a create (and an
		// apply that created), 200 for the rest; a write that sent no
		// request (a gate's release) has none.
		p.write.Status = answers.lastStatus()
		if obj != nil {
			p.write.ResourceVersionAfter = obj.GetResourceVersion()
			s.wrote(obj.GetKind(), p.write.ResourceVersionAfter)
			s.recordOwn(p)
			p.write.Mutations = mutations(p, obj.Object)
			if stepName != "" { // "": a setup object, which no step names
				s.mu.Lock()
				s.objects[stepName] = obj.Object
				s.mu.Unlock()
			}
		}
		return nil
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		p.write.Status = int(status.Status().Code)
		p.write.Reason = string(status.Status().Reason)
		p.write.Message = status.Status().Message
		if apierrors.IsConflict(err) && p.write.ResourceVersionBefore != "" {
			p.write.ChangedBy = s.conflictChanges(p)
		}
	} else {
		p.write.Message = err.Error()
	}
	return err
}

// checkOutcome compares a sent write with the step's expectError and marks
// it Expected; the error says what differed.
func checkOutcome(w *results.Write, writeErr error, want *v1alpha1.ExpectError) error {
	if want == nil {
		if writeErr != nil {
			return fmt.Errorf("%s was refused: HTTP %d %s: %s%s", w.Action(), w.Status, w.Reason, w.Message, lostTo(w))
		}
		w.Expected = true
		return nil
	}
	if writeErr == nil {
		return fmt.Errorf("%s succeeded (HTTP %d), but an error was expected: %s", w.Action(), w.Status, describe(want))
	}
	var problems []string
	if want.Status != 0 && want.Status != w.Status {
		problems = append(problems, fmt.Sprintf("status %d, want %d", w.Status, want.Status))
	}
	if want.Reason != "" && want.Reason != w.Reason {
		problems = append(problems, fmt.Sprintf("reason %s, want %s", w.Reason, want.Reason))
	}
	if want.MessageContains != "" && !strings.Contains(w.Message, want.MessageContains) {
		problems = append(problems, fmt.Sprintf("message does not contain %q", want.MessageContains))
	}
	if want.MessageMatches != "" {
		re, err := regexp.Compile(want.MessageMatches)
		if err != nil {
			problems = append(problems, fmt.Sprintf("invalid messageMatches: %v", err))
		} else if !re.MatchString(w.Message) {
			problems = append(problems, fmt.Sprintf("message does not match %q", want.MessageMatches))
		}
	}
	if want.ConflictManager != "" && !strings.Contains(w.Message, fmt.Sprintf("conflict with %q", want.ConflictManager)) {
		problems = append(problems, fmt.Sprintf("message does not name a conflict with %q", want.ConflictManager))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s was refused, but not as expected: %s; got HTTP %d %s: %s%s", w.Action(), strings.Join(problems, "; "), w.Status, w.Reason, w.Message, lostTo(w))
	}
	w.Expected = true
	return nil
}

// releaseTogether runs each function in its own goroutine, starts none of
// them until every goroutine is running, and returns their errors by index.
func releaseTogether(fns []func() error) []error {
	errs := make([]error, len(fns))
	var ready, done sync.WaitGroup
	release := make(chan struct{})
	for i, fn := range fns {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-release
			errs[i] = fn()
		}()
	}
	ready.Wait()
	close(release)
	done.Wait()
	return errs
}

// releaseInOrder runs each function in its own goroutine, like
// releaseTogether, but lets them through one at a time: fns[order[k]] starts
// when fns[order[k-1]] has returned. It forces an interleaving without
// sleeping.
func releaseInOrder(fns []func() error, order []int) []error {
	turns := make([]chan struct{}, len(order)+1)
	for i := range turns {
		turns[i] = make(chan struct{})
	}
	pos := make([]int, len(fns))
	for k, i := range order {
		pos[i] = k
	}
	gated := make([]func() error, len(fns))
	for i, fn := range fns {
		gated[i] = func() error {
			<-turns[pos[i]]
			defer close(turns[pos[i]+1])
			return fn()
		}
	}
	close(turns[0])
	return releaseTogether(gated)
}

// concurrently prepares every write of the group, starts one goroutine per
// write and releases them together, or in the order of il when the group
// explores interleavings, and records each outcome. It returns the
// interleaving cases that match il, whose outcomes it has checked too.
func (s *scenarioRun) concurrently(ctx context.Context, c *v1alpha1.Concurrently, il *Interleaving) ([]results.Write, []string, []*v1alpha1.InterleavingCase) {
	preps := make([]*prepared, len(c.Writes))
	var problems []string
	for i := range c.Writes {
		if c.Writes[i].Release != nil {
			preps[i] = s.prepareRelease(&c.Writes[i])
			continue
		}
		p, err := s.prepare(&c.Writes[i])
		if err != nil {
			return nil, []string{fmt.Sprintf("write %q: %v", c.Writes[i].Name, err)}, nil
		}
		preps[i] = p
	}
	sends := make([]func() error, len(preps))
	for i, p := range preps {
		sends[i] = func() error { return s.send(ctx, p, c.Writes[i].Name) }
	}
	var errs []error
	if il != nil {
		errs = releaseInOrder(sends, il.Order)
	} else {
		errs = releaseTogether(sends)
	}

	// The outcomes to check: the group's, and those of the cases that match
	// the order.
	type counted struct {
		name string
		o    *v1alpha1.Outcomes
	}
	var outcomes []counted
	if c.Outcomes != nil {
		outcomes = append(outcomes, counted{"outcomes", c.Outcomes})
	}
	var cases []*v1alpha1.InterleavingCase
	if il != nil && c.Interleavings != nil {
		for i := range c.Interleavings.Cases {
			cs := &c.Interleavings.Cases[i]
			if !il.matches(cs) {
				continue
			}
			cases = append(cases, cs)
			if cs.Outcomes != nil {
				outcomes = append(outcomes, counted{fmt.Sprintf("case %q: outcomes", cs.Name), cs.Outcomes})
			}
		}
	}
	// With outcomes anywhere, a write without its own expectError may end
	// either way: the counts say what must happen.
	eitherWay := c.Outcomes != nil
	if c.Interleavings != nil {
		for _, cs := range c.Interleavings.Cases {
			eitherWay = eitherWay || cs.Outcomes != nil
		}
	}

	writes := make([]results.Write, len(preps))
	var succeeded, conflicts, rejected int
	for i, p := range preps {
		switch {
		case errs[i] == nil:
			succeeded++
		case apierrors.IsConflict(errs[i]):
			conflicts++
		default:
			rejected++
		}
		// Who wins a race is not known in advance, so an unasserted write
		// is expected either way; every outcome is still recorded.
		if eitherWay && c.Writes[i].ExpectError == nil {
			p.write.Expected = true
		} else if err := checkOutcome(&p.write, errs[i], c.Writes[i].ExpectError); err != nil {
			problems = append(problems, fmt.Sprintf("write %q: %v", c.Writes[i].Name, err))
		}
		writes[i] = p.write
	}
	for _, oc := range outcomes {
		check := func(name string, want *int, got int) {
			if want != nil && *want != got {
				problems = append(problems, fmt.Sprintf("%s: %d %s, want %d (succeeded %d, conflicts %d, rejected %d)", oc.name, got, name, *want, succeeded, conflicts, rejected))
			}
		}
		check("succeeded", oc.o.Succeeded, succeeded)
		check("conflicts", oc.o.Conflicts, conflicts)
		check("rejected", oc.o.Rejected, rejected)
	}
	return writes, problems, cases
}
