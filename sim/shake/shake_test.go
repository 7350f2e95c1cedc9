package shake

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestDelayMirrored: a seed gives a key the same delay every time, within
// bounds, and its mirror the complement, so that of two requests the one a
// seed delays less its mirror delays more.
func TestDelayMirrored(t *testing.T) {
	const max = 300 * time.Millisecond
	flipped := 0
	for s := uint64(0); s < 200; s += 2 {
		a, b := Delay(s, max, "kueue update trainjobs llm", 0), Delay(s, max, "trainer create jobsets llm", 0)
		if a != Delay(s, max, "kueue update trainjobs llm", 0) {
			t.Fatal("a seed gave one request two delays")
		}
		ma, mb := Delay(s+1, max, "kueue update trainjobs llm", 0), Delay(s+1, max, "trainer create jobsets llm", 0)
		for _, d := range []time.Duration{a, b, ma, mb} {
			if d < 0 || d >= max {
				t.Fatalf("delay %s out of [0, %s)", d, max)
			}
		}
		if a+ma != max-1 || b+mb != max-1 {
			t.Errorf("seed %d and its mirror: %s+%s, %s+%s, want %s each", s, a, ma, b, mb, max-1)
		}
		if a != b && (a < b) != (ma < mb) {
			flipped++
		}
	}
	if flipped < 95 {
		t.Errorf("mirrors flipped the order of two requests in %d of 100 pairs", flipped)
	}
	if Delay(4, max, "k", 0) == Delay(4, max, "k", 1) && Delay(4, max, "k", 1) == Delay(4, max, "k", 2) {
		t.Error("the next requests of one key get the same delay")
	}
}

func TestSeeds(t *testing.T) {
	if diff := cmp.Diff([]uint64{42, 43, 44, 45, 46}, Seeds(43, 5)); diff != "" {
		t.Errorf("seeds mismatch (-want +got):\n%s", diff)
	}
}

// TestFind: a scenario is order-dependent when one run passed and another
// failed; the first passing and failing seeds are named.
func TestFind(t *testing.T) {
	runs := map[string][]Run{
		"steady":  {{Seed: 1, Passed: true}, {Seed: 2, Passed: true}},
		"broken":  {{Seed: 1, Failure: "x"}, {Seed: 2, Failure: "x"}},
		"racy":    {{Seed: 1, Passed: true}, {Seed: 2, Failure: "step \"a\": 409"}, {Seed: 3, Failure: "other"}},
		"not run": nil,
	}
	got := Find([]string{"steady", "broken", "racy", "not run"}, runs)
	want := []Finding{{Scenario: "racy", Passing: 1, Failing: 2, Failure: "step \"a\": 409", Passed: 1, Runs: 3}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("findings mismatch (-want +got):\n%s", diff)
	}
}
