#!/bin/bash
# uvnetd_mtu: jumbo frames end to end. A Linux guest's NIC (QEMU
# host_mtu=9000) is a uvnetd vhost-user port with mtu=9000; uvnetd also has
# a TAP port with mtu=9000 in one network namespace and a TAP port with
# mtu=1500 in another, both with an address on the guest's subnet.
# Asserts: the guest's driver was given MTU 9000 (VIRTIO_NET_F_MTU, QEMU's
# NET_SET_MTU accepted); uvnetd set each TAP device's MTU; 9000-byte pings
# (8972 bytes of ICMP payload) reach the 9000 peer and come back, as
# jumbo frames; to the 1500 peer they are dropped at its TAP port, each
# one counted (mtu_drops of `uvnetd ctl show ports`), while 1500-byte pings
# to it come back; nothing else is dropped or in error.
#
# Usage: uvnetd_mtu.sh --uvnetd PATH [--test-name NAME] [--poll] [--uvnetd-opt OPT]...
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib/guest.sh"
source "$HERE/lib/netns.sh"
source "$HERE/lib/uvnetd.sh"

name=uvnetd_mtu count=5
declare -a uopts=()
while (($#)); do
	case $1 in
	--uvnetd) UVNETD=$2; shift 2 ;;
	--test-name) name=$2; shift 2 ;;
	--poll) uopts+=(--poll); shift ;;
	--uvnetd-opt) uopts+=("$2"); shift 2 ;;
	*) echo "unknown option $1" >&2; exit 2 ;;
	esac
done

uvn_test_init "$name"
uvn_need_root "network namespaces and TAP devices"
guest_prepare

netns_create NS jumbo
netns_create NSS small
SOCK=$UVN_RUN/vhost0.sock CTL=$UVN_RUN/ctl.sock TJ=uvnmtu9k TS=uvnmtu1k5
ctl() { "$UVNETD" ctl "$CTL" "$@"; }
# a port's counter from `show ports --json`
port_stat() {
	ctl show ports --json | python3 -c '
import json, sys
print([p for p in json.load(sys.stdin)["ports"] if p["name"] == sys.argv[1]][0][sys.argv[2]])' "$1" "$2"
}
uvnetd_start sw --netns "$NS" -- --port "vhost-user:$SOCK,mtu=9000,name=guest" \
	--port "tap:$TJ,mtu=9000,name=jumbo" --port "tap:$TS,mtu=1500,name=small" --ctl "$CTL" \
	"${uopts[@]}"
uvn_wait_for 10 "TAP devices" netns_exec "$NS" ip link show "$TS"
netns_exec "$NS" ip link set "$TS" netns "$NSS" # it keeps its MTU
# the peers' kernels say nothing of their own (IPv6 ND, MLD)
for n in "$NS" "$NSS"; do netns_exec "$n" sysctl -qw net.ipv6.conf.all.disable_ipv6=1; done
netns_addr "$NS" "$TJ" 198.18.5.1/24
netns_addr "$NSS" "$TS" 198.18.5.3/24
uvn_assert_eq "TAP $TJ MTU (set by uvnetd)" "$(netns_exec "$NS" cat "/sys/class/net/$TJ/mtu")" 9000
uvn_assert_eq "TAP $TS MTU (set by uvnetd)" "$(netns_exec "$NSS" cat "/sys/class/net/$TS/mtu")" 1500

rc=0
guest_run --sock "$SOCK" --ip 198.18.5.2/24 --nic-opt host_mtu=9000 \
	--env PEER=198.18.5.1 --env PEER_SMALL=198.18.5.3 --env COUNT=$count \
	--script "$HERE/guest/mtu.sh" --watch "$(uvnetd_pid sw)" || rc=$?
tapstat() { netns_exec "$1" cat "/sys/class/net/$2/statistics/$3"; }
tj_rx_packets=$(tapstat "$NS" "$TJ" rx_packets) tj_rx_bytes=$(tapstat "$NS" "$TJ" rx_bytes)
drops_small=$(port_stat small mtu_drops) drops_jumbo=$(port_stat jumbo mtu_drops)
drops_guest=$(port_stat guest mtu_drops)
ctl show ports >"$UVN_LOG_DIR/ports.txt" || true
uvnetd_stop sw

uvn_assert_eq "guest status" "$rc" 0
uvn_assert_eq "guest NIC negotiated VIRTIO_NET_F_MTU" "$(guest_result nic0.f_mtu)" 1
uvn_assert_eq "guest NIC MTU" "$(guest_result nic0.mtu)" 9000
uvn_assert_eq "arping the 9000 peer" "$(guest_result arping.rc)" 0
uvn_assert_eq "arping the 1500 peer" "$(guest_result arping_small.rc)" 0
uvn_assert_eq "jumbo pings to the 9000 peer answered" "$(guest_result jumbo.received)" "$count"
uvn_assert_eq "jumbo pings to the 1500 peer answered" "$(guest_result jumbo_small.received)" 0
uvn_assert_eq "1500-byte pings to the 1500 peer answered" "$(guest_result small.received)" "$count"
# whole jumbo frames, not fragments: at least COUNT frames of 9014 bytes
# reached the 9000 peer's TAP, in fewer frames than fragments would take
((tj_rx_bytes >= count * 9014)) || uvn_die "TAP $TJ got $tj_rx_bytes bytes: no $count jumbo frames"
((tj_rx_packets < count * 6)) || uvn_die "TAP $TJ got $tj_rx_packets frames: fragments?"
uvn_assert_eq "jumbo frames dropped at the 1500 port (mtu_drops)" "$drops_small" \
	"$(guest_result jumbo_small.sent)"
uvn_assert_eq "drops for the MTU at the 9000 TAP port" "$drops_jumbo" 0
uvn_assert_eq "drops for the MTU at the guest's port" "$drops_guest" 0
uvn_assert_eq "uvnetd vhost port rx == guest tx" "$(uvnetd_stat sw 0 rx_packets)" "$(guest_result nic0.tx_packets)"
uvn_assert_eq "guest rx == uvnetd vhost port tx" "$(guest_result nic0.rx_packets)" "$(uvnetd_stat sw 0 tx_packets)"
uvn_assert_eq "uvnetd vhost port errors" "$(uvnetd_stat sw 0 errors)" 0
uvn_assert_eq "uvnetd 9000 TAP port errors" "$(uvnetd_stat sw 1 errors)" 0
uvn_assert_eq "uvnetd 1500 TAP port drops (the jumbo pings only)" "$(uvnetd_stat sw 2 drops)" "$drops_small"
