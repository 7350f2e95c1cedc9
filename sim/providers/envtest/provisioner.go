package envtest

// The provisioner of the default StorageClass (sim/internal/storage), in
// this process: kind's local-path storage for the envtest provider. The
// StorageClass itself is installed with the other cluster-wide objects
// (install.go) and is part of the snapshot.

import (
	"context"

	"github.com/trainersim/trainersim/sim/identity"
	"github.com/trainersim/trainersim/sim/internal/storage"
)

// startProvisioner starts the provisioner on its own client and returns
// once it watches claims, volumes and storage classes. It logs to the
// in-process components' log.
func (e *Environment) startProvisioner(ctx context.Context) error {
	since := e.now()
	cfg, err := e.componentConfig(identity.Provisioner)
	if err != nil {
		return err
	}
	p := &storage.Controller{Config: cfg, Logger: e.logger.WithName("local-path-provisioner")}
	e.provisioner = p
	if err := p.Start(ctx); err != nil {
		return err
	}
	e.ready(StepProvisioner, since)
	return nil
}
