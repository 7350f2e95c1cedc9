package runner

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/trainersim/trainersim/results"
)

// TestWritesTimedOnTheRunnersClock: a write is stamped and timed by the
// Runner's Clock, not the machine's.
func TestWritesTimedOnTheRunnersClock(t *testing.T) {
	began := time.Date(2026, time.March, 14, 9, 26, 53, 0, time.UTC)
	clk := clocktesting.NewFakeClock(began)
	r := &Runner{Clock: clk}
	s := &scenarioRun{clock: r.clock(), objects: map[string]map[string]any{}, written: map[string]uint64{}}
	p := &prepared{
		write: results.Write{Verb: "create"},
		do: func(context.Context) (*unstructured.Unstructured, error) {
			clk.Step(1500 * time.Millisecond) // the server takes its time
			return nil, nil
		},
	}
	if err := s.send(context.Background(), p, "first"); err != nil {
		t.Fatal(err)
	}
	if !p.write.Started.Equal(began) || p.write.Duration != 1500*time.Millisecond {
		t.Errorf("write started %v and took %v, want %v and 1.5s on the Runner's clock", p.write.Started, p.write.Duration, began)
	}
	if _, ok := (&Runner{}).clock().(clock.RealClock); !ok {
		t.Error("a Runner without a Clock is not on the real clock")
	}
}
