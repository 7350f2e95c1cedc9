package proc

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// clockTicks is the kernel's USER_HZ, the unit of /proc/<pid>/stat's times
// (100 on every Linux this runs on).
const clockTicks = 100

// CPU is one process's CPU time as /proc/<pid>/stat gives it.
type CPU struct {
	PPID    int
	Comm    string  // the command name, 15 characters at most
	State   string  // R, S, D...; Z: exited, not yet reaped by its parent
	Seconds float64 // user and system time
}

// CPUTimes reads the CPU time of every process of this machine from /proc,
// by pid; processes that end while it reads are left out.
func CPUTimes() (map[int]CPU, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("failed to read /proc: %w", err)
	}
	out := map[int]CPU{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone
		}
		if c, ok := parseStat(string(data)); ok {
			out[pid] = c
		}
	}
	return out, nil
}

// parseStat reads a /proc/<pid>/stat line: pid (comm) state ppid ...
// utime(14) stime(15). comm may hold spaces and parentheses: the fields
// follow its last ")".
func parseStat(s string) (CPU, bool) {
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return CPU{}, false
	}
	fields := strings.Fields(s[end+1:])
	if len(fields) < 13 {
		return CPU{}, false
	}
	ppid, _ := strconv.Atoi(fields[1])
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return CPU{PPID: ppid, Comm: s[open+1 : end], State: fields[0], Seconds: (utime + stime) / clockTicks}, true
}
