package controlplane

import "testing"

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
