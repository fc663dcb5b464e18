#!/usr/bin/env bash
# Runs the kernel SCTP (`sctp://`) tests for real: in a qemu guest booted from Debian's kernel,
# whose `sctp` module this machine's kernel (and CI's) lacks.
#
#   bash Scripts/kernel-sctp-vm.sh [--skip-build] [--tcg] [--filter REGEX]
#
# It installs what is missing (qemu-system-x86, busybox-static, kmod, cpio), downloads (not installs) Debian's
# linux-image package and unpacks it under .build/kernel-sctp-vm, builds the test bundle on the host
# (every trait) unless --skip-build, and packs an initramfs: busybox, the test bundle with every
# shared library `ldd` names (the Swift runtime included), the `sctp` module and its dependencies
# from that kernel package, and an init script. The guest has no network card: only its own
# loopback. Init loads the modules, brings up `lo`, turns on SCTP's UDP encapsulation (RFC 6951,
# net.sctp.udp_port), runs the kernel SCTP suites, prints one result line and powers off.
# The exit status is the suite's. KVM is used where /dev/kvm is usable; --tcg (or no KVM) runs
# under software emulation, which is slower. Every phase's time is printed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

skip_build=0 accel=kvm filter=ConduitKernelSCTPTests
while [ $# -gt 0 ]; do
    case "$1" in
        --skip-build) skip_build=1 ;;
        --tcg) accel=tcg ;;
        --filter) filter=$2; shift ;;  # which tests the guest runs (swift-testing --filter)
        *) echo "usage: $0 [--skip-build] [--tcg] [--filter REGEX]" >&2; exit 2 ;;
    esac
    shift
done
[ "$accel" = kvm ] && { [ -r /dev/kvm ] && [ -w /dev/kvm ] || { echo "kernel-sctp-vm: no usable /dev/kvm: software emulation (TCG)"; accel=tcg; }; }

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
start=$(now)
work=.build/kernel-sctp-vm
mkdir -p "$work"

# 1. Packages: qemu and busybox installed; the kernel package only downloaded and unpacked.
packages=(qemu-system-x86 busybox-static kmod cpio)  # kmod: depmod, for the modules sctp needs
as_root=(); [ "$(id -u)" = 0 ] || as_root=(sudo)
missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ]; then
    echo "kernel-sctp-vm: installing ${missing[*]}"
    "${as_root[@]}" apt-get update -qq
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
kernel_package=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
if [ -z "$kernel_package" ]; then  # a machine whose package lists were never fetched
    "${as_root[@]}" apt-get update -qq
    kernel_package=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
fi
kernel_root="$work/$kernel_package"
if [ ! -d "$kernel_root/boot" ]; then
    echo "kernel-sctp-vm: downloading $kernel_package"
    rm -rf "$kernel_root" && mkdir -p "$kernel_root"
    (cd "$work" && rm -f "${kernel_package}"_*.deb && apt-get download -qq -o APT::Sandbox::User=root "$kernel_package")
    dpkg-deb -x "$work/${kernel_package}"_*.deb "$kernel_root"
    rm -f "$work/${kernel_package}"_*.deb
    depmod -b "$kernel_root" "$(basename "$(ls -d "$kernel_root"/lib/modules/*)")"  # the package leaves modules.dep to its postinst
fi
kernel_version=$(basename "$(ls -d "$kernel_root"/lib/modules/*)")
echo "kernel-sctp-vm: packages ready in $(since "$start") s (kernel $kernel_version, accel $accel)"

# 2. The test bundle, built on the host.
phase=$(now)
if [ "$skip_build" = 0 ]; then
    swift build --enable-all-traits --build-tests
fi
bundle=$(swift build --enable-all-traits --show-bin-path)/conduitPackageTests.xctest
[ -x "$bundle" ] || { echo "kernel-sctp-vm: no test bundle at $bundle (build it, or drop --skip-build)" >&2; exit 1; }
echo "kernel-sctp-vm: test bundle ready in $(since "$phase") s"

# 3. The initramfs.
phase=$(now)
root="$work/root"
rm -rf "$root" && mkdir -p "$root"/{bin,dev,proc,sys,tmp,etc,conduit,modules}
cp /bin/busybox "$root/bin/busybox"
strip --strip-debug -o "$root/conduit/tests" "$bundle"
ldd "$bundle" | awk '/=> \// { print $3 } /^\t\/.*ld-linux/ { print $1 }' | sort -u | while read -r library; do
    mkdir -p "$root$(dirname "$library")"
    strip --strip-debug -o "$root$library" "$(readlink -f "$library")"
done
# The modules sctp needs (modules.dep, in load order) and the crc32c implementation libcrc32c asks for.
modules_dir="$kernel_root/lib/modules/$kernel_version"
wanted=$(awk -F': ' '$1 == "kernel/net/sctp/sctp.ko" { n = split($2, d, " "); for (i = n; i >= 1; i--) print d[i]; print $1 }' "$modules_dir/modules.dep")
for module in kernel/crypto/crc32c_generic.ko $wanted; do
    cp "$modules_dir/$module" "$root/modules/"
    echo "$(basename "$module")" >> "$root/modules/order"
done
cp Scripts/kernel-sctp-vm-init.sh "$root/init"
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc --quiet) | gzip -1 > "$work/initramfs.gz"
echo "kernel-sctp-vm: initramfs ready in $(since "$phase") s ($(du -m "$work/initramfs.gz" | cut -f1) MB)"

# 4. Boot: serial console to a log the host follows, no network card, time limits. Under nested
# virtualisation KVM can hang before the kernel prints anything (as in this project's Firecracker
# machines): no sign of the kernel within the boot limit, and the run falls back to TCG.
kernel_image="$kernel_root/boot/vmlinuz-$kernel_version"
boot() { # accel -> 0 with a result line, 1 without, 3 when the kernel never came up (KVM)
    local accel=$1 log="$work/console-$1.log" machine boot_limit limit
    # Under KVM the guest's init reports in about 2 s; where /dev/kvm opens but no guest runs
    # (nested virtualization on these machines), a longer wait only delays the fallback to TCG.
    if [ "$accel" = kvm ]; then machine=(-accel kvm -cpu host,-arch-capabilities); boot_limit=12; limit=600
    else machine=(-accel tcg -cpu max); boot_limit=600; limit=2400; fi
    : > "$log"
    local boot_start; boot_start=$(now)
    # no_timer_check: a slow (emulated, or starved) guest otherwise fails the IO-APIC timer check.
    qemu-system-x86_64 "${machine[@]}" -m 2048 -smp 2 -nographic -no-reboot -nic none \
        -kernel "$kernel_image" -initrd "$work/initramfs.gz" \
        -append "console=ttyS0 quiet panic=-1 no_timer_check conduit.filter=$filter" > "$log" 2>&1 &
    local qemu=$! shown=0 up="" suite="" elapsed
    while :; do
        local running=1
        kill -0 "$qemu" 2>/dev/null || running=0
        local total; total=$(wc -l < "$log")
        if [ "$total" -gt "$shown" ]; then
            while IFS= read -r line; do
                line=${line%$'\r'}
                printf '%s\n' "$line"
                case "$line" in
                    "conduit-vm: kernel"*) up=1 ;;
                    "conduit-vm: running the suite"*) suite=$(now); echo "kernel-sctp-vm: guest booted in $(since "$boot_start") s ($accel)" ;;
                    "CONDUIT KERNEL SCTP RESULT:"*) result=$line; [ -n "$suite" ] && echo "kernel-sctp-vm: suite ran in $(since "$suite") s ($accel)" ;;
                esac
            done < <(sed -n "$((shown + 1)),${total}p" "$log")
            shown=$total
        fi
        [ "$running" = 0 ] && break
        elapsed=$(since "$boot_start"); elapsed=${elapsed%.*}
        if [ -z "$up" ] && [ "$elapsed" -ge "$boot_limit" ]; then
            kill "$qemu"; wait "$qemu" 2>/dev/null || true
            echo "kernel-sctp-vm: the guest kernel did not come up within $boot_limit s under $accel"
            return 3
        fi
        if [ "$elapsed" -ge "$limit" ]; then
            kill "$qemu"; wait "$qemu" 2>/dev/null || true
            echo "kernel-sctp-vm: the guest ran over its $limit s limit under $accel"
            return 1
        fi
        sleep 1
    done
    wait "$qemu" 2>/dev/null || true
    [ -n "$result" ]
}
result=""
status=0
boot "$accel" || status=$?
if [ "$status" = 3 ] && [ "$accel" = kvm ]; then
    echo "kernel-sctp-vm: falling back to software emulation (TCG)"
    accel=tcg status=0
    boot tcg || status=$?
fi
echo "kernel-sctp-vm: total $(since "$start") s (accel $accel)"
case "$result" in
    *": PASS"*) exit 0 ;;
    "") echo "kernel-sctp-vm: FAIL: the guest printed no result line" >&2; exit 1 ;;
    *) echo "kernel-sctp-vm: FAIL: $result" >&2; exit 1 ;;
esac
