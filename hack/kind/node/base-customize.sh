#!/bin/sh
# base-customize.sh ROOT: mmdebstrap's customize hook for base-image.sh. It does to
# the root filesystem at ROOT what the RUN steps of kind's images/base/Dockerfile
# do, with Debian's containerd, runc and CNI plugins in place of kind's builds.
set -eu
root="$1"

chroot "${root}" sh -eu <<'EOF'
# systemd as init, without the units that make no sense in a container
# (kind's Dockerfile, first RUN).
find /lib/systemd/system/sysinit.target.wants/ -name "systemd-tmpfiles-setup.service" -delete
rm -f /lib/systemd/system/multi-user.target.wants/*
rm -f /etc/systemd/system/*.wants/*
rm -f /lib/systemd/system/local-fs.target.wants/*
rm -f /lib/systemd/system/sockets.target.wants/*udev*
rm -f /lib/systemd/system/sockets.target.wants/*initctl*
rm -f /lib/systemd/system/basic.target.wants/*
echo "ReadKMsg=no" >> /etc/systemd/journald.conf
ln -sf /usr/lib/systemd/systemd /sbin/init

# kind's unit files start /usr/local/bin/containerd; containerd looks for CNI
# plugins in /opt/cni/bin. Debian installs them in /usr/bin and /usr/lib/cni.
ln -sf /usr/bin/containerd /usr/local/bin/containerd
mkdir -p /opt/cni
rm -rf /opt/cni/bin
ln -s /usr/lib/cni /opt/cni/bin

# Services (kind's Dockerfile, second RUN).
systemctl --quiet enable kubelet.service
systemctl --quiet enable containerd.service
systemctl --quiet enable undo-mount-hacks.service
systemctl --quiet mask systemd-binfmt.service

# kind's "build" stage: the runtime spec containerd starts containers from.
ctr oci spec \
	| jq '.hooks.createContainer[.hooks.createContainer| length] |= . + {"path": "/kind/bin/mount-product-files.sh"}' \
	| jq 'del(.process.rlimits)' \
	> /etc/containerd/cri-base.json

mkdir -p /etc/kubernetes/manifests
EOF
