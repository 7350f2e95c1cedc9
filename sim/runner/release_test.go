package runner

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
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
