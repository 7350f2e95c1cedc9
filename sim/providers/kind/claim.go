package kind

// Which kind clusters are simctl's: before it creates one, simctl writes a
// claim file (its pid, and whether the cluster is to be kept) in the
// temporary directory. A cluster whose claim names a simctl that is gone was
// left by a killed run, and the next start or `simctl clean --cluster kind`
// deletes it; a cluster without a claim is someone else's.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	kindcluster "sigs.k8s.io/kind/pkg/cluster"
	kindlog "sigs.k8s.io/kind/pkg/log"

	"github.com/trainersim/trainersim/sim/internal/startup"
)

// kindClaim is the content of a claim file.
type kindClaim struct {
	PID  int  `json:"pid"`
	Keep bool `json:"keep"`
}

func kindClaimPath(name string) string {
	return filepath.Join(os.TempDir(), "trainersim-kind", name+".json")
}

func claimKind(name string, keep bool) error {
	return writeKindClaim(name, kindClaim{PID: os.Getpid(), Keep: keep})
}

func writeKindClaim(name string, claim kindClaim) error {
	p := kindClaimPath(name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("failed to claim kind cluster %s: %w", name, err)
	}
	data, _ := json.Marshal(claim)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		return fmt.Errorf("failed to claim kind cluster %s: %w", name, err)
	}
	return nil
}

func releaseKind(name string) { _ = os.Remove(kindClaimPath(name)) }

func readKindClaim(name string) (kindClaim, bool) {
	var c kindClaim
	data, err := os.ReadFile(kindClaimPath(name))
	if err != nil || json.Unmarshal(data, &c) != nil {
		return c, false
	}
	return c, true
}

// removeStaleKind deletes the kind cluster of the name if a killed simctl
// left it, and returns ErrKindNameTaken if it exists for any other reason.
func removeStaleKind(p *kindcluster.Provider, name string) error {
	names, err := p.List()
	if err != nil {
		return fmt.Errorf("failed to list kind clusters: %w", err)
	}
	if !slices.Contains(names, name) {
		return nil
	}
	claim, ok := readKindClaim(name)
	switch {
	case !ok:
		return fmt.Errorf("%w: kind cluster %q was not created by simctl on this machine: delete it (kind delete cluster --name %s) or pass another --kind-name", ErrKindNameTaken, name, name)
	case claim.Keep:
		return fmt.Errorf("%w: kind cluster %q was kept by an earlier run: use it with --kubeconfig, or delete it with 'simctl clean --cluster kind --kind-name %s'", ErrKindNameTaken, name, name)
	case claim.PID > 0 && claim.PID != os.Getpid() && startup.ProcessRunning(claim.PID):
		return fmt.Errorf("%w: kind cluster %q is in use by simctl pid %d", ErrKindNameTaken, name, claim.PID)
	}
	if err := p.Delete(name, ""); err != nil {
		return fmt.Errorf("failed to delete kind cluster %s, left by a killed simctl: %w", name, err)
	}
	releaseKind(name)
	return nil
}

// CleanKind deletes the kind cluster of the name if simctl created it and
// no live simctl uses it (a kept cluster included). It reports whether
// there was one to delete.
func CleanKind(dockerHost, name string) (bool, error) {
	k := &Kind{Name: name, DockerHost: dockerHost}
	if err := k.useDocker(context.Background()); err != nil {
		return false, err
	}
	p := kindcluster.NewProvider(kindcluster.ProviderWithDocker(), kindcluster.ProviderWithLogger(kindlog.NoopLogger{}))
	names, err := p.List()
	if err != nil {
		return false, fmt.Errorf("failed to list kind clusters: %w", err)
	}
	if !slices.Contains(names, k.name()) {
		releaseKind(k.name())
		return false, nil
	}
	if claim, ok := readKindClaim(k.name()); ok && claim.Keep {
		// Kept on purpose: clean is the way to remove it.
		if err := writeKindClaim(k.name(), kindClaim{}); err != nil {
			return false, err
		}
	}
	if err := removeStaleKind(p, k.name()); err != nil {
		return false, err
	}
	return true, nil
}
