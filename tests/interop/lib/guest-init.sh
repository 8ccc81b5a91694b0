#!/bin/sh
# tests/interop/lib/guest-init.sh - /init of the interop guest (busybox ash).
#
# Reads /uvn/env (written per boot by guest.sh, in the small per-test cpio):
#   UVN_NICS=N  UVN_MAC<i>=MAC  UVN_IP<i>=ADDR/PREFIX (optional)
#   UVN_MTU<i>=N (optional)  plus any --env K=V the test passed;
# then the kernel command line: uvn.<key>=<value> sets UVN_<KEY> (e.g.
# uvn.ip0=198.18.0.2/24, uvn.nics=2), overriding the file.
# Loads the virtio modules, finds NIC i by its MAC and exports UVN_IF<i>,
# assigns addresses, waits for carrier, runs /uvn/test.sh (if any) with the
# helpers of /uvn/lib.sh defined, reports counters, prints
#   UVN_DONE rc=<script exit status> uptime=<s>
# and powers off.  rc 90-99 are harness errors inside the guest:
#   91 a NIC did not appear, 92 a NIC had no carrier.
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /tmp /run
mount -t tmpfs tmp /tmp
mount -t tmpfs run /run
. /uvn/lib.sh
# result channel: raw (no CR added, no echo)
stty -F "$UVN_RES_DEV" raw -echo 2>/dev/null
echo "UVN_LOG init started, uptime $(uvn_uptime)s"
UVN_NICS=0
[ -f /uvn/env ] && . /uvn/env
# the kernel command line may add or override any of them: uvn.ip0=A/P -> UVN_IP0
for w in $(cat /proc/cmdline); do
	case $w in
	uvn.*=*)
		k=$(echo "${w%%=*}" | sed 's/^uvn\.//' | tr 'a-z.-' 'A-Z__')
		export "UVN_$k=${w#*=}"
		;;
	esac
done
uvn_result boot.uptime="$(uvn_uptime)" boot.kernel="$(uname -r)"

for m in $(cat /lib/modules/boot.list); do uvn_modprobe "$m"; done

rc=0
ip link set lo up
i=0
while [ "$i" -lt "$UVN_NICS" ]; do
	eval "mac=\$UVN_MAC$i ip=\${UVN_IP$i:-} mtu=\${UVN_MTU$i:-}"
	n=100 ifc=
	while [ "$n" -gt 0 ]; do
		ifc=$(uvn_nic_by_mac "$mac") && break
		sleep 0.1
		n=$((n - 1))
	done
	if [ -z "$ifc" ]; then
		uvn_log "NIC $i ($mac) did not appear; have: $(ls /sys/class/net)"
		rc=91
		break
	fi
	export "UVN_IF$i=$ifc"
	[ -n "$mtu" ] && ip link set "$ifc" mtu "$mtu"
	[ -n "$ip" ] && ip addr add "$ip" dev "$ifc"
	ip link set "$ifc" up
	i=$((i + 1))
done
i=0
while [ "$rc" = 0 ] && [ "$i" -lt "$UVN_NICS" ]; do
	eval "ifc=\$UVN_IF$i mac=\$UVN_MAC$i"
	uvn_wait_carrier "$ifc" 20 || rc=92
	uvn_result "nic$i.name=$ifc" "nic$i.mac=$mac" "nic$i.carrier=$(cat /sys/class/net/$ifc/carrier 2>/dev/null)" \
		"nic$i.pci=$(readlink -f /sys/class/net/$ifc/device/.. | sed 's,.*/,,')" "nic$i.features=$(uvn_features "$ifc")"
	i=$((i + 1))
done
uvn_result boot.ready="$(uvn_uptime)"

if [ "$rc" = 0 ] && [ -f /uvn/test.sh ]; then
	uvn_log "running test script"
	(cd /tmp && . /uvn/test.sh)
	rc=$?
	uvn_log "test script exited with $rc"
fi
uvn_result script.rc="$rc"
if [ "$rc" != 0 ]; then
	echo "UVN_LOG kernel log (test failed):"
	dmesg | tail -n 60
fi

# final counters of the NICs still in this namespace, once they stopped moving
uvn_settle
i=0
while [ "$i" -lt "$UVN_NICS" ]; do
	eval "ifc=\${UVN_IF$i:-}"
	[ -n "$ifc" ] && [ -e "/sys/class/net/$ifc" ] && uvn_counters "nic$i" "$ifc"
	i=$((i + 1))
done

echo "UVN_DONE rc=$rc uptime=$(uvn_uptime)"
echo "UVN_DONE rc=$rc uptime=$(uvn_uptime)" >"$UVN_RES_DEV"
sync
poweroff -f
