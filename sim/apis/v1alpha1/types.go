package v1alpha1

import (
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// Scenario is one reproducible story of managers writing to the cluster.
type Scenario struct {
	// APIVersion must be sim.trainersim.dev/v1alpha1.
	// +enum=sim.trainersim.dev/v1alpha1
	APIVersion string `json:"apiVersion"`
	// Kind must be Scenario.
	// +enum=Scenario
	Kind string `json:"kind"`
	// Metadata names the scenario and labels it for --label selection.
	Metadata Metadata `json:"metadata"`
	// Spec is what the scenario sets up, does and expects.
	Spec ScenarioSpec `json:"spec"`
}

// Metadata identifies a scenario.
type Metadata struct {
	// Name identifies the scenario in reports and in --run; unique in a run.
	// +pattern=^[a-z0-9]([-a-z0-9]*[a-z0-9])?$
	// +maxLength=63
	Name string `json:"name"`
	// Labels select scenarios with --label key=value.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations carry free-form notes, for example the upstream source.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ScenarioSpec is the body of a scenario.
type ScenarioSpec struct {
	// Description says what a reader should learn from the scenario.
	// +optional
	Description string `json:"description,omitempty"`
	// Strict, when true, fails the scenario after any step that leaves a
	// TrainJob of the scenario's namespace with two runtimePatches entries
	// that set the same field (an overlap, as simctl explain lists them: a
	// toleration list, a nodeSelector or label key, a container's env
	// variable...): the validation that upstream discussed and deferred.
	// The failure names the TrainJob, the field and both managers.
	// +optional
	Strict bool `json:"strict,omitempty"`
	// Clusters restricts the scenario to some cluster providers, for a
	// scenario that cannot hold on the others (a fidelity gap of one of
	// them, or a check that needs the Trainer in simctl's process); on any
	// other cluster it is skipped, with the reason, and reported as skipped.
	// Absent: it holds on every cluster.
	// +optional
	Clusters *Clusters `json:"clusters,omitempty"`
	// Trainer restricts the scenario to some Trainer releases, for the
	// fields it writes (runtimePatches came with v2.2.0 and replaced
	// podTemplateOverrides) or for behaviour that changed between them. On
	// any other release it is skipped, with the range, and reported as
	// skipped. Absent: the range its TrainJob fields imply
	// (runtimePatches: >=v2.2.0; podTemplateOverrides: <v2.2.0), which
	// lint says in a note; every supported release when it writes none.
	// +optional
	Trainer *Trainer `json:"trainer,omitempty"`
	// Components the scenario needs besides the Trainer and JobSet: kueue
	// (the real Kueue manager; a run starts it when a scenario asks for
	// it). On a cluster without them it is skipped, with the reason.
	// +optional
	// +items:enumFrom=components
	// +items:title=component
	Components []string `json:"components,omitempty"`
	// Queues declares Kueue's queueing objects of the scenario, built from
	// its node profiles: a ResourceFlavor per flavor, a ClusterQueue with
	// their quotas that admits the scenario's namespace only, and a
	// LocalQueue in it. Needs components: [kueue].
	// +optional
	Queues *Queues `json:"queues,omitempty"`
	// Webhooks are mutating admission webhooks the harness serves for the
	// scenario, each a manager that writes its own runtimePatches entry
	// into the scenario's TrainJobs it is called for. Their calls are on
	// the timeline, each in the webhook's lane.
	// +optional
	Webhooks []AdmissionWebhook `json:"webhooks,omitempty"`
	// Gates hold chosen requests of the real components (or of a user or
	// an actor) inside the API server until a step releases them: the way
	// a scenario states the order of controllers whose race decides its
	// outcome. Served by simctl where the cluster's API server reaches it
	// (on kind and existing clusters, found at preflight).
	// +optional
	Gates []Gate `json:"gates,omitempty"`
	// Views keep back what a component sees: the events of its watches of
	// one resource of the scenario's namespace (or of one object), held
	// until a step releases them, coalesced to each object's last state, or
	// delayed. Where gates order the components' writes, views order what
	// they read: a controller that acts on a state it never observed, or
	// on one it observes late (a stale list, at a restart). Served by
	// simctl between each component and the API server, on envtest
	// (spec.clusters.only: [envtest]).
	// +optional
	Views []View `json:"views,omitempty"`
	// Nodes are the simulated nodes this scenario gets for itself. Pods of
	// the scenario are scheduled only onto them.
	// +optional
	Nodes []NodeGroup `json:"nodes,omitempty"`
	// Lifecycle makes the scenario's Pods end on their own, as their
	// containers would: each rule selects Pods by their labels when they are
	// created and gives them the lifecycle.trainersim.dev annotations that
	// the simulated kubelet (fakegpu's KWOK stages pod-succeed, pod-fail,
	// pod-restart) acts on. Without a rule a Pod runs until it is deleted.
	// Where rules overlap, the later one's annotations win.
	// +optional
	Lifecycle []PodLifecycle `json:"lifecycle,omitempty"`
	// CrashLoopBackOff shortens the simulated kubelet's crash-loop back-off
	// for the scenario's Pods. A container restarted in place (restartPolicy
	// OnFailure or Always) that fails again waits in CrashLoopBackOff before
	// its next restart: as kubelet 1.36, 10s after its second failure,
	// doubling each time, at most 5m; the first failure restarts at once.
	// +optional
	CrashLoopBackOff *CrashLoopBackOff `json:"crashLoopBackOff,omitempty"`
	// Setup objects are created, as the harness admin, before the first
	// step: runtimes, ServiceAccounts, PersistentVolumeClaims, ...
	// Namespaced objects without a namespace go into the scenario's own,
	// created once it has its default ServiceAccount and kube-root-ca.crt
	// (what Kubernetes' e2e framework waits for).
	// +optional
	Setup []SetupObject `json:"setup,omitempty"`
	// Actors are the named managers that write in steps.
	// +optional
	Actors []Actor `json:"actors,omitempty"`
	// Steps run in order; the first failing step ends the scenario.
	// +minItems=1
	Steps []Step `json:"steps"`
}

// Clusters says on which clusters a scenario holds, and why not on the
// others.
type Clusters struct {
	// Only lists the cluster providers the scenario runs on: envtest,
	// kubeconfig (an existing cluster), kind.
	// +items:enum=envtest;kubeconfig;kind
	// +items:title=cluster
	Only []string `json:"only"`
	// Reason says why the scenario cannot hold on the other clusters; it is
	// the skip message there.
	Reason string `json:"reason"`
}

// ClusterProviders are the values Clusters.Only takes.
var ClusterProviders = []string{"envtest", "kubeconfig", "kind"}

// AdmissionWebhook is a mutating admission webhook that writes a
// runtimePatches entry, holds requests, or both.
type AdmissionWebhook struct {
	// Name of its MutatingWebhookConfiguration (with the namespace's
	// suffix, unique in the cluster). The API server calls mutating
	// webhooks in the order of their configurations' names: the
	// Trainer's is defaulter.trainer.kubeflow.org (as its manifests
	// install it), Kueue's kueue-mutating-webhook-configuration, JobSet's
	// jobset-mutating-webhook-configuration.
	Name string `json:"name"`
	// Object is the kind it intercepts: TrainJob.
	Object string `json:"object"`
	// Operations it intercepts: CREATE, UPDATE. Empty: CREATE.
	// +optional
	// +items:enum=CREATE;UPDATE
	// +items:title=operation
	Operations []string `json:"operations,omitempty"`
	// Manager of the entry it writes. Empty: it writes no entry (it
	// holds requests).
	// +optional
	Manager string `json:"manager,omitempty"`
	// Entry is the trainingRuntimeSpec of its entry. It adds the entry,
	// or replaces its entry when that differs, and leaves the TrainJob
	// alone when its entry is there as it writes it.
	// +optional
	Entry Object `json:"entry,omitempty"`
	// Hold makes it hold some requests before it answers them, as a slow
	// webhook keeps a write waiting inside the API server, until a step
	// has run: the way to make a write land between two requests of a
	// real manager that come milliseconds apart.
	// +optional
	Hold *WebhookHold `json:"hold,omitempty"`
	// ReinvocationPolicy: Never or IfNeeded. Empty: Never.
	// +optional
	ReinvocationPolicy string `json:"reinvocationPolicy,omitempty"`
	// FailurePolicy: Fail or Ignore. Empty: Fail.
	// +optional
	FailurePolicy string `json:"failurePolicy,omitempty"`
}

// WebhookHold says which requests a webhook holds, and until when: one
// case of a gate (spec.gates), served as the gate NAME-hold.
type WebhookHold struct {
	// Requests are the requests it holds: unsuspend (an UPDATE, as a
	// TrainJob's update or patch reaches admission, that sets
	// spec.suspend from true to false, whoever sends it). It holds every
	// such request until the step runs; none after.
	Requests string `json:"requests"`
	// Until is a step of spec.steps that every Trainer release runs: the
	// requests held are answered once that step has run (its write
	// answered and its expect checked), or when the scenario ends. A
	// request the API server stops waiting for (after 30 s) is never
	// answered and fails as the failurePolicy says; the webhook goes on
	// holding the next ones. A step's expect holding says when a request
	// is held.
	Until string `json:"until"`
}

// HoldUnsuspend is the requests of a hold that unsuspend a TrainJob.
const HoldUnsuspend = "unsuspend"

// Gate holds the requests it matches before the API server applies them,
// as a slow admission webhook keeps a write waiting, until a step releases
// them (release, or until). It never changes a request: what follows a
// held request (its resourceVersion checked against the object as it is
// then, a 409) is the API server's doing. A request the API server stops
// waiting for (after 30 s) is never answered and is refused; the timeline
// shows it.
type Gate struct {
	// Name of the gate, for release steps and expect.held.
	Name string `json:"name"`
	// Component whose requests it holds: trainer, jobset,
	// kube-controller-manager (or one of its controllers:
	// kube-controller-manager/job-controller), kube-scheduler, kwok,
	// local-path-provisioner, or one of spec.components (kueue). One of
	// component, user and actor.
	// +optional
	Component string `json:"component,omitempty"`
	// User whose requests it holds, as the API server authenticates them.
	// +optional
	User string `json:"user,omitempty"`
	// Actor whose requests it holds (by the actor's field manager).
	// +optional
	Actor string `json:"actor,omitempty"`
	// Verb of the requests: create, update, patch or delete, as admission
	// sees them: an update and a patch are one (the API server hands
	// admission a patch's options as an update's), so either holds both;
	// a server-side apply that creates an object (as the Trainer makes a
	// JobSet) is a create. Empty: any write.
	// +optional
	// +enum=create;update;patch;delete
	Verb string `json:"verb,omitempty"`
	// Resource is the plural resource name, with a subresource after a
	// slash: trainjobs, jobsets, jobs, pods, pods/binding, pods/status,
	// trainjobs/status, workloads, ...
	Resource string `json:"resource"`
	// ObjectName is the object's name (a Pod's for pods/binding). Empty:
	// any object of the resource in the scenario's namespace.
	// +optional
	ObjectName string `json:"objectName,omitempty"`
	// Change, when set, holds only the requests that make this change.
	// +optional
	Change *GateChange `json:"change,omitempty"`
	// Until is a step of spec.steps after which the gate lets every held
	// request through and holds no more, as a release step does. Empty:
	// a release step opens it, or the scenario's end.
	// +optional
	Until string `json:"until,omitempty"`
}

// GateChange is a change a held request makes: a field going from one value
// to another, or a new runtimePatches entry.
type GateChange struct {
	// Field is a path from the object's root, list items selected by key
	// or position: spec.suspend, status.jobsStatus[name=node].active.
	// +optional
	Field string `json:"field,omitempty"`
	// From is the field's value before the request; without it, any value
	// other than to (absent included).
	// +optional
	From any `json:"from,omitempty"`
	// To is its value after; without it, any value other than from (absent
	// included). A request that leaves the field as it was is not held.
	// +optional
	To any `json:"to,omitempty"`
	// Entry, instead of field, is the manager of a spec.runtimePatches
	// entry the request adds.
	// +optional
	Entry string `json:"entry,omitempty"`
}

// View keeps back the events a component's watches get of one resource of
// the scenario's namespace, or of one object, from a step on until a step
// releases them. Each object's events reach the component in the API
// server's order, never reordered; the other objects' go on as they come.
// What the component reads from its cache is what its watches delivered:
// a view makes it act on the state it last saw.
type View struct {
	// Name of the view, for release steps and expect.held.
	Name string `json:"name"`
	// Component whose watches it sees: trainer or jobset (their managers
	// run in simctl's process), kueue, kube-controller-manager,
	// kube-scheduler or kwok (processes, seen through a loopback proxy).
	// +enum=trainer;jobset;kueue;kube-controller-manager;kube-scheduler;kwok
	Component string `json:"component"`
	// Resource is the plural resource name of the watch: trainjobs,
	// jobsets, jobs, pods, ... one the component watches. Not with
	// partition, which cuts every resource off.
	// +optional
	Resource string `json:"resource,omitempty"`
	// ObjectName is the object's name. Empty: every object of the
	// resource in the scenario's namespace (of the cluster, for a
	// cluster-scoped resource: clustertrainingruntimes, runtimeclasses).
	// +optional
	ObjectName string `json:"objectName,omitempty"`
	// Coalesce delivers, at the release, each object's last state only:
	// the component never observes the states in between (an object it
	// never saw comes as added, one added and deleted meanwhile not at
	// all).
	// +optional
	Coalesce bool `json:"coalesce,omitempty"`
	// Delay, instead of a release, delivers each event that long after
	// it came: a component whose watch lags.
	// +optional
	Delay *Duration `json:"delay,omitempty"`
	// Partition cuts the component off the API server, from its from step
	// to its release, for every resource and namespace (the run has the
	// component to itself): refuse fails each request it sends as a
	// refused connection and ends its open watches, as a network that
	// refuses its packets; unanswered leaves each request waiting and
	// keeps back what its open watches bring, as a network that drops
	// them, until the release (then they go on). The API server still
	// reaches its webhooks.
	// +optional
	// +enum=refuse;unanswered
	Partition string `json:"partition,omitempty"`
	// StaleList serves the component's next list of the resource, once the
	// view has started, as of the resourceVersion the cluster had at the
	// view's from step: a (re)starting component (a component step starts
	// it) lists the state of then, and its watch then brings the events
	// since, which the view keeps back (or coalesces, or delays) as any.
	// +optional
	StaleList bool `json:"staleList,omitempty"`
	// From is the step before which the view starts keeping events back.
	// Empty: the first step.
	// +optional
	From string `json:"from,omitempty"`
	// Until is a step of spec.steps after which the view delivers what it
	// keeps back and keeps nothing back after, as a release step does.
	// Empty: a release step, or the scenario's end.
	// +optional
	Until string `json:"until,omitempty"`
}

// Release lets the requests a gate holds through, or the events a view
// keeps back.
type Release struct {
	// Gate is the gate's name. One of gate and view.
	// +optional
	Gate string `json:"gate,omitempty"`
	// View is the view's name: what it keeps back reaches the component
	// (coalesced, when it coalesces), and it keeps nothing back after. A
	// release of a view that keeps nothing back fails the step.
	// +optional
	View string `json:"view,omitempty"`
	// One lets only the request a gate has held longest through, and the gate
	// goes on holding. Otherwise every held request goes on, released in
	// the order they came, and the gate holds nothing after. A release of
	// a gate that holds nothing fails the step.
	// +optional
	One bool `json:"one,omitempty"`
}

// HeldExpectation asserts what a gate or a view holds.
type HeldExpectation struct {
	// Gate is the gate's name. One of gate and view.
	// +optional
	Gate string `json:"gate,omitempty"`
	// View is the view's name.
	// +optional
	View string `json:"view,omitempty"`
	// Count is how many requests (a gate's) or events (a view's) it must
	// hold. 0: at least one.
	// +optional
	Count int `json:"count,omitempty"`
}

// Queues are the scenario's Kueue queueing objects.
type Queues struct {
	// LocalQueue names the LocalQueue in the scenario's namespace, which
	// TrainJobs name in their label kueue.x-k8s.io/queue-name.
	LocalQueue string `json:"localQueue"`
	// Flavors of the ClusterQueue, in the order Kueue tries them.
	Flavors []QueueFlavor `json:"flavors"`
	// Preemption is the ClusterQueue's withinClusterQueue preemption
	// policy: Never, LowerPriority or LowerOrNewerEqualPriority. Empty:
	// Never.
	// +optional
	// +enum=Never;LowerPriority;LowerOrNewerEqualPriority
	Preemption string `json:"preemption,omitempty"`
	// KueueWebhookReinvocation gives Kueue's TrainJob defaulting webhook,
	// for this scenario's namespace, the reinvocationPolicy IfNeeded (as
	// operators set it, so that Kueue sees what later webhooks add) or
	// Never. Empty: Kueue's manifest's (Never).
	// +optional
	// +enum=Never;IfNeeded
	// +title=policy
	KueueWebhookReinvocation string `json:"kueueWebhookReinvocation,omitempty"`
	// PriorityClasses are WorkloadPriorityClasses created for the
	// scenario (and deleted after it), which TrainJobs name in their label
	// kueue.x-k8s.io/priority-class. Their names are cluster-wide: give
	// names no other scenario uses.
	// +optional
	PriorityClasses []PriorityClass `json:"priorityClasses,omitempty"`
	// Teams are further LocalQueues in the scenario's namespace, each
	// admitted by a ClusterQueue of its own (named <namespace>-<localQueue>,
	// with the preemption policy above) with its flavors' quotas: several
	// teams' queues over the scenario's nodes. A flavor of a team is the
	// ResourceFlavor of the same name (flavors of one name must name one
	// profile and one node label).
	// +optional
	Teams []QueueTeam `json:"teams,omitempty"`
}

// QueueTeam is a team's LocalQueue and the quotas of its ClusterQueue.
type QueueTeam struct {
	// LocalQueue names the team's LocalQueue, which its TrainJobs name in
	// their label kueue.x-k8s.io/queue-name.
	LocalQueue string `json:"localQueue"`
	// Flavors of the team's ClusterQueue, in the order Kueue tries them.
	Flavors []QueueFlavor `json:"flavors"`
}

// PriorityClass is a Kueue WorkloadPriorityClass.
type PriorityClass struct {
	// Name of the WorkloadPriorityClass.
	Name string `json:"name"`
	// Value is its priority: higher preempts lower.
	Value int32 `json:"value"`
}

// QueueFlavor is a ResourceFlavor standing for the nodes of a fakegpu
// profile, with its quota in the ClusterQueue.
type QueueFlavor struct {
	// Name of the flavor, unique in the scenario; the ResourceFlavor is
	// named <namespace>-<name>. Empty: the profile.
	// +optional
	Name string `json:"name,omitempty"`
	// Profile whose nodes the flavor stands for: the flavor's nodeLabels
	// are the profile's label NodeLabel, its tolerations tolerate the
	// profile's taints.
	Profile string `json:"profile"`
	// NodeLabel is the key of the profile's label the flavor selects nodes
	// by. Empty: nvidia.com/gpu.product when the profile has it,
	// trainersim.dev/profile otherwise.
	// +optional
	NodeLabel string `json:"nodeLabel,omitempty"`
	// GPU is the flavor's nominal quota of nvidia.com/gpu. Empty: 0.
	// +optional
	GPU string `json:"gpu,omitempty"`
	// CPU is the flavor's nominal quota of cpu. Empty: 0.
	// +optional
	CPU string `json:"cpu,omitempty"`
	// Memory is the flavor's nominal quota of memory. Empty: 0.
	// +optional
	Memory string `json:"memory,omitempty"`
}

// NodeGroup asks for Count simulated nodes of a fakegpu profile.
type NodeGroup struct {
	// Name names the group for node steps, which name its nodes
	// <name>-<i>, i counting from 0. Empty: the profile is the name, which
	// then must be the only group of its profile for a node step to name
	// one of its nodes.
	// +optional
	Name string `json:"name,omitempty"`
	// Profile is a node profile: nvidia-h100-80gb, nvidia-a100-80gb,
	// nvidia-tesla-v100, nvidia-l4 or cpu (simctl profiles lists them).
	// +enumFrom=profiles
	Profile string `json:"profile"`
	// Count is how many nodes of the profile; at least 1.
	// +minimum=1
	Count int `json:"count"`
	// Labels are added to the profile's node labels.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Taints are added to the profile's taints.
	// +optional
	Taints []Taint `json:"taints,omitempty"`
	// Kubelet is what plays the nodes' kubelet. simulated (the default):
	// KWOK and simctl's simulated kubelet, which run Pods through the
	// scenario's lifecycle rules and kubelet steps. hollow: a hollow
	// kubelet per node, the kubelet's own code over a fake container
	// runtime (kubemark's), whose answers (container states, their
	// messages, events, readiness) are a kubelet's; its containers run
	// until deleted, so a scenario with hollow nodes has no lifecycle
	// rules, kubelet steps or node steps. Envtest only (spec.clusters).
	// +enum=simulated;hollow
	// +optional
	Kubelet string `json:"kubelet,omitempty"`
}

// Taint is a node taint.
type Taint struct {
	// Key of the taint.
	Key string `json:"key"`
	// Value of the taint.
	// +optional
	Value string `json:"value,omitempty"`
	// Effect: NoSchedule, PreferNoSchedule or NoExecute.
	// +enum=NoSchedule;PreferNoSchedule;NoExecute
	// +title=taint effect
	Effect string `json:"effect"`
}

// SetupObject is an object created before the first step, given inline or by
// a path under fixtures/.
type SetupObject struct {
	// Object is the object, inline.
	// +optional
	Object Object `json:"object,omitempty"`
	// Path is a YAML file (one or more documents) relative to the fixtures/
	// directory of the trainersim checkout.
	// +optional
	Path string `json:"path,omitempty"`
}

// Actor is a named manager: the identity a step writes as.
type Actor struct {
	// Name is how steps refer to the actor.
	Name string `json:"name"`
	// FieldManager is sent with every write of the actor; server-side apply
	// and managedFields record it.
	// +minLength=1
	// +maxLength=128
	FieldManager string `json:"fieldManager"`
	// User, when set, makes the actor's requests impersonate this user, so
	// that RBAC applies to them.
	// +optional
	User string `json:"user,omitempty"`
	// Groups are impersonated along with User.
	// +optional
	Groups []string `json:"groups,omitempty"`
}

// Step is one thing the scenario does: one of the verbs below and/or an
// expect, which is checked after the step's write when there is one.
type Step struct {
	// Name identifies the step in reports; update.from refers to it.
	Name string `json:"name"`
	// Trainer restricts the step to some Trainer releases: on any other it
	// is left out, so that a scenario carries the cases of each release
	// where the outcome differs (a top-level step only).
	// +optional
	Trainer *Trainer `json:"trainer,omitempty"`
	// Actor writes the step's object. Empty: the harness admin, field
	// manager simctl.
	// +optional
	Actor string `json:"actor,omitempty"`
	// Release lets the requests a gate of spec.gates holds through, before
	// the step's write, if any, and its expect.
	// +optional
	Release *Release `json:"release,omitempty"`

	// Create creates the object (POST).
	// +optional
	Create Object `json:"create,omitempty"`
	// Apply server-side applies the object as the actor's field manager.
	// +optional
	Apply Object `json:"apply,omitempty"`
	// Force takes over conflicting fields on apply.
	// +optional
	Force bool `json:"force,omitempty"`
	// Patch patches an existing object.
	// +optional
	Patch *Patch `json:"patch,omitempty"`
	// Update replaces an object (PUT).
	// +optional
	Update *Update `json:"update,omitempty"`
	// Delete deletes an object.
	// +optional
	Delete *Target `json:"delete,omitempty"`
	// Get reads an object and keeps it, with its resourceVersion, for a
	// later update.from: the first half of a read-modify-write.
	// +optional
	Get *Target `json:"get,omitempty"`
	// Kubelet acts as the kubelet on the scenario's Pods a selector matches:
	// it writes their status (the pods/status subresource), as a node's
	// kubelet reports a container that exits or restarts.
	// +optional
	Kubelet *KubeletAction `json:"kubelet,omitempty"`
	// Node acts on one of the scenario's nodes: as its kubelet (it reports
	// NotReady, stops heartbeating, or is Ready again) or as an admin
	// (cordon, drain, delete).
	// +optional
	Node *NodeAction `json:"node,omitempty"`
	// Component crashes, stops, starts or restarts one of the cluster's
	// components, as a node's failure or an operator does.
	// +optional
	Component *ComponentAction `json:"component,omitempty"`
	// FieldValidation is sent with the write: Ignore, Warn or Strict.
	// Empty: the server's default (Warn).
	// +optional
	// +enum=Ignore;Warn;Strict
	FieldValidation string `json:"fieldValidation,omitempty"`

	// Concurrently runs its writes in goroutines released together.
	// +optional
	Concurrently *Concurrently `json:"concurrently,omitempty"`

	// ExpectError asserts that the step's write is refused, and how.
	// +optional
	ExpectError *ExpectError `json:"expectError,omitempty"`
	// Expect is checked after the step's write, if any, until it holds.
	// +optional
	Expect *Expect `json:"expect,omitempty"`
}

// Object is a Kubernetes object or a fragment of one, as YAML. Namespaced
// objects without metadata.namespace go into the scenario's namespace.
type Object map[string]any

// Target names an existing object.
type Target struct {
	// APIVersion of the object. Empty: trainer.kubeflow.org/v1alpha1 for
	// kind TrainJob, v1 for core kinds.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`
	// Kind of the object, for example TrainJob.
	Kind string `json:"kind"`
	// Name of the object. Required unless selector is set.
	// +optional
	Name string `json:"name,omitempty"`
	// Namespace of the object. Empty: the scenario's namespace.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Selector, instead of name, makes a patch or a delete target every
	// object of the kind in the namespace whose labels match, one request
	// each (Pods, whose names are generated). At least one must match.
	// +optional
	Selector *LabelSelector `json:"selector,omitempty"`
}

// Patch types.
const (
	// PatchMerge is a JSON merge patch (RFC 7386).
	PatchMerge = "merge"
	// PatchJSON is a JSON patch (RFC 6902), test operations included.
	PatchJSON = "json"
)

// Patch is a JSON merge patch or a JSON patch.
type Patch struct {
	// Type is merge or json.
	// +enum=merge;json
	// +title=patch type
	Type string `json:"type"`
	// Target is the object to patch.
	Target Target `json:"target"`
	// Body is the patch: an object for merge, a list of operations for json.
	Body any `json:"body"`
	// ResourceVersionFrom names an earlier step (a write, or a get) whose
	// object's resourceVersion the patch carries, as Kueue's strict merge
	// patch does (metadata.resourceVersion in a merge patch, a replace of
	// /metadata/resourceVersion in a json one): the API server refuses it
	// with 409 Conflict when the object changed since.
	// +optional
	ResourceVersionFrom string `json:"resourceVersionFrom,omitempty"`
}

// Update is a full replace (PUT). Either Object is the whole object, or From
// names an earlier step whose object (as the server returned it then, with
// that step's resourceVersion) is sent again with Set merged into it.
type Update struct {
	// Object is the whole object to send.
	// +optional
	Object Object `json:"object,omitempty"`
	// From is the name of an earlier step (a write, or a get) whose returned
	// object is the base. Its resourceVersion is kept, so the update
	// conflicts if the object changed since.
	// +optional
	From string `json:"from,omitempty"`
	// Set is merged into the base (JSON merge patch semantics) before it is
	// sent.
	// +optional
	Set Object `json:"set,omitempty"`
}

// Concurrently is a group of writes released at the same instant.
type Concurrently struct {
	// Writes each run in their own goroutine, all released together by a
	// barrier. Each is a step with a write and optionally expectError. When
	// outcomes is set, a write without expectError may succeed or be refused:
	// the counts decide, since who wins a race is not known in advance.
	// +minItems=2
	Writes []Step `json:"writes"`
	// Outcomes asserts how many writes of the group ended each way.
	// +optional
	Outcomes *Outcomes `json:"outcomes,omitempty"`
	// Interleavings, when set, explores orders of the writes instead of
	// racing them: for each explored order the whole scenario runs again in
	// a namespace of its own, and the group's writes are forced through one
	// after the other in that order, each sent when the previous response has
	// come back. The step's expect and the group's outcomes must hold under
	// every order; cases add expectations for the orders they match. At most
	// one group of a scenario may set it.
	// +optional
	Interleavings *Interleavings `json:"interleavings,omitempty"`
}

// Interleavings chooses which orders of a concurrent group's writes to
// explore. Every order comes from a seed: the same seed always gives the
// same order, and `simctl run --seed S` replays the order of seed S.
type Interleavings struct {
	// Orders is all (every order; at most 5 writes) or a number N of
	// distinct orders.
	Orders Orders `json:"orders"`
	// Seed is the first seed tried: orders come from seeds Seed, Seed+1, ...
	// until the wanted number of distinct orders is found.
	// +optional
	Seed uint64 `json:"seed,omitempty"`
	// Cases state what happens under some of the orders: each adds its
	// outcomes and expect to those of the group and the step, for every
	// explored order it matches.
	// +optional
	Cases []InterleavingCase `json:"cases,omitempty"`
}

// InterleavingCase adds expectations to the orders it matches. A case with
// both first and order matches the orders that satisfy both.
type InterleavingCase struct {
	// Name says what the case is about, in reports.
	Name string `json:"name"`
	// First is the name of the write that must be sent first.
	// +optional
	First string `json:"first,omitempty"`
	// Order names two or more writes that must be sent in this relative
	// order (others may come between them).
	// +optional
	Order []string `json:"order,omitempty"`
	// Outcomes asserts how the group's writes ended under matching orders.
	// +optional
	Outcomes *Outcomes `json:"outcomes,omitempty"`
	// Expect is checked after the group under matching orders, like the
	// step's own expect.
	// +optional
	Expect *Expect `json:"expect,omitempty"`
}

// MaxAllOrders is the most writes a group exploring all orders may have:
// 5 writes are 120 orders, each a run of the whole scenario.
const MaxAllOrders = 5

// Permutations is n!, the number of orders of n writes, saturating at
// math.MaxInt.
func Permutations(n int) int {
	f := 1
	for i := 2; i <= n; i++ {
		if f > math.MaxInt/i {
			return math.MaxInt
		}
		f *= i
	}
	return f
}

// Orders is how many orders to explore: All, or a positive number.
type Orders struct {
	// All is true for every order.
	All bool
	// N is the number of orders when All is false.
	N int
}

// MarshalJSON writes "all" or the number.
func (o Orders) MarshalJSON() ([]byte, error) {
	if o.All {
		return json.Marshal("all")
	}
	return json.Marshal(o.N)
}

// UnmarshalJSON reads "all" or a positive number.
func (o *Orders) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		if s != "all" {
			return fmt.Errorf("orders must be all or a positive number, found %q", s)
		}
		*o = Orders{All: true}
		return nil
	}
	var n int
	if err := json.Unmarshal(b, &n); err != nil || n < 1 {
		return fmt.Errorf("orders must be all or a positive number, found %s", b)
	}
	*o = Orders{N: n}
	return nil
}

// Outcomes counts how the writes of a concurrent group ended. Unset counts
// are not checked.
type Outcomes struct {
	// Succeeded is the number of writes the server accepted.
	// +optional
	// +minimum=0
	Succeeded *int `json:"succeeded,omitempty"`
	// Conflicts is the number of writes refused with HTTP 409.
	// +optional
	// +minimum=0
	Conflicts *int `json:"conflicts,omitempty"`
	// Rejected is the number of writes refused otherwise.
	// +optional
	// +minimum=0
	Rejected *int `json:"rejected,omitempty"`
}

// ExpectError asserts a refused write. Every set field must match.
type ExpectError struct {
	// Status is the HTTP status code, for example 403, 409 or 422.
	// +optional
	// +minimum=100
	// +maximum=599
	Status int `json:"status,omitempty"`
	// Reason is the Status reason, for example Forbidden, Conflict, Invalid.
	// +optional
	Reason string `json:"reason,omitempty"`
	// MessageContains must be a substring of the server's message.
	// +optional
	MessageContains string `json:"messageContains,omitempty"`
	// MessageMatches is a regular expression the message must match.
	// +optional
	MessageMatches string `json:"messageMatches,omitempty"`
	// ConflictManager is the field manager a server-side apply conflict
	// names ("conflict with \"<manager>\"").
	// +optional
	ConflictManager string `json:"conflictManager,omitempty"`
}

// Expect is a set of expectations checked together until all hold: again
// whenever something changes in the scenario's namespace, and every second.
type Expect struct {
	// Within is how long to keep checking, for example 30s. Zero: 30s.
	// +optional
	Within Duration `json:"within,omitempty,omitzero"`
	// Pods asserts the Pods selected by a label selector.
	// +optional
	Pods *PodExpectation `json:"pods,omitempty"`
	// Objects asserts objects by partial match.
	// +optional
	Objects []ObjectExpectation `json:"objects,omitempty"`
	// Events asserts that events were recorded.
	// +optional
	Events []EventExpectation `json:"events,omitempty"`
	// Owners asserts which field managers own fields of objects, as their
	// managedFields record it.
	// +optional
	Owners []OwnerExpectation `json:"owners,omitempty"`
	// NoOverlaps names a TrainJob of the scenario's namespace that must
	// exist and have no two runtimePatches entries that set the same field
	// (see strict, which checks every TrainJob after every step).
	// +optional
	NoOverlaps string `json:"noOverlaps,omitempty"`
	// Requests asserts requests that a component the harness runs sent
	// about an object of the scenario, and how the API server answered
	// them, as its audit log records them (clusters simctl starts:
	// envtest, kind). A component's request that was refused is a result:
	// this is how a scenario says so.
	// +optional
	Requests []RequestExpectation `json:"requests,omitempty"`
	// Holding names a webhook of spec.webhooks with a hold: it must be
	// holding a request, so that the next steps land while that request
	// waits. Only in a step before the hold's until.
	// +optional
	Holding string `json:"holding,omitempty"`
	// Held asserts how many requests gates of spec.gates hold now.
	// +optional
	Held []HeldExpectation `json:"held,omitempty"`
}

// DefaultWithin is how long an Expect without within is checked.
const DefaultWithin = 30 * time.Second

// PodExpectation asserts the Pods of the scenario's namespace that match
// Selector. The harness's own scheduling isolation (a nodeSelector key and a
// toleration, both trainersim.dev/scenario) is removed from every Pod before
// it is matched or reported.
type PodExpectation struct {
	// Selector selects the Pods. Empty: every Pod of the namespace.
	// +optional
	Selector *LabelSelector `json:"selector,omitempty"`
	// Count is the exact number of selected Pods.
	// +optional
	// +minimum=0
	Count *int `json:"count,omitempty"`
	// NodeProfile is the fakegpu profile of the node every Pod is bound to.
	// +optional
	// +enumFrom=profiles
	// +title=profile
	NodeProfile string `json:"nodeProfile,omitempty"`
	// Phase every Pod is in: Pending, Running, Succeeded or Failed.
	// +optional
	// +enum=Pending;Running;Succeeded;Failed
	Phase string `json:"phase,omitempty"`
	// SchedulingReason is a substring of every Pod's PodScheduled message
	// (or its reason), for Pods the scheduler could not place.
	// +optional
	SchedulingReason string `json:"schedulingReason,omitempty"`
	// All is a partial Pod every selected Pod must match.
	// +optional
	All Object `json:"all,omitempty"`
	// Any is a partial Pod at least one selected Pod must match.
	// +optional
	Any Object `json:"any,omitempty"`
	// Exact lists paths of the Pod, spelled as reports and simctl explain
	// print them (spec.tolerations, spec.containers[name=node].env), whose
	// value is compared whole instead of as a subset: a list item for item,
	// in order (an empty list: none, the field absent too); a map with no
	// keys but those given. Each must name something in all or any.
	// +optional
	Exact []string `json:"exact,omitempty"`
}

// PodLifecycle says how the Pods a selector matches end. Exactly one of
// succeedAfter and fail.
type PodLifecycle struct {
	// Selector selects the scenario's Pods by the labels they are created
	// with, for example jobset.sigs.k8s.io/replicatedjob-name: node and
	// jobset.sigs.k8s.io/restart-attempt: "0" for the first attempt only.
	Selector LabelSelector `json:"selector"`
	// SucceedAfter: every container exits 0 this long after the Pod starts
	// running, and the Pod is Succeeded.
	// +optional
	SucceedAfter *Duration `json:"succeedAfter,omitempty"`
	// Fail: every container fails this way. A Pod with restartPolicy Never
	// is then Failed; with OnFailure (the JobSet's default) or Always the
	// containers are restarted in place and fail again after the same time,
	// each restart counted in restartCount.
	// +optional
	Fail *PodFailure `json:"fail,omitempty"`
}

// PodFailure is how a Pod's containers fail.
type PodFailure struct {
	// After is how long after the Pod starts running. Zero: at once.
	// +optional
	After Duration `json:"after,omitempty,omitzero"`
	// ExitCode is the containers' exit code, 1 to 255 (137 is a SIGKILL,
	// what an out-of-memory kill exits with).
	// +minimum=1
	// +maximum=255
	ExitCode int32 `json:"exitCode"`
	// Reason is the reason the kubelet reports for the terminated
	// containers: Error (the default) or OOMKilled.
	// +optional
	// +enum=Error;OOMKilled
	Reason string `json:"reason,omitempty"`
}

// CrashLoopBackOff is a scenario's own crash-loop back-off, in whole
// seconds: Initial after the second failure, doubled after each later one,
// at most Max.
type CrashLoopBackOff struct {
	// Initial is the back-off after the second failure: whole seconds, at
	// least 1s.
	Initial Duration `json:"initial"`
	// Max caps the back-off: whole seconds, at least Initial.
	Max Duration `json:"max"`
}

// The actions of a kubelet step.
const (
	KubeletComplete = "complete"
	KubeletFail     = "fail"
	KubeletRestart  = "restart"
)

// KubeletAction is what a kubelet step does to each Pod it selects, in name
// order; a Pod that already finished (Succeeded or Failed) cannot change
// again, and the step fails on it.
type KubeletAction struct {
	// Pods selects the scenario's Pods by label; at least one must match
	// when the step runs.
	Pods LabelSelector `json:"pods"`
	// Action is complete (every container exits 0 and the Pod is
	// Succeeded), fail (the containers exit with exitCode and reason: a Pod
	// with restartPolicy Never is Failed, any other restarts them in place)
	// or restart (the containers exit with exitCode and reason and run
	// again: restartCount goes up by one, the exit is their lastState).
	// +enum=complete;fail;restart
	Action string `json:"action"`
	// Container limits fail and restart to one container. Empty: every
	// container of the Pod.
	// +optional
	Container string `json:"container,omitempty"`
	// ExitCode of fail and restart, 1 to 255. Zero: 1.
	// +optional
	// +minimum=0
	// +maximum=255
	ExitCode int32 `json:"exitCode,omitempty"`
	// Reason of fail and restart: Error (the default) or OOMKilled.
	// +optional
	// +enum=Error;OOMKilled
	Reason string `json:"reason,omitempty"`
}

// The actions of a node step.
const (
	NodeNotReady    = "notReady"
	NodeUnreachable = "unreachable"
	NodeReady       = "ready"
	NodeCordon      = "cordon"
	NodeUncordon    = "uncordon"
	NodeDrain       = "drain"
	NodeDelete      = "delete"
)

// Actions of a component step.
const (
	ComponentCrash   = "crash"
	ComponentStop    = "stop"
	ComponentStart   = "start"
	ComponentRestart = "restart"
	ComponentUpgrade = "upgrade"
)

// ComponentAction is what a component step does to one component.
type ComponentAction struct {
	// Name is the component: trainer or jobset (their managers run in
	// simctl's process, on envtest with the pinned Trainer release), kueue
	// (its process, when spec.components has it), kube-controller-manager,
	// kube-scheduler or kwok (their processes; a step on one of them has
	// the cluster to itself: every scenario's Jobs, Pods and garbage wait
	// on them; KWOK is every simulated node's kubelet).
	// +enum=trainer;jobset;kueue;kube-controller-manager;kube-scheduler;kwok
	Name string `json:"name"`
	// Action is one of:
	// crash: the component ends at once, as a killed process (Kueue's is
	// sent SIGKILL): no request of it goes out after the step (those in
	// flight fail) and it shuts nothing down gracefully; its webhooks stop answering, so the API
	// server refuses what they intercept as their failurePolicy says
	// (Fail, for the Trainer's and JobSet's), in every namespace.
	// stop: the component stops gracefully: what it is doing ends first.
	// start: the component starts again, with empty caches (it lists
	// everything anew), and the step ends once its caches have synced and
	// its webhooks answer.
	// restart: a stop, then a start.
	// upgrade (trainer only): the Trainer release that runs is replaced
	// by the release To, as its manifests would replace it: its CRDs (and
	// a probe that the API server serves the new TrainJob schema), RBAC
	// and webhook configurations, the old Trainer and JobSet managers
	// stopped, the new release's started (the JobSet release it pins),
	// its default runtimes; each part on the timeline. An older To is a
	// rollback.
	// A scenario that leaves the component down gets it started again at
	// its end, before the next scenario runs; one that upgraded the
	// Trainer gets the run's release back.
	// +enum=crash;stop;start;restart;upgrade
	Action string `json:"action"`
	// To is the Trainer release of an upgrade, e.g. v2.3.0 (one of
	// simctl run --help's --trainer releases).
	// +optional
	To string `json:"to,omitempty"`
	// DownFor, with crash or stop, starts the component again on its own
	// that long after it went down, while the next steps run: as a standby
	// replica takes over once the leader lease the crashed one held runs
	// out (Kueue's and the Trainer's manifests: 15s). The step does not
	// wait for the start; a later step's expect does.
	// +optional
	DownFor *Duration `json:"downFor,omitempty"`
}

// NodeAction is what a node step does to one node.
type NodeAction struct {
	// Name is the node, <group>-<i>: a group's name (its profile when it
	// has none) and the node's index in the group, from 0. For example
	// nvidia-h100-80gb-1.
	Name string `json:"name"`
	// Action is one of:
	// notReady: the node's kubelet reports Ready False (KubeletNotReady);
	// the simulated kubelet stops acting on the node's status, so the
	// node-lifecycle controller taints it node.kubernetes.io/not-ready and
	// the taint-eviction controller evicts its Pods once their
	// tolerationSeconds run out (300s, from the DefaultTolerationSeconds
	// admission plugin, unless a Pod says otherwise).
	// unreachable: the node's kubelet stops heartbeating: the simulated
	// kubelet neither renews the node's Lease (the step takes the Lease
	// over, with a holder of its own and a duration of an hour, its
	// renewTime left at the kubelet's last renewal) nor posts the node's
	// status. Once the node-monitor grace period (20s on the clusters
	// simctl starts for a run with such a step, 50s by default elsewhere)
	// has passed since the node-lifecycle controller last saw a renewal,
	// it sets Ready, MemoryPressure, DiskPressure and PIDPressure Unknown
	// (NodeStatusUnknown, "Kubelet stopped posting node status."), taints
	// the node node.kubernetes.io/unreachable (NoSchedule and NoExecute)
	// and marks its Pods not Ready; the taint-eviction controller deletes
	// its Pods once their tolerationSeconds run out (300s by default, as
	// for notReady), and they stay Terminating until the node is ready
	// again, as no kubelet confirms their end. An expect after it needs a
	// within of more than a minute (the default grace of a cluster simctl
	// did not start).
	// ready: the simulated kubelet takes the node back (and its Lease,
	// which it renews again within 4s, when unreachable took it) and
	// reports it Ready.
	// cordon, uncordon: spec.unschedulable, as kubectl cordon sets it.
	// drain: cordon, then evict every Pod on the node through the Eviction
	// API, as kubectl drain does, in name order; a PodDisruptionBudget's
	// refusal (429) ends the step and is its result, never retried.
	// delete: delete the Node object.
	// +enum=notReady;unreachable;ready;cordon;uncordon;drain;delete
	Action string `json:"action"`
}

// LabelSelector selects by labels.
type LabelSelector struct {
	// MatchLabels must all be present with these values.
	// +optional
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
}

// ObjectExpectation asserts one object by partial match.
type ObjectExpectation struct {
	// Target is the object.
	Target Target `json:"target"`
	// Match is a partial object: maps match as subsets, and every item of an
	// expected list must match some item of the actual list. Empty: the
	// object exists.
	// +optional
	Match Object `json:"match,omitempty"`
	// MatchAny are partial objects of which the object must match at least
	// one, each as match matches (and with match when both are given): a
	// state a controller may pass through or go past before the step looks,
	// such as a status it reports in one write or two. simctl import writes
	// it to wait for a status the components reached on the cluster or any
	// they wrote after it.
	// +optional
	MatchAny []Object `json:"matchAny,omitempty"`
	// Exact lists paths of the object, spelled as reports and simctl
	// explain print them
	// (spec.replicatedJobs[name=node].template.spec.template.spec.tolerations),
	// whose value is compared whole instead of as a subset: a list item for
	// item, in order (an empty list: none, the field absent too); a map with
	// no keys but those given. Each must name something in match or in
	// every item of matchAny.
	// +optional
	Exact []string `json:"exact,omitempty"`
	// Absent asserts that the object does not exist.
	// +optional
	Absent bool `json:"absent,omitempty"`
	// Reached: the object need only have matched (match, matchAny) at
	// some moment since the step began to check it, in the state the API
	// server had then or any later one the watches delivered, not still at
	// the end: a state a controller passes on its way to the next, in a
	// step that waits for other things too (its Pods to run) which may
	// come after it has moved on. States older than the API server's when
	// the step began, which a watch that lags delivers late, do not count.
	// For the kinds in WatchedKinds, in the scenario's namespace. simctl
	// import writes it on the states a log shows the components had
	// reached before a manager's write.
	// +optional
	Reached bool `json:"reached,omitempty"`
	// ReachedSince, with reached, is an earlier step of spec.steps from
	// whose start the states count, instead of this step's: a state the
	// object was in after that step began (not the one it had then),
	// though it moved on before this step began. simctl import writes the
	// step of the manager's write a status came after on the cluster: a
	// controller may pass it sooner on replay, before the steps between.
	// +optional
	ReachedSince string `json:"reachedSince,omitempty"`
}

// WatchedKinds are the kinds whose every change simctl watches in a
// scenario's namespace, by apiVersion: those an object expectation may
// ask to have reached a state (ObjectExpectation.Reached), and whose
// changes the timeline shows.
var WatchedKinds = map[string]string{
	"TrainJob": "trainer.kubeflow.org/v1alpha1",
	"JobSet":   "jobset.x-k8s.io/v1alpha2",
	"Job":      "batch/v1",
	"Pod":      "v1",
	"Event":    "v1",
	"PodGroup": "scheduling.x-k8s.io/v1alpha1",
}

// EventExpectation asserts that an event was recorded in the scenario's
// namespace.
type EventExpectation struct {
	// InvolvedKind is the kind of the object the event is about.
	// +optional
	InvolvedKind string `json:"involvedKind,omitempty"`
	// InvolvedName is the name of the object the event is about.
	// +optional
	InvolvedName string `json:"involvedName,omitempty"`
	// Reason is the event's reason, exactly.
	// +optional
	Reason string `json:"reason,omitempty"`
	// MessageContains must be a substring of the event's message.
	// +optional
	MessageContains string `json:"messageContains,omitempty"`
	// MessageMatches is a regular expression the event's message must
	// match: for a message whose wording differs between releases.
	// +optional
	MessageMatches string `json:"messageMatches,omitempty"`
}

// RequestExpectation asserts that a component sent at least one request
// that matches, answered as it says.
type RequestExpectation struct {
	// Component that sent it, one of the scenario's spec.components: kueue.
	Component string `json:"component"`
	// Verb of the request: create, update, patch or delete. Empty: any.
	// +optional
	// +enum=create;update;patch;delete
	Verb string `json:"verb,omitempty"`
	// Target is the object: a TrainJob (the audit log records the
	// components' writes to TrainJobs only).
	Target Target `json:"target"`
	// Status is the HTTP status code of the answer: 200 for a write that
	// was applied, 409 for a conflict, ...
	Status int `json:"status"`
	// MessageContains must be a substring of the answer's message (a
	// refusal's; the audit log keeps none of a success).
	// +optional
	MessageContains string `json:"messageContains,omitempty"`
}

// RequestVerbs are the verbs of a RequestExpectation.
var RequestVerbs = []string{"create", "update", "patch", "delete"}

// OwnerExpectation asserts who owns a field of an object, read from its
// managedFields (server-side apply and update both record owners).
type OwnerExpectation struct {
	// Target is the object.
	Target Target `json:"target"`
	// Field is a path, spelled as reports and simctl explain print them:
	// field names separated by dots; list items selected by key in brackets,
	// spec.runtimePatches[manager=kueue.x-k8s.io/manager] (a value with ]
	// or " quoted, [name="a]b"]), or by position, args[0]; a name with
	// dots, such as a label key, quoted in brackets,
	// nodeSelector["node.kubernetes.io/instance-type"]. For example
	// spec.runtimePatches[manager=kueue.x-k8s.io/manager].trainingRuntimeSpec.
	// A manager owns the field when its managedFields hold the field or
	// anything under it.
	Field string `json:"field"`
	// Manager is a field manager that must own the field.
	Manager string `json:"manager"`
	// Only asserts that no other field manager owns it.
	// +optional
	Only bool `json:"only,omitempty"`
}

// Duration is a time.Duration written as a Go duration string ("60s").
type Duration struct{ time.Duration }

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads a duration string such as 60s or 1m30s.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string such as 60s: %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("invalid duration %q: a duration is a number with a unit, such as 30s, 2m or 1m30s (units: ms, s, m, h)", s)
	}
	if v < 0 {
		return fmt.Errorf("invalid duration %q: must not be negative", s)
	}
	d.Duration = v
	return nil
}

// DefaultAPIVersions are the kinds a target may name without apiVersion,
// and the apiVersion they then have. Any other kind needs one.
var DefaultAPIVersions = map[string]string{
	"TrainJob":               "trainer.kubeflow.org/v1alpha1",
	"TrainingRuntime":        "trainer.kubeflow.org/v1alpha1",
	"ClusterTrainingRuntime": "trainer.kubeflow.org/v1alpha1",
	"JobSet":                 "jobset.x-k8s.io/v1alpha2",
	"Job":                    "batch/v1",
	"PodGroup":               "scheduling.x-k8s.io/v1alpha1",
	"Pod":                    "v1",
	"ConfigMap":              "v1",
	"Secret":                 "v1",
	"Service":                "v1",
	"ServiceAccount":         "v1",
	"PersistentVolumeClaim":  "v1",
	"Event":                  "v1",
	"Node":                   "v1",
	"Namespace":              "v1",
}
