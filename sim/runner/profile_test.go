package runner

import (
	"testing"

	"github.com/google/pprof/profile"
)

// The API server's profile is summed by area: a sample goes to the first
// area of the list with a function on its stack, wherever on the stack.
func TestCPUByAreaFirstAreaOnTheStackWins(t *testing.T) {
	fn := func(name string) *profile.Location {
		return &profile.Location{Line: []profile.Line{{Function: &profile.Function{Name: name}}}}
	}
	sample := func(ns int64, funcs ...string) *profile.Sample {
		s := &profile.Sample{Value: []int64{1, ns}}
		for _, f := range funcs {
			s.Location = append(s.Location, fn(f))
		}
		return s
	}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		Sample: []*profile.Sample{
			// A webhook call's TLS write: the webhook's.
			sample(3e9, "crypto/tls.(*Conn).Write", "k8s.io/apiserver/pkg/admission/plugin/webhook/mutating.(*mutatingDispatcher).Dispatch", "net/http.HandlerFunc.ServeHTTP"),
			// An apply: server-side apply, not the update around it.
			sample(2e9, "sigs.k8s.io/structured-merge-diff/v6/typed.handleAtom", "k8s.io/apiserver/pkg/registry/generic/registry.(*Store).Update"),
			sample(1e9, "k8s.io/apiserver/pkg/registry/generic/registry.(*Store).Update"),
			sample(5e8, "main.main"),
		},
	}
	got, total := cpuByArea(p, apiServerAreas)
	if total != 6.5 {
		t.Errorf("total = %v s, want 6.5", total)
	}
	want := map[string]float64{
		"admission webhooks (calls over TLS)": 3,
		"server-side apply and managedFields": 2,
		"updates and patches (the rest)":      1,
		otherArea:                             0.5,
	}
	for area, secs := range want {
		if got[area] != secs {
			t.Errorf("%s = %v s, want %v (all: %v)", area, got[area], secs, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("areas = %v, want only %v", got, want)
	}
}
