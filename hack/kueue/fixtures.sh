#!/usr/bin/env bash
# fixtures.sh VERSION OUT
# fixtures.sh --dir CHECKOUT OUT
#
# Copies what the Kueue component of release VERSION is made of from the Go
# module cache (through the nested module hack/kueue/VERSION), or of a local
# Kueue checkout (make build KUEUE_DIR=...), into OUT: its
# CRDs (crds/), its webhook configurations (webhooks.yaml), as
# config/components has them, and the RBAC of config/default (rbac.yaml); simctl
# installs the CRDs and the webhooks of the
# integrations it runs.
set -euo pipefail
if [ "$1" = --dir ]; then
	kueue=$(cd "$2" && pwd) out=$3
else
	version=$1 out=$2
	mod=$(cd "$(dirname "$0")/$version" && pwd)
	(cd "$mod" && go mod download sigs.k8s.io/kueue)
	kueue=$(cd "$mod" && go list -m -f '{{.Dir}}' sigs.k8s.io/kueue)
fi
mkdir -p "$out"/crds
install -m 0644 "$kueue"/config/components/crd/bases/*.yaml "$out"/crds/
install -m 0644 "$kueue"/config/components/webhook/manifests.yaml "$out"/webhooks.yaml
# The identities and RBAC of its config/default: the user its manager runs as.
root=$(cd "$(dirname "$0")/../.." && pwd)
(cd "$root" && go run ./hack/manifests -rbac "$kueue"/config/default) > "$out"/rbac.yaml
