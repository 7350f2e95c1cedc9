#!/bin/sh
# runc-wrapper: an OCI runtime that removes CAP_SYS_RESOURCE from the container's
# spec, then runs runc with the same arguments.
#
# Why: on a VM whose capability bounding set lacks CAP_SYS_RESOURCE, Docker 20.10
# gives a --privileged container (what kind runs its nodes as) every capability it
# knows, ignores --cap-drop, and runc fails with "unable to apply caps: operation
# not permitted". dockerd.sh registers this script as the default runtime of the
# project's private dockerd, and only on such a machine.
#
# runc reads the capabilities from the bundle's config.json (create, run) or from
# the file given to --process (exec: docker exec, which kind uses for kubeadm). Both
# are rewritten in place; a capability the bounding set lacks could never be granted,
# so dropping it changes nothing else. @RUNC@ is replaced with runc's absolute path
# when dockerd.sh installs this file.
set -eu

strip() {
	[ -f "$1" ] || return 0
	jq -c 'walk(if type == "array" then map(select(. != "CAP_SYS_RESOURCE")) else . end)' "$1" >"$1.trainersim"
	mv "$1.trainersim" "$1"
}

want=""
for arg in "$@"; do
	case "$want" in
	bundle) strip "$arg/config.json" ;;
	process) strip "$arg" ;;
	esac
	want=""
	case "$arg" in
	--bundle | -b) want=bundle ;;
	--bundle=*) strip "${arg#--bundle=}/config.json" ;;
	--process | -p) want=process ;;
	--process=*) strip "${arg#--process=}" ;;
	esac
done

exec @RUNC@ "$@"
