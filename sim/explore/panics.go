package explore

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// An invariant of the oracle that needs no reference: no component logs a
// panic. A controller that panics in a reconcile is not stopped: the
// controller-runtime and client-go recover it and log "Observed a panic"
// (sim's in-process Trainer and JobSet, Kueue, kube-controller-manager),
// and the work goes on, so neither the scenario's expectations nor the end
// state need show it. A process that dies of one logs "panic: " first.

// panicMarks are what a line of a component's log says a panic with.
var panicMarks = []string{"Observed a panic", "panic: "}

// LogScan reads the components' logs of a cluster (their folder: each
// component's *.log, the API server's audit log left out) for panics,
// each time from where it stopped the time before.
type LogScan struct {
	Dir     string
	offsets map[string]int64
}

// Panics returns the lines logged with a panic since the last call, each
// prefixed with its log's name; a line still being written (no newline
// yet) is read at the next call.
func (s *LogScan) Panics() ([]string, error) {
	if s.offsets == nil {
		s.offsets = map[string]int64{}
	}
	entries, err := os.ReadDir(s.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".log") || name == "audit.log" {
			continue
		}
		lines, err := s.scan(name)
		if err != nil {
			return out, err
		}
		out = append(out, lines...)
	}
	return out, nil
}

// scan reads one log from its offset and moves the offset past the last
// whole line.
func (s *LogScan) scan(name string) ([]string, error) {
	f, err := os.Open(filepath.Join(s.Dir, name))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if info, err := f.Stat(); err == nil && info.Size() < s.offsets[name] {
		s.offsets[name] = 0 // a new log under the old name: a restarted component's
	}
	if _, err := f.Seek(s.offsets[name], io.SeekStart); err != nil {
		return nil, err
	}
	var out []string
	r := bufio.NewReaderSize(f, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			// io.EOF: a last line without its newline is left for the
			// next call.
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return out, err
		}
		s.offsets[name] += int64(len(line))
		if slices.ContainsFunc(panicMarks, func(m string) bool { return bytes.Contains(line, []byte(m)) }) {
			out = append(out, name+": "+strings.TrimSpace(string(line)))
		}
	}
}
