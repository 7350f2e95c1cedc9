package scenario

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trainersim/trainersim/sim/apis/v1alpha1"
)

// testFixtures is the fixtures directory of the testdata scenarios.
const testFixtures = "testdata/fixtures"

// invalid maps each testdata/invalid-*.yaml to every problem it must
// produce, in order.
var invalid = map[string][]string{
	// Each placeholder of an import, alone at its field: not the CRD's
	// "must be of type object" for a runtime's spec, nor the schema's
	// unknown profile.
	"invalid-placeholders.yaml": {
		`testdata/invalid-placeholders.yaml:9:14: spec.nodes[0].profile: a placeholder simctl import left: the profile of node gpu-7, which the log does not hold; fill it in, or import again with --from-cluster KUBECONFIG to read it from the cluster`,
		`testdata/invalid-placeholders.yaml:17:13: spec.setup[0].object.spec: a placeholder simctl import left: TrainingRuntime team-runtime's spec, created before the log began; fill it in, or import again with --from-cluster KUBECONFIG to read it from the cluster`,
	},
	"invalid-webhooks.yaml": {
		`testdata/invalid-webhooks.yaml:7:5: spec.webhooks[0]: a webhook writes an entry (manager and entry), holds requests (hold), or both`,
		`testdata/invalid-webhooks.yaml:7:11: spec.webhooks[0].name: invalid name "Platform_Defaults": a DNS subdomain (lowercase letters, digits, '-' and '.')`,
		`testdata/invalid-webhooks.yaml:8:13: spec.webhooks[0].object: unsupported object "Pod": a webhook intercepts TrainJob`,
		`testdata/invalid-webhooks.yaml:9:18: spec.webhooks[0].operations[0]: unknown operation "DELETE": must be CREATE or UPDATE`,
		`testdata/invalid-webhooks.yaml:11:25: spec.webhooks[0].reinvocationPolicy: unknown policy "Always": must be Never or IfNeeded`,
		`testdata/invalid-webhooks.yaml:12:20: spec.webhooks[0].failurePolicy: unknown policy "Retry": must be Fail or Ignore`,
		`testdata/invalid-webhooks.yaml:14:5: spec.webhooks[1].entry: must give the entry's trainingRuntimeSpec`,
		`testdata/invalid-webhooks.yaml:18:17: spec.webhooks[1].hold.requests: unknown requests "slow": must be "unsuspend"`,
		`testdata/invalid-webhooks.yaml:19:14: spec.webhooks[1].hold.until: no step is named "no such step"`,
		`testdata/invalid-webhooks.yaml:23:5: spec.webhooks[2].hold: an unsuspend is an UPDATE: add UPDATE to operations`,
		`testdata/invalid-webhooks.yaml:31:14: spec.webhooks[3].hold.until: step "on some releases" runs on some Trainer releases only (its trainer.versions): on the others the requests would be held to the end; name a step every release runs`,
		`testdata/invalid-webhooks.yaml:39:16: spec.steps[1].expect.holding: the hold of webhook "gate2" ends with step "later" (spec.steps[0]): expect it holding before`,
		`testdata/invalid-webhooks.yaml:41:20: spec.steps[1].expect.requests[0].component: component "kueue" is not in spec.components, which names none: add it there`,
		`testdata/invalid-webhooks.yaml:42:15: spec.steps[1].expect.requests[0].verb: unknown verb "get": must be create, update, patch or delete`,
		`testdata/invalid-webhooks.yaml:44:17: spec.steps[1].expect.requests[0].target.kind: unsupported kind "Pod": the audit log records the components' requests to TrainJobs`,
		`testdata/invalid-webhooks.yaml:46:22: spec.steps[1].expect.requests[0].target.namespace: a component's requests are looked up in the scenario's namespace: leave namespace out`,
		`testdata/invalid-webhooks.yaml:47:17: spec.steps[1].expect.requests[0].status: must be an HTTP status code, found 0`,
	},
	"invalid-components.yaml": {
		`testdata/invalid-components.yaml:7:5: spec.components[0]: unknown component "volcano": must be kueue`,
		"testdata/invalid-components.yaml:11:3: spec.queues: queues are Kueue's: add kueue to spec.components",
		"testdata/invalid-components.yaml:12:17: spec.queues.localQueue: must name the LocalQueue",
		`testdata/invalid-components.yaml:13:17: spec.queues.preemption: unknown preemption "Always": must be Never, LowerPriority or LowerOrNewerEqualPriority`,
		`testdata/invalid-components.yaml:16:18: spec.queues.flavors[0].nodeLabel: profile nvidia-h100-80gb has no label "no-such-label"`,
		`testdata/invalid-components.yaml:17:12: spec.queues.flavors[0].gpu: invalid quantity "eight": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`,
		"testdata/invalid-components.yaml:18:16: spec.queues.flavors[1].profile: the scenario has no nodes of profile nvidia-l4 (spec.nodes)",
		`testdata/invalid-components.yaml:20:19: spec.queues.teams[0].localQueue: invalid name "Team_B": a DNS subdomain (lowercase letters, digits, '-' and '.')`,
		"testdata/invalid-components.yaml:21:7: spec.queues.teams[0].flavors: a ClusterQueue needs at least one flavor",
		`testdata/invalid-components.yaml:24:9: spec.queues.teams[1].flavors[0]: flavor "nvidia-h100-80gb" is of profile nvidia-h100-80gb, node label "no-such-label" in another queue: one name is one ResourceFlavor, give this one another name`,
		"testdata/invalid-components.yaml:25:18: spec.queues.teams[1].flavors[0].profile: the scenario has no nodes of profile nvidia-a100-80gb (spec.nodes)",
		`testdata/invalid-components.yaml:26:19: spec.queues.teams[2].localQueue: duplicate LocalQueue "team-c"`,
		`testdata/invalid-components.yaml:28:9: spec.queues.teams[2].flavors[0]: flavor "nvidia-h100-80gb" is of profile nvidia-h100-80gb, node label "no-such-label" in another queue: one name is one ResourceFlavor, give this one another name`,
	},
	"invalid-trainer-versions.yaml": {
		"testdata/invalid-trainer-versions.yaml:22:9: spec.steps[0].create.spec.runtimePatches: exists in Trainer >=v2.2.0 only, not in v2.1.0, which this step holds for: narrow spec.trainer.versions or the step's trainer.versions",
		`testdata/invalid-trainer-versions.yaml:26:17: spec.steps[1].trainer.versions: range ">=v2.3.0" holds no Trainer release this scenario can run on (of v2.1.0)`,
		`testdata/invalid-trainer-versions.yaml:34:17: spec.steps[2].trainer.versions: invalid version "~2.2" in range "~2.2": a comparison is >=, <=, >, < or = and a version such as v2.2.0`,
		"testdata/invalid-trainer-versions.yaml:39:9: spec.steps[2].concurrently.writes[0].trainer: a concurrent write cannot have a trainer range of its own: set it on the concurrently step",
	},
	"invalid-target-api-version.yaml": {
		"testdata/invalid-target-api-version.yaml:12:17: spec.steps[0].expect.objects[0].target.kind: kind ResourceQuota needs an apiVersion (only ClusterTrainingRuntime, ConfigMap, Event, Job, JobSet, Namespace, Node, PersistentVolumeClaim, Pod, PodGroup, Secret, Service, ServiceAccount, TrainJob, TrainingRuntime may omit it)",
	},
	"invalid-node-step.yaml": {
		`testdata/invalid-node-step.yaml:12:11: spec.nodes[2].name: invalid group name "GPU": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
		`testdata/invalid-node-step.yaml:21:13: spec.steps[0].node.name: node "cpu-0" is ambiguous: two groups of profile cpu, give them names`,
		`testdata/invalid-node-step.yaml:25:13: spec.steps[1].node.name: unknown node "gpu-3" (nodes: cpu-0, cpu-0 to cpu-1, GPU-0, h100-0 to h100-1)`,
		`testdata/invalid-node-step.yaml:26:15: spec.steps[1].node.action: unknown action "reboot": must be notReady, unreachable, ready, cordon, uncordon, drain or delete`,
		`testdata/invalid-node-step.yaml:29:13: spec.steps[2].node.name: unknown node "h100-2": group h100 has 2 (h100-0 to h100-1)`,
	},
	"invalid-lifecycle.yaml": {
		"testdata/invalid-lifecycle.yaml:8:5: spec.lifecycle[0].selector.matchLabels: a lifecycle rule must select its Pods by at least one label",
		"testdata/invalid-lifecycle.yaml:14:5: spec.lifecycle[1].fail: a Pod cannot both succeed and fail: give succeedAfter or fail, not both",
		"testdata/invalid-lifecycle.yaml:15:17: spec.lifecycle[1].fail.exitCode: must be 1 to 255 (a container that exits 0 succeeded), found 0",
		`testdata/invalid-lifecycle.yaml:16:15: spec.lifecycle[1].fail.reason: unknown reason "Crashed": must be Error or OOMKilled`,
		"testdata/invalid-lifecycle.yaml:17:5: spec.lifecycle[2]: must give succeedAfter or fail",
		"testdata/invalid-lifecycle.yaml:27:7: spec.steps[1].kubelet.pods.matchLabels: a kubelet step must select its Pods by at least one label",
		`testdata/invalid-lifecycle.yaml:28:15: spec.steps[1].kubelet.action: unknown action "crash": must be complete, fail or restart`,
		"testdata/invalid-lifecycle.yaml:35:17: spec.steps[2].kubelet.exitCode: complete ends every container with exit code 0: exitCode is for fail and restart",
		`testdata/invalid-lifecycle.yaml:38:7: spec.steps[3].kubelet.pods: impossible transition: step "complete" completed these Pods (Succeeded), a kubelet cannot restart them again`,
		`testdata/invalid-lifecycle.yaml:42:15: spec.steps[3].kubelet.reason: unknown reason "Killed": must be Error or OOMKilled`,
	},
	"invalid-interleavings.yaml": {
		"testdata/invalid-interleavings.yaml:15:17: spec.steps[0].concurrently.interleavings.orders: 3 orders asked, but 2 writes have only 2",
		"testdata/invalid-interleavings.yaml:17:11: spec.steps[0].concurrently.interleavings.cases[0]: a case needs outcomes or expect",
		"testdata/invalid-interleavings.yaml:17:17: spec.steps[0].concurrently.interleavings.cases[0].name: must not be empty",
		`testdata/invalid-interleavings.yaml:18:18: spec.steps[0].concurrently.interleavings.cases[0].first: "w9" is not a write of this group (writes: w1, w2)`,
		"testdata/invalid-interleavings.yaml:19:11: spec.steps[0].concurrently.interleavings.cases[0].order: order needs at least 2 writes, found 1",
		`testdata/invalid-interleavings.yaml:21:23: spec.steps[0].concurrently.interleavings.cases[1].order[1]: "w1" is named twice`,
		"testdata/invalid-interleavings.yaml:22:11: spec.steps[0].concurrently.interleavings.cases[1].expect: expect needs at least one of pods, objects, events, owners, noOverlaps, requests, holding or held",
		"testdata/invalid-interleavings.yaml:23:11: spec.steps[0].concurrently.interleavings.cases[2]: a case needs first or order to say which orders it is about",
		"testdata/invalid-interleavings.yaml:23:11: spec.steps[0].concurrently.interleavings.cases[2]: a case needs outcomes or expect",
		`testdata/invalid-interleavings.yaml:23:17: spec.steps[0].concurrently.interleavings.cases[2].name: duplicate case name "twice"`,
		"testdata/invalid-interleavings.yaml:33:7: spec.steps[1].concurrently.interleavings: only one concurrently group of a scenario may explore interleavings; spec.steps[0] does already",
		"testdata/invalid-interleavings.yaml:34:17: spec.steps[1].concurrently.interleavings.orders: all orders of 6 writes are 720 runs of the scenario; all allows at most 5 writes: give a number instead",
	},
	"invalid-orders.yaml": {
		`testdata/invalid-orders.yaml:15:17: spec.steps[0].concurrently.interleavings.orders: orders must be all or a positive number, found "some"`,
		"testdata/invalid-orders.yaml:22:17: spec.steps[1].concurrently.interleavings.orders: orders must be all or a positive number, found 0",
		"testdata/invalid-orders.yaml:29:17: spec.steps[2].concurrently.interleavings.orders: expected all or a positive number, found a list",
	},
	"invalid-unknown-field-top.yaml": {
		`testdata/invalid-unknown-field-top.yaml:6:1: unknown field "steps"`,
	},
	"invalid-unknown-field-deep.yaml": {
		`testdata/invalid-unknown-field-deep.yaml:9:5: spec.actors[0]: unknown field "fieldmanager" (did you mean "fieldManager"?)`,
		`testdata/invalid-unknown-field-deep.yaml:18:11: spec.steps[0].concurrently.writes[0].expectError: unknown field "statusCode"`,
		`testdata/invalid-unknown-field-deep.yaml:26:9: spec.steps[1].expect.pods: unknown field "nodeprofile" (did you mean "nodeProfile"?)`,
		`testdata/invalid-unknown-field-deep.yaml:29:11: spec.steps[1].expect.pods.selector: unknown field "matchExpressions"`,
	},
	"invalid-api-version.yaml": {
		`testdata/invalid-api-version.yaml:2:13: apiVersion: unsupported apiVersion "chainsaw.kyverno.io/v1alpha1", expected "sim.trainersim.dev/v1alpha1"`,
	},
	"invalid-kind.yaml": {
		`testdata/invalid-kind.yaml:3:7: kind: unsupported kind "Test", expected "Scenario"`,
	},
	"invalid-unknown-actor.yaml": {
		`testdata/invalid-unknown-actor.yaml:14:12: spec.steps[0].actor: unknown actor "kuee" (declared actors: sdk, kueue)`,
	},
	"invalid-unknown-profile.yaml": {
		`testdata/invalid-unknown-profile.yaml:8:14: spec.nodes[0].profile: unknown profile "nvidia-b200": must be cpu, nvidia-a100-80gb, nvidia-h100-80gb, nvidia-l4 or nvidia-tesla-v100`,
		`testdata/invalid-unknown-profile.yaml:9:12: spec.nodes[0].count: must be at least 1, found 0`,
		`testdata/invalid-unknown-profile.yaml:12:15: spec.nodes[0].taints[0].effect: unknown taint effect "NoEvict": must be NoSchedule, PreferNoSchedule or NoExecute`,
		`testdata/invalid-unknown-profile.yaml:17:22: spec.steps[0].expect.pods.nodeProfile: unknown profile "h100": must be cpu, nvidia-a100-80gb, nvidia-h100-80gb, nvidia-l4 or nvidia-tesla-v100`,
	},
	"invalid-target-selector.yaml": {
		`testdata/invalid-target-selector.yaml:8:5: spec.steps[0].get.name: must not be empty`,
		`testdata/invalid-target-selector.yaml:10:7: spec.steps[0].get.selector: only a patch or a delete target may use a selector`,
		`testdata/invalid-target-selector.yaml:15:13: spec.steps[1].delete.name: name and selector are exclusive`,
		`testdata/invalid-target-selector.yaml:23:9: spec.steps[2].patch.target.selector: must have matchLabels`,
	},
	"invalid-malformed-yaml.yaml": {
		`testdata/invalid-malformed-yaml.yaml:9:10: invalid YAML: did not find expected ',' or '}': the flow mapping that begins here is not closed`,
	},
	"invalid-wrong-type.yaml": {
		`testdata/invalid-wrong-type.yaml:7:11: metadata.labels.gpus: expected a string, found integer 8 (quote it to make it a string)`,
		`testdata/invalid-wrong-type.yaml:10:5: spec.nodes: expected a list, found a mapping`,
		`testdata/invalid-wrong-type.yaml:14:19: spec.actors[0].fieldManager: expected a string, found a list`,
		`testdata/invalid-wrong-type.yaml:17:12: spec.steps[0].force: expected true or false, found string "yes"`,
		`testdata/invalid-wrong-type.yaml:18:13: spec.steps[0].create: expected a mapping, found string "a ConfigMap"`,
		`testdata/invalid-wrong-type.yaml:20:15: spec.steps[0].expectError.status: expected an integer, found string "403"`,
		`testdata/invalid-wrong-type.yaml:24:16: spec.steps[1].expect.pods.count: expected an integer, found string "two"`,
		`testdata/invalid-wrong-type.yaml:25:19: spec.steps[1].expect.pods.selector: expected a mapping, found a list`,
	},
	"invalid-missing-required.yaml": {
		`testdata/invalid-missing-required.yaml:2:1: missing required field "kind"`,
		`testdata/invalid-missing-required.yaml:4:3: metadata: missing required field "name"`,
		`testdata/invalid-missing-required.yaml:7:5: spec.nodes[0]: missing required field "profile"`,
		`testdata/invalid-missing-required.yaml:9:5: spec.actors[0]: missing required field "fieldManager"`,
		`testdata/invalid-missing-required.yaml:11:5: spec.steps[0]: missing required field "name"`,
		`testdata/invalid-missing-required.yaml:15:7: spec.steps[0].patch.body: required field has no value`,
	},
	"invalid-duplicate-step-name.yaml": {
		`testdata/invalid-duplicate-step-name.yaml:10:11: spec.steps[1].name: duplicate step name "read" (first used by spec.steps[0] at line 8)`,
		`testdata/invalid-duplicate-step-name.yaml:12:11: spec.steps[2].name: must not be empty`,
	},
	"invalid-update-from.yaml": {
		`testdata/invalid-update-from.yaml:14:13: spec.steps[1].update.from: step "read" (spec.steps[5]) comes later: from names an earlier step`,
		`testdata/invalid-update-from.yaml:17:13: spec.steps[2].update.from: a step cannot update from itself: from names an earlier step`,
		`testdata/invalid-update-from.yaml:20:13: spec.steps[3].update.from: step "wait" has no write or get whose object could be the base`,
		`testdata/invalid-update-from.yaml:23:13: spec.steps[4].update.from: no step is named "nowhere"`,
		`testdata/invalid-update-from.yaml:27:5: spec.steps[6].update: update takes object or from, not both`,
		`testdata/invalid-update-from.yaml:31:5: spec.steps[7].update: update needs object or from`,
		`testdata/invalid-update-from.yaml:32:7: spec.steps[7].update.set: set is only valid with from`,
	},
	"invalid-unknown-fixture.yaml": {
		`testdata/invalid-unknown-fixture.yaml:8:11: spec.setup[0].path: unknown fixture "runtimes/torch-distributed.yaml": no such file in testdata/fixtures`,
		`testdata/invalid-unknown-fixture.yaml:9:11: spec.setup[1].path: fixture path "../../fixtures/runtimes/torch_distribute..." must be relative to the fixtures directory testdata/fixtures and stay inside it`,
		`testdata/invalid-unknown-fixture.yaml:10:11: spec.setup[2].path: fixture "runtimes" is a directory in testdata/fixtures, not a file`,
		`testdata/invalid-unknown-fixture.yaml:11:5: spec.setup[3]: a setup entry needs object or path`,
		`testdata/invalid-unknown-fixture.yaml:12:5: spec.setup[4]: a setup entry takes object or path, not both`,
		`testdata/invalid-unknown-fixture.yaml:14:5: spec.setup[5].object: the object needs apiVersion`,
	},
	"invalid-gate-hold-name.yaml": {
		`testdata/invalid-gate-hold-name.yaml:14:11: spec.gates[0].name: gate name "platform-policy-hold" is the name of webhook "platform-policy"'s hold, which is served as a gate: choose another`,
	},
	"invalid-gates.yaml": {
		`testdata/invalid-gates.yaml:11:16: spec.gates[0].component: component "kueue" is not in spec.components: the scenario does not run it; add it there`,
		`testdata/invalid-gates.yaml:12:11: spec.gates[0].verb: unknown verb "apply": must be create, update, patch or delete`,
		`testdata/invalid-gates.yaml:13:15: spec.gates[0].resource: invalid resource "TrainJobs": a plural resource name, a subresource after a slash (trainjobs, pods/binding)`,
		`testdata/invalid-gates.yaml:14:5: spec.gates[1]: a gate holds the requests of one component, user or actor: set one of the three`,
		`testdata/invalid-gates.yaml:16:5: spec.gates[1].change: a change names a field (with from and to) or an entry's manager, one of the two`,
		`testdata/invalid-gates.yaml:19:5: spec.gates[2]: a gate holds the requests of one component, user or actor: set one of the three`,
		`testdata/invalid-gates.yaml:24:12: spec.gates[3].actor: unknown actor "ghost" (declared actors: sdk)`,
		`testdata/invalid-gates.yaml:27:12: spec.gates[3].until: no step is named "no such step"`,
		`testdata/invalid-gates.yaml:29:16: spec.gates[4].component: unknown component "kube-proxy": must be one of trainer, jobset, kube-controller-manager, kube-scheduler, kwok, local-path-provisioner, kube-controller-manager/<controller>, or one of spec.components`,
		`testdata/invalid-gates.yaml:32:14: spec.gates[4].change.field: invalid path "spec..suspend": empty field name: a path from the object's root, list items by key or position (spec.suspend, status.jobsStatus[name=node].active)`,
		`testdata/invalid-gates.yaml:46:16: spec.steps[0].expect.held[0].count: must not be negative, found -1`,
		`testdata/invalid-gates.yaml:49:13: spec.steps[1].release.gate: gate "opened" is open since step "first" (spec.steps[0]), its until: this release holds nothing`,
		`testdata/invalid-gates.yaml:52:13: spec.steps[2].release.gate: unknown gate "missing" (declared gates: kueue-admits, nobody, two, ghost, unknown, opened)`,
		`testdata/invalid-gates.yaml:55:15: spec.steps[2].expect.held[0].gate: unknown gate "missing" (declared gates: kueue-admits, nobody, two, ghost, unknown, opened)`,
		`testdata/invalid-gates.yaml:60:16: spec.steps[3].concurrently.writes[0].actor: a release lets a gate's component through: it has no actor`,
		`testdata/invalid-gates.yaml:61:9: spec.steps[3].concurrently.writes[0].release: a release in a concurrently group is an entry of its own: put delete in another`,
		`testdata/invalid-gates.yaml:61:25: spec.steps[3].concurrently.writes[0].release.gate: gate "opened" is open since step "first" (spec.steps[0]), its until: this release holds nothing`,
		`testdata/invalid-gates.yaml:64:25: spec.steps[3].concurrently.writes[1].release.gate: gate "ghost" holds a user's or an actor's requests: a release in a concurrently group waits for the API server's answer to what it lets through, which the audit log records for components only; give the gate a component`,
	},
	"invalid-reached-since.yaml": {
		`testdata/invalid-reached-since.yaml:19:23: spec.steps[1].expect.objects[0].reachedSince: reachedSince is when reached begins to count: set reached: true`,
		`testdata/invalid-reached-since.yaml:23:23: spec.steps[1].expect.objects[1].reachedSince: step "first" runs on some Trainer releases only (its trainer.versions): name a step every release runs`,
		`testdata/invalid-reached-since.yaml:27:23: spec.steps[1].expect.objects[2].reachedSince: step "third" (spec.steps[2]) does not come before this one: reachedSince names an earlier step`,
		`testdata/invalid-reached-since.yaml:31:23: spec.steps[1].expect.objects[3].reachedSince: no step is named "nowhere"`,
	},
	"invalid-component-steps.yaml": {
		`testdata/invalid-component-steps.yaml:8:5: spec.steps[0].component: a component step acts on what simctl runs itself (the Trainer's and JobSet's managers in its process; Kueue's, kube-controller-manager's, kube-scheduler's and KWOK's processes), which only envtest does: declare spec.clusters.only: [envtest] with the reason`,
		`testdata/invalid-component-steps.yaml:8:5: spec.steps[0].component: trainer runs: start follows a crash or a stop of it (restart stops it first)`,
		`testdata/invalid-component-steps.yaml:16:5: spec.steps[2].component: jobset is down since spec.steps[1].component: it cannot crash again before a start`,
		`testdata/invalid-component-steps.yaml:20:5: spec.steps[3].component: jobset is down since spec.steps[1].component: start it, a restart stops it first`,
		`testdata/invalid-component-steps.yaml:25:13: spec.steps[4].component.name: component kueue is not in spec.components: the scenario does not run it; add it there`,
		`testdata/invalid-component-steps.yaml:31:16: spec.steps[5].component.downFor: downFor is for crash and stop: how long the component stays down`,
		`testdata/invalid-component-steps.yaml:34:13: spec.steps[6].component.name: an upgrade replaces the Trainer release (and the JobSet release it pins): name: trainer`,
		`testdata/invalid-component-steps.yaml:38:5: spec.steps[7].component.to: an upgrade needs the release to run: to: one of v2.1.0, v2.2.0, v2.2.1, v2.3.0`,
		`testdata/invalid-component-steps.yaml:45:11: spec.steps[8].component.to: unsupported Trainer version v2.0.1: trainersim runs v2.1.0, v2.2.0, v2.2.1, v2.3.0`,
		`testdata/invalid-component-steps.yaml:46:16: spec.steps[8].component.downFor: downFor is for crash and stop: how long the component stays down`,
		`testdata/invalid-component-steps.yaml:51:11: spec.steps[9].component.to: to is the release of an upgrade: action: upgrade, or leave it out`,
	},
	"invalid-views.yaml": {
		`testdata/invalid-views.yaml:6:3: spec.views: views stand between the API server and each component (the Trainer's and JobSet's managers in simctl's process, the others behind a loopback proxy), which only envtest lets simctl do: declare spec.clusters.only: [envtest] with the reason`,
		`testdata/invalid-views.yaml:8:16: spec.views[0].component: component kueue is not in spec.components: the scenario does not run it; add it there`,
		`testdata/invalid-views.yaml:12:15: spec.views[1].resource: trainer does not watch "nodes": a view of it would keep nothing back (it watches configmaps, limitranges, secrets, jobsets, runtimeclasses, podgroups, clustertrainingruntimes, trainingruntimes, trainjobs)`,
		`testdata/invalid-views.yaml:17:12: spec.views[2].delay: a view delays or coalesces, not both: a coalescing view keeps events until its release`,
		`testdata/invalid-views.yaml:22:12: spec.views[3].until: step "first" comes before the view's from, step "second": the view would never keep anything back`,
		`testdata/invalid-views.yaml:26:16: spec.views[4].staleList: jobset lists jobs when it starts: a component step must start or restart jobset while the view runs (after its from, before its release), or the stale list is never served`,
		`testdata/invalid-views.yaml:29:16: spec.views[5].partition: unknown partition "dropped": refuse or unanswered`,
		`testdata/invalid-views.yaml:30:15: spec.views[5].resource: a partition cuts every resource of trainer off: resource is for a view of one resource`,
		`testdata/invalid-views.yaml:35:15: spec.steps[0].expect.held[0].view: view "late" starts at step "second", after this step: it holds nothing yet`,
		`testdata/invalid-views.yaml:38:13: spec.steps[1].release.view: unknown view "missing" (declared views: kueue-view, unwatched, both, late, stale, cut)`,
		`testdata/invalid-views.yaml:41:15: spec.steps[1].expect.held[0].view: unknown view "missing" (declared views: kueue-view, unwatched, both, late, stale, cut)`,
		`testdata/invalid-views.yaml:42:9: spec.steps[1].expect.held[1]: names a gate or a view, one of the two`,
		`testdata/invalid-views.yaml:47:12: spec.steps[2].release.one: one lets a gate's oldest request through: a view delivers what it keeps back all at once`,
		`testdata/invalid-views.yaml:50:13: spec.steps[3].release.view: view "late" was released at the release at spec.steps[2].release: this release holds nothing`,
	},
	"invalid-trainjob-objects.yaml": {
		`testdata/invalid-trainjob-objects.yaml:11:19: spec.steps[0].create.apiVersion: "trainer.kubeflow.org/v1" is not served: the Trainer serves TrainJob as trainer.kubeflow.org/v1alpha1`,
		`testdata/invalid-trainjob-objects.yaml:24:7: spec.steps[1].create.spec.runtimeRef: Required value: the TrainJob CRD of every Trainer release it holds for refuses this create, as the API server would`,
		`testdata/invalid-trainjob-objects.yaml:35:20: spec.steps[2].create.spec.suspended: unknown field "suspended" of TrainJob (did you mean "suspend"?): no Trainer release's CRD has it, and the API server would drop it with a warning only`,
		`testdata/invalid-trainjob-objects.yaml:45:7: spec.steps[3].create.expect: unknown field "expect" of TrainJob: expect is a field of the step, indented one level too deep, into the object create sends; put it beside create`,
		`testdata/invalid-trainjob-objects.yaml:53:45: spec.steps[4].expect.pods.selector.matchLabels["jobset.sigs.k8s.io/jobset-name"]: jobset.sigs.k8s.io/jobset-name=cc matches no Pod the scenario makes: JobSet names its Pods after the TrainJob (the scenario's TrainJobs and JobSets are a, b, c, d, e, f)`,
		`testdata/invalid-trainjob-objects.yaml:64:20: spec.steps[5].create.spec.managedBy: Invalid value: "example.com/mine": ManagedBy must be trainer.kubeflow.org/trainjob-controller or kueue.x-k8s.io/multikueue if set: the TrainJob CRD of every Trainer release it holds for refuses this create, as the API server would`,
	},
	"invalid-setup-trainjob.yaml": {
		`testdata/invalid-setup-trainjob.yaml:12:7: spec.setup[0].object.spec.runtimeRef: Required value: the TrainJob CRD of every Trainer release it holds for refuses this create, as the API server would`,
	},
	"invalid-indentation.yaml": {
		`testdata/invalid-indentation.yaml:16:8: invalid YAML: "suspend" is indented 7 spaces, which lines up with no field above it: "spec" is at 6, and its fields (such as "runtimeRef") at 8 (the parser: did not find expected key)`,
	},
	"invalid-two-writes.yaml": {
		`testdata/invalid-two-writes.yaml:10:5: spec.steps[0].apply: a step has at most one of create, apply, patch, update, delete, get, kubelet, node, component or concurrently; found create and apply`,
		`testdata/invalid-two-writes.yaml:11:5: spec.steps[1]: a step needs a write (create, apply, patch, update, delete, get, kubelet, node, component or concurrently), a release or an expect`,
		`testdata/invalid-two-writes.yaml:13:12: spec.steps[2].force: force is only valid with apply`,
		`testdata/invalid-two-writes.yaml:14:22: spec.steps[2].fieldValidation: unknown fieldValidation "strict": must be Ignore, Warn or Strict`,
		`testdata/invalid-two-writes.yaml:18:22: spec.steps[3].fieldValidation: fieldValidation is only valid with create, apply, patch or update`,
		`testdata/invalid-two-writes.yaml:19:5: spec.steps[3].expectError: expectError is not valid with get: a get is not a write`,
		`testdata/invalid-two-writes.yaml:21:5: spec.steps[4].expectError: expectError needs a write (create, apply, patch, update, delete, kubelet, node or component)`,
	},
	"invalid-bad-regexp.yaml": {
		`testdata/invalid-bad-regexp.yaml:11:15: spec.steps[0].expectError.status: 42 is not an HTTP status code (100 to 599)`,
		"testdata/invalid-bad-regexp.yaml:12:23: spec.steps[0].expectError.messageMatches: invalid regular expression: error parsing regexp: missing closing ): `not found (llm`",
	},
	"invalid-crash-loop-back-off.yaml": {
		`testdata/invalid-crash-loop-back-off.yaml:8:14: spec.crashLoopBackOff.initial: must be whole seconds, at least 1s, found 1.5s`,
		`testdata/invalid-crash-loop-back-off.yaml:9:10: spec.crashLoopBackOff.max: must be at least initial (1.5s), found 1s`,
	},
	"invalid-duration.yaml": {
		`testdata/invalid-duration.yaml:10:15: spec.steps[0].expect.within: invalid duration "60": a duration is a number with a unit, such as 30s, 2m or 1m30s (units: ms, s, m, h)`,
		`testdata/invalid-duration.yaml:14:15: spec.steps[1].expect.within: expected a duration such as 60s or 1m30s, found integer 60`,
		`testdata/invalid-duration.yaml:18:15: spec.steps[2].expect.within: invalid duration "-1s": must not be negative`,
	},
	"invalid-name.yaml": {
		`testdata/invalid-name.yaml:5:9: metadata.name: invalid scenario name "SDK_and_Kueue": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?') (the name becomes part of a namespace name)`,
	},
	"invalid-patch.yaml": {
		`testdata/invalid-patch.yaml:10:13: spec.steps[0].patch.type: unknown patch type "strategic": must be merge or json`,
		`testdata/invalid-patch.yaml:17:7: spec.steps[1].patch.body: a merge patch body must be a mapping, found a list`,
		`testdata/invalid-patch.yaml:22:7: spec.steps[2].patch.body: a json patch body must be a list of operations, found a mapping`,
		`testdata/invalid-patch.yaml:26:38: spec.steps[3].patch.target.name: must not be empty`,
		`testdata/invalid-patch.yaml:28:13: spec.steps[3].patch.body[0].op: unknown op "append": must be add, remove, replace, move, copy or test`,
		`testdata/invalid-patch.yaml:30:9: spec.steps[3].patch.body[1]: the operation needs op: add, remove, replace, move, copy or test`,
		`testdata/invalid-patch.yaml:31:9: spec.steps[3].patch.body[2]: the add operation needs value`,
		`testdata/invalid-patch.yaml:32:15: spec.steps[3].patch.body[2].path: "spec/suspend" is not a JSON pointer: it must be empty or start with /`,
		`testdata/invalid-patch.yaml:33:9: spec.steps[3].patch.body[3]: the move operation needs from`,
		`testdata/invalid-patch.yaml:35:9: spec.steps[3].patch.body[4]: the remove operation needs path`,
		`testdata/invalid-patch.yaml:36:9: spec.steps[3].patch.body[5]: a json patch operation must be a mapping, found string "not an operation"`,
	},
	"invalid-concurrently.yaml": {
		`testdata/invalid-concurrently.yaml:12:12: spec.steps[0].actor: a concurrently step has no actor of its own: set actor on each of its writes`,
		`testdata/invalid-concurrently.yaml:14:7: spec.steps[0].concurrently.writes: a concurrently group needs at least 2 writes, found 1`,
		`testdata/invalid-concurrently.yaml:18:5: spec.steps[0].expectError: expectError is not valid on a concurrently step: put it on its writes`,
		`testdata/invalid-concurrently.yaml:22:9: spec.steps[1].concurrently.writes[0]: a concurrent write needs its own actor`,
		`testdata/invalid-concurrently.yaml:26:9: spec.steps[1].concurrently.writes[1].get: get is not a write: a concurrently group holds create, apply, patch, update, delete, kubelet, node and component writes`,
		`testdata/invalid-concurrently.yaml:29:9: spec.steps[1].concurrently.writes[2].concurrently: concurrently cannot be nested`,
		`testdata/invalid-concurrently.yaml:30:11: spec.steps[1].concurrently.writes[2].concurrently.writes: needs at least 2 items, found 0`,
		`testdata/invalid-concurrently.yaml:34:9: spec.steps[1].concurrently.writes[3].expect: expect is not allowed inside concurrently: put it in a step after the group`,
		`testdata/invalid-concurrently.yaml:36:15: spec.steps[1].concurrently.writes[4].name: duplicate step name "alone" (first used by spec.steps[0] at line 11)`,
		`testdata/invalid-concurrently.yaml:38:24: spec.steps[1].concurrently.writes[4].update.from: step "no actor" runs concurrently with this write: from names an earlier step`,
		`testdata/invalid-concurrently.yaml:39:7: spec.steps[1].concurrently.outcomes: outcomes count 6 writes, but the group has 5`,
		`testdata/invalid-concurrently.yaml:42:19: spec.steps[1].concurrently.outcomes.rejected: must not be negative, found -1`,
	},
	"invalid-objects.yaml": {
		`testdata/invalid-objects.yaml:9:19: spec.actors[0].fieldManager: must not be empty`,
		`testdata/invalid-objects.yaml:10:5: spec.actors[0].groups: groups are impersonated only along with a user: set user too`,
		`testdata/invalid-objects.yaml:11:11: spec.actors[1].name: duplicate actor name "a" (first declared by spec.actors[0])`,
		`testdata/invalid-objects.yaml:15:5: spec.steps[0].create: the object needs apiVersion`,
		`testdata/invalid-objects.yaml:22:7: spec.steps[1].apply.metadata: the object needs metadata.name`,
		`testdata/invalid-objects.yaml:25:19: spec.steps[2].create.apiVersion: expected a string, found number 1`,
		`testdata/invalid-objects.yaml:27:24: spec.steps[2].create.metadata.name: expected a string, found number 123`,
		`testdata/invalid-objects.yaml:32:7: spec.steps[3].create.metadata: expected a mapping, found a list`,
	},
	"invalid-expect.yaml": {
		`testdata/invalid-expect.yaml:9:5: spec.steps[0].expect: expect needs at least one of pods, objects, events, owners, noOverlaps, requests, holding or held`,
		`testdata/invalid-expect.yaml:13:16: spec.steps[1].expect.pods.count: must not be negative, found -1`,
		`testdata/invalid-expect.yaml:14:16: spec.steps[1].expect.pods.phase: unknown phase "Completed": must be Pending, Running, Succeeded or Failed`,
		`testdata/invalid-expect.yaml:18:24: spec.steps[2].expect.objects[0].target.kind: must not be empty`,
		`testdata/invalid-expect.yaml:19:17: spec.steps[2].expect.objects[0].absent: absent cannot be combined with match, matchAny or exact`,
		`testdata/invalid-expect.yaml:22:17: spec.steps[2].expect.objects[1].absent: absent cannot be combined with match, matchAny or exact`,
		`testdata/invalid-expect.yaml:26:19: spec.steps[3].expect.noOverlaps: invalid TrainJob name "LLM job": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
	},
	"invalid-hollow.yaml": {
		`testdata/invalid-hollow.yaml:10:14: spec.nodes[0].kubelet: hollow kubelets are processes simctl starts beside the API server, which only envtest does: declare spec.clusters.only: [envtest] with the reason`,
		`testdata/invalid-hollow.yaml:13:14: spec.nodes[1].kubelet: unknown kubelet "real": must be simulated or hollow`,
		`testdata/invalid-hollow.yaml:14:3: spec.lifecycle: spec.nodes[0] is hollow: a hollow kubelet's containers run until deleted and it renews its own node's Lease, so lifecycle rules have no effect on its Pods; leave the group simulated`,
		`testdata/invalid-hollow.yaml:22:5: spec.steps[0].kubelet: spec.nodes[0] is hollow: a hollow kubelet's containers run until deleted and it renews its own node's Lease, so a kubelet step cannot act on its Pods; leave the group simulated`,
		`testdata/invalid-hollow.yaml:27:5: spec.steps[1].node: spec.nodes[0] is hollow: a hollow kubelet's containers run until deleted and it renews its own node's Lease, so a node step cannot act on its nodes; leave the group simulated`,
	},
	"invalid-reached.yaml": {
		`testdata/invalid-reached.yaml:16:18: spec.steps[0].expect.objects[1].reached: reached needs every change of the object, which simctl watches only of Event (v1), Job (batch/v1), JobSet (jobset.x-k8s.io/v1alpha2), Pod (v1), PodGroup (scheduling.x-k8s.io/v1alpha1), TrainJob (trainer.kubeflow.org/v1alpha1)`,
		`testdata/invalid-reached.yaml:18:18: spec.steps[0].expect.objects[2].reached: reached needs a state to have reached: match or matchAny`,
		`testdata/invalid-reached.yaml:21:18: spec.steps[0].expect.objects[3].reached: reached needs every change of the object, which simctl watches only in the scenario's namespace: leave target.namespace out`,
		`testdata/invalid-reached.yaml:24:18: spec.steps[0].expect.objects[4].reached: reached needs every change of the object, which simctl watches only of Event (v1), Job (batch/v1), JobSet (jobset.x-k8s.io/v1alpha2), Pod (v1), PodGroup (scheduling.x-k8s.io/v1alpha1), TrainJob (trainer.kubeflow.org/v1alpha1)`,
	},
	"invalid-owners.yaml": {
		"testdata/invalid-owners.yaml:11:9: spec.steps[0].expect.owners[0].target.name: must not be empty",
		`testdata/invalid-owners.yaml:12:16: spec.steps[0].expect.owners[0].field: invalid path "spec.runtimePatches[manager=kueue.x-k8s.io/manager": missing ]`,
		"testdata/invalid-owners.yaml:13:18: spec.steps[0].expect.owners[0].manager: must not be empty",
		`testdata/invalid-owners.yaml:15:16: spec.steps[0].expect.owners[1].field: invalid path "spec..suspend": empty field name`,
		"testdata/invalid-owners.yaml:17:24: spec.steps[0].expect.owners[2].target.kind: must not be empty",
		`testdata/invalid-owners.yaml:18:16: spec.steps[0].expect.owners[2].field: invalid path "spec.runtimePatches[manager]": [manager]: want [key=value] for a list item, or ["manager"] for a field or map key`,
	},
	"invalid-exact.yaml": {
		`testdata/invalid-exact.yaml:13:11: spec.steps[0].expect.objects[0].exact[0]: exact path "spec.replicatedJobs.template.spec.template.spec.tolerations" names nothing in match: spec.replicatedJobs is a list: select an item by key, spec.replicatedJobs[name=node], or by position, spec.replicatedJobs[0]`,
		`testdata/invalid-exact.yaml:14:11: spec.steps[0].expect.objects[0].exact[1]: exact path "spec.replicatedJobs[name=launcher].template" names nothing in match: no item of spec.replicatedJobs has name=launcher`,
		`testdata/invalid-exact.yaml:15:11: spec.steps[0].expect.objects[0].exact[2]: invalid path "spec.replicatedJobs[name=node": missing ]`,
		`testdata/invalid-exact.yaml:16:11: spec.steps[0].expect.objects[0].exact[3]: exact path "spec.replicatedJobs[name=node].template.spec.template.spec.nodeSelector[\"cloud.google.com/gke-accelerator\"]" names nothing in match: spec.replicatedJobs[name=node].template.spec.template.spec has no field "nodeSelector"`,
		`testdata/invalid-exact.yaml:24:17: spec.steps[0].expect.objects[1].exact[0]: exact path "spec.runtimePatches" needs match to compare`,
		`testdata/invalid-exact.yaml:26:17: spec.steps[0].expect.objects[2].exact[0]: exact path "status.conditions" names nothing in matchAny[1]: status has no field "conditions"`,
		`testdata/invalid-exact.yaml:31:17: spec.steps[0].expect.pods.exact[0]: exact path "spec.tolerations" needs pods.all or pods.any to compare`,
	},
	"invalid-duplicate-key.yaml": {
		`testdata/invalid-duplicate-key.yaml:6:3: metadata: duplicate key "name" (first at line 5)`,
		`testdata/invalid-duplicate-key.yaml:14:22: spec.steps[0].create.data: duplicate key "a" (first at line 14)`,
	},
	"invalid-alias-cycle.yaml": {
		`testdata/invalid-alias-cycle.yaml:13:13: spec.steps[0].create.data: alias *obj refers to a node that contains it`,
	},
	"invalid-multiple-documents.yaml": {
		`testdata/invalid-multiple-documents.yaml:11:1: a second YAML document: a scenario file holds exactly one Scenario`,
	},
	"invalid-empty.yaml": {
		`testdata/invalid-empty.yaml: empty file: a scenario file holds one Scenario`,
	},
	"invalid-not-a-mapping.yaml": {
		`testdata/invalid-not-a-mapping.yaml:2:1: a scenario must be a mapping, found a list`,
	},
}

// messages returns the lines of err, which must be nil or an *Errors whose
// entries all name a file.
func messages(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var errs *Errors
	if !errors.As(err, &errs) {
		t.Fatalf("error is a %T, want *Errors: %v", err, err)
	}
	var out []string
	for _, e := range *errs {
		if e.File == "" {
			t.Errorf("error without a file: %v", e)
		}
		out = append(out, e.Error())
	}
	return out
}

func TestLoadInvalid(t *testing.T) {
	for name, want := range invalid {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join("testdata", name)
			files, err := LoadPaths([]string{path}, Options{FixturesDir: testFixtures})
			if len(files) != 0 {
				t.Errorf("LoadPaths returned %d files, want none", len(files))
			}
			if diff := cmp.Diff(want, messages(t, err)); diff != "" {
				t.Errorf("errors mismatch (-want +got):\n%s", diff)
			}
			// LoadFile reports the same, and Error() joins the lines.
			_, err = LoadFile(path, Options{FixturesDir: testFixtures})
			if err == nil {
				t.Fatal("LoadFile succeeded")
			}
			if diff := cmp.Diff(strings.Join(want, "\n"), err.Error()); diff != "" {
				t.Errorf("LoadFile error mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadValid(t *testing.T) {
	paths, err := filepath.Glob("testdata/valid-*.yaml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no testdata/valid-*.yaml: %v", err)
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			f, err := LoadFile(path, Options{FixturesDir: testFixtures})
			if err != nil {
				t.Fatalf("LoadFile: %v", err)
			}
			if f.Path != path || f.Scenario == nil || f.Scenario.Metadata.Name == "" {
				t.Errorf("LoadFile returned %+v", f)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			// The normative example of the scenario format has no editor
			// schema line, as written; a missing line is only a warning.
			e := CheckSchemaLine(path, data)
			if normative := filepath.Base(path) == "valid-normative-example.yaml"; normative != (e != nil) {
				t.Errorf("CheckSchemaLine = %v, want a warning: %t", e, normative)
			}
		})
	}
	// Together: names are unique across the valid files.
	files, err := LoadPaths(paths, Options{FixturesDir: testFixtures})
	if err != nil {
		t.Fatalf("LoadPaths: %v", err)
	}
	if len(files) != len(paths) {
		t.Errorf("LoadPaths returned %d files, want %d", len(files), len(paths))
	}
}

// TestEveryTestdataFileIsTested keeps the table and the files in step.
func TestEveryTestdataFileIsTested(t *testing.T) {
	paths, err := filepath.Glob("testdata/invalid-*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	onDisk := map[string]bool{}
	for _, p := range paths {
		onDisk[filepath.Base(p)] = true
		if _, ok := invalid[filepath.Base(p)]; !ok {
			t.Errorf("%s is not in the invalid table", p)
		}
	}
	for name := range invalid {
		if !onDisk[name] {
			t.Errorf("invalid table names %s, which is not in testdata", name)
		}
	}
}

// TestNormativeExample loads the example of the scenario format that issue 3
// calls normative ("it must load and pass exactly as written"), copied
// verbatim: it has no editor schema line.
func TestNormativeExample(t *testing.T) {
	f, err := LoadFile("testdata/valid-normative-example.yaml", Options{FixturesDir: testFixtures})
	if err != nil {
		t.Fatal(err)
	}
	sc := f.Scenario
	count := 2
	wantPods := &v1alpha1.PodExpectation{
		Selector:    &v1alpha1.LabelSelector{MatchLabels: map[string]string{"jobset.sigs.k8s.io/replicatedjob-name": "node"}},
		Count:       &count,
		NodeProfile: "nvidia-h100-80gb",
		Phase:       "Running",
		All: v1alpha1.Object{"spec": map[string]any{
			"nodeSelector": map[string]any{"node-pool": "gpu-training"},
			"tolerations": []any{map[string]any{
				"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule",
			}},
		}},
	}
	if diff := cmp.Diff(wantPods, sc.Spec.Steps[3].Expect.Pods); diff != "" {
		t.Errorf("pods expectation mismatch (-want +got):\n%s", diff)
	}
	if got := sc.Spec.Steps[3].Expect.Within.Duration.String(); got != "1m0s" {
		t.Errorf("within = %s, want 1m0s", got)
	}
	wantErr := &v1alpha1.ExpectError{Status: 403, MessageContains: "RuntimePatches can only be modified when the TrainJob is suspended"}
	if diff := cmp.Diff(wantErr, sc.Spec.Steps[4].ExpectError); diff != "" {
		t.Errorf("expectError mismatch (-want +got):\n%s", diff)
	}
	// Quoted "8" stays a string in a free-form object; numNodes is a number.
	trainer := sc.Spec.Steps[0].Create["spec"].(map[string]any)["trainer"].(map[string]any)
	if diff := cmp.Diff(map[string]any{
		"numNodes":         int64(2),
		"resourcesPerNode": map[string]any{"limits": map[string]any{"nvidia.com/gpu": "8"}},
	}, normalize(trainer)); diff != "" {
		t.Errorf("trainer mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"spec": map[string]any{"suspend": false}}, sc.Spec.Steps[2].Patch.Body); diff != "" {
		t.Errorf("patch body mismatch (-want +got):\n%s", diff)
	}
}

// normalize turns the float64 numbers encoding/json decodes into int64 when
// they are whole, for comparison.
func normalize(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, x := range v {
			out[k] = normalize(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = normalize(x)
		}
		return out
	case float64:
		if v == float64(int64(v)) {
			return int64(v)
		}
	}
	return v
}

func TestAnchorsAndMergeKeys(t *testing.T) {
	f, err := LoadFile("testdata/valid-anchors.yaml", Options{FixturesDir: testFixtures})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]v1alpha1.Actor{
		{Name: "sdk", FieldManager: "kubeflow-sdk"},
		{Name: "sdk-copy", FieldManager: "kubeflow-sdk"},
	}, f.Scenario.Spec.Actors); diff != "" {
		t.Errorf("actors mismatch (-want +got):\n%s", diff)
	}
	want := v1alpha1.Object{
		"apiVersion": "v1",
		"kind":       "ConfigMap",
		"metadata": map[string]any{
			"name":        "shared",
			"labels":      map[string]any{"a": "b"},
			"annotations": map[string]any{"note": "merged"},
		},
	}
	if diff := cmp.Diff(want, f.Scenario.Spec.Steps[1].Apply); diff != "" {
		t.Errorf("apply mismatch (-want +got):\n%s", diff)
	}
}

func TestDuplicateScenarioNamesAcrossFiles(t *testing.T) {
	files, err := LoadPaths([]string{"testdata/duplicate-names"}, Options{FixturesDir: testFixtures})
	want := []string{
		`testdata/duplicate-names/b.yaml:5:9: metadata.name: duplicate scenario name "same-name": testdata/duplicate-names/a.yaml:5 has it too`,
	}
	if diff := cmp.Diff(want, messages(t, err)); diff != "" {
		t.Errorf("errors mismatch (-want +got):\n%s", diff)
	}
	if len(files) != 1 || files[0].Path != "testdata/duplicate-names/a.yaml" {
		t.Errorf("LoadPaths returned %v, want only a.yaml", files)
	}
}

// TestLoadPathsReportsEveryFile checks that LoadPaths goes on after a bad
// file and returns the good ones.
func TestLoadPathsReportsEveryFile(t *testing.T) {
	files, err := LoadPaths([]string{
		"testdata/invalid-kind.yaml",
		"testdata/valid-minimal.yaml",
		"testdata/does-not-exist.yaml",
		"testdata/invalid-api-version.yaml",
		"testdata/./valid-minimal.yaml", // named twice: loaded once
		"testdata/fixtures/runtimes/../../fixtures",
	}, Options{FixturesDir: testFixtures})
	want := []string{
		`testdata/does-not-exist.yaml: failed to read file: no such file or directory`,
		`testdata/invalid-kind.yaml:3:7: kind: unsupported kind "Test", expected "Scenario"`,
		`testdata/invalid-api-version.yaml:2:13: apiVersion: unsupported apiVersion "chainsaw.kyverno.io/v1alpha1", expected "sim.trainersim.dev/v1alpha1"`,
		`testdata/fixtures/runtimes/tiny-runtime.yaml:6:3: spec: unknown field "template"`,
		`testdata/fixtures/runtimes/tiny-runtime.yaml:6:3: spec: missing required field "steps"`,
	}
	if diff := cmp.Diff(want, messages(t, err)); diff != "" {
		t.Errorf("errors mismatch (-want +got):\n%s", diff)
	}
	if len(files) != 1 || files[0].Path != "testdata/valid-minimal.yaml" {
		t.Errorf("LoadPaths returned %v, want valid-minimal.yaml only", files)
	}
}

// TestEveryTypeIsWalked checks that valid-every-field.yaml sets every field
// of the format, so that the walk has met every field type (it reports an
// internal error for a type it does not know) and the file stays a complete
// example as the types grow.
func TestEveryTypeIsWalked(t *testing.T) {
	f, err := LoadFile("testdata/valid-every-field.yaml", Options{FixturesDir: testFixtures})
	if err != nil {
		t.Fatal(err)
	}
	set := map[string]bool{}
	var visit func(v reflect.Value)
	visit = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer:
			if !v.IsNil() {
				visit(v.Elem())
			}
		case reflect.Slice:
			for i := range v.Len() {
				visit(v.Index(i))
			}
		case reflect.Struct:
			if reflect.PointerTo(v.Type()).Implements(unmarshalerType) {
				return
			}
			for _, f := range infoOf(v.Type()).fields {
				fv := v.Field(f.index)
				if !fv.IsZero() {
					set[v.Type().Name()+"."+f.name] = true
				}
				visit(fv)
			}
		}
	}
	visit(reflect.ValueOf(f.Scenario).Elem())
	for _, typ := range structTypes() {
		for _, fld := range infoOf(typ).fields {
			if !set[typ.Name()+"."+fld.name] {
				t.Errorf("testdata/valid-every-field.yaml does not set %s.%s", typ.Name(), fld.name)
			}
		}
	}
}
