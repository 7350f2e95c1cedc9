package auditimport

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// logBytes is the size of the log BenchmarkImport reads.
const logBytes = 1 << 30

// BenchmarkImport measures the import rate of a large log: 1 GiB of the
// recorded run's events, copied into namespaces of their own, with the
// chosen namespace's at its end; it reports MB/s and the Go heap's peak,
// which stays flat as the log grows (the log is streamed).
func BenchmarkImport(b *testing.B) {
	lines := strings.Split(strings.TrimSuffix(readFile(b, recorded), "\n"), "\n")
	const ns = "multi-manager-lost-update-42e49b"
	path := filepath.Join(b.TempDir(), "audit.log")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	written, events := 0, 0
	for i := 0; written < logBytes; i++ {
		other := fmt.Sprintf("other-%d", i)
		for _, l := range lines {
			n, _ := w.WriteString(strings.ReplaceAll(l, ns, other) + "\n")
			written += n
		}
		events += len(lines)
	}
	for _, l := range lines {
		n, _ := w.WriteString(l + "\n")
		written += n
	}
	events += len(lines)
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	var peak uint64
	done := make(chan struct{})
	go func() { // the heap in use, sampled while the import runs
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak {
				peak = m.HeapInuse
			}
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	start := time.Now()
	for b.Loop() {
		res, err := Import([]string{path}, Options{Namespace: ns})
		if err != nil {
			b.Fatal(err)
		}
		if res.Writes != 8 {
			b.Fatalf("%d writes imported, want the recorded run's 8", res.Writes)
		}
	}
	close(done)
	secs := time.Since(start).Seconds() / float64(b.N)
	b.ReportMetric(float64(written)/1e6/secs, "MB/s")
	b.ReportMetric(float64(peak)/1e6, "peak-heap-MB")
	b.ReportMetric(0, "ns/op")
	fmt.Printf("\nimport of a %.2f GB log (%d events): %.1f s, %.0f MB/s, peak Go heap in use %.0f MB\n", float64(written)/1e9, events, secs, float64(written)/1e6/secs, float64(peak)/1e6)
}

func readFile(b *testing.B, path string) string {
	b.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	return string(data)
}
