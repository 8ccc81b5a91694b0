#!/bin/bash
# guest_two_nics_testpmd: a guest with two virtio-net NICs, both served by
# one DPDK testpmd (two net_vhost ports, io forwarding port0 <-> port1, a
# wire).  Inside the guest NIC 1 lives in its own netns; NIC 0 pings it and
# runs iperf3 TCP both ways to it, so every frame crosses testpmd.  Asserts
# the replies, iperf3's success, and that the four counter pairs agree.
#
# Usage: guest_two_nics_testpmd.sh [--test-name NAME] [--iperf-seconds N]
#                                  [guest_start ring options: --packed on ...]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib/guest.sh"
source "$HERE/lib/testpmd.sh"

name=guest_two_nics_testpmd iperf=2 count=5
declare -a gopts=()
while (($#)); do
	case $1 in
	--test-name) name=$2; shift 2 ;;
	--iperf-seconds) iperf=$2; shift 2 ;;
	--packed | --mrg-rxbuf | --event-idx | --indirect | --queues) gopts+=("$1" "$2"); shift 2 ;;
	*) echo "unknown option $1" >&2; exit 2 ;;
	esac
done

uvn_test_init "$name"
guest_prepare
testpmd_prepare

S0=$UVN_RUN/vhost0.sock S1=$UVN_RUN/vhost1.sock
testpmd_start wire --vhost "$S0" --vhost "$S1" --fwd io --start
rc=0
guest_run --sock "$S0" --sock "$S1" --ip 198.18.1.1/24 --env IP1=198.18.1.2/24 --env PEER=198.18.1.2 \
	--env COUNT=$count --env IPERF_SECONDS="$iperf" --script "$HERE/guest/two_nics.sh" \
	--watch "$(testpmd_pid wire)" --timeout 400 "${gopts[@]}" || rc=$?
uvn_assert_eq "guest status" "$rc" 0
uvn_assert_eq "ping replies" "$(guest_result ping.received)" "$count"
if ((iperf > 0)); then
	uvn_assert_eq "iperf3 TCP guest0 -> guest1 status" "$(guest_result iperf3.tx.rc)" 0
	uvn_assert_eq "iperf3 TCP guest1 -> guest0 status" "$(guest_result iperf3.rx.rc)" 0
	uvn_log "iperf3 (TCG, informational): tx $(guest_result iperf3.tx.mbps) Mbit/s, rx $(guest_result iperf3.rx.mbps) Mbit/s"
fi

stats=$(testpmd_stats wire)
uvn_log "testpmd: $(tr '\n' ';' <<<"$stats")"
tp() { awk -v p="port=$1" -v f="$2=" '$1 == p { for (i = 2; i <= NF; i++) if (index($i, f) == 1) print substr($i, length(f) + 1) }' <<<"$stats"; }
uvn_assert_ge "guest NIC 0 tx packets" "$(guest_result nic0.tx_packets)" "$count"
uvn_assert_eq "testpmd port 0 rx == guest NIC 0 tx" "$(tp 0 rx_packets)" "$(guest_result nic0.tx_packets)"
uvn_assert_eq "testpmd port 1 rx == guest NIC 1 tx" "$(tp 1 rx_packets)" "$(guest_result nic1.tx_packets)"
uvn_assert_eq "guest NIC 0 rx == testpmd port 0 tx" "$(guest_result nic0.rx_packets)" "$(tp 0 tx_packets)"
uvn_assert_eq "guest NIC 1 rx == testpmd port 1 tx" "$(guest_result nic1.rx_packets)" "$(tp 1 tx_packets)"
testpmd_stop wire
