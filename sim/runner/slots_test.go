package runner

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

// waitingFor waits until n runs wait for a place.
func (s *slots) waitingFor(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.mu.Lock()
		got := len(s.waiting)
		s.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d runs wait for a place, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestSlotsGoByRank: runs that wait for a place together get it in the
// order of their ranks, whatever order they came in.
func TestSlotsGoByRank(t *testing.T) {
	s := newSlots(1)
	if !s.acquire(t.Context(), 100) {
		t.Fatal("the free place was not taken")
	}
	ranks := rand.Perm(20)
	var mu sync.Mutex
	var started []int
	var wg sync.WaitGroup
	for _, rank := range ranks {
		wg.Go(func() {
			if !s.acquire(t.Context(), rank) {
				t.Errorf("rank %d got no place", rank)
				return
			}
			mu.Lock()
			started = append(started, rank)
			mu.Unlock()
			s.release()
		})
	}
	s.waitingFor(t, len(ranks))
	s.release()
	wg.Wait()
	want := slices.Sorted(slices.Values(ranks))
	if !slices.Equal(started, want) {
		t.Errorf("runs started in the order %v, want %v", started, want)
	}
}

// TestSlotsTwoPlaces: with two places, the two first ranks run at once and
// the third waits for one of them.
func TestSlotsTwoPlaces(t *testing.T) {
	s := newSlots(2)
	for _, rank := range []int{0, 1} {
		if !s.acquire(t.Context(), rank) {
			t.Fatalf("rank %d got no place of two", rank)
		}
	}
	got := make(chan bool)
	go func() { got <- s.acquire(t.Context(), 2) }()
	s.waitingFor(t, 1)
	s.release()
	if !<-got {
		t.Fatal("rank 2 got no place once one was given back")
	}
}

// TestSlotsContextEnds: a run waiting for a place gives up when its
// context ends, taking nothing, and the runs behind it still get places.
func TestSlotsContextEnds(t *testing.T) {
	s := newSlots(1)
	if !s.acquire(t.Context(), 5) {
		t.Fatal("the free place was not taken")
	}
	ctx, cancel := context.WithCancel(t.Context())
	first := make(chan bool)
	go func() { first <- s.acquire(ctx, 0) }()
	s.waitingFor(t, 1)
	second := make(chan bool)
	go func() { second <- s.acquire(t.Context(), 1) }()
	s.waitingFor(t, 2)
	cancel()
	if <-first {
		t.Error("a run whose context ended took a place")
	}
	s.release()
	if !<-second {
		t.Error("the run behind a cancelled one got no place")
	}
	if s.free != 0 {
		t.Errorf("%d places free, want 0", s.free)
	}
}
