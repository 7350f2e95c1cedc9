package runner

import (
	"context"
	"slices"
	"sync"
)

// slots are Run's --parallel places, handed out by rank rather than by
// arrival: of the runs waiting for a place, the one first in startOrder
// gets it. A channel would hand places out in the order the goroutines
// reached it, and runs released together (every run that uses JobSet,
// once the runs gating it are done) reach it in the order the Go scheduler
// wakes them: the scenario that waits on the node-monitor grace period
// then started anywhere among them, and the corpus lasted 70 or 100 s from
// one run to the next (with a grace of 50 s).
type slots struct {
	mu      sync.Mutex
	changed *sync.Cond
	free    int
	waiting []int // ranks waiting for a place, sorted
}

func newSlots(n int) *slots {
	s := &slots{free: n}
	s.changed = sync.NewCond(&s.mu)
	return s
}

// acquire waits until a place is free and no run of a lower rank waits for
// one, then takes it; false, taking nothing, once ctx ends.
func (s *slots) acquire(ctx context.Context, rank int) bool {
	stop := context.AfterFunc(ctx, func() {
		s.mu.Lock()
		s.changed.Broadcast()
		s.mu.Unlock()
	})
	defer stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	at, _ := slices.BinarySearch(s.waiting, rank)
	s.waiting = slices.Insert(s.waiting, at, rank)
	for ctx.Err() == nil && (s.free == 0 || s.waiting[0] != rank) {
		s.changed.Wait()
	}
	at, _ = slices.BinarySearch(s.waiting, rank)
	s.waiting = slices.Delete(s.waiting, at, at+1)
	if ctx.Err() != nil {
		s.changed.Broadcast() // the next rank may be first now
		return false
	}
	s.free--
	s.changed.Broadcast() // the next rank is first now, if places are left
	return true
}

// release gives a place back.
func (s *slots) release() {
	s.mu.Lock()
	s.free++
	s.changed.Broadcast()
	s.mu.Unlock()
}
