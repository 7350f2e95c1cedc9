package results

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Breakdown says where a scenario's time went, so that the next person can
// see what a faster run has to cut.
type Breakdown struct {
	// SetUp is the namespace, the nodes until Ready and the set-up objects.
	SetUp time.Duration `json:"setUp"`
	// Writes is the steps' requests, from sent to answered.
	Writes time.Duration `json:"writes"`
	// Waiting is the steps' expectations, from their first check until
	// they held or failed.
	Waiting time.Duration `json:"waiting"`
	// WaitingOn splits Waiting by the lane (controller or actor) of the
	// last reaction the watches observed before each expectation held:
	// what it was waiting for. WaitingOnNothing: it held without one.
	WaitingOn map[string]time.Duration `json:"waitingOn,omitempty"`
	// Recording is what the runner reads for the report: the owners of
	// the runtimePatches entries after each step, the final Pods.
	Recording time.Duration `json:"recording"`
	// Teardown is the deletes of the namespace and the nodes.
	Teardown time.Duration `json:"teardown"`
}

// WaitingOnNothing is the WaitingOn key of expectations that held with no
// reaction observed while they waited.
const WaitingOnNothing = "nothing observed"

// Wait adds d of waiting on lane.
func (b *Breakdown) Wait(lane string, d time.Duration) {
	b.Waiting += d
	if b.WaitingOn == nil {
		b.WaitingOn = map[string]time.Duration{}
	}
	b.WaitingOn[lane] += d
}

// Add adds o to b.
func (b *Breakdown) Add(o Breakdown) {
	b.SetUp += o.SetUp
	b.Writes += o.Writes
	b.Recording += o.Recording
	b.Teardown += o.Teardown
	for lane, d := range o.WaitingOn {
		b.Wait(lane, d)
	}
	b.Waiting += o.Waiting - sum(o.WaitingOn)
}

func sum(m map[string]time.Duration) time.Duration {
	var t time.Duration
	for _, d := range m {
		t += d
	}
	return t
}

// String is one line: each part, and waiting by lane, longest first.
func (b Breakdown) String() string {
	r := func(d time.Duration) string { return d.Round(10 * time.Millisecond).String() }
	lanes := slices.SortedFunc(maps.Keys(b.WaitingOn), func(x, y string) int {
		if c := cmp.Compare(b.WaitingOn[y], b.WaitingOn[x]); c != 0 {
			return c
		}
		return strings.Compare(x, y)
	})
	var on []string
	for _, l := range lanes {
		on = append(on, fmt.Sprintf("%s %s", l, r(b.WaitingOn[l])))
	}
	waiting := r(b.Waiting)
	if len(on) > 0 {
		waiting += " (on " + strings.Join(on, ", ") + ")"
	}
	return fmt.Sprintf("set-up %s, writes %s, waiting %s, recording %s, teardown %s", r(b.SetUp), r(b.Writes), waiting, r(b.Recording), r(b.Teardown))
}
