#!/bin/bash
# uvnetd_offload_guests: offloads between two Linux guests on uvnetd. Guest
# g0 keeps every offload; guest g1's NIC loses the ones given with
# --g1-nic-opt. TCP both ways (a file each way with busybox nc, md5sum and
# size compared; iperf3 each way): g0's TSO frames (in its own TX buffers,
# zero-copy) must reach g1 as it can take them - whole, or segmented in
# software with partial or complete checksums - and g1's frames reach g0.
# Asserts the data, the path in uvnetd's counters of each guest's rx queue,
# no malformed-offload drops and no errors.
#
# Usage: uvnetd_offload_guests.sh --uvnetd PATH [--test-name NAME] [--g1-nic-opt K=V]...
#        [--uvnetd-opt OPT]... [--file-mb N] [--iperf-seconds N]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib/guest.sh"
source "$HERE/lib/uvnetd.sh"

name=uvnetd_offload_guests file_mb=8 iperf_s=3
declare -a g1opts=() uopts=()
while (($#)); do
	case $1 in
	--uvnetd) UVNETD=$2; shift 2 ;;
	--test-name) name=$2; shift 2 ;;
	--g1-nic-opt) g1opts+=(--nic-opt "$2"); shift 2 ;;
	--uvnetd-opt) uopts+=("$2"); shift 2 ;;
	--file-mb) file_mb=$2; shift 2 ;;
	--iperf-seconds) iperf_s=$2; shift 2 ;;
	*) echo "unknown option $1" >&2; exit 2 ;;
	esac
done

uvn_test_init "$name"
guest_prepare
S0=$UVN_RUN/g0.sock S1=$UVN_RUN/g1.sock CTL=$UVN_RUN/ctl.sock
uvnetd_start sw -- --port "vhost-user:$S0" --port "vhost-user:$S1" --ctl "$CTL" "${uopts[@]}"
uvn_wait_for 10 "control socket" test -S "$CTL"

guest_start --name g1 --sock "$S1" --ip 198.18.6.2/24 --env FILE_MB="$file_mb" --env HOLD=8 \
	--script "$HERE/guest/offload_server.sh" --watch "$(uvnetd_pid sw)" --timeout 480 "${g1opts[@]}"
ready() { grep -aq 'server.ready=1' "$(guest_dir g1)/results.log" 2>/dev/null; }
uvn_wait_for 240 "guest g1 serving" ready || uvn_die "guest g1 did not start serving"
guest_start --name g0 --sock "$S0" --ip 198.18.6.1/24 --env PEER=198.18.6.2 \
	--env FILE_MB="$file_mb" --env IPERF_SECONDS="$iperf_s" --env HOLD=3 \
	--script "$HERE/guest/offload.sh" --watch "$(uvnetd_pid sw)" --timeout 480

# the guests' queues go away with them: read the counters while both hold on
queues=
while uvn_alive "${GUEST_PID[g0]}" && ((SECONDS < GUEST_DEADLINE[g0])); do
	if grep -aq 'phase.done=1' "$(guest_dir g0)/results.log" 2>/dev/null; then
		queues=$("$UVNETD" ctl "$CTL" show queues --json) || queues=
		break
	fi
	uvn_sleep 0.5
done
rc0=0 rc1=0
guest_wait --name g0 || rc0=$?
guest_wait --name g1 || rc1=$?
echo "$queues" >"$UVN_LOG_DIR/queues.json"
uvnetd_stop sw
uvn_assert_eq "guest g0 status" "$rc0" 0
uvn_assert_eq "guest g1 status" "$rc1" 0
uvn_check "queue counters read while the guests ran" test -n "$queues"

uvn_assert_eq "file g0 -> g1 (md5-bytes)" "$(guest_result g1 file.recv.sum)" "$(guest_result g0 file.out.sum)"
uvn_assert_eq "file g1 -> g0 (md5-bytes)" "$(guest_result g0 file.in.sum)" "$(guest_result g1 file.sent.sum)"
uvn_assert_eq "iperf3 g0 -> g1 status" "$(guest_result g0 iperf3.tx.rc)" 0
uvn_assert_eq "iperf3 g1 -> g0 status" "$(guest_result g0 iperf3.rx.rc)" 0
uvn_log "informational: iperf3 $(guest_result g0 iperf3.tx.mbps) Mb/s g0->g1," \
	"$(guest_result g0 iperf3.rx.mbps) Mb/s g1->g0"

# The "dev" counters of a port's guest rx queue(s), summed per field.
rx_devs() {
	grep -oE "\"port\":\"vhost-user:$1\"[^{}]*\"dir\":\"guest_rx\"([^{}]|\{[^{}]*\})*" <<<"$queues" |
		grep -oE "\"dev\":\{[^}]*\}" || true
}
field() {   # field DEVS NAME
	local s=0 re="\"$2\":([0-9]+)(.*)" rest=$1
	while [[ $rest =~ $re ]]; do
		s=$((s + BASH_REMATCH[1]))
		rest=${BASH_REMATCH[2]}
	done
	echo "$s"
}
# check_rx GUEST SOCK PEER: the path frames from PEER took into GUEST
# shellcheck disable=SC2154  # the counters are locals named by the loop below
check_rx() {
	local g=$1 devs tso csum sender_tso f
	devs=$(rx_devs "$2")
	for f in gso_pass gso_sw gso_segs csum_sw csum_pass drop_gso_hdr drop_gso_len drop_gso_size drop_csum \
		drop_offload; do
		local "$f=$(field "$devs" "$f")"
	done
	tso=$(guest_feature "$g" 0 7) csum=$(guest_feature "$g" 0 1)
	sender_tso=$(guest_feature "$3" 0 11)
	[[ $(guest_result "$3" ethtool.tso 2>/dev/null || echo on) == on ]] || sender_tso=0
	uvn_log "$g rx queue: gso_pass=$gso_pass gso_sw=$gso_sw gso_segs=$gso_segs csum_sw=$csum_sw" \
		"csum_pass=$csum_pass; $g GUEST_CSUM=$csum GUEST_TSO4=$tso, $3 sends TSO: $sender_tso"
	if ((sender_tso)); then
		if [[ $tso == 1 && $csum == 1 ]]; then
			uvn_assert_ge "$3's GSO frames passed to $g whole" "$gso_pass" 1
			uvn_assert_eq "$3's GSO frames segmented for $g" "$gso_sw" 0
		else
			uvn_assert_eq "$3's GSO frames passed to $g whole" "$gso_pass" 0
			uvn_assert_ge "$3's GSO frames segmented for $g" "$gso_sw" 1
			uvn_assert_ge "segments made for $g" "$gso_segs" "$((gso_sw + 1))"
		fi
	else
		uvn_assert_eq "GSO frames into $g (its peer sends none)" "$((gso_pass + gso_sw))" 0
	fi
	if [[ $csum == 1 ]]; then
		uvn_assert_eq "checksums completed for $g (GUEST_CSUM)" "$csum_sw" 0
	else
		uvn_assert_ge "checksums completed in software for $g" "$csum_sw" 1
	fi
	uvn_assert_eq "malformed offload drops at $g" \
		"$((drop_gso_hdr + drop_gso_len + drop_gso_size + drop_csum + drop_offload))" 0
}
check_rx g1 "$S1" g0
check_rx g0 "$S0" g1
uvn_assert_eq "uvnetd g0 port errors" "$(uvnetd_stat sw 0 errors)" 0
uvn_assert_eq "uvnetd g1 port errors" "$(uvnetd_stat sw 1 errors)" 0
