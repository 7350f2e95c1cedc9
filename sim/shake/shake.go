// Package shake finds scenarios whose verdict depends on an order nothing
// in them states: it runs a scenario several times, each time with seeded
// delays added to every write in its namespace (through sim/gate's delay
// webhook, so the real components' requests and the actors' alike), and
// reports a scenario whose verdict changes as order-dependent, with a seed
// that passes and one that fails.
//
// Seeds come in mirrored pairs: seed 2k+1 delays every request by MaxDelay
// less what seed 2k delays it by, so a race between two requests that the
// delays decide is run both ways within each pair. A seed gives the same
// delay to the same request (the same user, field manager, verb, resource
// and object, the same number of times before) in every run and every
// build, which is what makes a run replayable by its seed.
package shake

import (
	"fmt"
	"hash/fnv"
	"time"
)

// DefaultMaxDelay is the longest delay added to one request unless told
// otherwise: long against the milliseconds between two controllers'
// reactions, short against a scenario's waits.
const DefaultMaxDelay = 300 * time.Millisecond

// Delay returns the delay seed gives the n-th request (from 0) of a key,
// in [0, max).
func Delay(seed uint64, max time.Duration, key string, n int) time.Duration {
	if max <= 0 {
		return 0
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%d\x00%s\x00%d", seed>>1, key, n)
	d := time.Duration(mix(h.Sum64()) % uint64(max))
	if seed&1 == 1 {
		d = max - 1 - d
	}
	return d
}

// mix is SplitMix64's finaliser, spreading FNV's bits.
func mix(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Seeds returns the seeds of n shaken runs from base: base, its mirror,
// base+2, its mirror, ... (base is made even).
func Seeds(base uint64, n int) []uint64 {
	base &^= 1
	out := make([]uint64, n)
	for i := range out {
		out[i] = base + uint64(i)
	}
	return out
}

// Run is the verdict of one shaken run of a scenario.
type Run struct {
	Seed   uint64
	Passed bool
	// Failure is the run's failure, for a failed one.
	Failure string
}

// Finding is a scenario whose verdict changed between shaken runs.
type Finding struct {
	// Scenario is the scenario's run name without the shake's part.
	Scenario string
	// Passing and Failing are a seed of a run that passed and one of a run
	// that failed; Failure is that run's failure.
	Passing, Failing uint64
	Failure          string
	// Passed and Runs count the runs.
	Passed, Runs int
}

// Find returns the order-dependent scenarios among runs, by scenario name,
// in the order of names.
func Find(names []string, runs map[string][]Run) []Finding {
	var out []Finding
	for _, name := range names {
		f := Finding{Scenario: name}
		var pass, fail bool
		for _, r := range runs[name] {
			f.Runs++
			if r.Passed {
				f.Passed++
				if !pass {
					f.Passing, pass = r.Seed, true
				}
			} else if !fail {
				f.Failing, f.Failure, fail = r.Seed, r.Failure, true
			}
		}
		if pass && fail {
			out = append(out, f)
		}
	}
	return out
}
