#!/usr/bin/env bash
# scratch-image.sh IMAGE BINARY PATH [USER] [EXTRA_TAR]: build IMAGE FROM scratch
# with the static BINARY at PATH as its entrypoint, the usual PATH, and
# USER (uid:gid) when given. EXTRA_TAR, when given, is unpacked at / first (the nft
# binary and its libraries for kube-proxy).
#
# The image carries the label dev.trainersim.recipe, a hash of its inputs; when
# IMAGE already exists with the same hash nothing is done, so a second run takes
# well under a second. The image it replaces is removed unless still in use.
set -euo pipefail

IMAGE="$1"
BINARY="$2"
TARGET="$3"
RUN_AS="${4:-}"
EXTRA_TAR="${5:-}"

recipe="$(
	{
		sha256sum "${BINARY}" | cut -d' ' -f1
		[[ -z "${EXTRA_TAR}" ]] || sha256sum "${EXTRA_TAR}" | cut -d' ' -f1
		echo "${TARGET} ${RUN_AS}"
		sha256sum "${BASH_SOURCE[0]}" | cut -d' ' -f1
	} | sha256sum | cut -c1-16
)"
if [[ "$(docker image inspect -f '{{index .Config.Labels "dev.trainersim.recipe"}}' "${IMAGE}" 2>/dev/null)" == "${recipe}" ]]; then
	exit 0
fi

previous="$(docker image inspect -f '{{.Id}}' "${IMAGE}" 2>/dev/null || true)"
work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
cp "${BINARY}" "${work}/$(basename "${TARGET}")"
{
	echo "FROM scratch"
	[[ -z "${EXTRA_TAR}" ]] || { cp "${EXTRA_TAR}" "${work}/extra.tar" && echo "ADD extra.tar /"; }
	echo "COPY $(basename "${TARGET}") ${TARGET}"
	echo "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	[[ -z "${RUN_AS}" ]] || echo "USER ${RUN_AS}"
	echo "LABEL dev.trainersim.recipe=\"${recipe}\""
	echo "ENTRYPOINT [\"${TARGET}\"]"
} >"${work}/Dockerfile"
DOCKER_BUILDKIT=0 docker build -q -t "${IMAGE}" "${work}" >/dev/null 2>"${work}/build.log" ||
	{ cat "${work}/build.log" >&2 && exit 1; }
# The image this one replaces, unless something still uses it.
[[ -z "${previous}" ]] || docker rmi "${previous}" >/dev/null 2>&1 || true
echo "scratch-image.sh: built ${IMAGE}" >&2
