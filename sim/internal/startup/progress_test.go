package startup

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"k8s.io/klog/v2"
)

// TestStartLeavesTheProgramsLoggersAlone: a provider's Start changes none
// of the process's global loggers (routing them is the program's choice,
// sim.RouteProcessLogs): in a process of its own, a klog line after Start
// still reaches standard error.
func TestStartLeavesTheProgramsLoggersAlone(t *testing.T) {
	if os.Getenv("STARTUP_TEST_CHILD") == "1" {
		var p Progress
		_, cancel := p.Start(context.Background(), nil, nil, 0)
		defer cancel()
		klog.Info("a line of the program's own")
		klog.Flush()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestStartLeavesTheProgramsLoggersAlone$")
	cmd.Env = append(os.Environ(), "STARTUP_TEST_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the child failed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "a line of the program's own") {
		t.Errorf("after Start, klog's line did not reach standard error:\n%s", out)
	}
}
