package envtest

import (
	"strings"
	"testing"

	"github.com/trainersim/trainersim/fixtures"
	"github.com/trainersim/trainersim/sim/manifests"
	"github.com/trainersim/trainersim/sim/releases"
)

// The schema probe of an upgrade names a field one release's TrainJob has
// and the other's not, a removed one first: the field the upgrade takes
// away from stored TrainJobs.
func TestUpgradeProbesAChangedTrainJobField(t *testing.T) {
	release := func(version string) *releases.Trainer {
		r, err := releases.LookupTrainer(version)
		if err != nil {
			t.Fatal(err)
		}
		return &r
	}
	for _, tc := range []struct {
		from, to string
		want     schemaChange
	}{
		{"v2.1.0", releases.TrainerVersion, schemaChange{field: "annotations", typ: "object"}},
		{releases.TrainerVersion, "v2.1.0", schemaChange{field: "activeDeadlineSeconds", typ: "integer"}},
		{"v2.2.1", "v2.1.0", schemaChange{field: "activeDeadlineSeconds", typ: "integer"}},
		{"v2.1.0", "v2.2.1", schemaChange{field: "annotations", typ: "object"}},
	} {
		oldCRDs, err := manifests.ReadCRDs(release(tc.from).Fixtures(), fixtures.CRDDir)
		if err != nil {
			t.Fatal(err)
		}
		newCRDs, err := manifests.ReadCRDs(release(tc.to).Fixtures(), fixtures.CRDDir)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := changedField(oldCRDs, newCRDs)
		if !ok || got != tc.want {
			t.Errorf("%s to %s: probe %+v (%t), want %+v", tc.from, tc.to, got, ok, tc.want)
		}
		if tc.from == "v2.1.0" && tc.to == releases.TrainerVersion {
			detail := schemaProbeDetail(oldCRDs, newCRDs)
			if !strings.Contains(detail, "spec.podTemplateOverrides") || !strings.Contains(detail, "added: ") {
				t.Errorf("%s to %s: detail %q does not name podTemplateOverrides among the removed fields, or the added ones", tc.from, tc.to, detail)
			}
		}
	}
	same, err := manifests.ReadCRDs(release("v2.2.0").Fixtures(), fixtures.CRDDir)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := changedField(same, same); ok {
		t.Errorf("a release against itself: probe %+v, want none", got)
	}
}
