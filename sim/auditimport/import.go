package auditimport

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/identity"
)

// Options choose what Import turns into a scenario.
type Options struct {
	// TrainJobs are the TrainJobs to import, as namespace/name. Empty:
	// every TrainJob the log has writes to, which must be in one namespace.
	TrainJobs []string
	// Namespace, instead of TrainJobs, imports every TrainJob the log
	// writes in that namespace.
	Namespace string
	// Concurrently sends writes that raced (each received before the one
	// before it was answered) together, in a concurrently group, instead
	// of one after the other in the order the server answered them.
	Concurrently bool
	// Name is the scenario's name. Empty: imported-<the first TrainJob>.
	Name string
	// FromCluster reads, from the cluster the log came from, what the
	// TrainJobs need that the log does not hold: a TrainingRuntime
	// created before it began, the nodes their Pods were bound to. Nil:
	// placeholders, which lint names (simctl import --from-cluster).
	FromCluster client.Reader
}

// Result is an imported scenario.
type Result struct {
	Scenario v1alpha1.Scenario
	// Notes say what the log did not hold and what was made of it, one a
	// line: the scenario cannot say more than the log.
	Notes []string
	// Namespace is where the TrainJobs were, TrainJobs their names.
	Namespace string
	TrainJobs []string
	// Events is how many answered events were read; Writes how many
	// writes became steps; Components how many of the components' writes
	// to the TrainJobs were left out.
	Events, Writes, Components int
}

// write is a write to one of the chosen TrainJobs, or to an object of
// their namespace they may depend on (dependencies).
type write struct {
	ev         *event
	namespace  string
	name       string
	apiVersion string
	kind       string
	component  bool
	// status is a write of the status subresource: never a step (the
	// Trainer writes a TrainJob's, the quota controller a ResourceQuota's),
	// but what a later request's resourceVersion may have been read from,
	// or a status to wait for.
	status bool
	// rv is the resourceVersion the server answered with, "" for a
	// refusal or a response not recorded.
	rv string
	// step is the name of the write's step, once it has one.
	step string
	// readBefore is, for a write refused 409 whose resourceVersion a
	// component's write answered with, the manager's write that made it
	// stale: the read the refused write is sent from goes just before it.
	readBefore *write
	// read is the name of that read's step, once it has one.
	read string
}

// Import reads the audit logs at paths (files, or directories of rotated
// files, read in name order) and returns the scenario of the chosen
// TrainJobs' writes. Bad input is an *InputError.
func Import(paths []string, opts Options) (*Result, error) {
	want := map[string]bool{}
	for _, tj := range opts.TrainJobs {
		ns, name, ok := strings.Cut(tj, "/")
		if !ok || ns == "" || name == "" {
			return nil, inputErrorf("TrainJob %q: give it as NAMESPACE/NAME", tj)
		}
		want[tj] = false
	}
	files, err := logFiles(paths)
	if err != nil {
		return nil, err
	}
	if opts.Namespace != "" && len(want) > 0 {
		return nil, inputErrorf("choose TrainJobs or a namespace, not both")
	}
	namespace := opts.Namespace
	if namespace == "" {
		if namespace, err = chosenNamespace(files, want); err != nil {
			return nil, err
		}
	}
	r := newReader(namespace, want)
	if err := readFiles(files, []*reader{r}); err != nil {
		return nil, err
	}
	return r.result(files, opts)
}

// reader gathers, from a log's events, what the import of one namespace
// needs.
type reader struct {
	namespace string
	// want are the chosen TrainJobs, as namespace/name, each true once
	// the log writes it; empty: every TrainJob of the namespace.
	want     map[string]bool
	res      *Result
	writes   []*write
	nodes    []*corev1.Node          // made for the namespace
	logged   map[string]*corev1.Node // every node the log creates, by name
	bound    map[string]string       // the namespace's Pods' nodes, by Pod
	pods     []podEvent
	jobSets  []jobSetStatus
	made     []created
	queueing kueueObjects
	// ended is set at the namespace's delete: what is written after it
	// is the teardown's (a kept cluster's run deletes its namespace),
	// not the story's.
	ended   bool
	endNote string
}

func newReader(namespace string, want map[string]bool) *reader {
	return &reader{namespace: namespace, want: want, res: &Result{}, logged: map[string]*corev1.Node{}, bound: map[string]string{}, queueing: kueueObjects{}}
}

// readFiles streams the events of files, in order, to every reader: one
// read of the log for any number of namespaces.
func readFiles(files []string, readers []*reader) error {
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			return inputErrorf("%v", err)
		}
		err = readEvents(f, path, func(ev *event) error {
			for _, r := range readers {
				r.observe(ev)
			}
			return nil
		})
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// observe keeps what ev holds of the reader's namespace.
func (r *reader) observe(ev *event) {
	r.res.Events++
	if r.ended {
		return
	}
	namespace := r.namespace
	if ref := ev.ObjectRef; ref != nil && ref.Namespace != "" && ref.Namespace != namespace {
		return // another namespace's
	}
	if namespaceDelete(ev, namespace) {
		r.ended = true
		r.endNote = fmt.Sprintf("%s: the namespace's delete: what the log has after it (the teardown) is left out", ev.where())
		return
	}
	r.queueing.observe(ev, namespace)
	if pod, node, ok := podBinding(ev, namespace); ok {
		r.bound[pod] = node // and a kubelet's status write is a Pod write too
	}
	if p, ok := podWrite(ev, namespace); ok {
		r.pods = append(r.pods, p)
		return
	}
	if s, ok := jobSetStatusWrite(ev, namespace); ok {
		r.jobSets = append(r.jobSets, s)
		return
	}
	if c, ok := createdObject(ev, namespace); ok {
		r.made = append(r.made, c)
		return
	}
	if n, ok := ev.nodeCreate(); ok {
		r.logged[n.Name] = n
		if n.Labels[cluster.IsolationKey] == namespace { // the namespace's own: kept, not the log's every node
			r.nodes = append(r.nodes, n)
		}
		return
	}
	w, ok := objectWrite(ev)
	if !ok || w.namespace != namespace {
		return
	}
	if key := w.namespace + "/" + w.name; w.kind == trainJobKind && len(r.want) > 0 {
		if _, chosen := r.want[key]; !chosen {
			return
		}
		r.want[key] = true
	}
	r.writes = append(r.writes, w)
}

// result builds the scenario of what the reader kept, from files.
func (r *reader) result(files []string, opts Options) (*Result, error) {
	res, writes, namespace := r.res, r.writes, r.namespace
	for _, tj := range slices.Sorted(maps.Keys(r.want)) {
		if !r.want[tj] {
			found, _ := trainJobsOf(files) // read once already, without an error
			return nil, inputErrorf("TrainJob %s: the log has no write to it (its TrainJobs: %s)", tj, strings.Join(found, ", "))
		}
	}
	b := &builder{res: res, namespace: namespace, actors: map[actorKey]string{}, byRV: map[string]*write{}, concurrently: opts.Concurrently, pods: r.pods, jobSets: r.jobSets, created: r.made}
	if err := b.build(writes); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := b.runtimesMissing(ctx, writes, opts.FromCluster); err != nil {
		return nil, err
	}
	if res.Scenario.Spec.Nodes = b.nodeGroups(r.nodes); len(res.Scenario.Spec.Nodes) == 0 {
		groups, err := b.nodesOfPods(ctx, r.bound, r.logged, opts.FromCluster)
		if err != nil {
			return nil, err
		}
		if res.Scenario.Spec.Nodes = groups; groups == nil {
			b.note("nodes: the log holds none made for the namespace (simctl's recorded runs log their nodes' creates), and none that the TrainJobs' Pods ran on")
		}
	}
	if r.endNote != "" {
		b.note(r.endNote)
	}
	b.kueue(r.queueing, writes)
	res.Scenario.Spec.Lifecycle = b.lifecycles()
	b.webhooks(writes)
	res.Namespace, res.TrainJobs = namespace, b.trainJobs
	name := opts.Name
	if name == "" {
		name = dnsName("imported-" + b.trainJobs[0])
	}
	res.Scenario.APIVersion = v1alpha1.GroupVersion
	res.Scenario.Kind = v1alpha1.Kind
	res.Scenario.Metadata.Name = name
	res.Scenario.Metadata.Labels = map[string]string{"area": "imported"}
	res.Scenario.Spec.Description = fmt.Sprintf("Imported from the audit log %s: the writes of %d managers to TrainJob(s) %s of namespace %s, in the order the API server completed them; the components' writes (%d) are left out, for replay's own controllers to do again.",
		strings.Join(files, ", "), len(res.Scenario.Spec.Actors), strings.Join(b.trainJobs, ", "), namespace, res.Components)
	return res, nil
}

// YAML is the scenario as a file: the notes as comments first.
func (r *Result) YAML() ([]byte, error) {
	body, err := yaml.Marshal(r.Scenario)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString("# Imported by simctl import.\n")
	for _, n := range r.Notes {
		b.WriteString("# note: " + strings.ReplaceAll(n, "\n", " ") + "\n")
	}
	b.Write(body)
	return b.Bytes(), nil
}

// logFiles expands directories into their files, in name order (rotated
// logs, audit-<time>.log, sort before audit.log).
func logFiles(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, inputErrorf("%v", err)
		}
		if !info.IsDir() {
			out = append(out, p)
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, inputErrorf("%v", err)
		}
		for _, e := range entries {
			if !e.IsDir() {
				out = append(out, filepath.Join(p, e.Name()))
			}
		}
	}
	if len(out) == 0 {
		return nil, inputErrorf("no audit log file in %s", strings.Join(paths, ", "))
	}
	return out, nil
}

// chosenNamespace is the namespace of the chosen TrainJobs, or, when none
// is chosen, of every TrainJob the log writes: one namespace either way.
func chosenNamespace(files []string, want map[string]bool) (string, error) {
	namespaces := map[string]bool{}
	for tj := range want {
		ns, _, _ := strings.Cut(tj, "/")
		namespaces[ns] = true
	}
	all := want
	if len(want) == 0 {
		all = map[string]bool{}
		found, err := trainJobsOf(files)
		if err != nil {
			return "", err
		}
		for _, tj := range found {
			if tj == "none" {
				return "", inputErrorf("the log has no write to a TrainJob: nothing to import")
			}
			ns, _, _ := strings.Cut(tj, "/")
			namespaces[ns] = true
			all[tj] = true
		}
	}
	if len(namespaces) > 1 {
		return "", inputErrorf("the TrainJobs %s are in %d namespaces: choose one namespace's with --trainjob NAMESPACE/NAME", strings.Join(slices.Sorted(maps.Keys(all)), ", "), len(namespaces))
	}
	for ns := range namespaces {
		return ns, nil
	}
	return "", inputErrorf("no TrainJob chosen")
}

// trainJobsOf lists the TrainJobs files write to, "none" when there is
// none; bad input is an error, as Import's.
func trainJobsOf(files []string) ([]string, error) {
	seen := map[string]bool{}
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			return nil, inputErrorf("%v", err)
		}
		err = readEvents(f, path, func(ev *event) error {
			if w, ok := objectWrite(ev); ok && w.kind == trainJobKind {
				seen[w.namespace+"/"+w.name] = true
			}
			return nil
		})
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	if len(seen) == 0 {
		return []string{"none"}, nil
	}
	return slices.Sorted(maps.Keys(seen)), nil
}

const trainJobKind = "TrainJob"

// dependencies are the resources of a TrainJob's namespace whose writes are
// imported with it (RecordPolicy records them), by resource: their
// apiVersion and kind.
var dependencies = map[string][2]string{
	"serviceaccounts":        {"v1", "ServiceAccount"},
	"persistentvolumeclaims": {"v1", "PersistentVolumeClaim"},
	"configmaps":             {"v1", "ConfigMap"},
	"resourcequotas":         {"v1", "ResourceQuota"},
	"limitranges":            {"v1", "LimitRange"},
	"trainingruntimes":       {"trainer.kubeflow.org/v1alpha1", "TrainingRuntime"},
}

// statusWriters are the kinds whose status writes are read (never steps:
// replay's component writes them again), by who writes them.
var statusWriters = map[string]string{
	trainJobKind:    "the Trainer",
	"ResourceQuota": "the quota controller",
}

// objectWrite returns ev as a write to a TrainJob (its main resource or
// status) or to a dependency: a create, update, patch or delete, not a
// dry run.
func objectWrite(ev *event) (*write, bool) {
	ref := ev.ObjectRef
	if ref == nil || ref.Namespace == "" {
		return nil, false
	}
	switch ev.Verb {
	case "create", "update", "patch", "delete":
	default:
		return nil, false
	}
	if ev.query("dryRun") != "" { // changes nothing (a probe's, a client's check)
		return nil, false
	}
	w := &write{ev: ev, namespace: ref.Namespace, name: ref.Name}
	switch {
	case ref.Resource == "trainjobs" && ref.APIGroup == "trainer.kubeflow.org" && (ref.Subresource == "" || ref.Subresource == "status"):
		w.apiVersion, w.kind, w.status = "trainer.kubeflow.org/v1alpha1", trainJobKind, ref.Subresource == "status"
	default:
		dep, ok := dependencies[ref.Resource]
		group, _, _ := strings.Cut(dep[0], "/")
		if dep[0] == "v1" {
			group = ""
		}
		if !ok || ref.APIGroup != group || ref.Subresource != "" && (ref.Subresource != "status" || statusWriters[dep[1]] == "") {
			return nil, false
		}
		w.apiVersion, w.kind, w.status = dep[0], dep[1], ref.Subresource == "status"
	}
	user, _ := ev.user()
	w.component = isComponent(user)
	if w.name == "" { // a create: the name is in the body
		w.name = metadataString(ev.ResponseObject, "name")
		if w.name == "" {
			w.name = metadataString(ev.RequestObject, "name")
		}
	}
	if ev.ResponseStatus != nil && ev.ResponseStatus.Code < 300 {
		w.rv = metadataString(ev.ResponseObject, "resourceVersion")
	}
	return w, w.name != ""
}

// isComponent reports whether user is a component a cluster runs (the
// Trainer, JobSet, Kueue, kube-controller-manager's controllers, the
// scheduler, a kubelet, the API server itself): replay runs them itself.
func isComponent(user string) bool {
	switch {
	case identity.Who(user) != "",
		strings.HasPrefix(user, "system:node:"),
		strings.HasPrefix(user, "system:serviceaccount:kube-system:"),
		user == "system:kube-scheduler", user == "system:kube-controller-manager", user == "system:apiserver":
		return true
	}
	return false
}

// namespaceDelete reports whether ev is an accepted delete of namespace.
func namespaceDelete(ev *event, namespace string) bool {
	ref := ev.ObjectRef
	return ref != nil && ref.Resource == "namespaces" && ref.Name == namespace && ref.Subresource == "" && ev.Verb == "delete" &&
		ev.ResponseStatus != nil && ev.ResponseStatus.Code < 300 && ev.query("dryRun") == ""
}

// metadataString is metadata.<field> of a JSON object, "" without it.
func metadataString(raw json.RawMessage, field string) string {
	var obj struct {
		Metadata map[string]any `json:"metadata"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &obj) != nil {
		return ""
	}
	s, _ := obj.Metadata[field].(string)
	return s
}

var notDNS = regexp.MustCompile(`[^a-z0-9-]+`)

// dnsName makes s a lowercase name of letters, digits and dashes, at most
// 63 characters.
func dnsName(s string) string {
	s = strings.Trim(notDNS.ReplaceAllString(strings.ToLower(s), "-"), "-")
	if len(s) > 63 {
		s = strings.TrimRight(s[:63], "-")
	}
	if s == "" {
		s = "imported"
	}
	return s
}

// mergeDiff is the JSON merge patch that makes base into target.
func mergeDiff(base, target map[string]any) (v1alpha1.Object, error) {
	a, err := json.Marshal(base)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(target)
	if err != nil {
		return nil, err
	}
	patch, err := jsonpatch.CreateMergePatch(a, b)
	if err != nil {
		return nil, err
	}
	out := v1alpha1.Object{}
	if err := json.Unmarshal(patch, &out); err != nil {
		return nil, err
	}
	return out, nil
}
