#!/bin/bash
# uvnetd_stalled: a destination that stops taking frames does not stop the
# source. uvnetd switches (zero-copy on) between three DPDK virtio-user
# ports: A sends 1000-byte frames to an unknown MAC (flooded to B and C),
# B never polls its rx ring (stalled: its ring fills up), C polls. While
# A sends, C keeps receiving, A's frames keep being taken from its ring,
# B's share is dropped and counted, and no chain of A stays held once A
# stops (zero-copy never pins a guest's buffers on a stalled destination).
#
# Usage: uvnetd_stalled.sh --uvnetd PATH [--test-name NAME] [--vu-args DEVARGS]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib/testpmd.sh"
source "$HERE/lib/uvnetd.sh"

name=uvnetd_stalled vuargs=
while (($#)); do
	case $1 in
	--uvnetd) UVNETD=$2; shift 2 ;;
	--test-name) name=$2; shift 2 ;;
	--vu-args) vuargs=$2; shift 2 ;;
	*) echo "unknown option $1" >&2; exit 2 ;;
	esac
done

uvn_test_init "$name"
testpmd_prepare
A=$UVN_RUN/a.sock B=$UVN_RUN/b.sock C=$UVN_RUN/c.sock CTL=$UVN_RUN/ctl.sock
uctl() { "$UVNETD" ctl "$CTL" "$@"; }
# port P's counter FIELD from `show ports --json` (ports in command-line order)
pstat() { uctl show ports --json | grep -o "\"$2\":[0-9]*" | sed -n "$(($1 + 1))p" | cut -d: -f2; }
qstat() { uctl show queues --json | grep -o "\"$1\":[0-9]*" | sed -n "${2}p" | cut -d: -f2; }

uvnetd_start sw -- --port "vhost-user:$A" --port "vhost-user:$B" --port "vhost-user:$C" \
	--zerocopy on --poll --cpu 0 --ctl "$CTL"
testpmd_start c --virtio-user "$C${vuargs:+,$vuargs}" --fwd rxonly --cpu 1 --start
testpmd_start b --virtio-user "$B${vuargs:+,$vuargs}" --fwd rxonly --cpu 1   # never started
testpmd_start a --virtio-user "$A${vuargs:+,$vuargs}" --fwd txonly --txpkts 1000 --cpu 1
testpmd_cmd a start >/dev/null
uvn_sleep 2
a0=$(pstat 0 rx_packets) b0=$(pstat 1 drops) c0=$(pstat 2 tx_packets)
uvn_sleep 2
a1=$(pstat 0 rx_packets) b1=$(pstat 1 drops) c1=$(pstat 2 tx_packets)
uvn_log "in 2 s: A sent $((a1 - a0)), C received $((c1 - c0)), B dropped $((b1 - b0)) (informational)"
uvn_assert_ge "frames taken from A's ring in 2 s" "$((a1 - a0))" 1000
uvn_assert_ge "frames C received in 2 s" "$((c1 - c0))" 1000
uvn_assert_ge "frames dropped at stalled B in 2 s" "$((b1 - b0))" 1000
uvn_assert_ge "B received at most its ring" 256 "$(pstat 1 tx_packets)"
uvn_assert_ge "A's frames went zero-copy" "$(uctl show queues --json | grep -o '"zc_packets":[1-9][0-9]*' | wc -l)" 1
testpmd_cmd a stop >/dev/null
uvn_sleep 0.5
held=$(uctl show queues --json | grep -o '"zc_held":[0-9]*' | cut -d: -f2 | sort -n | tail -1)
uvn_assert_eq "chains held once A stopped" "$held" 0
uvn_assert_eq "uvnetd errors (A)" "$(pstat 0 errors)" 0
testpmd_stop a
testpmd_stop b
testpmd_stop c
uvnetd_stop sw
