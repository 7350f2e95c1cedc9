package runner

import (
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/trainersim/trainersim/results"
	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/fieldpath"
)

// The accepted writes to TrainJobs and to the JobSets' status, with their
// writers and the fields they changed (Runner.RecordChanges): what simctl
// explore flips the order of. The watch gives each version of an object
// with the one before it; the API server's audit log (the components') and
// the scenario's own writes (the actors') say who wrote which
// resourceVersion.

// changeKeys name, by a list's field, the key its items are told apart by
// in a change's paths, beside mergeKeys: a TrainJob's and a JobSet's
// status lists.
var changeKeys = map[string]string{
	"conditions":           "type",
	"jobsStatus":           "name",
	"replicatedJobsStatus": "name",
}

// recordedKinds are the kinds whose versions a watcher that records
// changes records, with their resource.
var recordedKinds = map[string]string{"TrainJob": "trainjobs", "JobSet": "jobsets"}

// objectVersion is one version of a TrainJob or JobSet the watch saw, with
// the leaves that changed from the version before.
type objectVersion struct {
	at     time.Time
	step   string
	kind   string
	name   string
	rv     string
	create bool
	fields []results.FieldDiff
}

// recordVersion records obj's change from old (nil: created), when the
// watcher records changes; w.mu is held.
func (w *watcher) recordVersion(kind string, old, obj *unstructured.Unstructured, at time.Time) {
	if _, ok := recordedKinds[kind]; !ok || !w.recordChanges || obj == nil {
		return
	}
	v := objectVersion{at: at, step: w.step, kind: kind, name: obj.GetName(), rv: obj.GetResourceVersion(), create: old == nil}
	if old != nil {
		v.fields = fieldDiffs(old.Object, obj.Object)
	}
	w.versions = append(w.versions, v)
}

// fieldDiffs returns the leaves that differ between two versions of an
// object, by path, its server-owned metadata left out.
func fieldDiffs(before, after map[string]any) []results.FieldDiff {
	b, a := map[string]any{}, map[string]any{}
	leaves("", "", withoutServerMetadata(before), b)
	leaves("", "", withoutServerMetadata(after), a)
	var out []results.FieldDiff
	for _, p := range slices.Sorted(maps.Keys(a)) {
		was, ok := b[p]
		switch {
		case !ok:
			out = append(out, results.FieldDiff{Path: p, To: compactJSON(a[p])})
		case compactJSON(was) != compactJSON(a[p]):
			out = append(out, results.FieldDiff{Path: p, From: compactJSON(was), To: compactJSON(a[p])})
		}
	}
	for _, p := range slices.Sorted(maps.Keys(b)) {
		if _, ok := a[p]; !ok {
			out = append(out, results.FieldDiff{Path: p, From: compactJSON(b[p])})
		}
	}
	return out
}

// withoutServerMetadata is a JSON copy of obj without the metadata the
// server owns.
func withoutServerMetadata(obj map[string]any) any {
	c, _ := normalize(obj).(map[string]any)
	deleteServerMetadata(c)
	return c
}

// leaves puts every leaf of v under path into out: a scalar, or an empty
// map or list. List items are keyed (changeKeys, mergeKeys) when each has
// the key, else by index.
func leaves(path, field string, v any, out map[string]any) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 && path != "" {
			out[path] = x
		}
		for k, item := range x {
			leaves(fieldpath.AppendField(path, k), k, item, out)
		}
	case []any:
		if len(x) == 0 {
			out[path] = x
			return
		}
		key := changeKeys[field]
		if key == "" {
			key = mergeKeys[field]
		}
		for i, item := range x {
			p := fieldpath.AppendIndex(path, i)
			if key != "" && allKeyed(x, key) {
				p = fieldpath.AppendItem(path, key, keyValue(item, key))
			}
			leaves(p, field, item, out)
		}
	default:
		out[path] = x
	}
}

// changes returns the accepted writes to the namespace's TrainJobs and
// JobSets the watch saw, each with its writer (attribute); an audit log that cannot be
// read is an error: without it no component's write has a writer.
func (s *scenarioRun) changes(setup []results.Write, steps []results.Step) ([]results.ObjectChange, error) {
	s.watch.mu.Lock()
	versions := slices.Clone(s.watch.versions)
	s.watch.mu.Unlock()
	var reqs []cluster.ComponentRequest
	var err error
	if auditing, ok := s.cluster.(cluster.RequestAuditing); ok {
		reqs, err = auditing.ComponentRequests(s.ns)
	}
	return attribute(versions, reqs, append(slices.Clone(setup), writesOf(steps)...)), err
}

// writesOf returns the writes of steps, in order.
func writesOf(steps []results.Step) []results.Write {
	var out []results.Write
	for _, st := range steps {
		out = append(out, st.Writes...)
	}
	return out
}

// attribute gives each version its writer, by the resourceVersion each
// wrote: a component's from its accepted requests (the audit log), an
// actor's from the scenario's own writes. A version no write is known to
// have made (a cluster that records no requests) is left out.
func attribute(versions []objectVersion, reqs []cluster.ComponentRequest, own []results.Write) []results.ObjectChange {
	type writer struct {
		who, verb, resource string
		actor               bool
	}
	by := map[string]writer{} // by resource, name and resourceVersion
	for _, r := range reqs {
		if r.Code >= 300 || r.ResourceVersion == "" {
			continue
		}
		res := r.Resource
		if r.Subresource != "" {
			res += "/" + r.Subresource
		}
		by[r.Resource+" "+r.Name+"@"+r.ResourceVersion] = writer{who: r.Component, verb: r.Verb, resource: res}
	}
	for _, w := range own {
		kind, where, _ := strings.Cut(w.Target, " ")
		if kind != "TrainJob" || w.Status >= 300 || w.ResourceVersionAfter == "" {
			continue
		}
		name := where[strings.LastIndexByte(where, '/')+1:]
		verb := w.Verb
		if verb == "apply" {
			verb = "patch" // as the API server records it
		}
		by["trainjobs "+name+"@"+w.ResourceVersionAfter] = writer{who: w.Actor, verb: verb, resource: "trainjobs", actor: true}
	}
	var out []results.ObjectChange
	for _, v := range versions {
		w, ok := by[recordedKinds[v.kind]+" "+v.name+"@"+v.rv]
		if !ok {
			continue
		}
		c := results.ObjectChange{At: v.at, Step: v.step, Kind: v.kind, Writer: w.who, Actor: w.actor, Verb: w.verb, Resource: w.resource, Name: v.name, ResourceVersion: v.rv, Fields: v.fields}
		if v.create {
			c.Verb = "create"
		}
		out = append(out, c)
	}
	return out
}
