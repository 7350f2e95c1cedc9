package fakegpu

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ instead of comparing against them")

// testScheme is private to these tests: client-go's global scheme is never
// touched.
var testScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(corev1.AddToScheme(s))
	return s
}()

// yamlSerializer encodes and strictly decodes Kubernetes objects as YAML.
var yamlSerializer = json.NewSerializerWithOptions(json.DefaultMetaFactory, testScheme, testScheme, json.SerializerOptions{Yaml: true, Strict: true})

// encodeYAML encodes objs as a multi-document YAML stream.
func encodeYAML(t *testing.T, objs ...runtime.Object) []byte {
	t.Helper()
	var buf bytes.Buffer
	for i, obj := range objs {
		if i > 0 {
			buf.WriteString("---\n")
		}
		if err := yamlSerializer.Encode(obj, &buf); err != nil {
			t.Fatalf("failed to encode %T: %v", obj, err)
		}
	}
	return buf.Bytes()
}

// checkGolden compares got with the golden file at path, or rewrites the
// file when the test runs with -update.
func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatalf("failed to create golden directory: %v", err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatalf("failed to write golden file: %v", err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("failed to read golden file (run go test ./fakegpu/ -update to create it): %v", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}

// checkNoStaleGolden fails when a file matching pattern is not in want, so
// that goldens of removed profiles or cases do not linger.
func checkNoStaleGolden(t *testing.T, pattern string, want map[string]bool) {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatalf("failed to list golden files: %v", err)
	}
	for _, f := range files {
		if want[f] {
			continue
		}
		if *update {
			if err := os.Remove(f); err != nil {
				t.Fatalf("failed to remove stale golden file: %v", err)
			}
			continue
		}
		t.Errorf("stale golden file %s has no test case (run go test ./fakegpu/ -update to remove it)", f)
	}
}
