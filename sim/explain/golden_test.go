package explain

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// goldenCases are TrainJob files of testdata/ with the runtime files they
// need; each is explained without a cluster and rendered in golden files.
var goldenCases = []struct {
	name     string
	file     string
	runtimes []string
	formats  []string
}{
	{"three-managers", "three-managers.yaml", nil, []string{FormatText, FormatJSON}},
	{"runtime-tolerations-replaced", "runtime-tolerations-replaced.yaml", []string{"runtimes/pytorch-distributed-gpu.yaml"}, []string{FormatText}},
	{"per-job-patches", "per-job-patches.yaml", nil, []string{FormatText}},
	{"empty-entry", "empty-entry.yaml", nil, []string{FormatText}},
}

func TestExplainGolden(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			var runtimes []string
			for _, r := range tc.runtimes {
				runtimes = append(runtimes, filepath.Join("testdata", r))
			}
			e, tj, err := FromFiles(ctx, filepath.Join("testdata", tc.file), runtimes)
			if err != nil {
				t.Fatal(err)
			}
			res, err := e.Explain(ctx, tj)
			if err != nil {
				t.Fatal(err)
			}
			for _, format := range tc.formats {
				var out bytes.Buffer
				if err := res.Write(&out, format); err != nil {
					t.Fatal(err)
				}
				golden(t, filepath.Join("testdata", tc.name+"."+format+".golden"), out.String())
			}
		})
	}
}

// golden compares got with a golden file, rewriting it with -update.
func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("failed to read golden file (run with -update): %v", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}
