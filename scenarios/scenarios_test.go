// Package scenarios_test runs every scenario file below this folder as a
// ginkgo spec on one shared trainersim cluster.
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

var _ = simginkgo.Scenarios(".")
