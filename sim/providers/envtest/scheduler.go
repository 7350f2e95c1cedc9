package envtest

import (
	"context"

	"github.com/trainersim/trainersim/sim/internal/controlplane"
)

func (e *Environment) startScheduler(ctx context.Context, bin string) error {
	return e.startComponent(ctx, controlplane.NewScheduler(bin, e.WorkDir, e.LogDir()))
}
