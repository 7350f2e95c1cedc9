package runner

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestReleaseTogetherRunsEveryWriteAtOnce fails unless all functions are in
// flight at the same time: each one waits until every one has started, which
// would never happen if they ran one after another.
func TestReleaseTogetherRunsEveryWriteAtOnce(t *testing.T) {
	const n = 5
	var started sync.WaitGroup
	started.Add(n)
	allIn := make(chan struct{})
	go func() { started.Wait(); close(allIn) }()
	fns := make([]func() error, n)
	for i := range fns {
		fns[i] = func() error {
			started.Done()
			select {
			case <-allIn:
				return fmt.Errorf("write %d", i)
			case <-time.After(10 * time.Second):
				return errors.New("not all writes were in flight together")
			}
		}
	}
	errs := releaseTogether(fns)
	for i, err := range errs {
		if want := fmt.Sprintf("write %d", i); err == nil || err.Error() != want {
			t.Errorf("errs[%d] = %v, want %q (results must stay in the order of the writes)", i, err, want)
		}
	}
}

// TestReleaseInOrderForcesTheOrder checks that the functions run one at a
// time, in the order asked, for every order of four.
func TestReleaseInOrderForcesTheOrder(t *testing.T) {
	for _, order := range [][]int{{0, 1, 2, 3}, {3, 2, 1, 0}, {2, 0, 3, 1}, {1, 3, 0, 2}} {
		var (
			mu       sync.Mutex
			ran      []int
			inFlight int
			overlap  bool
		)
		fns := make([]func() error, len(order))
		for i := range fns {
			fns[i] = func() error {
				mu.Lock()
				inFlight++
				overlap = overlap || inFlight > 1
				ran = append(ran, i)
				mu.Unlock()
				time.Sleep(time.Millisecond) // room for another to start, were it allowed
				mu.Lock()
				inFlight--
				mu.Unlock()
				return fmt.Errorf("write %d", i)
			}
		}
		errs := releaseInOrder(fns, order)
		if diff := cmp.Diff(order, ran); diff != "" {
			t.Errorf("order mismatch (-want +got):\n%s", diff)
		}
		if overlap {
			t.Errorf("order %v: two functions ran at once", order)
		}
		for i, err := range errs {
			if want := fmt.Sprintf("write %d", i); err == nil || err.Error() != want {
				t.Errorf("errs[%d] = %v, want %q", i, err, want)
			}
		}
	}
}
