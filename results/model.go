// Package results is the result model of a simctl run: what each scenario,
// step and write did, what the server changed in each write, the timeline of
// writes and reactions, the owners of the runtimePatches entries, the final
// Pods and where each scenario's time went. The runner fills it in; package
// reports renders it (junit.xml, report.json, report.html) and keeps it on
// disk while a run goes (report.jsonl); simctl and the ginkgo adapter read
// it. It holds the data and what follows from it (Run.Passed,
// Run.Incomplete, a Breakdown in one line), no report format and no I/O, so
// that every report renders the same thing.
package results

import (
	"fmt"
	"strings"
	"time"

	"github.com/trainersim/trainersim/sim/shake"
)

// Run is the result of one simctl run.
type Run struct {
	// Started is when the run began.
	Started time.Time `json:"started"`
	// Duration is the whole run, cluster start included.
	Duration time.Duration `json:"duration"`
	// Cluster names the cluster provider the run used: envtest or
	// kubeconfig.
	Cluster string `json:"cluster,omitempty"`
	// KubernetesVersion, TrainerVersion and JobSetVersion say what ran;
	// KueueVersion too, when the run started Kueue.
	KubernetesVersion string `json:"kubernetesVersion"`
	TrainerVersion    string `json:"trainerVersion"`
	JobSetVersion     string `json:"jobSetVersion"`
	KueueVersion      string `json:"kueueVersion,omitempty"`
	// TrainerCheckout says which local checkout of the Trainer ran and as
	// what (cluster.Versions.TrainerCheckout); empty for a release.
	TrainerCheckout string `json:"trainerCheckout,omitempty"`
	// KueueCheckout is the same for a Kueue checkout.
	KueueCheckout string `json:"kueueCheckout,omitempty"`
	// Interrupted is true when the run was stopped (Ctrl-C) before every
	// scenario finished; Scenarios holds those that did.
	Interrupted bool `json:"interrupted,omitempty"`
	// Unfinished is true when the run never ended: simctl was killed
	// (SIGKILL, a crash, the machine went down) before it could say so in
	// report.jsonl, and this Run was rebuilt from report.jsonl (simctl
	// report, ReadJournal). Scenarios holds the results that had reached
	// the disk.
	Unfinished bool `json:"unfinished,omitempty"`
	// NotReported names, in order, the runs the run was to make that have
	// no result: those an interrupted or unfinished run did not finish.
	NotReported []string `json:"notReported,omitempty"`
	// Problems say why results may be missing from a Run rebuilt from
	// report.jsonl: the lines it could not read and skipped, each as
	// FILE:LINE: what was wrong.
	Problems []string `json:"problems,omitempty"`
	// Shard is K/N for a run of one shard of the scenarios (simctl run
	// --shard); empty for a whole run.
	Shard string `json:"shard,omitempty"`
	// Shards are the shards a merged run was made of (simctl report
	// --merge), in order; MissingShards those of its N that it lacks.
	Shards        []string `json:"shards,omitempty"`
	MissingShards []string `json:"missingShards,omitempty"`
	// Scenarios in the order they were given.
	Scenarios []Scenario `json:"scenarios"`
}

// Scenario is the result of one scenario.
type Scenario struct {
	Name        string            `json:"name"`
	File        string            `json:"file"`
	Description string            `json:"description,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	// Namespace the scenario ran in.
	Namespace string `json:"namespace"`
	// SecondCluster is true when the scenario ran on the run's second
	// cluster, beside the first: it keeps every other run off the cluster
	// it runs on (a component step; a gate or a partition of JobSet or the
	// Trainer). Its components log to the work directory's second-cluster/.
	SecondCluster bool `json:"secondCluster,omitempty"`
	// Passed is true when every step passed.
	Passed bool `json:"passed"`
	// Skipped, when set, says why the scenario did not run on this cluster
	// (its spec.clusters); a skipped scenario is not a failure.
	Skipped string `json:"skipped,omitempty"`
	// Failure is the first failure, one line; the failing step has details.
	Failure string `json:"failure,omitempty"`
	// BehaviourChange, on a failed scenario run against a local checkout
	// of the Trainer or of Kueue, says which checkout changes the verdict
	// the scenario expects of which release: "the Trainer checkout against
	// v2.3.0" (runner.behaviourChange).
	BehaviourChange string        `json:"behaviourChange,omitempty"`
	Started         time.Time     `json:"started"`
	Duration        time.Duration `json:"duration"`
	// Breakdown says where Duration went.
	Breakdown Breakdown `json:"breakdown"`
	Steps     []Step    `json:"steps"`
	// Setup are the creates of the scenario's setup objects, sent as the
	// admin before the first step.
	Setup []Write `json:"setup,omitempty"`
	// FinalPods are the scenario's Pods when it ended.
	FinalPods []Pod `json:"finalPods,omitempty"`
	// FinalOwners are who owns each runtimePatches entry of the
	// namespace's TrainJobs when the scenario ended, read then (a
	// component's writes after the last step included).
	FinalOwners []EntryOwners `json:"finalOwners,omitempty"`
	// FinalTrainJobs are the namespace's TrainJobs as the run left them.
	FinalTrainJobs []TrainJobState `json:"finalTrainJobs,omitempty"`
	// Unsettled, for a run told to settle (simctl explore's), says that
	// its namespace never went quiet after the last step.
	Unsettled string `json:"unsettled,omitempty"`
	// Interleaving is the order this run forced a concurrent group's writes
	// through, for a scenario that explores interleavings.
	Interleaving *Interleaving `json:"interleaving,omitempty"`
	// Shake is the seed of the delays this run added to its namespace's
	// writes, for a shaken run (simctl run --shake).
	Shake *Shake `json:"shake,omitempty"`
	// Timeline is every write of the scenario and every reaction the
	// runner observed through watches, on one clock; see Timeline.
	Timeline *Timeline `json:"timeline,omitempty"`
	// AbandonedHolds name the gate (the scenario's name for it) of each
	// request a gate held until the API server stopped waiting for it (the
	// webhook's timeout, or its sender gone): never answered, refused.
	AbandonedHolds []string `json:"abandonedHolds,omitempty"`
	// Changes, for a run told to record them (simctl explore's reference
	// runs), are the accepted writes to the namespace's TrainJobs and
	// JobSets (those the audit log records: their status), oldest first, each with its writer and the fields it changed.
	Changes []ObjectChange `json:"changes,omitempty"`
}

// ObjectChange is one accepted write to a TrainJob or a JobSet: who sent
// it and what it changed, as the runner's watch saw the object before and
// after it (the write's resourceVersion).
type ObjectChange struct {
	// At is when the watch saw it; Step the step that ran then.
	At   time.Time `json:"at"`
	Step string    `json:"step"`
	// Kind is the object's: TrainJob or JobSet.
	Kind string `json:"kind"`
	// Writer is the component that sent it (identity.Who: trainer, kueue,
	// ...), or the scenario's actor (Actor true; "" for the admin).
	Writer string `json:"writer"`
	Actor  bool   `json:"actor,omitempty"`
	// Verb is the request's: create, update or patch (an apply is a
	// patch, as the API server records it).
	Verb string `json:"verb"`
	// Resource is trainjobs, or trainjobs/status for a status write
	// (jobsets/status).
	Resource        string `json:"resource"`
	Name            string `json:"name"`
	ResourceVersion string `json:"resourceVersion"`
	// Fields are the leaves it changed, by path (sim/fieldpath; list
	// items by merge key: conditions by type, jobsStatus by name).
	Fields []FieldDiff `json:"fields,omitempty"`
}

// FieldDiff is a field a write changed: its values before and after, as
// compact JSON, empty where it was absent.
type FieldDiff struct {
	Path string `json:"path"`
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
}

// Shake is one shaken run of a scenario (sim/shake).
type Shake struct {
	// Of is the name of the run that was shaken (the scenario's, with its
	// order for an explored interleaving): the runs of one Of are compared.
	Of string `json:"of"`
	// Seed gives the delays; Replay is the command that runs it again.
	Seed   uint64 `json:"seed"`
	Replay string `json:"replay"`
	// Index and Of say which of the shaken runs this is, from 1.
	Index int `json:"index"`
	Runs  int `json:"runs"`
	// MaxDelay bounds each delay; Delayed and Delay are how many requests
	// were delayed and for how long in all.
	MaxDelay time.Duration `json:"maxDelay"`
	Delayed  int           `json:"delayed"`
	Delay    time.Duration `json:"delay"`
}

// OrderDependent returns the shaken scenarios whose verdict changed from
// one run to another, in the order of their first run.
func (r *Run) OrderDependent() []shake.Finding {
	var names []string
	runs := map[string][]shake.Run{}
	for _, sc := range r.Scenarios {
		if sc.Shake == nil || sc.Skipped != "" {
			continue
		}
		if _, seen := runs[sc.Shake.Of]; !seen {
			names = append(names, sc.Shake.Of)
		}
		runs[sc.Shake.Of] = append(runs[sc.Shake.Of], shake.Run{Seed: sc.Shake.Seed, Passed: sc.Passed, Failure: sc.Failure})
	}
	return shake.Find(names, runs)
}

// Interleaving is one explored order of a concurrent group's writes.
type Interleaving struct {
	// Step is the concurrently step.
	Step string `json:"step"`
	// Order names the writes in the order they were sent.
	Order []string `json:"order"`
	// Seed gives the order; Replay is the command that runs it again.
	Seed   uint64 `json:"seed"`
	Replay string `json:"replay"`
	// Index and Of say which of the scenario's explored orders this is.
	Index int `json:"index"`
	Of    int `json:"of"`
}

// Step is the result of one step.
type Step struct {
	Name string `json:"name"`
	// Kind is the step's verb (a name of v1alpha1.Verbs: create, apply,
	// ...), expect for a step without one, or setup for a set-up that
	// failed.
	Kind     string        `json:"kind"`
	Passed   bool          `json:"passed"`
	Started  time.Time     `json:"started"`
	Duration time.Duration `json:"duration"`
	// Failure says why the step failed, one paragraph.
	Failure string `json:"failure,omitempty"`
	// Diff is a go-cmp style "(-want +got)" diff of the expectation that
	// failed, when there is one.
	Diff string `json:"diff,omitempty"`
	// Writes are the requests the step sent, one unless concurrent.
	Writes []Write `json:"writes,omitempty"`
	// Order names the writes of a concurrent group in the order they were
	// forced through, when the group explores interleavings; empty when they
	// were released together.
	Order []string `json:"order,omitempty"`
	// Cases are the interleaving cases that matched the order, whose
	// expectations were checked too.
	Cases []string `json:"cases,omitempty"`
	// Owners are the field managers of every runtimePatches entry of every
	// TrainJob in the scenario's namespace after the step, by TrainJob and
	// entry.
	Owners []EntryOwners `json:"owners,omitempty"`
}

// TrainJobState is a TrainJob as a run left it.
type TrainJobState struct {
	Name      string `json:"name"`
	Suspended bool   `json:"suspended,omitempty"`
	// Conditions are each condition's "Type=Status Reason", sorted.
	Conditions []string `json:"conditions,omitempty"`
	// JobSetBehind, in runs that check it (simctl explore), names the
	// fields of the TrainJob's JobSet that the Trainer's apply would change
	// now, when the Trainer applies it now (the TrainJob or the JobSet is
	// suspended): the JobSet does not hold what the Trainer builds from the
	// TrainJob and its runtime. Empty when it does or is not checked.
	JobSetBehind []string `json:"jobSetBehind,omitempty"`
	// JobSetUnchecked says why a JobSet the Trainer applies now was not
	// checked (its build or the dry run of its apply failed).
	JobSetUnchecked string `json:"jobSetUnchecked,omitempty"`
}

// EntryOwners is who owns one runtimePatches entry of a TrainJob: the field
// managers whose managedFields hold the entry or anything under it.
type EntryOwners struct {
	// TrainJob is the TrainJob's name.
	TrainJob string `json:"trainJob"`
	// Entry is the entry's key, its manager field.
	Entry string `json:"entry"`
	// Managers are the field managers owning the entry, sorted.
	Managers []string `json:"managers"`
}

// Write is one request sent to the API server and what came back.
type Write struct {
	Actor        string `json:"actor"`
	FieldManager string `json:"fieldManager"`
	// Verb is the name of the write's verb in v1alpha1.Verbs: create,
	// apply, patch, update, delete or get.
	Verb string `json:"verb"`
	// PatchType is merge or json for patches, apply for server-side apply.
	PatchType string `json:"patchType,omitempty"`
	// Target is kind/namespace/name.
	Target string `json:"target"`
	// Body is what was sent, as YAML.
	Body string `json:"body,omitempty"`
	// Started is when the request was sent.
	Started  time.Time     `json:"started"`
	Duration time.Duration `json:"duration"`
	// ResourceVersionBefore and After are the object's resourceVersion sent
	// with (or read before) the request and returned by the server.
	ResourceVersionBefore string `json:"resourceVersionBefore,omitempty"`
	ResourceVersionAfter  string `json:"resourceVersionAfter,omitempty"`
	// Status is the HTTP status code; 0 when no response came.
	Status int `json:"status"`
	// Reason is the Status reason of a refused write.
	Reason string `json:"reason,omitempty"`
	// Message is the server's message of a refused write.
	Message string `json:"message,omitempty"`
	// ChangedBy, for a write refused with 409 Conflict that carried a
	// resourceVersion, are the writes that changed the object after that
	// resourceVersion, oldest first: the scenario's own, and the
	// components' writes to TrainJobs from the API server's audit log
	// ("trainer's patch of trainjobs/status (resourceVersion 1240)").
	ChangedBy []string `json:"changedBy,omitempty"`
	// Warnings are the warnings the server sent with its answers to the
	// write's requests (HTTP Warning headers, such as unknown field "..."
	// for a field it dropped from a non-strict write), in the order they
	// came, whether it accepted the write or not.
	Warnings []string `json:"warnings,omitempty"`
	// Expected is true when the outcome matched expectError (or the write
	// succeeded without one).
	Expected bool `json:"expected"`
	// Mutations are the differences between what the write sent and the
	// object the server returned: what defaulting and the mutating
	// admission webhooks changed. Empty for a refused write, a delete and a
	// get. See docs/timeline.md for the rule and its limits.
	Mutations []FieldChange `json:"mutations,omitempty"`
}

// Action is who did what to which object: "apply TrainJob ns/llm as
// kueue-admission", the subject of every sentence about a write.
func (w *Write) Action() string {
	return w.Verb + " " + w.Target + " as " + w.FieldManager
}

// String is the write on one line, as simctl and the ginkgo adapter print
// it: its Action, the HTTP status, and for a refused write the reason and
// the first line of the message ("... as sdk: HTTP 409 Conflict: Operation
// cannot be fulfilled ...").
func (w *Write) String() string {
	out := fmt.Sprintf("%s: HTTP %d", w.Action(), w.Status)
	if w.Reason != "" {
		out += " " + w.Reason
	}
	if w.Message != "" {
		out += ": " + FirstLine(w.Message)
	}
	return out
}

// Kinds of a FieldChange.
const (
	// FieldAdded is a field the server stored that the write did not send.
	FieldAdded = "added"
	// FieldChanged is a field stored with another value than the one sent.
	FieldChanged = "changed"
	// FieldRemoved is a field the write sent that the server did not store.
	FieldRemoved = "removed"
)

// FieldChange is one difference between what a write sent and what the
// server stored.
type FieldChange struct {
	// Path names the field in the one syntax of sim/fieldpath, which
	// owners and exact paths take too, with list items by merge key or by
	// index and names with dots quoted:
	// spec.runtimePatches[manager=kueue.x-k8s.io/manager].time,
	// spec.trainer.args[0], spec.trainer.resourcesPerNode.limits["nvidia.com/gpu"].
	Path string `json:"path"`
	// Kind is FieldAdded, FieldChanged or FieldRemoved.
	Kind string `json:"kind"`
	// Sent is the value sent, as compact JSON; empty when added.
	Sent string `json:"sent,omitempty"`
	// Stored is the value stored, as compact JSON; empty when removed.
	Stored string `json:"stored,omitempty"`
}

// Timeline is what happened during one scenario, on the runner's clock:
// the writes the scenario sent and the reactions the runner observed
// through watches on the scenario's namespace (the JobSet the trainer
// applied, Jobs, Pods, bindings, phases, events). The times of observed
// reactions are when the runner saw them, not server times.
type Timeline struct {
	// Lanes are the rows of the picture, in display order: the scenario's
	// actors in the order declared (then "admin" when a step without an
	// actor wrote), then the controllers (trainer, jobset, job-controller,
	// scheduler, kwok), then other event sources in order of appearance.
	// Every entry's Lane is one of them.
	Lanes []string `json:"lanes"`
	// Entries in the order of At.
	Entries []TimelineEntry `json:"entries"`
	// Truncated is true when observed reactions were dropped because the
	// scenario reached the cap; Dropped counts them. Writes are never
	// dropped.
	Truncated bool `json:"truncated,omitempty"`
	Dropped   int  `json:"dropped,omitempty"`
	// Problems say why reactions may be missing: a watch that could not
	// start or list. Writes are recorded regardless.
	Problems []string `json:"problems,omitempty"`
}

// Kinds of a TimelineEntry.
const (
	// EntryWrite is a request a scenario sent (Write names it).
	EntryWrite = "write"
	// EntryTrainJobCondition is a TrainJob status condition that changed.
	EntryTrainJobCondition = "trainjob-condition"
	// EntryManagerWrite is a write to a TrainJob by a manager the scenario
	// does not script (Kueue, say), seen from the server's side: the
	// manager's managedFields entry is new or changed. Its lane is the
	// field manager.
	EntryManagerWrite = "manager-write"
	// EntryWebhookCall is a call of an admission webhook a scenario
	// declares, as the webhook saw it; its lane is the webhook.
	EntryWebhookCall = "webhook-call"
	// EntryRequestRefused is a request of a component (Kueue) that the
	// API server refused, from its audit log; its lane is the component.
	EntryRequestRefused = "request-refused"
	// EntryRequestHeld is a request a gate of the scenario held, and what
	// released it; its lane is the gate's component, user or actor.
	EntryRequestHeld = "request-held"
	// EntryEventKeptBack is a watch event a view of the scenario kept back
	// from a component, and what became of it.
	EntryEventKeptBack = "event-kept-back"
	// EntryListServedStale is a list of a (re)starting component that a
	// view served as of an earlier resourceVersion (staleList).
	EntryListServedStale = "list-served-stale"
	// EntryUpgradePart is one part of a live upgrade of the Trainer (its
	// CRDs applied, its managers started, ...); its lane is the Trainer's.
	EntryUpgradePart = "upgrade-part"
	// EntryJobSetCreated, EntryJobSetChanged (a new generation),
	// EntryJobSetSuspended, EntryJobSetResumed and EntryJobSetDeleted are
	// what happened to a JobSet.
	EntryJobSetCreated   = "jobset-created"
	EntryJobSetChanged   = "jobset-changed"
	EntryJobSetSuspended = "jobset-suspended"
	EntryJobSetResumed   = "jobset-resumed"
	EntryJobSetDeleted   = "jobset-deleted"
	// EntryJobCreated, EntryJobDeleted, EntryJobSuspended, EntryJobResumed
	// and EntryJobCondition (Complete or Failed) are what happened to a
	// Job.
	EntryJobCreated   = "job-created"
	EntryJobDeleted   = "job-deleted"
	EntryJobSuspended = "job-suspended"
	EntryJobResumed   = "job-resumed"
	EntryJobCondition = "job-condition"
	// EntryPodCreated, EntryPodDeleted, EntryPodBound (spec.nodeName set),
	// EntryPodUnschedulable (PodScheduled False) and EntryPodPhase (a new
	// status.phase) are what happened to a Pod.
	EntryPodCreated       = "pod-created"
	EntryPodDeleted       = "pod-deleted"
	EntryPodBound         = "pod-bound"
	EntryPodUnschedulable = "pod-unschedulable"
	EntryPodPhase         = "pod-phase"
	// EntryPodGroupCreated and EntryPodGroupPhase are what happened to a
	// scheduler-plugins PodGroup.
	EntryPodGroupCreated = "podgroup-created"
	EntryPodGroupPhase   = "podgroup-phase"
	// EntryEvent and EntryWarningEvent are core/v1 Events of type Normal
	// and Warning.
	EntryEvent        = "event"
	EntryWarningEvent = "warning-event"
)

// TimelineEntry is one write or one observed reaction.
type TimelineEntry struct {
	// At is when the write was sent, or when the runner observed the
	// reaction.
	At time.Time `json:"at"`
	// Duration is how long a write took; zero for reactions.
	Duration time.Duration `json:"duration,omitempty"`
	// Lane is the actor or controller the entry is drawn for.
	Lane string `json:"lane"`
	// Kind is one of the Entry* constants.
	Kind string `json:"kind"`
	// Object is kind/name of what the entry is about.
	Object string `json:"object,omitempty"`
	// Summary is one line: what happened.
	Summary string `json:"summary"`
	// Detail is more, on several lines: a write's message and mutations,
	// an event's message, what changed in a JobSet's spec.
	Detail string `json:"detail,omitempty"`
	// Step is the name of the step that ran when the entry happened,
	// "set-up" before the first.
	Step string `json:"step,omitempty"`
	// Status is a write's HTTP status code (0: no response).
	Status int `json:"status,omitempty"`
	// Write locates a write's full record in Steps.
	Write *WriteRef `json:"write,omitempty"`
}

// WriteRef locates a write in a Scenario: Steps[Step].Writes[Index], or
// Setup[Index] when Setup is true; counted from 0.
type WriteRef struct {
	Step  int  `json:"step"`
	Index int  `json:"index"`
	Setup bool `json:"setup,omitempty"`
}

// Pod is the part of a Pod a report shows.
type Pod struct {
	Name        string `json:"name"`
	Phase       string `json:"phase"`
	Node        string `json:"node,omitempty"`
	NodeProfile string `json:"nodeProfile,omitempty"`
	// Scheduling is the PodScheduled condition's reason and message when
	// the Pod is not scheduled.
	Scheduling string `json:"scheduling,omitempty"`
	// JobSet is the JobSet the Pod is of (its label
	// jobset.sigs.k8s.io/jobset-name), the TrainJob's name.
	JobSet string `json:"jobSet,omitempty"`
}

// Passed reports whether every scenario passed and the run was complete.
func (r *Run) Passed() bool {
	if r.Interrupted || r.Unfinished || len(r.MissingShards) > 0 {
		return false
	}
	for i := range r.Scenarios {
		if !r.Scenarios[i].Passed && r.Scenarios[i].Skipped == "" {
			return false
		}
	}
	return true
}

// Incomplete says in one line why the run holds fewer results than it was
// to, "run did not finish: 12 scenarios have results; 61 never reported",
// or "" when it ended normally.
func (r *Run) Incomplete() string {
	var what string
	switch {
	case len(r.MissingShards) > 0:
		return fmt.Sprintf("merged run lacks shard %s: its scenarios have no result", strings.Join(r.MissingShards, ", "))
	case r.Unfinished:
		what = "run did not finish"
	case r.Interrupted:
		what = "run was interrupted"
	default:
		return ""
	}
	have := "scenarios have"
	if len(r.Scenarios) == 1 {
		have = "scenario has"
	}
	return fmt.Sprintf("%s: %d %s results; %d never reported", what, len(r.Scenarios), have, len(r.NotReported))
}

// FirstLine is the first line of a failure or a message, as one-line
// summaries show it.
func FirstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
