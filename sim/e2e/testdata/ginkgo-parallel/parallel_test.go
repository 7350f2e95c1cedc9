// Package parallel_test is a ginkgo suite of a few corpus scenarios, run by
// the e2e spec of `ginkgo -p` (ginkgo_parallel_test.go).
package parallel_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/trainersim/trainersim/sim/simginkgo"
)

func TestParallel(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "trainersim scenarios under ginkgo -p")
}

// Each spec says whether it is Serial (the JSON report does not).
var _ = BeforeEach(func() {
	AddReportEntry("serial", CurrentSpecReport().IsSerial)
})

var _ = simginkgo.Scenarios(
	"../../../../scenarios/examples",
	"../../../../scenarios/scheduling",
	// Holds on envtest only (a view of the in-process Trainer): Serial,
	// on process 1, where it runs; on process 2 it would be skipped.
	"../../../../scenarios/views/runtime-edited-before-first-reconcile.yaml",
)
