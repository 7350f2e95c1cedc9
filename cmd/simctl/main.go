// Command simctl runs Kubeflow Trainer RuntimePatches scenarios on a local
// control plane with simulated GPU nodes. See `simctl --help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/trainersim/trainersim/cmd/simctl/app"
	"github.com/trainersim/trainersim/sim"
)

func main() {
	sim.TuneGC()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := app.Run(ctx, app.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}, os.Args[1:])
	stop()
	os.Exit(app.ExitCode(err))
}
