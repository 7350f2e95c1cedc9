//go:build kind

package kinde2e_test

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/gomega"

	"github.com/trainersim/trainersim/sim/internal/proc"
)

// cpuSampler reads, every second while a run goes, the CPU time (user and
// system) of every process of this machine, keeping each one's last
// figure: the kind node's processes, which go with the cluster at the end
// of the run, count up to their last second. Their CPU is summed by
// command name (/proc's comm, 15 characters at most).
type cpuSampler struct {
	mu    sync.Mutex
	first map[int]proc.CPU // at the start
	last  map[int]proc.CPU // at the last look
	err   error            // the first failed look
	stop  chan struct{}
	done  chan struct{}
}

// sampleCPU starts a sampler.
func sampleCPU() *cpuSampler {
	first, err := proc.CPUTimes()
	Expect(err).NotTo(HaveOccurred())
	s := &cpuSampler{first: first, last: map[int]proc.CPU{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			s.look()
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

// look reads every process's CPU time; the first failed read is kept for
// end, which fails the spec with it (look runs in the sampler's goroutine).
func (s *cpuSampler) look() {
	now, err := proc.CPUTimes()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil && s.err == nil {
		s.err = err
	}
	maps.Copy(s.last, now)
}

// end stops the sampler and returns the CPU seconds each command spent
// since the start, and their sum.
func (s *cpuSampler) end() (map[string]float64, float64) {
	s.look()
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	Expect(s.err).NotTo(HaveOccurred(), "the CPU of the processes could not be read")
	byComm, all := map[string]float64{}, 0.0
	for pid, p := range s.last {
		spent := p.Seconds
		if before, ok := s.first[pid]; ok && before.Comm == p.Comm {
			spent -= before.Seconds
		}
		if spent > 0 {
			byComm[p.Comm] += spent
			all += spent
		}
	}
	return byComm, all
}

// cpuBreakdown is the lines of a run's CPU per scenario run by command,
// the largest first, those under 5 ms left out.
func cpuBreakdown(byComm map[string]float64, all float64, runs int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%.3f s of CPU per scenario run (%d runs, every process of this machine, cluster start included):", all/float64(runs), runs)
	for _, comm := range slices.SortedFunc(maps.Keys(byComm), func(x, y string) int { return cmp.Or(cmp.Compare(byComm[y], byComm[x]), strings.Compare(x, y)) }) {
		if v := byComm[comm] / float64(runs); v >= 0.005 {
			fmt.Fprintf(&b, " %s %.3f;", comm, v)
		}
	}
	return strings.TrimSuffix(b.String(), ";")
}
