package auditimport

import (
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/trainersim/trainersim/sim/apis/v1alpha1"
)

// The phase of a TrainJob's Pods when a manager wrote: a change refused
// while they run, a suspend whose Pods take their time to go, meets them
// running on replay too. The log has it when the kubelets' writes of Pod
// status are recorded at level Request (RecordPolicy does).

// jobSetNameLabel is the label JobSet puts on its Pods: the JobSet's name,
// which is its TrainJob's.
const jobSetNameLabel = "jobset.sigs.k8s.io/jobset-name"

// podEvent is a write to one of the namespace's Pods.
type podEvent struct {
	// name is the Pod's, "" for a create (the Job controller's Pods are
	// named by the server); jobSet the create's label jobSetNameLabel.
	name, jobSet string
	verb         string
	// phase is what a status write set, "" none.
	phase string
	at    time.Time
}

// podWrite returns ev as a successful write to a Pod of namespace, or to
// its status.
func podWrite(ev *event, namespace string) (podEvent, bool) {
	ref := ev.ObjectRef
	if ref == nil || ref.Resource != "pods" || ref.Namespace != namespace || ev.ResponseStatus == nil || ev.ResponseStatus.Code >= 300 {
		return podEvent{}, false
	}
	p := podEvent{name: ref.Name, verb: ev.Verb, at: ev.Completed}
	var body struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
		Status struct {
			Phase string `json:"phase"`
		} `json:"status"`
	}
	_ = json.Unmarshal(ev.RequestObject, &body)
	switch {
	case ref.Subresource == "" && ev.Verb == "create":
		p.jobSet = body.Metadata.Labels[jobSetNameLabel]
	case ref.Subresource == "" && ev.Verb == "delete":
	case ref.Subresource == "status" && (ev.Verb == "patch" || ev.Verb == "update"):
		p.phase = body.Status.Phase
	default:
		return podEvent{}, false
	}
	return p, true
}

// podsBefore is the expectation that TrainJob w.name's Pods run, when the
// log has all of them Running before w was received: as many as its Job
// controller created, none deleted, each last reported Running. Nil
// otherwise (no Pods yet, some not running, a log without the status
// writes' bodies).
func (b *builder) podsBefore(w *write) *v1alpha1.PodExpectation {
	if w.kind != trainJobKind || w.ev.Verb == "create" {
		return nil
	}
	created := 0
	phases := map[string]string{}
	for _, p := range b.pods {
		if p.at.After(w.ev.Received) {
			continue
		}
		switch {
		case p.verb == "create":
			if p.jobSet == w.name {
				created++
			}
		case !strings.HasPrefix(p.name, w.name+"-"):
		case p.verb == "delete":
			return nil // Pods going: their phase is the kubelet's race
		case p.phase != "":
			phases[p.name] = p.phase
		}
	}
	if created == 0 || len(phases) != created || slices.ContainsFunc(mapValues(phases), func(s string) bool { return s != "Running" }) {
		return nil
	}
	return &v1alpha1.PodExpectation{
		Selector: &v1alpha1.LabelSelector{MatchLabels: map[string]string{jobSetNameLabel: w.name}},
		Count:    &created,
		Phase:    "Running",
	}
}

func mapValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
