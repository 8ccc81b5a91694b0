#!/bin/bash
# uvnetd_testpmd: DPDK testpmd's virtio-user (frontend, CPU 1) against
# uvnetd (backend, CPU 0) over one vhost-user socket.  Three phases, each
# with a fresh uvnetd, each an exact frame count:
#   sink:     testpmd sends exactly 4 bursts of 32 frames (start tx_first 4)
#             -> uvnetd receives exactly 128, no drops, no errors
#   loopback: the same 128 frames come back (MACs swapped): testpmd rx 128
#   txonly:   uvnetd delivers exactly N frames (--txonly-count) to a
#             polling testpmd (rxonly): N guest buffers taken and returned,
#             testpmd counting N (short by at most one ring, see below)
#
# Usage: uvnetd_testpmd.sh --uvnetd PATH [--test-name NAME] [--vu-args DEVARGS]
#        [--poll] [--uvnetd-opt OPT]... [--seconds N]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib/testpmd.sh"
source "$HERE/lib/uvnetd.sh"

name=uvnetd_testpmd vuargs= secs=2
declare -a uopts=()
while (($#)); do
	case $1 in
	--uvnetd) UVNETD=$2; shift 2 ;;
	--test-name) name=$2; shift 2 ;;
	--vu-args) vuargs=$2; shift 2 ;;
	--poll) uopts+=(--poll); shift ;;
	--uvnetd-opt) uopts+=("$2"); shift 2 ;;
	--seconds) secs=$2; shift 2 ;;
	*) echo "unknown option $1" >&2; exit 2 ;;
	esac
done

uvn_test_init "$name"
testpmd_prepare
SOCK=$UVN_RUN/vhost.sock
burst=32 bursts=4 total=128

# phase SWITCH_MODE TESTPMD_FWD [UVNETD_ARGS]: a fresh uvnetd and testpmd
start_pair() {
	uvnetd_start sw -- --port "vhost-user:$SOCK" --forward "$1" --cpu 0 "${uopts[@]}" "${@:3}"
	testpmd_start vu --virtio-user "$SOCK${vuargs:+,$vuargs}" --fwd "$2" --cpu 1
}
vu() { testpmd_stat vu 0 "$1"; }
vu_rx_is() { [[ "$(vu rx_packets)" == "$1" ]]; }

# -- sink
start_pair sink rxonly
testpmd_cmd vu "start tx_first $bursts" >/dev/null
uvn_sleep 1
testpmd_cmd vu stop >/dev/null
uvn_assert_eq "sink: testpmd tx" "$(vu tx_packets)" $total
testpmd_stop vu
uvnetd_stop sw
uvn_assert_eq "sink: uvnetd rx" "$(uvnetd_stat sw 0 rx_packets)" $total
uvn_assert_eq "sink: uvnetd drops" "$(uvnetd_stat sw 0 drops)" 0
uvn_assert_eq "sink: uvnetd errors" "$(uvnetd_stat sw 0 errors)" 0

# -- loopback
start_pair loopback rxonly
testpmd_cmd vu "start tx_first $bursts" >/dev/null
uvn_wait_for 20 "testpmd to get $total frames back" vu_rx_is $total || true
testpmd_cmd vu stop >/dev/null
uvn_assert_eq "loopback: testpmd tx" "$(vu tx_packets)" $total
uvn_assert_eq "loopback: testpmd rx" "$(vu rx_packets)" $total
testpmd_stop vu
uvnetd_stop sw
uvn_assert_eq "loopback: uvnetd rx" "$(uvnetd_stat sw 0 rx_packets)" $total
uvn_assert_eq "loopback: uvnetd tx" "$(uvnetd_stat sw 0 tx_packets)" $total
uvn_assert_eq "loopback: uvnetd errors" "$(uvnetd_stat sw 0 errors)" 0

# -- txonly: exactly $gen frames generated; testpmd polls all the time
gen=200000 CTL=$UVN_RUN/ctl.sock
uctl() { "$UVNETD" ctl "$CTL" "$@"; }
generated() { uctl show stats --json | grep -o '"generated":[0-9]*' | cut -d: -f2; }
all_generated() { [[ "$(generated)" == "$gen" ]]; }
start_pair txonly rxonly --txonly-count "$gen" --ctl "$CTL"
testpmd_cmd vu start >/dev/null
uvn_wait_for 60 "uvnetd to deliver $gen frames" all_generated
uvn_sleep 0.5 # testpmd takes the last ones from its ring
sent=$(uctl show ports --json | grep -o '"tx_packets":[0-9]*' | cut -d: -f2)
dropped=$(uctl show ports --json | grep -o '"drops":[0-9]*' | cut -d: -f2)
# The guest RX ring: buffers taken, buffers returned used, ring size.
read -r bufs used size <<<"$(uctl show queues --json | python3 -c 'import json,sys
q = [q for q in json.load(sys.stdin)["queues"] if q["dir"] == "guest_rx"][0]
print(q["ring"].get("bufs", 0), q["ring"].get("used", 0), q["size"])')"
testpmd_cmd vu stop >/dev/null
uvn_assert_eq "txonly: uvnetd tx" "$sent" "$gen"
uvn_assert_eq "txonly: guest rx buffers taken" "$bufs" "$gen"
uvn_assert_eq "txonly: guest rx buffers returned" "$used" "$gen"
# testpmd's count is exact in most runs, but in a few percent it comes out
# 15-256 frames short although its ring shows every returned buffer taken
# back and posted again (virtio-user counted fewer packets than it took
# buffers; not explained yet, seen with split and packed rings and on uvnetd
# builds before the current one). The device side is exact above; here the
# shortfall must stay within one ring.
rx=$(vu rx_packets)
short=$((gen - rx))
((short >= 0 && short <= size)) || uvn_die "txonly: testpmd rx $rx of $gen frames (ring $size)"
((short == 0)) || uvn_log "txonly: testpmd counted $rx of $gen frames ($short short, within one ring)"
testpmd_stop vu
uvnetd_stop sw
uvn_assert_eq "txonly: uvnetd errors" "$(uvnetd_stat sw 0 errors)" 0
uvn_log "txonly: $gen frames delivered, $dropped offered to a full ring and dropped (informational)"
