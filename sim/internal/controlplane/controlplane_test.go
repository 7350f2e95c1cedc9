package controlplane

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/trainersim/trainersim/fakegpu"
)

// TestFreePort: the ports FreePort gives are free and below the kernel's
// ephemeral range, which outgoing connections draw from.
func TestFreePort(t *testing.T) {
	low, high := PortsBelowEphemeral()
	if low < 1024 || high-low != 10000 {
		t.Fatalf("range %d-%d", low, high)
	}
	for range 20 {
		port, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if port < low || port >= high {
			t.Errorf("port %d outside %d-%d", port, low, high)
		}
	}
}

// TestFreePortHonoursReservations: a port another process reserved is not
// given out while its reservation lasts, and is once it has ended.
func TestFreePortHonoursReservations(t *testing.T) {
	dir := t.TempDir()
	low, high := PortsBelowEphemeral()
	free := -1
	for port := low; port < high; port++ {
		if free < 0 {
			if l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
				l.Close()
				free = port
				continue
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "port-"+strconv.Itoa(port)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	var got []int
	for range 5 {
		port, err := freePort(dir, now)
		if err != nil {
			break
		}
		got = append(got, port)
	}
	if len(got) != 1 || got[0] != free {
		t.Fatalf("with every port but %d reserved, FreePort gave %v, want %d once", free, got, free)
	}
	later := now.Add(PortReservation + time.Minute)
	if _, err := freePort(dir, later); err != nil {
		t.Fatalf("after the reservations ended: %v", err)
	}
	left, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 2 { // the lock and the new reservation
		t.Errorf("%d files in the reservations' directory after they ended, want the lock and one", len(left))
	}
}

// TestFreePortSideBySide: FreePorts called at once give different ports.
func TestFreePortSideBySide(t *testing.T) {
	dir := t.TempDir()
	const n = 40
	ports := make([]int, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			ports[i], errs[i] = freePort(dir, time.Now())
		}()
	}
	close(start)
	wg.Wait()
	seen := map[int]bool{}
	for i, port := range ports {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if seen[port] {
			t.Errorf("port %d given twice", port)
		}
		seen[port] = true
	}
}

// TestControllerManagerGrace: the node-lifecycle controller's grace is the
// heartbeat's, the fast one's when none is given.
func TestControllerManagerGrace(t *testing.T) {
	for _, tc := range []struct {
		hb   fakegpu.Heartbeat
		want string
	}{
		{fakegpu.Heartbeat{}, "--node-monitor-grace-period=20s"},
		{fakegpu.FastHeartbeat, "--node-monitor-grace-period=20s"},
		{fakegpu.KubernetesHeartbeat, "--node-monitor-grace-period=50s"},
	} {
		if args := NewControllerManager("kcm", "/w", "/l", "sa.key", "ca.crt", tc.hb).Args; !slices.Contains(args, tc.want) {
			t.Errorf("with %s: arguments %q lack %s", tc.hb, args, tc.want)
		}
	}
}
