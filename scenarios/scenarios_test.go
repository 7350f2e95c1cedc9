// Package scenarios_test runs every scenario file below this folder as a
// ginkgo spec on one shared trainersim cluster, and the smallest fleet of
// scale/ (which a walk skips), so that the fleets' format (four teams'
// queues on the real Kueue) and hack/scalegen's output are run by make
// test; the larger fleets are make bench-scale's.
package scenarios_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/trainersim/trainersim/sim/simginkgo"
)

func TestScenarios(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "trainersim scenarios")
}

var _ = simginkgo.Scenarios(".", "scale/fleet-10-nodes.yaml")
