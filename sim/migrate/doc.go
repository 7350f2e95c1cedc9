// Package migrate rewrites a TrainJob of Kubeflow Trainer v2.1.0, which
// customizes its Pods with spec.podTemplateOverrides (and its JobSet with
// spec.labels and spec.annotations), into one of Trainer v2.2.0 and later,
// which do both with spec.runtimePatches: one entry, of one manager, holding
// a strategic merge patch of the runtime's JobSet template. It works on the
// YAML alone; nothing runs and no cluster is needed.
//
// # What the translation reproduces
//
// Trainer v2.1.0 applies the overrides in list order, each as a strategic
// merge patch of the Pod template of every replicated job it targets
// (mergePodTemplateOverrides, pkg/runtime/core/trainingruntime.go:190-238),
// with the merge keys of corev1.PodTemplateSpec: maps (nodeSelector, labels,
// annotations) and structs (affinity) merge field by field; containers,
// initContainers, volumes, env, imagePullSecrets and schedulingGates merge
// item by item by name, volumeMounts by mountPath; tolerations are replaced
// whole. Only an override's metadata.labels and metadata.annotations are
// used. Trainer v2.3.0 applies every runtimePatches entry, in list order, as
// a strategic merge patch of the JobSet spec (mergeRuntimePatches,
// pkg/runtime/core/trainingruntime.go:251-290), so below a replicated job's
// Pod template it merges with the same keys.
//
// Migrate therefore folds the overrides of each job, in list order, into one
// Pod template patch with the same strategic merge (each override first
// decoded into v2.1.0's types and encoded again, as the trainer does, so a
// field that is empty in Go is gone), and writes one replicatedJobs item per
// job. spec.labels and spec.annotations, which v2.1.0 merges over the
// runtime's JobSet labels and annotations (trainingruntime.go:126-141), go to
// the entry's trainingRuntimeSpec.template.metadata, which v2.3.0 merges the
// same way (its trainingruntime.go:144-160).
//
// # What it cannot reproduce: warnings
//
// Where the result on v2.3.0 can differ from v2.1.0's, Migrate returns a
// Warning and still writes the translation:
//
//   - Order: two or more overrides of one job set the same merged list
//     (env of one container, volumes, containers, ...) with different
//     items or a different order. The strategic merge orders a merged list
//     by where the items were in the patch and in the object patched, and
//     applying the overrides one after the other is not the same as applying
//     their fold once whenever the runtime already has one of the items. The
//     values are the same; the order of the items can differ (it matters for
//     env variables that refer to earlier ones and for init containers).
//   - Dropped: a field v2.1.0 never applied (not in its API, so pruned by its
//     CRD; an override's metadata other than labels and annotations; an
//     override without target jobs) is left out, because v2.3.0 would apply
//     some of them (securityContext, finalizers).
//   - UnknownJob: a target job the TrainJob's runtime does not have, when
//     the runtime is known (in the same input, or a default
//     ClusterTrainingRuntime of v2.1.0, embedded in
//     fixtures/releases/v2.1.0/runtimes). v2.1.0 merges an override into the runtime's
//     jobs only (trainingruntime.go:192-197), so its webhook, which reads
//     the job names after the merge (trainingruntime.go:263,
//     clustertrainingruntime.go:102), rejects the TrainJob
//     (pkg/runtime/framework/plugins/jobset/jobset.go:94-104, 126-130);
//     v2.3.0's strategic merge adds a replicated job of that name to the
//     JobSet before its webhook reads the names (its trainingruntime.go:315,
//     clustertrainingruntime.go:117, jobset.go:99-111, 181-186), so it
//     admits the TrainJob.
//
// A container name the runtime does not have is not a difference: both
// versions merge the patches (containers by name) before their webhook
// reads the container names, so neither rejects it and both add a container
// without an image.
package migrate
