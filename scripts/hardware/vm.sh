#!/usr/bin/env bash
# Runs one command inside a throw-away QEMU guest that boots this host's Debian kernel
# (linux-image-amd64) and sees the host's root filesystem read-only over virtio-9p, with a
# tmpfs overlay on top (guest writes vanish at power-off). Host binaries — capture-agent,
# record-server, ffmpeg, aplay — therefore run unchanged against the guest kernel's real
# drivers. One host directory is shared read-write at the same path (results land there).
#
# usage: vm.sh --share DIR [--modules "vivid snd-aloop …"] [--timeout S] [--mem MB] -- COMMAND…
# Exit status: the command's, 124 when the guest timed out, 125 when the guest could not run.
#
# Facts this relies on (measured on the project's 2-core Debian 12 machines):
# - /dev/kvm there is a nested-virtualisation module that hangs a stock kernel; KVM is used
#   only when the CPU advertises vmx/svm, otherwise TCG boots to the command in about 5 s.
# - SQLite does not work on 9p: the guest's record-server keeps its data on the tmpfs overlay.
set -euo pipefail

share="" modules="" timeout=600 mem=2048 smp=2
while (($#)); do
  case "$1" in
    --share) share=$(readlink -f "$2"); shift 2 ;;
    --modules) modules="$2"; shift 2 ;;
    --timeout) timeout="$2"; shift 2 ;;
    --mem) mem="$2"; shift 2 ;;
    --) shift; break ;;
    *) echo "vm.sh: unknown option $1 (see the header of $0)" >&2; exit 125 ;;
  esac
done
(($#)) || { echo "vm.sh: no command given" >&2; exit 125; }
[ -d "$share" ] || { echo "vm.sh: --share DIR must be an existing directory" >&2; exit 125; }

kernel_version=$(ls /lib/modules | sort -V | tail -n 1)
kernel=/boot/vmlinuz-$kernel_version
[ -r "$kernel" ] || { echo "vm.sh: no readable $kernel (apt-get install linux-image-amd64)" >&2; exit 125; }
command -v qemu-system-x86_64 >/dev/null || { echo "vm.sh: qemu-system-x86_64 missing (apt-get install qemu-system-x86)" >&2; exit 125; }
busybox=/bin/busybox
file -L "$busybox" 2>/dev/null | grep -q 'statically linked' || { echo "vm.sh: $busybox is not static (apt-get install busybox-static)" >&2; exit 125; }

# The initramfs only mounts the host root and hands over; it is rebuilt when this script or
# the kernel changes.
cache=${HARDWARE_BENCH_CACHE:-/var/tmp/mcr-hardware-bench}
initrd=$cache/initrd-$kernel_version-$(sha1sum "$0" | cut -c1-10).cpio.gz
build_initrd() {
  local root module
  root=$(mktemp -d)
  mkdir -p "$root"/{bin,dev,proc,sys,host,rw,root,modules}
  cp "$busybox" "$root/bin/busybox"
  for module in virtio_pci 9pnet_virtio 9p overlay; do
    modprobe -S "$kernel_version" --show-depends "$module" | awk '$1 == "insmod" { print $2 }'
  done | awk '!seen[$0]++' > "$root/modules/order.full"
  while read -r module; do cp "$module" "$root/modules/"; done < "$root/modules/order.full"
  sed 's#.*/##' "$root/modules/order.full" > "$root/modules/order"; rm "$root/modules/order.full"
  cat > "$root/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in $(cat /modules/order); do insmod /modules/$m || echo "init: insmod $m failed"; done
param() { for word in $(cat /proc/cmdline); do case $word in bench.$1=*) echo "${word#*=}" ;; esac; done; }
give_up() { echo "init: $*" > /dev/console; poweroff -f; }
share=$(param share)
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144,cache=loose hostroot /host || give_up "9p root"
mount -t tmpfs -o mode=755 tmpfs /rw && mkdir -p /rw/upper /rw/work
mount -t overlay -o lowerdir=/host,upperdir=/rw/upper,workdir=/rw/work overlay /root || give_up "overlay"
mount -t proc proc /root/proc; mount -t sysfs sys /root/sys; mount -t devtmpfs dev /root/dev
mkdir -p /root/dev/pts /root/dev/shm; mount -t devpts devpts /root/dev/pts; mount -t tmpfs tmpfs /root/dev/shm
mount -t tmpfs tmpfs /root/run
mkdir -p "/root$share"
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 share "/root$share" || give_up "9p share"
ip link set lo up
hostname bench-guest
chroot /root /bin/bash "$share/.vm/guest-init.sh"
echo $? > "/root$share/.vm/status"
sync
poweroff -f
INIT
  chmod +x "$root/init"
  mkdir -p "$cache"
  (cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) > "$initrd.tmp"
  mv "$initrd.tmp" "$initrd"
  rm -rf "$root"
}
[ -s "$initrd" ] || build_initrd

if [ -w /dev/kvm ] && grep -qwE 'vmx|svm' /proc/cpuinfo; then
  accelerator=kvm accel_args=(-enable-kvm -cpu host)
else
  accelerator=tcg accel_args=(-accel tcg,thread=multi -cpu max)
fi

# What the guest runs: load the drivers, then the command, from the shared directory.
mkdir -p "$share/.vm"
rm -f "$share/.vm/status"
{
  echo 'export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root'
  echo "export BENCH_SHARE='$share' BENCH_ACCELERATOR=$accelerator"
  for module in $modules; do
    # module[:options] — options use commas for spaces (vivid:n_devs=1,node_types=0x1)
    name=${module%%:*} options=""
    [[ $module == *:* ]] && options=${module#*:} && options=${options//,/ }
    echo "modprobe $name $options || echo 'guest: modprobe $name failed' >&2"
  done
  echo 'cd /tmp'
  printf '%q ' "$@"; echo
} > "$share/.vm/guest-init.sh"

qemu=(qemu-system-x86_64 -nodefaults -no-user-config -nographic -no-reboot -m "$mem" -smp "$smp"
  -kernel "$kernel" -initrd "$initrd"
  -append "console=ttyS0 quiet loglevel=1 panic=-1 rdinit=/init bench.share=$share"
  -virtfs "local,path=/,mount_tag=hostroot,security_model=passthrough,readonly=on,multidevs=remap"
  -virtfs "local,path=$share,mount_tag=share,security_model=passthrough,multidevs=remap"
  -net none -serial stdio "${accel_args[@]}")

set +e
timeout -k 5 "$timeout" "${qemu[@]}" < /dev/null | tr -d '\r'
qemu_status=${PIPESTATUS[0]}
set -e
if [ "$qemu_status" = 124 ] || [ "$qemu_status" = 137 ]; then
  echo "vm.sh: the guest did not finish within ${timeout} s" >&2; exit 124
fi
[ -s "$share/.vm/status" ] || { echo "vm.sh: the guest gave no exit status (qemu exited $qemu_status)" >&2; exit 125; }
exit "$(cat "$share/.vm/status")"
