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

name=uvnetd_two_guests count=5
declare -a gopts=() uopts=()
while (($#)); do
	case $1 in
	--uvnetd) UVNETD=$2; shift 2 ;;
	--test-name) name=$2; shift 2 ;;
	--poll) uopts+=(--poll); shift ;;
	--uvnetd-opt) uopts+=("$2"); shift 2 ;;
	--packed | --mrg-rxbuf | --event-idx | --indirect) gopts+=("$1" "$2"); shift 2 ;;
	*) echo "unknown option $1" >&2; exit 2 ;;
	esac
done

uvn_test_init "$name"
guest_prepare
S0=$UVN_RUN/g0.sock S1=$UVN_RUN/g1.sock
uvnetd_start sw -- --port "vhost-user:$S0" --port "vhost-user:$S1" "${uopts[@]}"
guest_start --name g1 --sock "$S1" --ip 198.18.4.2/24 --env WAIT_RX=$count \
	--script "$HERE/guest/ping_wait.sh" --watch "$(uvnetd_pid sw)" --timeout 400 "${gopts[@]}"
guest_start --name g0 --sock "$S0" --ip 198.18.4.1/24 --env PEER=198.18.4.2 --env COUNT=$count \
	--script "$HERE/guest/ping_retry.sh" --watch "$(uvnetd_pid sw)" --timeout 400 "${gopts[@]}"
rc0=0 rc1=0
guest_wait --name g0 || rc0=$?
guest_wait --name g1 || rc1=$?
uvnetd_stop sw
uvn_assert_eq "guest 0 status" "$rc0" 0
uvn_assert_eq "guest 1 status" "$rc1" 0
uvn_assert_eq "ping replies" "$(guest_result g0 ping.received)" "$count"
for g in 0 1; do
	uvn_assert_eq "uvnetd port $g rx == guest $g tx" "$(uvnetd_stat sw $g rx_packets)" "$(guest_result g$g nic0.tx_packets)"
	uvn_assert_eq "guest $g rx == uvnetd port $g tx" "$(guest_result g$g nic0.rx_packets)" "$(uvnetd_stat sw $g tx_packets)"
	uvn_assert_eq "uvnetd port $g errors" "$(uvnetd_stat sw $g errors)" 0
done
