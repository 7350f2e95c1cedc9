package explain

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	goldenfile "github.com/trainersim/trainersim/internal/golden"
)

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

// golden compares got with a golden file (golden.Check).
func golden(t *testing.T, path, got string) {
	t.Helper()
	goldenfile.Check(t, path, []byte(got))
}
