package runner

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/trainersim/trainersim/results"
	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/scenario"
	"github.com/trainersim/trainersim/sim/view"
)

// The scenario's views (spec.views): what the components' watches deliver,
// kept back by this process (sim/view), and the lists a (re)starting
// component is served stale.

// ViewsFor returns the components whose watches a cluster simctl starts
// for the scenarios of files must make viewable
// (envtest.Environment.Views): those a scenario declares a view of, on the
// Trainer release the cluster runs. A run without views leaves the
// components' transports untouched and starts no proxy.
func ViewsFor(files []*scenario.File, trainer string) []string {
	var out []string
	for _, f := range files {
		if !TrainerHolds(f.Scenario.Spec.Trainer, trainer) {
			continue
		}
		for _, v := range f.Scenario.Spec.Views {
			out = UnionViews(out, []string{v.Component})
		}
	}
	return out
}

// UnionViews returns the components of a and b, each once, in order.
func UnionViews(a, b []string) []string {
	out := slices.Clone(a)
	for _, c := range b {
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// viewsSkipped is the reason a scenario's views cannot run on a cluster,
// or "".
func viewsSkipped(sc *v1alpha1.Scenario, c cluster.Cluster) string {
	if len(sc.Spec.Views) == 0 {
		return ""
	}
	serving, ok := c.(cluster.ViewServing)
	if !ok {
		return "declares views, which need a cluster simctl starts (envtest): it stands between each component and the API server"
	}
	reg, components := serving.ViewRegistry()
	for _, v := range sc.Spec.Views {
		if reg == nil || !slices.Contains(components, v.Component) {
			return fmt.Sprintf("declares a view of %s, whose watches this cluster does not let simctl see (envtest, started for a run that declares views, with %s among its components)", v.Component, v.Component)
		}
	}
	return ""
}

// viewName is the cluster-wide name of a scenario's view.
func (s *scenarioRun) viewName(name string) string { return name + "-" + s.nsSuffix() }

// startViews registers the views whose from is the step of a name, and
// those without one when step is "" (before the first step).
func (s *scenarioRun) startViews(ctx context.Context, step string) error {
	for _, v := range s.sc.Spec.Views {
		if v.From != step {
			continue
		}
		if s.viewRegistry == nil {
			reg, _ := s.cluster.(cluster.ViewServing).ViewRegistry()
			s.viewRegistry = reg
		}
		if v.Partition != "" {
			// Every resource of the component: the run has it to itself
			// (componentNeeds).
			if err := s.viewRegistry.Register(view.View{Name: s.viewName(v.Name), Component: v.Component, Partition: v.Partition, OnEvent: s.watch.notify}); err != nil {
				return err
			}
			s.viewsStarted = append(s.viewsStarted, v.Name)
			continue
		}
		group, _ := view.WatchedResource(v.Component, v.Resource)
		w := view.View{
			Name: s.viewName(v.Name), Component: v.Component, Group: group, Resource: v.Resource,
			Namespace: s.ns, ObjectName: v.ObjectName, Coalesce: v.Coalesce, OnEvent: s.watch.notify,
		}
		gvk, namespaced, err := s.viewedKind(v)
		if err != nil {
			return err
		}
		if !namespaced {
			w.Namespace = "" // a cluster-scoped resource: its objects have none
		}
		if v.Delay != nil {
			w.Delay = v.Delay.Duration
		}
		if v.StaleList {
			// The cluster's resourceVersion now: a list of the resource
			// reads it whatever the namespace.
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
			if err := s.cluster.Client().List(ctx, list, client.Limit(1)); err != nil {
				return fmt.Errorf("view %s: failed to read the resourceVersion its stale list is served as of: %w", v.Name, err)
			}
			w.StaleAt = list.GetResourceVersion()
		}
		if err := s.viewRegistry.Register(w); err != nil {
			return err
		}
		s.viewsStarted = append(s.viewsStarted, v.Name)
	}
	return nil
}

// viewedKind returns the kind of a view's resource and whether its
// objects are namespaced.
func (s *scenarioRun) viewedKind(v v1alpha1.View) (gvk schema.GroupVersionKind, namespaced bool, err error) {
	group, _ := view.WatchedResource(v.Component, v.Resource)
	mapper := s.cluster.Client().RESTMapper()
	gvk, err = mapper.KindFor(schema.GroupVersionResource{Group: group, Resource: v.Resource})
	if err != nil {
		return gvk, false, fmt.Errorf("view %s: the API server serves no resource %s: %w", v.Name, v.Resource, err)
	}
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return gvk, false, fmt.Errorf("view %s: %w", v.Name, err)
	}
	return gvk, mapping.Scope.Name() != meta.RESTScopeNameRoot, nil
}

// viewCatchUp bounds the wait, at a view's release, until the view's
// watches have read the changes the objects it keeps events of back have
// now (view.Registry.CaughtUp): a component's watch gets each change a
// moment after the API server made it, and rarely more than a second
// after the harness's own watch did.
const viewCatchUp = 10 * time.Second

// viewedVersions returns the resourceVersion of each object a view matches
// as the API server has it now (namespace/name: resourceVersion).
func (s *scenarioRun) viewedVersions(ctx context.Context, v v1alpha1.View) (map[string]string, error) {
	gvk, namespaced, err := s.viewedKind(v)
	if err != nil {
		return nil, err
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	var opts []client.ListOption
	if namespaced {
		opts = append(opts, client.InNamespace(s.ns))
	}
	if v.ObjectName != "" {
		opts = append(opts, client.MatchingFields{"metadata.name": v.ObjectName})
	}
	if err := s.cluster.Client().List(ctx, list, opts...); err != nil {
		return nil, fmt.Errorf("view %s: failed to read the %s it matches: %w", v.Name, v.Resource, err)
	}
	current := map[string]string{}
	for _, o := range list.Items {
		current[o.GetNamespace()+"/"+o.GetName()] = o.GetResourceVersion()
	}
	return current, nil
}

// releaseView runs a step's release of a view: it fails when the view
// keeps nothing back. A view of a resource is released once its watches
// have read the changes its objects have now, so that what the scenario
// saw before the release (a change the step before waited for) is what
// the component gets at it.
func (s *scenarioRun) releaseView(ctx context.Context, step string, r *v1alpha1.Release) string {
	if !slices.Contains(s.viewsStarted, r.View) {
		return fmt.Sprintf("view %s has not started", r.View)
	}
	name := s.viewName(r.View)
	if v := s.specView(r.View); v.Partition == "" {
		current, err := s.viewedVersions(ctx, v)
		if err != nil {
			return err.Error()
		}
		wait, cancel := context.WithTimeoutCause(ctx, viewCatchUp, fmt.Errorf("not within %s", viewCatchUp))
		err = s.viewRegistry.CaughtUp(wait, name, current)
		cancel()
		if err != nil {
			return fmt.Sprintf("view %s was not released: its watches had not read the changes its objects have now: %v", r.View, err)
		}
	}
	if n := s.viewRegistry.Release(name, fmt.Sprintf("step %q released it", step)); n == 0 && s.specView(r.View).Partition != view.PartitionRefuse {
		return fmt.Sprintf("view %s keeps no event back to release: %s (expect it held in a step before)", r.View, s.viewSoFar(name))
	}
	return ""
}

// viewSoFar says what a view has kept back.
func (s *scenarioRun) viewSoFar(name string) string {
	events := s.viewRegistry.Events(name)
	if len(events) == 0 {
		return "it has kept none back so far"
	}
	return fmt.Sprintf("it has kept %d back so far, none now", len(events))
}

// openViews releases the views whose until is the step of a name, and
// every view when step is "" (the scenario ended).
func (s *scenarioRun) openViews(step string) {
	for _, v := range s.sc.Spec.Views {
		if !slices.Contains(s.viewsStarted, v.Name) {
			continue
		}
		switch {
		case step == "":
			s.viewRegistry.Release(s.viewName(v.Name), "the scenario ended")
		case v.Until == step:
			s.viewRegistry.Release(s.viewName(v.Name), fmt.Sprintf("step %q ran (its until)", step))
		}
	}
}

// viewsHolding says which views keep events back now, and which: "" when
// none does.
func (s *scenarioRun) viewsHolding() string {
	var out []string
	for _, v := range s.viewsStarted {
		held := s.viewRegistry.Holding(s.viewName(v))
		if len(held) == 0 {
			continue
		}
		var what []string
		for _, e := range held {
			what = append(what, e.Type+" "+e.Object)
		}
		out = append(out, fmt.Sprintf("view %s keeps %d event(s) back from %s: %s", v, len(held), s.specView(v).Component, strings.Join(what, ", ")))
	}
	if len(out) == 0 {
		return ""
	}
	return "meanwhile " + strings.Join(out, "; ")
}

// specView is the scenario's view of a name (the zero View when none).
func (s *scenarioRun) specView(name string) v1alpha1.View {
	for _, v := range s.sc.Spec.Views {
		if v.Name == name {
			return v
		}
	}
	return v1alpha1.View{}
}

// checkViewHeld checks how many events a view keeps back now.
func (s *scenarioRun) checkViewHeld(w v1alpha1.HeldExpectation) string {
	if !slices.Contains(s.viewsStarted, w.View) {
		return fmt.Sprintf("view %s has not started", w.View)
	}
	name := s.viewName(w.View)
	held := s.viewRegistry.Holding(name)
	n := len(held)
	switch {
	case w.Count == 0 && n == 0:
		return fmt.Sprintf("view %s keeps no event back; %s", w.View, s.viewSoFar(name))
	case w.Count > 0 && n != w.Count:
		var what []string
		for _, e := range held {
			what = append(what, e.Type+" "+e.Object)
		}
		return fmt.Sprintf("view %s keeps %d events back (%s), want %d", w.View, n, strings.Join(what, ", "), w.Count)
	}
	return ""
}

// forgetViews unregisters the scenario's views, once their entries are
// read.
func (s *scenarioRun) forgetViews() {
	for _, v := range s.viewsStarted {
		s.viewRegistry.Unregister(s.viewName(v), "the scenario ended")
	}
}

// viewEntries are the timeline entries of the events the views kept back,
// each in the lane of the view's component.
func (s *scenarioRun) viewEntries() []results.TimelineEntry {
	var out []results.TimelineEntry
	for _, v := range s.sc.Spec.Views {
		if !slices.Contains(s.viewsStarted, v.Name) {
			continue
		}
		for _, e := range s.viewRegistry.Events(s.viewName(v.Name)) {
			fate := "still kept back"
			switch {
			case e.Fate == view.Coalesced:
				fate = e.Fate
			case !e.Delivered.IsZero():
				fate = fmt.Sprintf("delivered after %s: %s", e.Delivered.Sub(e.At).Round(time.Millisecond), e.Fate)
			case e.Fate != "":
				fate = e.Fate
			}
			entry := results.TimelineEntry{
				At:      e.At,
				Lane:    v.Component,
				Kind:    results.EntryEventKeptBack,
				Object:  e.Object,
				Summary: fmt.Sprintf("view %s kept back %s's watch event %s of %s (resourceVersion %s); %s", v.Name, v.Component, e.Type, e.Object, e.ResourceVersion, fate),
			}
			switch e.Type {
			case view.EventRequestRefused:
				entry.Object, entry.Summary = "", fmt.Sprintf("view %s cut %s off: its request %s was refused", v.Name, v.Component, e.Object)
			case view.EventRequestUnanswered:
				entry.Object, entry.Summary = "", fmt.Sprintf("view %s cut %s off: its request %s was left unanswered; %s", v.Name, v.Component, e.Object, fate)
			}
			out = append(out, entry)
		}
		for _, l := range s.viewRegistry.StaleLists(s.viewName(v.Name)) {
			out = append(out, results.TimelineEntry{
				At:      l.At,
				Lane:    v.Component,
				Kind:    results.EntryListServedStale,
				Summary: fmt.Sprintf("view %s served %s's list of %s as of resourceVersion %s, the cluster's at step %s: %s", v.Name, v.Component, v.Resource, l.ResourceVersion, quoteStep(v.From), l.Status),
			})
		}
	}
	return out
}

// quoteStep names a view's from step: "" is the scenario's first.
func quoteStep(name string) string {
	if name == "" {
		return "1"
	}
	return fmt.Sprintf("%q", name)
}
