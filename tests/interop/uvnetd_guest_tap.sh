#!/bin/bash
# uvnetd_guest_tap: a Linux guest's virtio-net NIC is a uvnetd vhost-user
# port; uvnetd (switch mode) also has a TAP port inside a private network
# namespace with an address.  The guest arpings and pings the namespace's
# kernel through the switch.  Asserts the replies and that frame counters
# agree at both boundaries: guest NIC <-> uvnetd vhost port, and TAP
# device (kernel side) <-> uvnetd tap port; and no errors.
#
# Usage: uvnetd_guest_tap.sh --uvnetd PATH [--test-name NAME] [--poll] [--uvnetd-opt OPT]...
#        [--qemu-server] [guest ring options: --packed on --mrg-rxbuf off ...]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib/guest.sh"
source "$HERE/lib/netns.sh"
source "$HERE/lib/uvnetd.sh"

name=uvnetd_guest_tap count=5 server=0 queues=1
declare -a gopts=() uopts=()
while (($#)); do
	case $1 in
	--uvnetd) UVNETD=$2; shift 2 ;;
	--test-name) name=$2; shift 2 ;;
	--poll) uopts+=(--poll); shift ;;
	--uvnetd-opt) uopts+=("$2"); shift 2 ;;
	--qemu-server) server=1; shift ;;
	--queues) queues=$2; gopts+=("$1" "$2"); shift 2 ;;
	--packed | --mrg-rxbuf | --event-idx | --indirect) gopts+=("$1" "$2"); shift 2 ;;
	*) echo "unknown option $1" >&2; exit 2 ;;
	esac
done

uvn_test_init "$name"
uvn_need_root "network namespaces and TAP devices"
guest_prepare

netns_create NS tap
SOCK=$UVN_RUN/vhost0.sock TAP=uvntap0
port="vhost-user:$SOCK,queues=$queues"
rc=0
if ((server)); then
	# QEMU listens; uvnetd connects (and would reconnect) as a client
	guest_start --server --sock "$SOCK" --ip 198.18.3.2/24 --env PEER=198.18.3.1 --env COUNT=$count \
		--script "$HERE/guest/ping.sh" "${gopts[@]}"
	uvnetd_start sw --netns "$NS" -- --port "$port,client" --port "tap:$TAP" "${uopts[@]}"
	guest_watch "$(uvnetd_pid sw)"
	uvn_wait_for 10 "TAP device" netns_exec "$NS" ip link show "$TAP"
	netns_addr "$NS" "$TAP" 198.18.3.1/24
	guest_wait || rc=$?
else
	uvnetd_start sw --netns "$NS" -- --port "$port" --port "tap:$TAP" "${uopts[@]}"
	uvn_wait_for 10 "TAP device" netns_exec "$NS" ip link show "$TAP"
	netns_addr "$NS" "$TAP" 198.18.3.1/24
	guest_run --sock "$SOCK" --ip 198.18.3.2/24 --env PEER=198.18.3.1 --env COUNT=$count \
		--script "$HERE/guest/ping.sh" --watch "$(uvnetd_pid sw)" "${gopts[@]}" || rc=$?
fi
uvn_assert_eq "guest status" "$rc" 0
uvn_assert_eq "arping status" "$(guest_result arping.rc)" 0
uvn_assert_eq "ping replies" "$(guest_result ping.received)" "$count"
tapstat() { netns_exec "$NS" cat "/sys/class/net/$TAP/statistics/$1"; }
tap_rx=$(tapstat rx_packets) tap_tx=$(tapstat tx_packets)
uvnetd_stop sw
uvn_assert_eq "uvnetd vhost port rx == guest tx" "$(uvnetd_stat sw 0 rx_packets)" "$(guest_result nic0.tx_packets)"
uvn_assert_eq "guest rx == uvnetd vhost port tx" "$(guest_result nic0.rx_packets)" "$(uvnetd_stat sw 0 tx_packets)"
uvn_assert_eq "TAP rx (kernel side) == uvnetd tap port tx" "$tap_rx" "$(uvnetd_stat sw 1 tx_packets)"
uvn_assert_eq "uvnetd tap port rx == TAP tx (kernel side)" "$(uvnetd_stat sw 1 rx_packets)" "$tap_tx"
uvn_assert_eq "uvnetd vhost port errors" "$(uvnetd_stat sw 0 errors)" 0
uvn_assert_eq "uvnetd tap port errors" "$(uvnetd_stat sw 1 errors)" 0
