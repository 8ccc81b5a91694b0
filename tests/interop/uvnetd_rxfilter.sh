#!/bin/bash
# uvnetd_rxfilter: a Linux guest's receive filter honoured by the switch.
# With vhost-user QEMU keeps the control queue, so uvnetd follows the NIC's
# filter over QEMU's QMP socket (port option qmp=PATH,nic=ID). A peer in a
# network namespace floods the guest with frames for an address that is not
# the guest's: while the guest's NIC is not promiscuous, uvnetd drops them
# (counted as guest_filtered) and the guest's rx counter stays still; with
# `ip link set eth0 promisc on` in the guest they arrive; off again, they
# stop again.
#
# Usage: uvnetd_rxfilter.sh --uvnetd PATH [--test-name NAME]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib/guest.sh"
source "$HERE/lib/netns.sh"
source "$HERE/lib/uvnetd.sh"

name=uvnetd_rxfilter
while (($#)); do
	case $1 in
	--uvnetd) UVNETD=$2; shift 2 ;;
	--test-name) name=$2; shift 2 ;;
	*) echo "unknown option $1" >&2; exit 2 ;;
	esac
done

uvn_test_init "$name"
uvn_need_root "network namespaces and TAP devices"
guest_prepare
command -v python3 >/dev/null || uvn_deps python3

netns_create NS tap
SOCK=$UVN_RUN/vhost0.sock QMP=$UVN_RUN/qmp.sock CTL=$UVN_RUN/ctl.sock TAP=uvntap0
uvnetd_start sw --netns "$NS" -- --port "vhost-user:$SOCK,qmp=$QMP,nic=nic0,name=g" --port "tap:$TAP" \
	--ctl "$CTL"
uvn_wait_for 10 "TAP device" netns_exec "$NS" ip link show "$TAP"
netns_exec "$NS" ip link set "$TAP" up
# 100 frames/s to 02:00:00:00:00:99, an address nobody has: flooded to the guest
netns_spawn FLOOD "unicast flood" "$UVN_LOG_DIR/flood.log" "$NS" python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((sys.argv[1], 0))
f = bytes.fromhex("020000000099" "02aabbccdd01" "88b5") + bytes(46)
while True:
    s.send(f)
    time.sleep(0.01)
' "$TAP"
rc=0
guest_run --sock "$SOCK" --qmp "$QMP" --nic-opt id=nic0 --ip 198.18.7.2/24 --env SECS=3 \
	--script "$HERE/guest/rxfilter.sh" --watch "$(uvnetd_pid sw)" || rc=$?
uvn_kill "$FLOOD" 1
uvn_assert_eq "guest status" "$rc" 0
filtered=$(guest_result filtered.delta) promisc=$(guest_result promisc.delta) again=$(guest_result off_again.delta)
uvn_log "frames reaching the guest in 3 s: filter on $filtered, promiscuous $promisc, filter on again $again"
# ~300 frames are sent per window; a few others (the guest's own ARP
# traffic, none here: nothing is addressed) may arrive
((filtered < 30)) || uvn_die "the filter let $filtered frames through"
((promisc > 150)) || uvn_die "promiscuous: only $promisc frames arrived"
((again < 30)) || uvn_die "filter back on: $again frames came through"
counted=$("$UVNETD" ctl "$CTL" show ports --json | python3 -c 'import json, sys
print([p for p in json.load(sys.stdin)["ports"] if p["name"] == "g"][0]["guest_filtered"])')
uvn_assert_ge "uvnetd counted filtered frames" "$counted" 300
uvnetd_stop sw
uvn_assert_eq "uvnetd vhost port errors" "$(uvnetd_stat sw 0 errors)" 0
grep -q "following the receive filter of nic0" "$(uvnetd_log sw)" || uvn_die "no QMP session in the log"
uvn_log "PASS"
