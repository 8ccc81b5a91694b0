#!/bin/bash
# testpmd_pair: DPDK testpmd net_virtio_user (frontend, CPU 1) <-> testpmd
# net_vhost (backend, CPU 0) over one vhost-user socket, no guest.  Proves
# the testpmd side of the harness: two instances, interactive commands,
# counter parsing.  Phases (counters cleared between them):
#   1. fixed count: virtio-user "start tx_first 4" -> 4 bursts of 32 frames;
#      vhost (rxonly) must receive exactly 128
#   2. virtio-user txonly for N s -> vhost rxonly: vhost rx == virtio-user tx
#      (the receiver starts first and stops last, so nothing may be lost)
#   3. reverse: vhost txonly -> virtio-user rxonly: virtio-user rx == vhost tx
#
# Usage: testpmd_pair.sh [--test-name NAME] [--seconds N] [--vu-args DEVARGS] [--huge]
#   --vu-args   extra net_virtio_user devargs, e.g. packed_vq=1,mrg_rxbuf=0
#   --huge      both sides on hugepages (skips when none are free)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib/testpmd.sh"

name=testpmd_pair secs=2 vuargs=
declare -a mem=()
while (($#)); do
	case $1 in
	--test-name) name=$2; shift 2 ;;
	--seconds) secs=$2; shift 2 ;;
	--vu-args) vuargs=$2; shift 2 ;;
	--huge) mem=(--huge); shift ;;
	*) echo "unknown option $1" >&2; exit 2 ;;
	esac
done

uvn_test_init "$name"
testpmd_prepare
SOCK=$UVN_RUN/vhost.sock
testpmd_start vh --vhost "$SOCK" --fwd rxonly --cpu 0 --start "${mem[@]}"
testpmd_start vu --virtio-user "$SOCK${vuargs:+,$vuargs}" --fwd io --cpu 1 "${mem[@]}"
testpmd_wait_link vh 0 30 || uvn_die "virtio-user never connected"

cnt() { testpmd_stat "$1" 0 "$2"; }
vh_rx_is() { [[ "$(cnt vh rx_packets)" == "$1" ]]; }
clear_stats() { testpmd_cmd vh "clear port stats all" >/dev/null; testpmd_cmd vu "clear port stats all" >/dev/null; }

# -- 1. fixed count
burst=32 bursts=4
testpmd_cmd vu "start tx_first $bursts" >/dev/null
uvn_wait_for 20 "vhost to receive $((burst * bursts)) frames" vh_rx_is $((burst * bursts)) || true
testpmd_cmd vu stop >/dev/null
uvn_assert_eq "phase 1: virtio-user tx" "$(cnt vu tx_packets)" $((burst * bursts))
uvn_assert_eq "phase 1: vhost rx" "$(cnt vh rx_packets)" $((burst * bursts))

# -- 2. virtio-user txonly -> vhost rxonly, for $secs s
clear_stats
testpmd_cmd vu "set fwd txonly" >/dev/null
testpmd_cmd vu start >/dev/null
sleep "$secs"
testpmd_cmd vu stop >/dev/null
sleep 0.5   # vhost drains what is left in the ring
vu_tx=$(cnt vu tx_packets)
uvn_assert_ge "phase 2: virtio-user tx" "$vu_tx" 1
uvn_assert_eq "phase 2: vhost rx == virtio-user tx" "$(cnt vh rx_packets)" "$vu_tx"
uvn_assert_eq "phase 2: vhost rx_missed" "$(cnt vh rx_missed)" 0
uvn_log "phase 2: $vu_tx frames in ${secs}s (informational)"

# -- 3. vhost txonly -> virtio-user rxonly
testpmd_cmd vh stop >/dev/null
clear_stats
testpmd_cmd vu "set fwd rxonly" >/dev/null
testpmd_cmd vu start >/dev/null
testpmd_cmd vh "set fwd txonly" >/dev/null
testpmd_cmd vh start >/dev/null
sleep "$secs"
testpmd_cmd vh stop >/dev/null
sleep 0.5
testpmd_cmd vu stop >/dev/null
vh_tx=$(cnt vh tx_packets)
uvn_assert_ge "phase 3: vhost tx" "$vh_tx" 1
uvn_assert_eq "phase 3: virtio-user rx == vhost tx" "$(cnt vu rx_packets)" "$vh_tx"
uvn_log "phase 3: $vh_tx frames in ${secs}s (informational)"

testpmd_stop vu
testpmd_stop vh
