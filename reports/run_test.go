package reports

import (
	"fmt"
	"slices"
	"time"

	"github.com/trainersim/trainersim/results"
)

// conflictMessage is what the API server says when a write carries a stale
// resourceVersion.
const conflictMessage = `Operation cannot be fulfilled on trainjobs.trainer.kubeflow.org "llm": the object has been modified; please apply your changes to the latest version and try again`

// at is a fixed instant of the test run, offset by d.
func at(d time.Duration) time.Time {
	return time.Date(2026, time.March, 14, 9, 26, 53, 0, time.UTC).Add(d)
}

// testRun is a representative run: one scenario that passed with a create,
// an apply and an expect step, and one where three managers race on one
// TrainJob, two of them get the 409 Conflict the scenario expects, and the
// expectation that follows fails with a diff.
func testRun() *results.Run {
	const ns1, ns2 = "create-and-apply-4f1c2a", "concurrent-resize-c21d9e"
	return &results.Run{
		Started:           at(0),
		Duration:          48316 * time.Millisecond,
		Cluster:           "envtest",
		KubernetesVersion: "v1.36.2",
		TrainerVersion:    "v2.3.0",
		JobSetVersion:     "v0.12.0",
		Scenarios: []results.Scenario{
			{
				Name:        "create-and-apply",
				File:        "scenarios/basics/create-and-apply.yaml",
				Description: "A user creates a TrainJob and the platform controller applies GPU resources to it; four Pods run on the A100 nodes.",
				Labels:      map[string]string{"area": "basics", "owner": "ml-platform"},
				Namespace:   ns1,
				Passed:      true,
				Started:     at(21 * time.Second),
				Duration:    6204 * time.Millisecond,
				Breakdown: results.Breakdown{
					SetUp: 410 * time.Millisecond, Writes: 230 * time.Millisecond, Waiting: 5300 * time.Millisecond,
					WaitingOn: map[string]time.Duration{"kwok": 3100 * time.Millisecond, "scheduler": 2200 * time.Millisecond},
					Recording: 60 * time.Millisecond, Teardown: 90 * time.Millisecond,
				},
				Steps: []results.Step{
					{
						Name:     "alice creates the TrainJob",
						Kind:     "create",
						Passed:   true,
						Started:  at(21*time.Second + 310*time.Millisecond),
						Duration: 14 * time.Millisecond,
						Writes: []results.Write{{
							Actor:                "alice",
							FieldManager:         "kubectl-create",
							Verb:                 "create",
							Target:               "TrainJob/" + ns1 + "/llm",
							Body:                 "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata:\n  name: llm\nspec:\n  runtimeRef:\n    name: torch-distributed\n  suspended: false\n  trainer:\n    numNodes: 4\n",
							Started:              at(21*time.Second + 311*time.Millisecond),
							Duration:             12 * time.Millisecond,
							ResourceVersionAfter: "1021",
							Status:               201,
							Warnings:             []string{`unknown field "spec.suspended"`},
							Expected:             true,
						}},
					},
					{
						Name:     "platform applies GPU resources",
						Kind:     "apply",
						Passed:   true,
						Started:  at(21*time.Second + 330*time.Millisecond),
						Duration: 9 * time.Millisecond,
						Writes: []results.Write{{
							Actor:                 "platform",
							FieldManager:          "platform-controller",
							Verb:                  "apply",
							PatchType:             "apply",
							Target:                "TrainJob/" + ns1 + "/llm",
							Body:                  "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata:\n  name: llm\nspec:\n  trainer:\n    resourcesPerNode:\n      limits:\n        nvidia.com/gpu: \"8\"\n",
							Started:               at(21*time.Second + 331*time.Millisecond),
							Duration:              8 * time.Millisecond,
							ResourceVersionBefore: "1021",
							ResourceVersionAfter:  "1024",
							Status:                200,
							Expected:              true,
							Mutations: []results.FieldChange{
								{Path: "spec.runtimePatches[manager=kueue.x-k8s.io/manager].time", Kind: results.FieldAdded, Stored: `"2026-03-14T09:27:14Z"`},
								{Path: "spec.trainer.resourcesPerNode.limits.cpu", Kind: results.FieldChanged, Sent: "1", Stored: `"1"`},
							},
						}},
						Owners: []results.EntryOwners{
							{TrainJob: "llm", Entry: "kueue.x-k8s.io/manager", Managers: []string{"kueue-admission", "platform-controller"}},
							{TrainJob: "llm", Entry: "trainer.kubeflow.org/kubeflow-sdk", Managers: []string{"kubectl-create"}},
						},
					},
					{
						Name:     "four Pods run on a100 nodes",
						Kind:     "expect",
						Passed:   true,
						Started:  at(21*time.Second + 340*time.Millisecond),
						Duration: 5812 * time.Millisecond,
					},
				},
				FinalPods: []results.Pod{
					{Name: "llm-node-0-0-5xq2v", Phase: "Running", Node: "a100-0", NodeProfile: "nvidia-a100-80gb"},
					{Name: "llm-node-0-1-8kd7w", Phase: "Running", Node: "a100-1", NodeProfile: "nvidia-a100-80gb"},
					{Name: "llm-node-0-2-jt4nc", Phase: "Running", Node: "a100-2", NodeProfile: "nvidia-a100-80gb"},
					{Name: "llm-node-0-3-r9mzb", Phase: "Running", Node: "a100-3", NodeProfile: "nvidia-a100-80gb"},
				},
				Timeline: passedTimeline(),
			},
			{
				Name:        "concurrent-resize",
				File:        "scenarios/conflicts/concurrent-resize.yaml",
				Description: "Kueue suspends the TrainJob while alice and the autoscaler both change numNodes from the same resourceVersion: kueue wins, both updates get 409 Conflict, and the trainer must suspend the JobSet.",
				Labels:      map[string]string{"area": "conflicts"},
				Namespace:   ns2,
				Passed:      false,
				Failure:     `step "the JobSet is suspended too": JobSet concurrent-resize-c21d9e/llm did not match within 30s;`,
				Started:     at(27*time.Second + 600*time.Millisecond),
				Duration:    31870 * time.Millisecond,
				Interleaving: &results.Interleaving{
					Step:   "three managers race",
					Order:  []string{"kueue suspends", "alice resizes", "autoscaler resizes"},
					Seed:   4,
					Replay: "simctl run --seed 4 --run '^concurrent-resize$' scenarios/conflicts/concurrent-resize.yaml",
					Index:  2,
					Of:     6,
				},
				Steps: []results.Step{
					{
						Name:     "create llm",
						Kind:     "create",
						Passed:   true,
						Started:  at(27*time.Second + 910*time.Millisecond),
						Duration: 13 * time.Millisecond,
						Writes: []results.Write{{
							Actor:                "alice",
							FieldManager:         "kubectl-create",
							Verb:                 "create",
							Target:               "TrainJob/" + ns2 + "/llm",
							Body:                 "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata:\n  name: llm\nspec:\n  runtimeRef:\n    name: torch-distributed\n  trainer:\n    numNodes: 2\n",
							Started:              at(27*time.Second + 911*time.Millisecond),
							Duration:             11 * time.Millisecond,
							ResourceVersionAfter: "2040",
							Status:               201,
							Expected:             true,
						}},
					},
					{
						Name:     "three managers race",
						Kind:     "concurrently",
						Passed:   true,
						Started:  at(27*time.Second + 930*time.Millisecond),
						Duration: 21 * time.Millisecond,
						Order:    []string{"kueue suspends", "alice resizes", "autoscaler resizes"},
						Cases:    []string{"kueue first wins"},
						Writes: []results.Write{
							{
								Actor:                 "kueue",
								FieldManager:          "kueue-admission",
								Verb:                  "patch",
								PatchType:             "merge",
								Target:                "TrainJob/" + ns2 + "/llm",
								Body:                  "spec:\n  suspend: true\n",
								Started:               at(27*time.Second + 930*time.Millisecond + 400*time.Microsecond),
								Duration:              9 * time.Millisecond,
								ResourceVersionBefore: "2040",
								ResourceVersionAfter:  "2041",
								Status:                200,
								Expected:              true,
							},
							{
								Actor:                 "alice",
								FieldManager:          "kubectl-edit",
								Verb:                  "update",
								Target:                "TrainJob/" + ns2 + "/llm",
								Body:                  "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata:\n  name: llm\n  resourceVersion: \"2040\"\nspec:\n  runtimeRef:\n    name: torch-distributed\n  trainer:\n    numNodes: 4\n",
								Started:               at(27*time.Second + 930*time.Millisecond + 600*time.Microsecond),
								Duration:              14 * time.Millisecond,
								ResourceVersionBefore: "2040",
								Status:                409,
								Reason:                "Conflict",
								Message:               conflictMessage,
								Expected:              true,
							},
							{
								Actor:                 "autoscaler",
								FieldManager:          "trainjob-autoscaler",
								Verb:                  "update",
								Target:                "TrainJob/" + ns2 + "/llm",
								Body:                  "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata:\n  name: llm\n  resourceVersion: \"2040\"\nspec:\n  runtimeRef:\n    name: torch-distributed\n  trainer:\n    numNodes: 8\n",
								Started:               at(27*time.Second + 930*time.Millisecond + 900*time.Microsecond),
								Duration:              17 * time.Millisecond,
								ResourceVersionBefore: "2040",
								Status:                409,
								Reason:                "Conflict",
								Message:               conflictMessage,
								Expected:              true,
							},
						},
					},
					{
						Name:    "the JobSet is suspended too",
						Kind:    "expect",
						Passed:  false,
						Started: at(27*time.Second + 955*time.Millisecond),
						// The expectation polls until its deadline.
						Duration: 30002 * time.Millisecond,
						Failure:  "JobSet concurrent-resize-c21d9e/llm did not match within 30s;\nthe last object read had resourceVersion 2057.",
						Diff: "  map[string]any{\n" +
							"  \t\"spec\": map[string]any{\n" +
							"- \t\t\"suspend\": bool(true),\n" +
							"+ \t\t\"suspend\": bool(false),\n" +
							"  \t},\n" +
							"  \t\"status\": map[string]any{\n" +
							"  \t\t\"conditions\": []any{\n" +
							"- \t\t\tmap[string]any{\"status\": string(\"True\"), \"type\": string(\"Suspended\")},\n" +
							"+ \t\t\tmap[string]any{\"status\": string(\"False\"), \"type\": string(\"Suspended\")},\n" +
							"  \t\t},\n" +
							"  \t},\n" +
							"  }\n",
					},
				},
				FinalPods: []results.Pod{
					{Name: "llm-node-0-0-2hb6d", Phase: "Running", Node: "h100-0", NodeProfile: "nvidia-h100-80gb"},
					{Name: "llm-node-0-1-q7fxs", Phase: "Pending", Scheduling: "Unschedulable: 0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) had untolerated taint {trainersim.dev/isolation: other}."},
				},
				Timeline: failedTimeline(),
			},
		},
	}
}

// passedTimeline is the timeline of testRun's first scenario: two writes,
// then the JobSet, its Job, four Pods created, bound and Running, and the
// events that say so.
func passedTimeline() *results.Timeline {
	const ns = "create-and-apply-4f1c2a"
	ms := func(n int) time.Time { return at(21*time.Second + time.Duration(n)*time.Millisecond) }
	tl := &results.Timeline{
		Lanes: []string{"alice", "platform", "trainer", "jobset", "job-controller", "scheduler", "kwok"},
		Entries: []results.TimelineEntry{
			{At: ms(311), Duration: 12 * time.Millisecond, Lane: "alice", Kind: results.EntryWrite, Object: "TrainJob " + ns + "/llm", Summary: "create TrainJob " + ns + "/llm: 201 Created",
				Detail: "field manager: kubectl-create\nresourceVersion: (absent) → 1021", Step: "alice creates the TrainJob", Status: 201, Write: &results.WriteRef{Step: 0, Index: 0}},
			{At: ms(331), Duration: 8 * time.Millisecond, Lane: "platform", Kind: results.EntryWrite, Object: "TrainJob " + ns + "/llm", Summary: "apply TrainJob " + ns + "/llm: 200 OK",
				Detail: "field manager: platform-controller\nresourceVersion: 1021 → 1024\nthe server changed:\n  spec.runtimePatches[manager=kueue.x-k8s.io/manager].time: added \"2026-03-14T09:27:14Z\"",
				Step:   "platform applies GPU resources", Status: 200, Write: &results.WriteRef{Step: 1, Index: 0}},
			{At: ms(1210), Lane: "trainer", Kind: results.EntryJobSetCreated, Object: "JobSet/llm", Summary: "JobSet llm created (suspend: false)", Detail: "replicatedJobs: node x1", Step: "four Pods run on a100 nodes"},
			{At: ms(1262), Lane: "jobset", Kind: results.EntryJobCreated, Object: "Job/llm-node-0", Summary: "Job llm-node-0 created (suspend: false)", Detail: "parallelism 4, completions 4", Step: "four Pods run on a100 nodes"},
		},
	}
	pods := []string{"llm-node-0-0-5xq2v", "llm-node-0-1-8kd7w", "llm-node-0-2-jt4nc", "llm-node-0-3-r9mzb"}
	for i, p := range pods {
		step := "four Pods run on a100 nodes"
		tl.Entries = append(tl.Entries,
			results.TimelineEntry{At: ms(1290 + 3*i), Lane: "job-controller", Kind: results.EntryPodCreated, Object: "Pod/" + p, Summary: "Pod " + p + " created", Detail: "owner: Job/llm-node-0", Step: step},
			results.TimelineEntry{At: ms(1292 + 3*i), Lane: "job-controller", Kind: results.EntryEvent, Object: "Job/llm-node-0", Summary: "event SuccessfulCreate on Job/llm-node-0: Created pod: " + p, Detail: "Normal event from job-controller\nCreated pod: " + p, Step: step},
			results.TimelineEntry{At: ms(1330 + 9*i), Lane: "scheduler", Kind: results.EntryPodBound, Object: "Pod/" + p, Summary: fmt.Sprintf("Pod %s bound to node a100-%d", p, i), Step: step},
			results.TimelineEntry{At: ms(1420 + 11*i), Lane: "kwok", Kind: results.EntryPodPhase, Object: "Pod/" + p, Summary: "Pod " + p + " Running", Step: step},
		)
	}
	slices.SortStableFunc(tl.Entries, func(a, b results.TimelineEntry) int { return a.At.Compare(b.At) })
	return tl
}

// failedTimeline is the timeline of testRun's second scenario: the race
// of three writes, the trainer's JobSet never suspended, a Pod that cannot
// be scheduled, and a watch that could not start.
func failedTimeline() *results.Timeline {
	const ns = "concurrent-resize-c21d9e"
	ms := func(n int) time.Time { return at(27*time.Second + time.Duration(n)*time.Millisecond) }
	step := "the JobSet is suspended too"
	return &results.Timeline{
		Lanes: []string{"alice", "kueue", "autoscaler", "trainer", "jobset", "job-controller", "scheduler", "kwok"},
		Entries: []results.TimelineEntry{
			{At: ms(911), Duration: 11 * time.Millisecond, Lane: "alice", Kind: results.EntryWrite, Object: "TrainJob " + ns + "/llm", Summary: "create TrainJob " + ns + "/llm: 201 Created",
				Detail: "field manager: kubectl-create\nresourceVersion: (absent) → 2040", Step: "create llm", Status: 201, Write: &results.WriteRef{Step: 0, Index: 0}},
			{At: ms(925), Lane: "trainer", Kind: results.EntryJobSetCreated, Object: "JobSet/llm", Summary: "JobSet llm created (suspend: false)", Step: "create llm"},
			{At: ms(930).Add(400 * time.Microsecond), Duration: 9 * time.Millisecond, Lane: "kueue", Kind: results.EntryWrite, Object: "TrainJob " + ns + "/llm", Summary: "patch (merge) TrainJob " + ns + "/llm: 200 OK",
				Detail: "field manager: kueue-admission\nresourceVersion: 2040 → 2041", Step: "three managers race", Status: 200, Write: &results.WriteRef{Step: 1, Index: 0}},
			{At: ms(930).Add(600 * time.Microsecond), Duration: 14 * time.Millisecond, Lane: "alice", Kind: results.EntryWrite, Object: "TrainJob " + ns + "/llm", Summary: "update TrainJob " + ns + "/llm: 409 Conflict",
				Detail: "field manager: kubectl-edit\nresourceVersion: 2040 → (absent)\nrefused, as expected\nmessage: " + conflictMessage, Step: "three managers race", Status: 409, Write: &results.WriteRef{Step: 1, Index: 1}},
			{At: ms(930).Add(900 * time.Microsecond), Duration: 17 * time.Millisecond, Lane: "autoscaler", Kind: results.EntryWrite, Object: "TrainJob " + ns + "/llm", Summary: "update TrainJob " + ns + "/llm: 409 Conflict",
				Detail: "field manager: trainjob-autoscaler\nresourceVersion: 2040 → (absent)\nrefused, as expected\nmessage: " + conflictMessage, Step: "three managers race", Status: 409, Write: &results.WriteRef{Step: 1, Index: 2}},
			{At: ms(948), Lane: "trainer", Kind: results.EntryTrainJobCondition, Object: "TrainJob/llm", Summary: "TrainJob llm: condition Suspended=True (Suspended)", Detail: "TrainJob is suspended", Step: step},
			{At: ms(2100), Lane: "job-controller", Kind: results.EntryPodCreated, Object: "Pod/llm-node-0-1-q7fxs", Summary: "Pod llm-node-0-1-q7fxs created", Step: step},
			{At: ms(2150), Lane: "scheduler", Kind: results.EntryPodUnschedulable, Object: "Pod/llm-node-0-1-q7fxs", Summary: "Pod llm-node-0-1-q7fxs not scheduled: Unschedulable", Detail: "0/2 nodes are available: 1 Insufficient nvidia.com/gpu.", Step: step},
			{At: ms(2151), Lane: "scheduler", Kind: results.EntryWarningEvent, Object: "Pod/llm-node-0-1-q7fxs", Summary: "event FailedScheduling on Pod/llm-node-0-1-q7fxs: 0/2 nodes are available: 1 Insufficient nvidia.com/gpu.",
				Detail: "Warning event from default-scheduler\n0/2 nodes are available: 1 Insufficient nvidia.com/gpu.", Step: step},
		},
		Problems: []string{"failed to list podgroups within 10s"},
	}
}
