//go:build kind

package kinde2e_test

import (
	"cmp"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times (100 on
// Linux).
const clockTicks = 100

// cpuSampler reads, every second while a run goes, the CPU time (user and
// system) of every process of this machine, keeping each one's last
// figure: the kind node's processes, which go with the cluster at the end
// of the run, count up to their last second. Their CPU is summed by
// command name (/proc's comm, 15 characters at most).
type cpuSampler struct {
	mu    sync.Mutex
	first map[int]procCPU // at the start
	last  map[int]procCPU // at the last look
	stop  chan struct{}
	done  chan struct{}
}

type procCPU struct {
	comm string
	cpu  float64 // seconds
}

// sampleCPU starts a sampler.
func sampleCPU() *cpuSampler {
	s := &cpuSampler{first: readProcCPU(), last: map[int]procCPU{}, stop: make(chan struct{}), done: make(chan struct{})}
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

func (s *cpuSampler) look() {
	now := readProcCPU()
	s.mu.Lock()
	defer s.mu.Unlock()
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
	byComm, all := map[string]float64{}, 0.0
	for pid, p := range s.last {
		spent := p.cpu
		if before, ok := s.first[pid]; ok && before.comm == p.comm {
			spent -= before.cpu
		}
		if spent > 0 {
			byComm[p.comm] += spent
			all += spent
		}
	}
	return byComm, all
}

// readProcCPU reads the CPU time of every process.
func readProcCPU() map[int]procCPU {
	out := map[int]procCPU{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone
		}
		// pid (comm) state ppid ... utime(14) stime(15): comm may hold
		// spaces and parentheses, the fields follow its last ")".
		stat := string(data)
		open, end := strings.IndexByte(stat, '('), strings.LastIndexByte(stat, ')')
		if open < 0 || end < open {
			continue
		}
		fields := strings.Fields(stat[end+1:])
		if len(fields) < 13 {
			continue
		}
		utime, _ := strconv.ParseFloat(fields[11], 64)
		stime, _ := strconv.ParseFloat(fields[12], 64)
		out[pid] = procCPU{comm: stat[open+1 : end], cpu: (utime + stime) / clockTicks}
	}
	return out
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
