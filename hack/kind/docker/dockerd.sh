#!/usr/bin/env bash
# dockerd.sh: make sure a Docker engine that can run kind's nodes is reachable, and
# print on stdout the DOCKER_HOST to use it with (an empty line: the engine the
# environment already points at). Everything else goes to stderr.
#
#   hack/kind/docker/dockerd.sh          ensure an engine, print DOCKER_HOST
#   hack/kind/docker/dockerd.sh stop     stop the project's private dockerd, if running
#   hack/kind/docker/dockerd.sh needs    print the workarounds this machine needs
#
# The engine the environment already has (DOCKER_HOST or /var/run/docker.sock) is
# used as it is when `docker info` answers and this machine needs no workaround:
# that is the case on ordinary CI runners and workstations.
#
# Otherwise the project starts its own dockerd, apart from any Docker set-up of the
# machine: its own socket, data root, exec root, pidfile and config, all below
# PRIVATE_RUN and PRIVATE_DATA, used through DOCKER_HOST only. It is reused while it
# runs; Debian's docker.io (and jq, for the runtime wrapper) is installed with
# apt-get when missing, as root only. That daemon:
#   - registers runc-wrapper.sh as its default runtime when the capability bounding
#     set lacks CAP_SYS_RESOURCE (see that file);
#   - keeps its containers off the outside network: no default bridge, no iptables
#     rules, no IP forwarding, and the embedded DNS forwards only to 127.0.0.1 (the
#     kind node still reaches its own containers, and the host reaches the API
#     server through the port published on 127.0.0.1).
# Stop it with `hack/kind/docker/dockerd.sh stop` (or `make kind-docker-stop`); a
# running daemon is reused as it is, so stop it after changing its configuration here.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PRIVATE_RUN="${TRAINERSIM_DOCKER_RUN:-/run/trainersim-docker}"
PRIVATE_DATA="${TRAINERSIM_DOCKER_DATA:-/var/lib/trainersim-docker}"
PRIVATE_SOCK="${PRIVATE_RUN}/docker.sock"
PRIVATE_HOST="unix://${PRIVATE_SOCK}"
PIDFILE="${PRIVATE_RUN}/dockerd.pid"
LOG="${PRIVATE_RUN}/dockerd.log"
START_TIMEOUT_SECONDS=60

log() { echo "dockerd.sh: $*" >&2; }

# lacks_cap_sys_resource: bit 24 of CapBnd in /proc/self/status is clear.
lacks_cap_sys_resource() {
	local bnd
	bnd="$(awk '/^CapBnd:/ {print $2}' /proc/self/status)"
	(((0x${bnd} >> 24 & 1) == 0))
}

# cgroup_v1: no unified hierarchy at /sys/fs/cgroup (kubelet 1.35+ then needs failCgroupV1: false).
cgroup_v1() { [[ ! -f /sys/fs/cgroup/cgroup.controllers ]]; }

private_running() {
	[[ -S "${PRIVATE_SOCK}" ]] && DOCKER_HOST="${PRIVATE_HOST}" docker info >/dev/null 2>&1
}

install_packages() {
	local missing=()
	command -v dockerd >/dev/null || missing+=(docker.io)
	if lacks_cap_sys_resource; then command -v jq >/dev/null || missing+=(jq); fi
	((${#missing[@]} == 0)) && return 0
	if ((EUID != 0)); then
		log "missing ${missing[*]} and not root: install them, or start a Docker engine and set DOCKER_HOST"
		exit 1
	fi
	log "installing ${missing[*]} with apt-get"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >&2 ||
		{ apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >&2; }
}

write_config() {
	local runtimes=""
	if lacks_cap_sys_resource; then
		sed "s|@RUNC@|$(command -v runc)|" "${HERE}/runc-wrapper.sh" >"${PRIVATE_RUN}/runc-wrapper"
		chmod 0755 "${PRIVATE_RUN}/runc-wrapper"
		runtimes='"runtimes": {"trainersim-runc": {"path": "'"${PRIVATE_RUN}"'/runc-wrapper"}},
  "default-runtime": "trainersim-runc",'
	fi
	cat >"${PRIVATE_RUN}/daemon.json" <<EOF
{
  "hosts": ["${PRIVATE_HOST}"],
  "data-root": "${PRIVATE_DATA}",
  "exec-root": "${PRIVATE_RUN}/exec",
  "pidfile": "${PIDFILE}",
  "containerd-namespace": "trainersim",
  ${runtimes}
  "storage-driver": "overlay2",
  "bridge": "none",
  "iptables": false,
  "ip6tables": false,
  "ip-forward": false,
  "ip-masq": false,
  "dns": ["127.0.0.1"],
  "default-address-pools": [{"base": "172.30.0.0/16", "size": 24}],
  "features": {"buildkit": false},
  "log-driver": "json-file",
  "log-opts": {"max-size": "10m", "max-file": "2"}
}
EOF
}

start_private() {
	mkdir -p "${PRIVATE_RUN}" "${PRIVATE_DATA}"
	write_config
	log "starting the private dockerd (${PRIVATE_HOST}, data in ${PRIVATE_DATA}, log ${LOG})"
	# setsid: the daemon outlives make and the shell that started it.
	setsid dockerd --config-file "${PRIVATE_RUN}/daemon.json" >"${LOG}" 2>&1 </dev/null &
	local deadline=$((SECONDS + START_TIMEOUT_SECONDS))
	until private_running; do
		if ((SECONDS > deadline)) || ! kill -0 $! 2>/dev/null; then
			log "the private dockerd did not start; last lines of ${LOG}:"
			tail -n 20 "${LOG}" >&2
			exit 1
		fi
		sleep 0.5
	done
}

stop_private() {
	[[ -f "${PIDFILE}" ]] || { log "no private dockerd running"; return 0; }
	local pid
	pid="$(cat "${PIDFILE}")"
	kill -TERM "${pid}" 2>/dev/null || true
	local deadline=$((SECONDS + START_TIMEOUT_SECONDS))
	while kill -0 "${pid}" 2>/dev/null && ((SECONDS <= deadline)); do sleep 0.5; done
	log "stopped the private dockerd (pid ${pid})"
}

needs() {
	lacks_cap_sys_resource && echo "cap-sys-resource: the capability bounding set lacks CAP_SYS_RESOURCE (runtime wrapper, containerd restrict_oom_score_adj)"
	cgroup_v1 && echo "cgroup-v1: the host uses cgroup v1 (kubelet failCgroupV1: false)"
	return 0
}

case "${1:-ensure}" in
ensure)
	if ! lacks_cap_sys_resource && docker info >/dev/null 2>&1; then
		log "using the Docker engine the environment points at"
		echo "${DOCKER_HOST:-}"
		exit 0
	fi
	if private_running; then
		echo "${PRIVATE_HOST}"
		exit 0
	fi
	install_packages
	start_private
	echo "${PRIVATE_HOST}"
	;;
stop) stop_private ;;
needs) needs ;;
*)
	log "usage: $0 [ensure|stop|needs]"
	exit 2
	;;
esac
