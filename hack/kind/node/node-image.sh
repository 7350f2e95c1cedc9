#!/usr/bin/env bash
# node-image.sh NODE_IMAGE BASE_IMAGE BIN_DIR [PROVISIONER_IMAGE HELPER_IMAGE]:
# assemble the kind node image NODE_IMAGE from BASE_IMAGE (base-image.sh), the
# static kubelet, kubeadm, kubectl and crictl in BIN_DIR, and the images kubeadm
# needs, which must already be in the Docker engine under their registry.k8s.io
# names (kind.mk builds them). With PROVISIONER_IMAGE and HELPER_IMAGE (also in
# the engine) the node also gets kind's default storage: those two images and
# default-storage.yaml as /kind/manifests/default-storage.yaml.
#
# This is what kind's node-image builder (sigs.k8s.io/kind/pkg/build/nodeimage)
# does, minus its network: that builder pulls etcd, CoreDNS, pause, kindnetd and
# local-path-provisioner from their registries with `ctr content fetch`, which
# fails offline. Like it, this script copies the binaries into a container of the
# base image, starts containerd there, imports every image with
# `ctr images import --no-unpack` (pinned, under the k8s.io namespace the CRI
# uses), writes /kind/version and commits the container. It does not rewrite
# image names: they are already the ones kubeadm uses.
#
# Instead of kindnetd the image carries a fixed CNI config (cni/10-kind-ptp.conflist:
# ptp with host-local IPAM on 10.244.0.0/24, the Pod CIDR of the first and only
# node of a kind cluster with the default podSubnet), for clusters created with
# networking.disableDefaultCNI: true. Without /kind/manifests/default-storage.yaml
# kind falls back to a StorageClass of the in-tree host-path provisioner, which
# provisions nothing in a kind cluster.
#
# The image carries the label dev.trainersim.recipe, a hash of every input; when
# NODE_IMAGE already exists with the same hash nothing is done. The image it
# replaces is removed unless a node still runs it.
set -euo pipefail

NODE_IMAGE="$1"
BASE_IMAGE="$2"
BIN_DIR="$3"
PROVISIONER_IMAGE="${4:-}"
HELPER_IMAGE="${5:-}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CONTAINERD_READY_SECONDS=30

version="$("${BIN_DIR}/kubeadm" version -o short)"
mapfile -t images < <("${BIN_DIR}/kubeadm" config images list --kubernetes-version "${version}" 2>/dev/null)
pause_image="$(printf '%s\n' "${images[@]}" | grep '/pause:')"
storage_images=()
[[ -z "${PROVISIONER_IMAGE}" ]] || storage_images=("${PROVISIONER_IMAGE}" "${HELPER_IMAGE}")

for image in "${images[@]}" "${storage_images[@]}"; do
	docker image inspect "${image}" >/dev/null 2>&1 || {
		echo "node-image.sh: ${image} is not in the Docker engine (make kind-node-image builds it)" >&2
		exit 1
	}
done

recipe="$(
	{
		docker image inspect -f '{{.Id}}' "${BASE_IMAGE}" "${images[@]}" "${storage_images[@]}"
		sha256sum "${BIN_DIR}"/{kubelet,kubeadm,kubectl,crictl} "${BASH_SOURCE[0]}" "${HERE}"/cni/* \
			"${HERE}/default-storage.yaml" | cut -d' ' -f1
	} | sha256sum | cut -c1-16
)"
if [[ "$(docker image inspect -f '{{index .Config.Labels "dev.trainersim.recipe"}}' "${NODE_IMAGE}" 2>/dev/null)" == "${recipe}" ]]; then
	exit 0
fi

previous="$(docker image inspect -f '{{.Id}}' "${NODE_IMAGE}" 2>/dev/null || true)"
echo "node-image.sh: assembling ${NODE_IMAGE} (Kubernetes ${version}, $((${#images[@]} + ${#storage_images[@]})) images)" >&2
build="trainersim-node-build-$$"
docker run -d --name "${build}" --network none --entrypoint=sleep --security-opt seccomp=unconfined \
	"${BASE_IMAGE}" infinity >/dev/null
trap 'docker rm -f -v "${build}" >/dev/null 2>&1 || true' EXIT
run() { docker exec "${build}" "$@"; }

for binary in kubelet kubeadm kubectl; do
	docker cp "${BIN_DIR}/${binary}" "${build}:/usr/bin/${binary}"
done
docker cp "${BIN_DIR}/crictl" "${build}:/usr/local/bin/crictl"
run chown root:root /usr/bin/kubelet /usr/bin/kubeadm /usr/bin/kubectl /usr/local/bin/crictl
run chmod 0755 /usr/bin/kubelet /usr/bin/kubeadm /usr/bin/kubectl /usr/local/bin/crictl
printf '%s' "${version}" | docker exec -i "${build}" sh -c 'cat > /kind/version'
run mkdir -p /etc/cni/net.d
docker cp "${HERE}/cni/10-kind-ptp.conflist" "${build}:/etc/cni/net.d/10-kind-ptp.conflist"
run chmod 0644 /etc/cni/net.d/10-kind-ptp.conflist
if ((${#storage_images[@]} > 0)); then
	run mkdir -p /kind/manifests
	sed -e "s|@PROVISIONER_IMAGE@|${PROVISIONER_IMAGE}|" -e "s|@HELPER_IMAGE@|${HELPER_IMAGE}|" \
		"${HERE}/default-storage.yaml" | docker exec -i "${build}" sh -c 'cat > /kind/manifests/default-storage.yaml'
fi
# The sandbox image kind's containerd config names is pause:3.10; use kubeadm's.
run sed -i "s|sandbox_image = .*|sandbox_image = \"${pause_image}\"|" /etc/containerd/config.toml

# containerd, only to import the images into its content store.
run sh -c 'nohup containerd >/tmp/containerd.log 2>&1 &'
deadline=$((SECONDS + CONTAINERD_READY_SECONDS))
until run ctr version >/dev/null 2>&1; do
	((SECONDS < deadline)) || { run cat /tmp/containerd.log >&2; exit 1; }
	sleep 0.5
done
for image in "${images[@]}" "${storage_images[@]}"; do
	docker save "${image}" | docker exec -i "${build}" \
		ctr --namespace=k8s.io images import --label=io.cri-containerd.pinned=pinned \
		--all-platforms --no-unpack - >/dev/null
done
run sh -c 'kill $(pidof containerd); while pidof containerd >/dev/null; do sleep 0.2; done; rm -f /tmp/containerd.log'

docker commit \
	--change 'ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]' \
	--change 'CMD []' \
	--change "LABEL dev.trainersim.recipe=\"${recipe}\"" \
	"${build}" "${NODE_IMAGE}" >/dev/null
# The image this one replaces, unless a node still runs it.
[[ -z "${previous}" ]] || docker rmi "${previous}" >/dev/null 2>&1 || true
echo "node-image.sh: built ${NODE_IMAGE}" >&2
