package explain

// Layer kinds.
const (
	// KindRuntime is layer 0: the runtime's own JobSet template.
	KindRuntime = "runtime"
	// KindTrainJob is layer 1: the TrainJob's spec without runtimePatches,
	// through the trainer's plugins.
	KindTrainJob = "trainjob"
	// KindEntry is a layer of one runtimePatches entry.
	KindEntry = "entry"
)

// Override kinds.
const (
	// Overwritten: a scalar field (or a map key) that an earlier layer set
	// got another value.
	Overwritten = "overwritten"
	// Replaced: an atomic list (tolerations, command, args, ...) that an
	// earlier layer set was replaced whole.
	Replaced = "replaced"
	// Removed: a field an earlier layer set is gone (for example a volume
	// source replaced by another under the volumes' retainKeys strategy).
	Removed = "removed"
	// Merged: a list merged by key (containers, volumes, env, ...) that
	// already had items got items added or changed, and kept the others.
	Merged = "merged"
)

// Result is the explanation of one TrainJob.
type Result struct {
	// TrainJob is the namespace and name of the TrainJob.
	TrainJob ObjectRef `json:"trainJob"`
	// Runtime says which runtime the trainer used and where it read it.
	Runtime RuntimeSource `json:"runtime"`
	// Layers are the layers in the order the trainer merges them: the
	// runtime, the TrainJob, then one per runtimePatches entry in list
	// order. The last layer's Pod templates are the final ones.
	Layers []Layer `json:"layers"`
	// JobSet is the final JobSet apply configuration the trainer builds for
	// the TrainJob, as JSON.
	JobSet map[string]any `json:"jobSet"`
	// Fields are the fields of the final Pod templates with the layer that
	// set each, sorted by path.
	Fields []Field `json:"fields"`
	// Overrides are the places where a layer overwrote, replaced, removed or
	// merged into what an earlier layer had set, in layer order.
	Overrides []Override `json:"overrides,omitempty"`
	// Overlaps are the fields that two or more runtimePatches entries set.
	Overlaps []Overlap `json:"overlaps,omitempty"`
}

// ObjectRef names a namespaced object.
type ObjectRef struct {
	// Namespace of the object.
	Namespace string `json:"namespace"`
	// Name of the object.
	Name string `json:"name"`
}

// RuntimeSource is where the runtime's JobSet template was read.
type RuntimeSource struct {
	// Kind is TrainingRuntime or ClusterTrainingRuntime.
	Kind string `json:"kind"`
	// Name of the runtime.
	Name string `json:"name"`
	// Snapshot is the name of the runtime snapshot ConfigMap the template
	// was read from; empty when it was read from the runtime itself (the
	// TrainJob has no snapshot yet).
	Snapshot string `json:"snapshot,omitempty"`
}

// Layer is one step of the merge.
type Layer struct {
	// Index is the layer's position: 0 the runtime, 1 the TrainJob, 2 and
	// on the entries.
	Index int `json:"index"`
	// Kind is KindRuntime, KindTrainJob or KindEntry.
	Kind string `json:"kind"`
	// Name is what the fields the layer sets are attributed to: "runtime",
	// "trainjob", or the manager of the entry.
	Name string `json:"name"`
	// Input is what the layer adds, as written: the runtime's JobSet
	// template for the runtime, the TrainJob's spec without runtimePatches
	// for the TrainJob, the entry's trainingRuntimeSpec for an entry (absent
	// for an entry without one).
	Input any `json:"input,omitempty"`
	// PodTemplates are the Pod templates once this layer is merged, in the
	// runtime's order of replicated jobs.
	PodTemplates []PodTemplate `json:"podTemplates"`
	// Set lists the paths of the fields this layer added or changed.
	Set []string `json:"set,omitempty"`
}

// PodTemplate is the Pod template of one replicated job.
type PodTemplate struct {
	// ReplicatedJob is the replicated job's name.
	ReplicatedJob string `json:"replicatedJob"`
	// Template is spec.replicatedJobs[name=ReplicatedJob].template.spec.template.
	Template map[string]any `json:"template"`
}

// Field is one field of the final Pod templates.
type Field struct {
	// Path names the field; see the package documentation.
	Path string `json:"path"`
	// Value is the field's final value; a whole list for an atomic list.
	Value any `json:"value"`
	// SetBy is the name of the layer that last set it.
	SetBy string `json:"setBy"`
	// Layer is the index of that layer.
	Layer int `json:"layer"`
	// Overrode is the value that layer replaced, when it replaced one.
	Overrode *Previous `json:"overrode,omitempty"`
}

// Previous is a value an earlier layer had set.
type Previous struct {
	// Value is the earlier value.
	Value any `json:"value"`
	// SetBy is the name of the layer that had set it.
	SetBy string `json:"setBy"`
	// Layer is the index of that layer.
	Layer int `json:"layer"`
}

// Override is one place where a layer changed what an earlier one set.
type Override struct {
	// Layer is the index of the layer that did it.
	Layer int `json:"layer"`
	// By is the name of that layer.
	By string `json:"by"`
	// Kind is Overwritten, Replaced, Removed or Merged.
	Kind string `json:"kind"`
	// Path names the field, or the list for Merged.
	Path string `json:"path"`
	// Old is the value before, with the layer that had set it (not for
	// Merged).
	Old *Previous `json:"old,omitempty"`
	// New is the value after (Overwritten and Replaced).
	New any `json:"new,omitempty"`
	// MergeKey is the field the list's items are merged by (Merged).
	MergeKey string `json:"mergeKey,omitempty"`
	// Added are the keys of the items the layer added (Merged).
	Added []string `json:"added,omitempty"`
	// Updated are the keys of earlier items the layer changed (Merged).
	Updated []string `json:"updated,omitempty"`
	// Kept are the keys of earlier items the layer left as they were
	// (Merged).
	Kept []string `json:"kept,omitempty"`
}

// Overlap is a field that several runtimePatches entries set.
type Overlap struct {
	// Path names the field, from the root of the JobSet template:
	// metadata... or spec.replicatedJobs[name=X]...
	Path string `json:"path"`
	// Managers are the managers of the entries that set it, in list order.
	Managers []string `json:"managers"`
	// Values are the values each of them sets, in the same order.
	Values []any `json:"values"`
}
