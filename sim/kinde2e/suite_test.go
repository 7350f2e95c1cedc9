//go:build kind

// Package kinde2e_test proves the kind provider: the whole corpus gives the
// same verdict on a kind cluster (the Trainer and JobSet as Deployments from
// their manifests) as on envtest (the Trainer in this process), a SIGKILLed
// run leaves no container once the next run or simctl clean has run, and bad
// input is refused in one line with nothing left behind.
//
// It needs Docker and the images of `make kind-images`, so it is a suite of
// its own behind the build tag kind: `make test-kind` runs it.
package kinde2e_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"
)

// Named timeouts, for a loaded 2-core machine.
const (
	// corpusTimeout bounds a whole corpus run, cluster start included.
	corpusTimeout = 20 * time.Minute
	// kindStartTimeout bounds a kind cluster's start.
	kindStartTimeout = 8 * time.Minute
	// exitTimeout bounds a refused start.
	exitTimeout = time.Minute
)

var simctl string

func TestKind(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "trainersim kind suite")
}

var _ = BeforeSuite(func() {
	// The Docker engine `make kind-docker` chose, for simctl and for the
	// suite's own docker commands alike.
	if os.Getenv("DOCKER_HOST") == "" {
		if host, err := os.ReadFile("../../bin/kind-build/docker-host"); err == nil {
			Expect(os.Setenv("DOCKER_HOST", strings.TrimSpace(string(host)))).To(Succeed())
		}
	}
	var err error
	simctl, err = gexec.Build("github.com/trainersim/trainersim/cmd/simctl")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(gexec.CleanupBuildArtifacts)
})

// kindContainers lists the containers of the kind cluster of the name, as
// the docker that simctl uses sees them.
func kindContainers(name string) []string {
	out, err := exec.Command("docker", "ps", "-a", "--filter", "label=io.x-k8s.kind.cluster="+name, "--format", "{{.Names}}").Output()
	Expect(err).NotTo(HaveOccurred())
	return strings.Fields(string(out))
}
