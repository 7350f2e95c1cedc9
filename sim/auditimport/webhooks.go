package auditimport

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/trainersim/trainersim/sim/apis/v1alpha1"
)

// Mutating webhooks as managers: the API server's audit annotations say
// which webhooks a request went through, in which round, and what each
// changed (its JSON patch). A webhook that is no component's and added
// its own runtimePatches entry to a TrainJob is declared in spec.webhooks,
// served by replay's harness, with that entry.

// The API server's audit annotations of a mutating webhook's call and of
// the patch it answered with: <prefix>round_<r>_index_<i>.
const (
	mutationPrefix = "mutation.webhook.admission.k8s.io/"
	patchPrefix    = "patch.webhook.admission.k8s.io/"
)

// webhookCall is a mutating webhook's call, from the annotation of the
// call and that of its patch.
type webhookCall struct {
	Configuration string `json:"configuration"`
	Webhook       string `json:"webhook"`
	Mutated       bool   `json:"mutated"`
	// Patch is its JSON patch, when it mutated.
	Patch []struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value"`
	} `json:"patch"`
	round int
}

// webhookCalls are the mutating webhooks ev's request went through, by
// round (0, or 1 for a reinvocation), each round in the order called.
func (ev *event) webhookCalls() map[int][]webhookCall {
	out := map[int][]webhookCall{}
	for _, k := range sortedKeys(ev.Annotations) {
		at, ok := strings.CutPrefix(k, mutationPrefix)
		if !ok {
			continue
		}
		var call webhookCall
		var index int
		if _, err := fmt.Sscanf(at, "round_%d_index_%d", &call.round, &index); err != nil || json.Unmarshal([]byte(ev.Annotations[k]), &call) != nil {
			continue
		}
		if p, ok := ev.Annotations[patchPrefix+at]; ok {
			_ = json.Unmarshal([]byte(p), &call) // the same configuration and webhook, with the patch
		}
		out[call.round] = append(out[call.round], call)
	}
	return out
}

// kueueConfiguration tells Kueue's MutatingWebhookConfiguration (its
// manifest's name, which simctl suffixes per scenario) from others.
func kueueConfiguration(name string) bool {
	return strings.HasPrefix(name, "kueue-mutating-webhook-configuration")
}

// componentConfiguration tells the components' own webhook configurations,
// which replay's components install again.
func componentConfiguration(name string) bool {
	return kueueConfiguration(name) || strings.HasSuffix(name, ".trainer.kubeflow.org") || strings.HasPrefix(name, "jobset-")
}

// kueueReinvoked reports whether Kueue's webhook was called again in a
// second round (reinvocationPolicy IfNeeded) for a write of writes.
func kueueReinvoked(writes []*write) bool {
	for _, w := range writes {
		for _, c := range w.ev.webhookCalls()[1] {
			if kueueConfiguration(c.Configuration) {
				return true
			}
		}
	}
	return false
}

// nameSuffix is the suffix simctl gives a scenario's cluster-wide objects:
// its namespace's.
var nameSuffix = regexp.MustCompile(`-[0-9a-f]{6}$`)

// webhooks declares in spec.webhooks each mutating webhook that is no
// component's and added its own runtimePatches entry to a manager's write
// of a TrainJob, with that entry: named after its configuration (less the
// namespace's suffix simctl gave it), which keeps the order the API server
// calls it in among the others; called for the operations it was called
// for, again in a second round when it was. Another webhook that changed a
// manager's write is named in a note: replay has no such webhook.
func (b *builder) webhooks(writes []*write) {
	suffix := nameSuffix.FindString(b.namespace)
	var order []string
	byName := map[string]*v1alpha1.AdmissionWebhook{}
	noted := map[string]bool{}
	for _, w := range writes {
		if w.component || w.kind != trainJobKind {
			continue
		}
		calls := w.ev.webhookCalls()
		for _, round := range []int{0, 1} {
			for _, c := range calls[round] {
				if componentConfiguration(c.Configuration) {
					continue
				}
				name := strings.TrimSuffix(c.Configuration, suffix)
				wh := byName[name]
				if wh == nil {
					if !c.Mutated {
						continue
					}
					manager, entry, ok := addedEntry(c, w.ev.RequestObject)
					if !ok {
						if !noted[name] {
							noted[name] = true
							b.note(fmt.Sprintf("%s: webhook %s of MutatingWebhookConfiguration %s changed the %s of %s %s on admission, but not by adding its own runtimePatches entry (its patch is in the event's annotation %s...): replay has no such webhook", w.ev.where(), c.Webhook, c.Configuration, w.ev.Verb, w.kind, w.name, patchPrefix))
						}
						continue
					}
					wh = &v1alpha1.AdmissionWebhook{Name: name, Object: trainJobKind, Manager: manager, Entry: entry}
					byName[name] = wh
					order = append(order, name)
					b.note(fmt.Sprintf("%s: webhook %s of MutatingWebhookConfiguration %s added the entry of %s to the %s of %s %s on admission: declared in spec.webhooks as %s, with that entry", w.ev.where(), c.Webhook, c.Configuration, manager, w.ev.Verb, w.kind, w.name, name))
				}
				if op := operation(w.ev.Verb); !slices.Contains(wh.Operations, op) {
					wh.Operations = append(wh.Operations, op)
				}
				if round == 1 {
					wh.ReinvocationPolicy = "IfNeeded"
				}
			}
		}
	}
	for _, name := range order {
		wh := byName[name]
		if slices.Equal(wh.Operations, []string{"CREATE"}) {
			wh.Operations = nil // the default
		}
		b.res.Scenario.Spec.Webhooks = append(b.res.Scenario.Spec.Webhooks, *wh)
	}
}

// operation is the admission operation of a write's verb.
func operation(verb string) string {
	if verb == "create" {
		return "CREATE"
	}
	return "UPDATE"
}

// addedEntry is the runtimePatches entry call's patch added that the
// request did not send (nor Kueue's, whose webhook adds it): its manager
// and trainingRuntimeSpec.
func addedEntry(call webhookCall, request json.RawMessage) (string, v1alpha1.Object, bool) {
	var sent struct {
		Spec struct {
			RuntimePatches []map[string]any `json:"runtimePatches"`
		} `json:"spec"`
	}
	_ = json.Unmarshal(request, &sent)
	sentBy := func(manager string) bool {
		return slices.ContainsFunc(sent.Spec.RuntimePatches, func(e map[string]any) bool { return e["manager"] == manager })
	}
	for _, op := range call.Patch {
		var entries []any
		switch {
		case (op.Op == "replace" || op.Op == "add") && op.Path == "/spec/runtimePatches":
			entries, _ = op.Value.([]any)
		case op.Op == "add" && strings.HasPrefix(op.Path, "/spec/runtimePatches/"):
			entries = []any{op.Value}
		}
		for _, e := range entries {
			m, _ := e.(map[string]any)
			manager, _ := m["manager"].(string)
			spec, _ := m["trainingRuntimeSpec"].(map[string]any)
			if manager != "" && spec != nil && !sentBy(manager) && !kueueManager(manager) {
				return manager, spec, true
			}
		}
	}
	return "", nil, false
}

// kueueManager tells Kueue's entry, which its own webhook adds.
func kueueManager(manager string) bool { return manager == "kueue.x-k8s.io/manager" }
