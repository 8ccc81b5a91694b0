#!/bin/bash
# guest_tap_netns_testpmd: the topology uvnetd tests will use, with DPDK
# testpmd standing in for the switch: a guest's virtio-net NIC (vhost-user)
# <-> testpmd io-forwarding <-> a TAP device (testpmd's net_tap) that lives
# in a private network namespace with an address.  The guest arpings and
# pings the namespace's kernel through the switch.  Asserts the replies and
# that the counters agree at both boundaries (guest <-> vhost port, TAP
# device <-> tap port).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib/guest.sh"
source "$HERE/lib/testpmd.sh"
source "$HERE/lib/netns.sh"

name=guest_tap_netns_testpmd count=5
[[ "${1:-}" == --test-name ]] && name=$2
uvn_test_init "$name"
uvn_need_root "network namespaces and TAP devices"
guest_prepare
testpmd_prepare
uvn_deps librte-net-tap23

netns_create NS tap
SOCK=$UVN_RUN/vhost0.sock TAP=uvntap0
# testpmd runs inside the namespace, so its TAP is created there
testpmd_start sw --netns "$NS" --vhost "$SOCK" --vdev "net_tap0,iface=$TAP" --fwd io --start
netns_addr "$NS" "$TAP" 198.18.2.1/24
rc=0
guest_run --sock "$SOCK" --ip 198.18.2.2/24 --env PEER=198.18.2.1 --env COUNT=$count \
	--script "$HERE/guest/ping.sh" --watch "$(testpmd_pid sw)" || rc=$?
uvn_assert_eq "guest status" "$rc" 0
uvn_assert_eq "arping status" "$(guest_result arping.rc)" 0
uvn_assert_eq "ping replies" "$(guest_result ping.received)" "$count"

stats=$(testpmd_stats sw)
uvn_log "testpmd: $(tr '\n' ';' <<<"$stats")"
tp() { awk -v p="port=$1" -v f="$2=" '$1 == p { for (i = 2; i <= NF; i++) if (index($i, f) == 1) print substr($i, length(f) + 1) }' <<<"$stats"; }
tapstat() { netns_exec "$NS" cat "/sys/class/net/$TAP/statistics/$1"; }
uvn_assert_eq "testpmd vhost port rx == guest tx" "$(tp 0 rx_packets)" "$(guest_result nic0.tx_packets)"
uvn_assert_eq "guest rx == testpmd vhost port tx" "$(guest_result nic0.rx_packets)" "$(tp 0 tx_packets)"
uvn_assert_eq "TAP rx (kernel side) == testpmd tap port tx" "$(tapstat rx_packets)" "$(tp 1 tx_packets)"
uvn_assert_eq "testpmd tap port rx == TAP tx (kernel side)" "$(tp 1 rx_packets)" "$(tapstat tx_packets)"
testpmd_stop sw
