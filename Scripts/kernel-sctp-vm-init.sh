#!/bin/busybox sh
# The init of Scripts/kernel-sctp-vm.sh's guest: modules, loopback, the kernel SCTP suites, a
# result line, power off. Runs as PID 1 from the initramfs; everything it needs is in it.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
echo "conduit-vm: kernel $(uname -r) up after $(cut -d' ' -f1 /proc/uptime) s"

finish() { # result line, then power off (the host's read loop ends when qemu exits)
    echo "CONDUIT KERNEL SCTP RESULT: $1"
    sync
    poweroff -f
}

for module in $(cat /modules/order); do
    insmod "/modules/$module" || finish "FAIL (insmod $module)"
done
ip link set lo up || finish "FAIL (lo)"
# SCTP over UDP (RFC 6951): the kernel listens for encapsulated packets on this UDP port.
echo 9899 > /proc/sys/net/sctp/udp_port || finish "FAIL (net.sctp.udp_port)"
export CONDUIT_KERNEL_SCTP=1 CONDUIT_KERNEL_SCTP_UDP_PORT=9899 HOME=/tmp TMPDIR=/tmp
cd /tmp
echo "conduit-vm: running the suite (sctp module loaded, lo up, udp_port 9899) at $(cut -d' ' -f1 /proc/uptime) s"
filter=$(tr ' ' '\n' < /proc/cmdline | sed -n 's/^conduit\.filter=//p')
# One test at a time: two emulated CPUs, and the suites' time limits hold under TCG.
/conduit/tests --testing-library swift-testing --no-parallel --filter "${filter:-ConduitKernelSCTPTests}"
status=$?
echo "conduit-vm: suite ended with status $status at $(cut -d' ' -f1 /proc/uptime) s"
if [ "$status" = 0 ]; then finish "PASS"; else finish "FAIL (status $status)"; fi
