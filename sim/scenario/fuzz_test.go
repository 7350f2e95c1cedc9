package scenario

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzLoad checks that Load never panics, and that it returns either a
// scenario or an *Errors whose every entry names the file and says what is
// wrong. It is seeded with every YAML file under testdata.
//
//	go test ./sim/scenario/ -run '^$' -fuzz FuzzLoad -fuzztime 60s
func FuzzLoad(f *testing.F) {
	err := filepath.WalkDir("testdata", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f.Add(data)
		return nil
	})
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		minimal + "spec:\n  <<: {steps: [{name: a, get: {kind: K, name: n}}]}\n",
		minimal + "spec: &s\n  <<: *s\n",
		minimal + "spec:\n  steps:\n  - &a {name: a, get: {kind: K, name: n}}\n  - <<: *a\n    name: b\n",
		minimal + "spec: {steps: [{name: a, patch: {type: json, target: {kind: K, name: n}, body: [&x [1, 2], [*x, *x]]}}]}\n",
		strings.Replace(withData, "%s", "{a: !!binary aGk=, b: 2001-12-14, c: .nan, ? [k] : v}", 1),
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Load("fuzz.yaml", data, Options{FixturesDir: testFixtures})
		if err == nil {
			if file == nil || file.Scenario == nil || file.Path != "fuzz.yaml" {
				t.Fatalf("Load returned no error and %+v", file)
			}
			return
		}
		if file != nil {
			t.Errorf("Load returned a file and an error: %v", err)
		}
		var errs *Errors
		if !errors.As(err, &errs) {
			t.Fatalf("error is a %T, want *Errors: %v", err, err)
		}
		if len(*errs) == 0 {
			t.Fatal("empty *Errors")
		}
		for _, e := range *errs {
			if e.File != "fuzz.yaml" || e.Message == "" || e.Line < 0 || e.Column < 0 {
				t.Errorf("malformed error %#v", e)
			}
		}
		_ = CheckSchemaLine("fuzz.yaml", data)
	})
}
