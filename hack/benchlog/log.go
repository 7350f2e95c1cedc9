package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Record is one figure of one benchmark run: a line of the log.
type Record struct {
	Time time.Time `json:"time"`
	// Commit is the tree's HEAD; Dirty, that the tree had changes.
	Commit string  `json:"commit"`
	Dirty  bool    `json:"dirty,omitempty"`
	Host   Machine `json:"machine"`
	// Benchmark is the benchmark's name without "Benchmark" and the
	// GOMAXPROCS suffix ("Start", "CorpusViews").
	Benchmark string  `json:"benchmark"`
	Metric    string  `json:"metric"`
	Value     float64 `json:"value"`
}

// Machine is what a figure was measured on.
type Machine struct {
	Host   string `json:"host"`
	CPUs   int    `json:"cpus"`
	Model  string `json:"model,omitempty"`
	MemGiB int    `json:"memGiB,omitempty"`
}

// parseLine reads a result line of go test -bench:
//
//	BenchmarkStart-2   3   2.63 bare-envtest-s   3.09 full-harness-s   1.17 full/bare   0 ns/op
//
// and returns its figures, ns/op of 0 (the benchmarks' way to say it means
// nothing) left out; ok is false for any other line.
func parseLine(line string) (benchmark string, figures map[string]float64, ok bool) {
	f := strings.Fields(line)
	if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || len(f)%2 != 0 {
		return "", nil, false
	}
	if _, err := strconv.Atoi(f[1]); err != nil {
		return "", nil, false
	}
	name := strings.TrimPrefix(f[0], "Benchmark")
	if i := strings.LastIndexByte(name, '-'); i > 0 {
		if _, err := strconv.Atoi(name[i+1:]); err == nil {
			name = name[:i]
		}
	}
	figures = map[string]float64{}
	for i := 2; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return "", nil, false
		}
		if f[i+1] == "ns/op" && v == 0 {
			continue
		}
		figures[f[i+1]] = v
	}
	return name, figures, len(figures) > 0
}

// record copies in to out as it comes, and appends a Record to the log at
// path for every figure of in's result lines, once in ends: the output of
// one go test -bench, piped through it.
func record(in io.Reader, out io.Writer, path string, now time.Time, m Machine, commit string, dirty bool) (int, error) {
	var records []Record
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(out, line)
		name, figures, ok := parseLine(line)
		if !ok {
			continue
		}
		for _, metric := range slices.Sorted(maps.Keys(figures)) {
			records = append(records, Record{Time: now, Commit: commit, Dirty: dirty, Host: m, Benchmark: name, Metric: metric, Value: figures[metric]})
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	if len(records) == 0 {
		return 0, nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, r := range records {
		if err := enc.Encode(r); err != nil {
			return 0, err
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return 0, err
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return 0, err
	}
	if _, err := f.Write(buf.Bytes()); err != nil {
		f.Close()
		return 0, err
	}
	return len(records), f.Close()
}

// readLog returns the records of the log at path, in its order; a line
// that is not a record is an error that names it.
func readLog(path string) ([]Record, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []Record
	for i, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var r Record
		if err := json.Unmarshal(line, &r); err != nil {
			return nil, fmt.Errorf("%s:%d: not a record: %w", path, i+1, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// thisMachine describes the machine benchlog runs on.
func thisMachine() Machine {
	host, _ := os.Hostname()
	m := Machine{Host: host, CPUs: runtime.NumCPU()}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.Model = strings.TrimSpace(v)
				break
			}
		}
	}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int
		if _, err := fmt.Sscanf(string(data), "MemTotal: %d kB", &kb); err == nil {
			m.MemGiB = (kb + 512*1024) / (1024 * 1024)
		}
	}
	return m
}

// headCommit returns the tree's HEAD and whether it has changes; "" when
// git cannot tell (not a checkout).
func headCommit() (string, bool) {
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		return "", false
	}
	status, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output()
	return strings.TrimSpace(string(out)), err == nil && len(bytes.TrimSpace(status)) > 0
}
