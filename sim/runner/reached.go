package runner

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/trainersim/trainersim/sim/apis/v1alpha1"
)

// A reach records whether an object has matched an expectation in any of
// its states since the reach began (v1alpha1.ObjectExpectation.Reached):
// the state the API server had then, and each later state the watches
// gave the watcher. A status a controller writes on its way to the next
// one is matched when it is given, not only if a check happens to read it
// before the next.
//
// What the watcher holds when the reach begins may be older than the
// API server's state (a watch that lags under load gives a state late):
// an import's wait for "none active once more" held on the Trainer's
// report from before the Pods ran, the last state a lagging watch had
// given when the step began, though the Trainer had reported them active
// since (as the audit log's order shows), and the next
// write went before the Trainer's report of the preemption
// (kueue-readmission-new-flavor's import, shaken). So a reach begins at
// the API server's state, and counts only states given with a later
// resourceVersion.
type reach struct {
	key   string
	match func(obj map[string]any) bool
	// The fields below are guarded by the watcher's mu.
	hit bool
	// begun is set once the API server's state is known: floor is its
	// resourceVersion (0: none, or not a number), and states given with
	// one at or below it are older. Before that, states given are kept
	// in given.
	begun bool
	floor uint64
	given []map[string]any
	// err is why the API server's state could not be read: the reach
	// then counts no state, since none is known to be from after it.
	err error
}

// reach starts recording whether kind/name matches. States given from
// now are kept until begin says which of them came after the state the
// reach begins at.
func (w *watcher) reach(kind, name string, match func(map[string]any) bool) (r *reach, end func()) {
	r = &reach{key: objectKey(kind, name), match: match}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.reaches == nil {
		w.reaches = map[string][]*reach{}
	}
	w.reaches[r.key] = append(w.reaches[r.key], r)
	return r, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.reaches[r.key] = slices.DeleteFunc(w.reaches[r.key], func(o *reach) bool { return o == r })
		if len(w.reaches[r.key]) == 0 {
			delete(w.reaches, r.key)
		}
	}
}

// begin sets the state r begins at, current, as the API server returned
// it after reach (nil: the object did not exist), and counts the states
// given since that are newer; current itself too when counted. err: the
// API server could not say, and r counts no state (a state the watch
// gives may be older than the API server's, and none is known newer).
func (w *watcher) begin(r *reach, current *unstructured.Unstructured, err error, counted bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r.begun = true
	if err != nil {
		r.err, r.given = err, nil
		return
	}
	if current != nil {
		r.floor, _ = strconv.ParseUint(current.GetResourceVersion(), 10, 64)
		r.hit = r.hit || counted && r.match(current.Object)
	}
	for _, obj := range r.given {
		r.see(obj)
	}
	r.given = nil
}

// see counts obj, a state of r's object, unless it is older than the
// state r began at. The caller holds the watcher's mu.
func (r *reach) see(obj map[string]any) {
	if !r.begun {
		r.given = append(r.given, obj)
		return
	}
	if r.hit || r.err != nil {
		return
	}
	if r.floor > 0 {
		rv, err := strconv.ParseUint((&unstructured.Unstructured{Object: obj}).GetResourceVersion(), 10, 64)
		if err == nil && rv <= r.floor {
			return
		}
	}
	r.hit = r.match(obj)
}

// reachGiven records obj, the state key was just given, in the reaches of
// key. The caller holds w.mu.
func (w *watcher) reachGiven(key string, obj map[string]any) {
	for _, r := range w.reaches[key] {
		r.see(obj)
	}
}

// reached reports whether r has matched, or why it cannot say.
func (w *watcher) reached(r *reach) (bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return r.hit, r.err
}

// trackReached starts a reach for each object expectation of e with
// reached, of the scenario's namespace, which checkObject reads, at the
// state read reads from the API server (a get), unless reachFrom started
// it at its reachedSince step; the func returned ends them all. Without
// watches there is none, and a reached expectation is checked as the
// object is when it is read: it then holds only when the state is still
// there, never when it was not reached.
func (s *scenarioRun) trackReached(ctx context.Context, e *v1alpha1.Expect, read func(context.Context, v1alpha1.Target) (*unstructured.Unstructured, error)) (end func()) {
	var ends []func()
	for i := range e.Objects {
		want := &e.Objects[i]
		if !want.Reached || s.watch == nil {
			continue
		}
		s.mu.Lock()
		_, early := s.reaches[want]
		s.mu.Unlock()
		if !early {
			s.startReach(ctx, want, read, true)
		}
		ends = append(ends, func() { s.endReach(want) })
	}
	return func() {
		for _, end := range ends {
			end()
		}
	}
}

// startReach starts a reach for want at the state read reads (counted
// among its states when counted) and keeps it in s.reaches until endReach.
func (s *scenarioRun) startReach(ctx context.Context, want *v1alpha1.ObjectExpectation, read func(context.Context, v1alpha1.Target) (*unstructured.Unstructured, error), counted bool) {
	r, stop := s.watch.reach(want.Target.Kind, want.Target.Name, func(obj map[string]any) bool {
		msg, _ := objectMismatch(want, obj)
		return msg == ""
	})
	current, err := read(ctx, want.Target)
	switch {
	case apierrors.IsNotFound(err):
		s.watch.begin(r, nil, nil, counted)
	case err != nil:
		s.watch.begin(r, nil, fmt.Errorf("failed to read %s %s as the reach began: %w", want.Target.Kind, want.Target.Name, err), counted)
	default:
		s.watch.begin(r, current, nil, counted)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reaches == nil {
		s.reaches = map[*v1alpha1.ObjectExpectation]*reach{}
		s.reachEnds = map[*v1alpha1.ObjectExpectation]func(){}
	}
	s.reaches[want], s.reachEnds[want] = r, stop
}

// endReaches ends the reaches a step that does not run (another Trainer
// release's) had started early.
func (s *scenarioRun) endReaches(st *v1alpha1.Step) {
	if st.Expect == nil {
		return
	}
	for i := range st.Expect.Objects {
		s.endReach(&st.Expect.Objects[i])
	}
}

// endReach ends want's reach, if it has one.
func (s *scenarioRun) endReach(want *v1alpha1.ObjectExpectation) {
	s.mu.Lock()
	stop := s.reachEnds[want]
	delete(s.reaches, want)
	delete(s.reachEnds, want)
	s.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// reachFrom starts, as step begins, the reaches of the later steps'
// object expectations whose reachedSince it is: their states count from
// here, the state the object has now left out (it is from before the
// step's write).
func (s *scenarioRun) reachFrom(ctx context.Context, step string) {
	if s.watch == nil {
		return
	}
	for i := range s.sc.Spec.Steps {
		e := s.sc.Spec.Steps[i].Expect
		if e == nil {
			continue
		}
		for j := range e.Objects {
			if want := &e.Objects[j]; want.Reached && want.ReachedSince == step {
				s.startReach(ctx, want, s.get, false)
			}
		}
	}
}

// hasReached reports whether want, an expectation trackReached tracks,
// has matched since its step began to check it, or why that is unknown
// (the API server's state could not be read as it began).
func (s *scenarioRun) hasReached(want *v1alpha1.ObjectExpectation) (bool, error) {
	s.mu.Lock()
	r := s.reaches[want]
	s.mu.Unlock()
	if r == nil {
		return false, nil
	}
	return s.watch.reached(r)
}
