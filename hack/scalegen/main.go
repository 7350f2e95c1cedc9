// Command scalegen writes the fleet-sized scenarios of scenarios/scale: a
// cluster of simulated GPU nodes in four profiles, one team's queue each
// (the real Kueue, a ClusterQueue per team), and TrainJobs of 1 to 8 nodes
// submitted at once, each written by three managers: the SDK (its entry, a
// team label), an admission webhook (its entry, a cost-center annotation
// and a scratch volume) and Kueue (its entry, the flavor's node selector
// and toleration, on admission). Each team's jobs fill its nodes exactly,
// so every Pod runs. make bench-scale runs them; `go run ./hack/scalegen`
// rewrites them, and a test checks that the files are what it writes.
//
//	go run ./hack/scalegen [-dir scenarios/scale]
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/trainersim/trainersim/hack/scalegen/fleet"
)

func main() {
	dir := flag.String("dir", "scenarios/scale", "directory to write the scenarios to")
	flag.Parse()
	for _, size := range fleet.Sizes {
		path := filepath.Join(*dir, size.FileName())
		if err := os.WriteFile(path, size.Scenario(), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "scalegen:", err)
			os.Exit(1)
		}
		fmt.Println("wrote", path)
	}
}
