package results

import (
	"testing"
	"time"
)

func TestBreakdownAddAndString(t *testing.T) {
	var total Breakdown
	a := Breakdown{SetUp: time.Second, Writes: 200 * time.Millisecond, Recording: 10 * time.Millisecond, Teardown: 50 * time.Millisecond}
	a.Wait("kwok", 300*time.Millisecond)
	a.Wait("scheduler", 700*time.Millisecond)
	b := Breakdown{SetUp: 500 * time.Millisecond}
	b.Wait("kwok", 400*time.Millisecond)
	total.Add(a)
	total.Add(b)
	if total.Waiting != 1400*time.Millisecond || total.WaitingOn["kwok"] != 700*time.Millisecond || total.SetUp != 1500*time.Millisecond {
		t.Fatalf("sum = %+v", total)
	}
	want := "set-up 1.5s, writes 200ms, waiting 1.4s (on kwok 700ms, scheduler 700ms), recording 10ms, teardown 50ms"
	if got := total.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
