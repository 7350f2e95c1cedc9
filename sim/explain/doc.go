// Package explain shows how the Kubeflow Trainer turns a TrainJob and its
// spec.runtimePatches into the Pod templates of the JobSet it applies: the
// runtime's Pod templates, then the TrainJob's own spec, then every
// runtimePatches entry in list order, then the final templates; for every
// field of the final Pod templates the layer (the runtime, the TrainJob, or
// the manager of an entry) that set it; every place where a later layer
// overwrote, replaced, removed or merged into what an earlier one set; and the
// fields that two or more entries both set (Overlaps).
//
// # How it is computed
//
// Nothing of the merge is re-implemented here. An Engine holds the trainer's
// own runtimes (runtimecore.New, through sim/internal/trainerruntime), and
// every layer is one call of the trainer's Runtime.NewObjects, the code path
// its controller runs on every reconcile: the runtime is read (its snapshot
// ConfigMap first), the entries are strategic-merge patched in list order,
// the ML-policy, pod-group and network plugins run and the JobSet plugin
// builds the JobSet apply configuration. Layer "trainjob" is NewObjects of a
// copy of the TrainJob without entries; the layer of entry k is NewObjects
// of a copy with the first k entries; the last layer is NewObjects of the
// TrainJob itself, so the final JobSet is exactly what the trainer would
// apply. Only layer "runtime" is read directly: the JobSet template of the
// runtime snapshot ConfigMap <trainjob>-runtime-snapshot when it exists and
// belongs to the TrainJob, else of the (Cluster)TrainingRuntime, converted
// with the trainer's own apply.FromTypedObjWithFields.
//
// The client given to the trainer's runtimes wraps the caller's with
// controller-runtime's interceptor:
//
//   - every write (create, update, patch, apply, delete, on objects and
//     subresources) is dropped and reported as a success, so explaining a
//     TrainJob on a live cluster changes nothing there (NewObjects would
//     otherwise apply the runtime snapshot ConfigMap of a new TrainJob);
//   - a get of a JobSet or of a PodGroup (any API group) answers NotFound, so
//     the JobSet plugin always renders the whole JobSet, as it does for a new
//     or suspended TrainJob: for a running one the trainer builds nothing;
//   - every other read goes to the caller's client: on a live cluster
//     explain uses the runtime snapshot the trainer took for that TrainJob.
//
// Attribution and overrides come from comparing the Pod templates
// (spec.replicatedJobs[name=X].template.spec.template) of successive layers,
// field by field. Lists are compared the way the strategic merge treats them,
// read from the patchStrategy and patchMergeKey tags of the Go types the
// trainer merges with: lists merged by key (containers, initContainers,
// volumes, env, imagePullSecrets, schedulingGates by name, volumeMounts by
// mountPath, ports by containerPort) are walked item by item; every other
// list (tolerations, command, args, ...) is atomic: one field, replaced
// whole. Map keys (nodeSelector, labels, annotations, resources) are fields
// of their own.
//
// # Paths
//
// Fields are named by sim/fieldpath's printer, the one spelling reports,
// owners and exact paths use too: field names separated by dots, list items
// selected by their merge key in brackets (or by position, for an item
// without its key), for example
// spec.replicatedJobs[name=node].template.spec.template.spec.tolerations. A
// map key or field name that is not a plain name (letters, digits, "_" and
// "-", not starting with a digit or "-") is written quoted in brackets, so
// that a key with dots or slashes is unambiguous:
// ...spec.nodeSelector["cloud.google.com/gke-accelerator"]. Paths are from
// the root of the JobSet, so one works as an exact path or an owners field
// of an expectation on the JobSet; an overlap's path, put after
// spec.runtimePatches[manager=M].trainingRuntimeSpec.template., is the field
// in entry M of the TrainJob.
//
// # What it cannot do
//
//   - It explains what the trainer would build now, from the TrainJob given:
//     not the history of a live JobSet, which the trainer stops updating once
//     it runs, and which the JobSet webhook may have refused to change.
//   - It attributes the Pod templates only: JobSet- and Job-level metadata
//     and the rest of the JobSet spec are in the final JobSet, unattributed.
//   - A layer's changes include what the trainer's plugins did because of
//     that layer (they run again in every layer), attributed to the layer.
//   - A value an entry sets to what it already was is attributed to the
//     earlier layer; Overlaps, computed from the entries' own content, still
//     names both.
//   - It does not run the trainer's validating webhook: a TrainJob the
//     webhook would refuse is explained all the same.
//   - Without a cluster (NewForObjects) the runtimes come from memory through
//     controller-runtime's fake client, so nothing of the cluster (a runtime
//     snapshot, an MPI SSH Secret) is seen.
package explain
