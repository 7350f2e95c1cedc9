package releases

import (
	"runtime/debug"
)

// Module paths of the systems under test.
const (
	TrainerModule = "github.com/kubeflow/trainer/v2"
	JobSetModule  = "sigs.k8s.io/jobset"
)

// ModuleVersion says which version of a dependency this binary was built
// with: its version, or "(devel) <dir>" when a go.work or a replace points
// it at a local checkout (see docs/scenarios.md, Bringing your own trainer).
func ModuleVersion(path string) string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, m := range info.Deps {
		if m.Path != path {
			continue
		}
		if r := m.Replace; r != nil {
			if r.Version == "" {
				return "(devel) " + r.Path
			}
			return r.Path + " " + r.Version
		}
		if m.Version == "(devel)" {
			return "(devel) from a go.work checkout"
		}
		return m.Version
	}
	return "unknown"
}
