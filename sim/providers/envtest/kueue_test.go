package envtest

import (
	"io/fs"
	"testing"

	"github.com/trainersim/trainersim/fixtures"
	"github.com/trainersim/trainersim/sim/releases"
)

// TestKueueFixturesExist: the Kueue release the component runs has its
// manifests among the fixtures (make fixtures).
func TestKueueFixturesExist(t *testing.T) {
	if _, err := fs.Stat(fixtures.FS, pinnedKueueFixtures()+"/webhooks.yaml"); err != nil {
		t.Errorf("Kueue %s has no fixtures (make fixtures): %v", releases.KueueVersion, err)
	}
}
