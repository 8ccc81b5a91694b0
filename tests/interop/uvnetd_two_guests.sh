#!/bin/bash
# uvnetd_two_guests: two Linux guests, each with one virtio-net NIC served
# by uvnetd (switch mode), ping each other through the switch.  Asserts the
# replies and that each guest's counters equal its uvnetd port's, with no
# errors.
#
# Usage: uvnetd_two_guests.sh --uvnetd PATH [--test-name NAME] [--poll] [--uvnetd-opt OPT]...
#        [guest ring options for both: --packed on ...]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib/guest.sh"
source "$HERE/lib/uvnetd.sh"

name=uvnetd_two_guests count=5 queues=1
declare -a gopts=() uopts=()
while (($#)); do
	case $1 in
	--uvnetd) UVNETD=$2; shift 2 ;;
	--test-name) name=$2; shift 2 ;;
	--poll) uopts+=(--poll); shift ;;
	--uvnetd-opt) uopts+=("$2"); shift 2 ;;
	--queues) queues=$2; gopts+=("$1" "$2"); shift 2 ;;
	--packed | --mrg-rxbuf | --event-idx | --indirect) gopts+=("$1" "$2"); shift 2 ;;
	*) echo "unknown option $1" >&2; exit 2 ;;
	esac
done

uvn_test_init "$name"
guest_prepare
S0=$UVN_RUN/g0.sock S1=$UVN_RUN/g1.sock
uvnetd_start sw -- --port "vhost-user:$S0,queues=$queues" --port "vhost-user:$S1,queues=$queues" \
	"${uopts[@]}"
# Multiqueue: the active guest changes its number of queue pairs between
# pings (all, one, all): 3 rounds of 3 pings instead of one of $count.
script=ping_retry.sh wait_rx=$count
((queues > 1)) && { script=ping_mq.sh count=3 wait_rx=9; }
guest_start --name g1 --sock "$S1" --ip 198.18.4.2/24 --env WAIT_RX=$wait_rx \
	--script "$HERE/guest/ping_wait.sh" --watch "$(uvnetd_pid sw)" --timeout 400 "${gopts[@]}"
guest_start --name g0 --sock "$S0" --ip 198.18.4.1/24 --env PEER=198.18.4.2 --env COUNT=$count \
	--script "$HERE/guest/$script" --watch "$(uvnetd_pid sw)" --timeout 400 "${gopts[@]}"
rc0=0 rc1=0
guest_wait --name g0 || rc0=$?
guest_wait --name g1 || rc1=$?
uvnetd_stop sw
uvn_assert_eq "guest 0 status" "$rc0" 0
uvn_assert_eq "guest 1 status" "$rc1" 0
if ((queues > 1)); then
	for r in "ping$queues" ping1; do
		uvn_assert_eq "ping replies ($r)" "$(guest_result g0 "$r.received")" "$count"
	done
	uvn_assert_eq "guest 0 queue pairs after the toggles" "$(guest_result g0 "channels.$queues")" "$queues"
else
	uvn_assert_eq "ping replies" "$(guest_result g0 ping.received)" "$count"
fi
# Linux's virtio_net counts a sent frame when it reclaims its buffer, which
# may not happen for the last frames before the guest reads its counters:
# the guest's tx count may lag uvnetd's by a frame or two, never lead it.
tx_lag_ok() { local dev=$1 guest=$2; ((dev >= guest && dev - guest <= 2)); }
for g in 0 1; do
	uvn_check "uvnetd port $g rx ($(uvnetd_stat sw $g rx_packets)) == guest $g tx ($(guest_result g$g nic0.tx_packets)), or 1-2 more" \
		tx_lag_ok "$(uvnetd_stat sw $g rx_packets)" "$(guest_result g$g nic0.tx_packets)"
	uvn_assert_eq "guest $g rx == uvnetd port $g tx" "$(guest_result g$g nic0.rx_packets)" "$(uvnetd_stat sw $g tx_packets)"
	uvn_assert_eq "uvnetd port $g errors" "$(uvnetd_stat sw $g errors)" 0
done
