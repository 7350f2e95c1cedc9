#!/usr/bin/env bash
# k8s-images.sh BIN_DIR BASE_IMAGE: build, FROM scratch, every image that
# `kubeadm config images list` names for this kubeadm's version, under exactly that
# name, from the static binaries in BIN_DIR:
#
#   registry.k8s.io/kube-apiserver, kube-controller-manager, kube-scheduler,
#   kube-proxy   the binary of the same name, in /usr/local/bin
#   registry.k8s.io/etcd                 etcd in /usr/local/bin (no etcdctl)
#   registry.k8s.io/coredns/coredns      coredns, entrypoint /coredns
#   registry.k8s.io/pause                pause, entrypoint /pause
#
# kube-proxy runs in nftables mode (kind config networking.kubeProxyMode) and execs
# `nft`: its image also gets Debian's nft and the libraries it links, taken from
# BASE_IMAGE. Every image is cached by scratch-image.sh.
set -euo pipefail

BIN_DIR="$1"
BASE_IMAGE="$2"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SCRATCH_IMAGE="${HERE}/../images/scratch-image.sh"

version="$("${BIN_DIR}/kubeadm" version -o short)"
mapfile -t images < <("${BIN_DIR}/kubeadm" config images list --kubernetes-version "${version}" 2>/dev/null)

# nft and its shared libraries, as a tar to unpack at / (cached next to the binaries).
nft_tar="${BIN_DIR}/nft-$(docker image inspect -f '{{.Id}}' "${BASE_IMAGE}" | cut -c8-19).tar"
if [[ ! -f "${nft_tar}" ]]; then
	rm -f "${BIN_DIR}"/nft-*.tar
	docker run --rm --network none --entrypoint /bin/sh "${BASE_IMAGE}" -c \
		'tar -chf - /usr/sbin/nft $(ldd /usr/sbin/nft | awk "/\// {print \$(NF-1)}") 2>/dev/null' \
		>"${nft_tar}.tmp"
	mv "${nft_tar}.tmp" "${nft_tar}"
fi

for image in "${images[@]}"; do
	name="${image%:*}"
	case "${name##*/}" in
	kube-proxy) "${SCRATCH_IMAGE}" "${image}" "${BIN_DIR}/kube-proxy" /usr/local/bin/kube-proxy "" "${nft_tar}" ;;
	kube-*) "${SCRATCH_IMAGE}" "${image}" "${BIN_DIR}/${name##*/}" "/usr/local/bin/${name##*/}" ;;
	etcd)
		tag="${image##*:}"
		built="$("${BIN_DIR}/etcd" --version | sed -n 's/^etcd Version: //p')"
		[[ "${tag}" == "${built}"-* ]] ||
			echo "k8s-images.sh: warning: kubeadm expects etcd ${tag}, the module builds ${built}" >&2
		"${SCRATCH_IMAGE}" "${image}" "${BIN_DIR}/etcd" /usr/local/bin/etcd
		;;
	coredns) "${SCRATCH_IMAGE}" "${image}" "${BIN_DIR}/coredns" /coredns ;;
	pause) "${SCRATCH_IMAGE}" "${image}" "${BIN_DIR}/pause" /pause ;;
	*)
		echo "k8s-images.sh: no recipe for ${image}" >&2
		exit 1
		;;
	esac
done
