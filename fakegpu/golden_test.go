package fakegpu

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/trainersim/trainersim/internal/golden"
)

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

// checkGolden compares got with the golden file at path (golden.Check).
func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	golden.Check(t, path, got)
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
		if golden.Updating() {
			if err := os.Remove(f); err != nil {
				t.Fatalf("failed to remove stale golden file: %v", err)
			}
			continue
		}
		t.Errorf("stale golden file %s has no test case (make update removes it)", f)
	}
}
