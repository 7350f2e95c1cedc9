package envtest

import "context"

func (e *Environment) startScheduler(ctx context.Context, bin string) error {
	return e.startComponent(ctx, StepScheduler, bin, componentArgs)
}
