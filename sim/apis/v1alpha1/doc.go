// Package v1alpha1 is the scenario format of trainersim,
// apiVersion sim.trainersim.dev/v1alpha1, kind Scenario.
//
// A scenario names the simulated nodes it needs, the actors (named managers,
// each with its own field manager and optionally its own user) that write to
// the cluster, and an ordered list of steps: writes, reads, groups of writes
// released at the same instant (the Verbs of registry.go), and expectations
// on Pods, objects, events, field owners and overlaps (its Expectations),
// each checked until it holds or its time runs out. A write that the server
// refuses is a result: expectError asserts it, and a refused write without
// expectError fails the step with the server's message. No write is ever
// retried.
//
// Every field is documented here; the JSON schema in
// sim/apis/v1alpha1/scenario.schema.json and the field reference in
// docs/scenario-reference.md are generated from these comments.
package v1alpha1

// Group, version and kind of a scenario file.
const (
	// GroupVersion is the apiVersion every scenario file carries.
	GroupVersion = "sim.trainersim.dev/v1alpha1"
	// Kind is the kind every scenario file carries.
	Kind = "Scenario"
)
