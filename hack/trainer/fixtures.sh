#!/usr/bin/env bash
# fixtures.sh VERSION OUT SCHEDULER_PLUGINS_DIR RUNTIME...
#
# Copies what a cluster of Trainer release VERSION is made of from the Go
# module cache into OUT, laid out like fixtures/ itself: the Trainer's CRDs,
# webhook configurations and default runtimes of that release, the CRDs and
# webhook configurations of the JobSet release its go.mod pins (through the
# nested module hack/trainer/VERSION), and the scheduler-plugins CRD. RUNTIME
# are the runtime files (relative to manifests/base/runtimes) to copy when the
# release has them.
set -euo pipefail
version=$1 out=$2 scheduler_plugins=$3
shift 3
mod=$(cd "$(dirname "$0")/$version" && pwd)
(cd "$mod" && go mod download github.com/kubeflow/trainer/v2 sigs.k8s.io/jobset)
trainer=$(cd "$mod" && go list -m -f '{{.Dir}}' github.com/kubeflow/trainer/v2)
jobset=$(cd "$mod" && go list -m -f '{{.Dir}}' sigs.k8s.io/jobset)
mkdir -p "$out"/crds/trainer "$out"/crds/jobset "$out"/crds/scheduler-plugins "$out"/webhooks "$out"/runtimes
install -m 0644 "$trainer"/manifests/base/crds/trainer.kubeflow.org_*.yaml "$out"/crds/trainer/
install -m 0644 "$jobset"/config/components/crd/bases/*.yaml "$out"/crds/jobset/
install -m 0644 "$scheduler_plugins"/manifests/coscheduling/crd.yaml "$out"/crds/scheduler-plugins/
root=$(cd "$(dirname "$0")/../.." && pwd)
# The Trainer's webhook configurations as its manifests install them
# (manifests/base/webhook's patches name and select them).
(cd "$root" && go run ./hack/manifests -webhooks "$trainer"/manifests/base/webhook) > "$out"/webhooks/trainer.yaml
install -m 0644 "$jobset"/config/components/webhook/manifests.yaml "$out"/webhooks/jobset.yaml
for f in "$@"; do
	if [ -f "$trainer/manifests/base/runtimes/$f" ]; then
		install -m 0644 "$trainer/manifests/base/runtimes/$f" "$out/runtimes/$(basename "$f")"
	fi
done
# The identities and RBAC of the release's manifests/overlays/manager (with the
# JobSet it pins): the users its managers run as on an envtest cluster.
mkdir -p "$out"/rbac
(cd "$root" && go run ./hack/manifests -rbac "$trainer" "$jobset") > "$out"/rbac/trainer-manager.yaml
