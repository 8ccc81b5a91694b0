#!/bin/bash
# guest_ping_testpmd: a Linux guest's virtio-net NIC served by DPDK testpmd's
# net_vhost in icmpecho mode.  The guest arpings and pings testpmd; the test
# asserts the replies, that the guest's NIC counters and testpmd's port
# counters agree (guest tx == testpmd rx, testpmd tx == guest rx), and that
# the requested ring options were negotiated.
#
# Usage: guest_ping_testpmd.sh [--test-name NAME] [--qemu-server]
#                              [--packed on|off] [--mrg-rxbuf on|off]
#                              [--event-idx on|off] [--indirect on|off]
#                              [--queues N] [--count N]
#   --qemu-server  QEMU listens, testpmd connects (net_vhost client=1)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib/guest.sh"
source "$HERE/lib/testpmd.sh"

name=guest_ping_testpmd qemu_server=0 count=5 queues=1
packed=off mrg=on evidx=on indirect=on
declare -a gopts=()
while (($#)); do
	case $1 in
	--test-name) name=$2; shift 2 ;;
	--qemu-server) qemu_server=1; shift ;;
	--packed) packed=$2; gopts+=("$1" "$2"); shift 2 ;;
	--mrg-rxbuf) mrg=$2; gopts+=("$1" "$2"); shift 2 ;;
	--event-idx) evidx=$2; gopts+=("$1" "$2"); shift 2 ;;
	--indirect) indirect=$2; gopts+=("$1" "$2"); shift 2 ;;
	--queues) queues=$2; gopts+=("$1" "$2"); shift 2 ;;
	--count) count=$2; shift 2 ;;
	*) echo "unknown option $1" >&2; exit 2 ;;
	esac
done

uvn_test_init "$name"
guest_prepare
testpmd_prepare

SOCK=$UVN_RUN/vhost0.sock
GUEST_IP=198.18.0.2/24 PEER=198.18.0.1
declare -a gargs=(--sock "$SOCK" --ip "$GUEST_IP" --env "PEER=$PEER" --env "COUNT=$count"
	--script "$HERE/guest/ping.sh" "${gopts[@]}")
rc=0
if ((qemu_server)); then
	guest_start --server "${gargs[@]}"
	testpmd_start tp --vhost-client "$SOCK" --fwd icmpecho --queues "$queues" --start
	guest_watch "$(testpmd_pid tp)"
	guest_wait || rc=$?
else
	testpmd_start tp --vhost "$SOCK" --fwd icmpecho --queues "$queues" --start
	guest_run "${gargs[@]}" --watch "$(testpmd_pid tp)" || rc=$?
fi
uvn_assert_eq "guest status" "$rc" 0

# replies
uvn_assert_eq "arping status" "$(guest_result arping.rc)" 0
uvn_assert_eq "pings sent" "$(guest_result ping.sent)" "$count"
uvn_assert_eq "ping replies" "$(guest_result ping.received)" "$count"

# negotiated ring options, as the guest driver sees them
# (MRG_RXBUF = 15, INDIRECT_DESC = 28, EVENT_IDX = 29, RING_PACKED = 34;
# testpmd's vhost offers all four)
onoff() { [[ $1 == on ]] && echo 1 || echo 0; }
uvn_assert_eq "MRG_RXBUF negotiated" "$(guest_feature 0 15)" "$(onoff "$mrg")"
uvn_assert_eq "INDIRECT_DESC negotiated" "$(guest_feature 0 28)" "$(onoff "$indirect")"
uvn_assert_eq "EVENT_IDX negotiated" "$(guest_feature 0 29)" "$(onoff "$evidx")"
uvn_assert_eq "RING_PACKED negotiated" "$(guest_feature 0 34)" "$(onoff "$packed")"
if ((queues > 1)); then   # VIRTIO_NET_F_MQ = 22
	uvn_assert_eq "MQ negotiated" "$(guest_feature 0 22)" 1
	uvn_assert_eq "guest queue pairs in use" "$(guest_result channels.combined)" "$queues"
fi

# counters: both ends saw the same frames
stats=$(testpmd_stats tp)
uvn_log "testpmd: $stats"
tp_rx=$(awk '$1 == "port=0" { for (i = 2; i <= NF; i++) if ($i ~ /^rx_packets=/) print substr($i, 12) }' <<<"$stats")
tp_tx=$(awk '$1 == "port=0" { for (i = 2; i <= NF; i++) if ($i ~ /^tx_packets=/) print substr($i, 12) }' <<<"$stats")
g_tx=$(guest_result nic0.tx_packets)
g_rx=$(guest_result nic0.rx_packets)
uvn_assert_ge "guest tx packets" "$g_tx" $((count + 1))
uvn_assert_eq "testpmd port 0 rx == guest tx" "$tp_rx" "$g_tx"
uvn_assert_eq "guest rx == testpmd port 0 tx" "$g_rx" "$tp_tx"
uvn_assert_eq "guest rx errors+drops" "$(($(guest_result nic0.rx_errors) + $(guest_result nic0.rx_dropped)))" 0
testpmd_stop tp
