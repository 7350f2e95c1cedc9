package v1alpha1

import (
	"fmt"
	"strconv"
	"strings"
)

// This file is the one list of what a step can do (Verbs) and of what an
// expect can assert (Expectations). The loader's checks and messages, the
// runner's dispatch, the report's status of a write and the rule by which it
// compares what was sent with what was stored, and the generated reference
// all read the lists from here. A new verb is an entry in Verbs and its
// field in Step; a new expectation an entry in Expectations and its field in
// Expect. The test of sim/runner's registry then names whatever still has
// to handle it (the runner, the loader, the reports, the docs).

// Names of the verbs, the step fields that hold them.
const (
	VerbCreate       = "create"
	VerbApply        = "apply"
	VerbPatch        = "patch"
	VerbUpdate       = "update"
	VerbDelete       = "delete"
	VerbGet          = "get"
	VerbKubelet      = "kubelet"
	VerbNode         = "node"
	VerbComponent    = "component"
	VerbConcurrently = "concurrently"
)

// Body says what a verb's request sends, which decides how the runner
// compares it with the object the server stored (a write's mutations).
type Body int

const (
	// NoBody: the request sends no object (delete, get), or the step is a
	// group whose writes are steps of their own.
	NoBody Body = iota
	// WholeObject: the whole object (create, update): everything is compared,
	// both ways, but status and the metadata the server owns.
	WholeObject
	// PartialObject: part of an object (apply): the leaves sent are compared.
	PartialObject
	// PatchBody: a patch (patch): a merge patch as PartialObject, a JSON
	// patch by the values of its add and replace operations.
	PatchBody
)

// Verb is one thing a step does, held in the step field of its name.
type Verb struct {
	// Name is the step's field and the verb reports show.
	Name string
	// In reports whether st uses the verb.
	In func(st *Step) bool
	// Write is false for a read (get): it takes neither expectError nor
	// fieldValidation, cannot be one of a concurrently group's writes and
	// changes no field's owner.
	Write bool
	// Group marks concurrently, whose writes are steps of their own.
	Group bool
	// FieldValidation says the request takes fieldValidation.
	FieldValidation bool
	// Body is what the request sends.
	Body Body
}

// InGroup reports whether the verb can be one of a concurrently group's
// writes.
func (v Verb) InGroup() bool { return v.Write && !v.Group }

// SendsObject reports whether the verb sends an object, which must have
// apiVersion, kind and metadata.name: create, apply and update (its
// update.object, or the object of an earlier step).
func (v Verb) SendsObject() bool { return v.Body == WholeObject || v.Body == PartialObject }

// Verbs are every verb of a step, in the order the format documents them.
var Verbs = []Verb{
	{Name: VerbCreate, In: func(st *Step) bool { return st.Create != nil }, Write: true, FieldValidation: true, Body: WholeObject},
	{Name: VerbApply, In: func(st *Step) bool { return st.Apply != nil }, Write: true, FieldValidation: true, Body: PartialObject},
	{Name: VerbPatch, In: func(st *Step) bool { return st.Patch != nil }, Write: true, FieldValidation: true, Body: PatchBody},
	{Name: VerbUpdate, In: func(st *Step) bool { return st.Update != nil }, Write: true, FieldValidation: true, Body: WholeObject},
	{Name: VerbDelete, In: func(st *Step) bool { return st.Delete != nil }, Write: true},
	{Name: VerbGet, In: func(st *Step) bool { return st.Get != nil }},
	// The kubelet's status patches are compared with nothing: what they
	// set is the kubelet's to decide, and the Pods' status is asserted by
	// expect.
	{Name: VerbKubelet, In: func(st *Step) bool { return st.Kubelet != nil }, Write: true},
	{Name: VerbNode, In: func(st *Step) bool { return st.Node != nil }, Write: true},
	// A component's crash, stop or start changes no object itself: what
	// follows is the cluster's doing, asserted by expect.
	{Name: VerbComponent, In: func(st *Step) bool { return st.Component != nil }, Write: true},
	{Name: VerbConcurrently, In: func(st *Step) bool { return st.Concurrently != nil }, Write: true, Group: true},
}

// LookupVerb returns the verb of a name.
func LookupVerb(name string) (Verb, bool) {
	for _, v := range Verbs {
		if v.Name == name {
			return v, true
		}
	}
	return Verb{}, false
}

// StepVerbs returns the verbs st uses, in the order of Verbs: one for a
// valid step with a write, none for a step that only expects.
func StepVerbs(st *Step) []Verb {
	var out []Verb
	for _, v := range Verbs {
		if v.In(st) {
			out = append(out, v)
		}
	}
	return out
}

// VerbOf returns the verb of st, the first when it has several; false when
// it has none.
func VerbOf(st *Step) (Verb, bool) {
	for _, v := range Verbs {
		if v.In(st) {
			return v, true
		}
	}
	return Verb{}, false
}

// VerbNames returns the names of the verbs keep accepts (every verb when
// keep is nil), in the order of Verbs.
func VerbNames(keep func(Verb) bool) []string {
	var out []string
	for _, v := range Verbs {
		if keep == nil || keep(v) {
			out = append(out, v.Name)
		}
	}
	return out
}

// Expectation is one kind of assertion of an Expect, held in the field of
// its name.
type Expectation struct {
	// Name is the Expect field.
	Name string
	// In reports whether e asserts this kind.
	In func(e *Expect) bool
}

// Expectations are every kind of assertion of an Expect, in the order they
// are checked and documented.
var Expectations = []Expectation{
	{Name: "pods", In: func(e *Expect) bool { return e.Pods != nil }},
	{Name: "objects", In: func(e *Expect) bool { return len(e.Objects) > 0 }},
	{Name: "events", In: func(e *Expect) bool { return len(e.Events) > 0 }},
	{Name: "owners", In: func(e *Expect) bool { return len(e.Owners) > 0 }},
	{Name: "noOverlaps", In: func(e *Expect) bool { return e.NoOverlaps != "" }},
	{Name: "requests", In: func(e *Expect) bool { return len(e.Requests) > 0 }},
	{Name: "holding", In: func(e *Expect) bool { return e.Holding != "" }},
	{Name: "held", In: func(e *Expect) bool { return len(e.Held) > 0 }},
}

// ExpectationNames returns the names of Expectations, in order.
func ExpectationNames() []string {
	out := make([]string, len(Expectations))
	for i, k := range Expectations {
		out[i] = k.Name
	}
	return out
}

// NodeRef is a node of a scenario named by a node step: the index of its
// group in spec.nodes and its index in the group.
type NodeRef struct {
	Group, Index int
}

// ResolveNode finds the node a node step names, <group>-<i>, among the
// groups: a group's name, or its profile when it has none.
func ResolveNode(groups []NodeGroup, name string) (NodeRef, error) {
	var known []string
	for gi, g := range groups {
		group := g.Name
		if group == "" {
			group = g.Profile
		}
		if g.Count > 1 {
			known = append(known, fmt.Sprintf("%s-0 to %s-%d", group, group, g.Count-1))
		} else {
			known = append(known, group+"-0")
		}
		rest, ok := strings.CutPrefix(name, group+"-")
		if !ok {
			continue
		}
		i, err := strconv.Atoi(rest)
		if err != nil || i < 0 || strconv.Itoa(i) != rest {
			continue
		}
		for gj, other := range groups {
			if gj != gi && other.Name == "" && g.Name == "" && other.Profile == g.Profile {
				return NodeRef{}, fmt.Errorf("node %q is ambiguous: two groups of profile %s, give them names", name, g.Profile)
			}
		}
		if i >= g.Count {
			return NodeRef{}, fmt.Errorf("unknown node %q: group %s has %d (%s)", name, group, g.Count, known[gi])
		}
		return NodeRef{Group: gi, Index: i}, nil
	}
	if len(known) == 0 {
		return NodeRef{}, fmt.Errorf("unknown node %q: the scenario has no nodes", name)
	}
	return NodeRef{}, fmt.Errorf("unknown node %q (nodes: %s)", name, strings.Join(known, ", "))
}
