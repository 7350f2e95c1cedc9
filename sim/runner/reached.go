package runner

import (
	"slices"

	"github.com/trainersim/trainersim/sim/apis/v1alpha1"
)

// A reach records whether an object has matched an expectation in any of
// the states the watches gave the watcher since the reach was made
// (v1alpha1.ObjectExpectation.Reached): a status a controller writes on
// its way to the next one is matched when it is given, not only if a check
// happens to read it before the next.
type reach struct {
	key   string
	match func(obj map[string]any) bool
	hit   bool // guarded by the watcher's mu
}

// reach starts recording whether kind/name matches: in the state the
// watcher was last given, and in each change it is given until end.
func (w *watcher) reach(kind, name string, match func(map[string]any) bool) (r *reach, end func()) {
	r = &reach{key: objectKey(kind, name), match: match}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.reaches == nil {
		w.reaches = map[string][]*reach{}
	}
	w.reaches[r.key] = append(w.reaches[r.key], r)
	if obj := w.delivered[r.key]; obj != nil {
		r.hit = match(obj.Object)
	}
	return r, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.reaches[r.key] = slices.DeleteFunc(w.reaches[r.key], func(o *reach) bool { return o == r })
		if len(w.reaches[r.key]) == 0 {
			delete(w.reaches, r.key)
		}
	}
}

// reachGiven records obj, the state key was just given, in the reaches of
// key. The caller holds w.mu.
func (w *watcher) reachGiven(key string, obj map[string]any) {
	for _, r := range w.reaches[key] {
		if !r.hit && r.match(obj) {
			r.hit = true
		}
	}
}

// reached reports whether r has matched.
func (w *watcher) reached(r *reach) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return r.hit
}

// trackReached starts a reach for each object expectation of e with
// reached, of the scenario's namespace, which checkObject reads; the func
// returned ends them. Without watches there is none, and a reached
// expectation is checked as the object is when it is read: it then holds
// only when the state is still there, never when it was not reached.
func (s *scenarioRun) trackReached(e *v1alpha1.Expect) (end func()) {
	var ends []func()
	for i := range e.Objects {
		want := &e.Objects[i]
		if !want.Reached || s.watch == nil {
			continue
		}
		r, stop := s.watch.reach(want.Target.Kind, want.Target.Name, func(obj map[string]any) bool {
			msg, _ := objectMismatch(want, obj)
			return msg == ""
		})
		s.mu.Lock()
		if s.reaches == nil {
			s.reaches = map[*v1alpha1.ObjectExpectation]*reach{}
		}
		s.reaches[want] = r
		s.mu.Unlock()
		ends = append(ends, func() {
			stop()
			s.mu.Lock()
			delete(s.reaches, want)
			s.mu.Unlock()
		})
	}
	return func() {
		for _, end := range ends {
			end()
		}
	}
}

// hasReached reports whether want, an expectation trackReached tracks,
// has matched since its step began to check it.
func (s *scenarioRun) hasReached(want *v1alpha1.ObjectExpectation) bool {
	s.mu.Lock()
	r := s.reaches[want]
	s.mu.Unlock()
	return r != nil && s.watch.reached(r)
}
