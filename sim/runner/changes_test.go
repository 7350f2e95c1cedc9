package runner

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trainersim/trainersim/results"
	"github.com/trainersim/trainersim/sim/cluster"
)

// TestFieldDiffs: the leaves two versions of a TrainJob differ in, status
// lists keyed by type and name, entries by manager, server metadata left
// out, an emptied map a leaf of its own.
func TestFieldDiffs(t *testing.T) {
	before := map[string]any{
		"metadata": map[string]any{"name": "low", "resourceVersion": "7"},
		"spec": map[string]any{"suspend": false, "runtimePatches": []any{
			map[string]any{"manager": "kueue.x-k8s.io/manager", "trainingRuntimeSpec": map[string]any{"template": map[string]any{"spec": map[string]any{"nodeSelector": map[string]any{"gpu": "h100"}}}}},
		}},
		"status": map[string]any{
			"conditions": []any{map[string]any{"type": "Suspended", "status": "False"}},
			"jobsStatus": []any{map[string]any{"name": "node", "active": 1}},
		},
	}
	after := map[string]any{
		"metadata": map[string]any{"name": "low", "resourceVersion": "9"},
		"spec": map[string]any{"suspend": true, "runtimePatches": []any{
			map[string]any{"manager": "kueue.x-k8s.io/manager", "trainingRuntimeSpec": map[string]any{"template": map[string]any{"spec": map[string]any{}}}},
		}},
		"status": map[string]any{
			"conditions": []any{map[string]any{"type": "Suspended", "status": "True"}},
			"jobsStatus": []any{map[string]any{"name": "node", "active": 0}},
		},
	}
	want := []results.FieldDiff{
		{Path: "spec.runtimePatches[manager=kueue.x-k8s.io/manager].trainingRuntimeSpec.template.spec", To: "{}"},
		{Path: "spec.suspend", From: "false", To: "true"},
		{Path: "status.conditions[type=Suspended].status", From: `"False"`, To: `"True"`},
		{Path: "status.jobsStatus[name=node].active", From: "1", To: "0"},
		{Path: "spec.runtimePatches[manager=kueue.x-k8s.io/manager].trainingRuntimeSpec.template.spec.nodeSelector.gpu", From: `"h100"`},
	}
	if diff := cmp.Diff(want, fieldDiffs(before, after)); diff != "" {
		t.Errorf("fieldDiffs (-want +got):\n%s", diff)
	}
}

// TestAttribute: a version gets the writer whose accepted write returned its
// resourceVersion (a component's from the audit log, with its subresource;
// an actor's from its write, an apply as the patch the server records); a
// refused request and a version no write made give none; a JobSet's
// version gets the writer of that JobSet's resourceVersion, not a
// TrainJob's of the same name and version.
func TestAttribute(t *testing.T) {
	versions := []objectVersion{
		{kind: "TrainJob", name: "low", rv: "5", step: "create", create: true},
		{kind: "JobSet", name: "low", rv: "5", step: "create", create: true},
		{kind: "JobSet", name: "low", rv: "10", step: "create", fields: []results.FieldDiff{{Path: "status.replicatedJobsStatus[name=node].active", From: "0", To: "1"}}},
		{kind: "TrainJob", name: "low", rv: "6", step: "create", fields: []results.FieldDiff{{Path: "spec.suspend", From: "true", To: "false"}}},
		{kind: "TrainJob", name: "low", rv: "7", step: "create", fields: []results.FieldDiff{{Path: "status.jobsStatus[name=node].active", To: "1"}}},
		{kind: "TrainJob", name: "low", rv: "8", step: "patch"},
		{kind: "TrainJob", name: "low", rv: "9", step: "patch"},
	}
	reqs := []cluster.ComponentRequest{
		{Component: "kueue", Verb: "patch", Resource: "trainjobs", Name: "low", Code: 200, ResourceVersion: "6"},
		{Component: "trainer", Verb: "patch", Resource: "trainjobs", Subresource: "status", Name: "low", Code: 200, ResourceVersion: "7"},
		{Component: "kueue", Verb: "update", Resource: "trainjobs", Name: "low", Code: 409, ResourceVersion: "9"},
		{Component: "trainer", Verb: "create", Resource: "jobsets", Name: "low", Code: 201, ResourceVersion: "8"},
		{Component: "jobset", Verb: "update", Resource: "jobsets", Subresource: "status", Name: "low", Code: 200, ResourceVersion: "10"},
	}
	own := []results.Write{
		{Actor: "sdk", Verb: "create", Target: "TrainJob ns/low", Status: 201, ResourceVersionAfter: "5"},
		{Actor: "team", Verb: "apply", Target: "TrainJob ns/low", Status: 200, ResourceVersionAfter: "8"},
		{Actor: "sdk", Verb: "patch", Target: "ConfigMap ns/low", Status: 200, ResourceVersionAfter: "9"},
	}
	var got []string
	for _, c := range attribute(versions, reqs, own) {
		got = append(got, fmt.Sprintf("%s %s actor=%t %s %s %s %s@%s fields=%d", c.Step, c.Writer, c.Actor, c.Verb, c.Resource, c.Kind, c.Name, c.ResourceVersion, len(c.Fields)))
	}
	want := []string{
		"create sdk actor=true create trainjobs TrainJob low@5 fields=0",
		"create jobset actor=false update jobsets/status JobSet low@10 fields=1",
		"create kueue actor=false patch trainjobs TrainJob low@6 fields=1",
		"create trainer actor=false patch trainjobs/status TrainJob low@7 fields=1",
		"patch team actor=true patch trainjobs TrainJob low@8 fields=0",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("attribute (-want +got):\n%s", diff)
	}
}
