#!/bin/bash
# uvnetd_offload: offloads end to end. A Linux guest's NIC is a uvnetd
# vhost-user port; a TAP in a private namespace is another (uvnetd asks the
# kernel for TSO/USO/checksum offload on it). TCP runs between the guest and
# the namespace's kernel through the switch, both ways: a file each way
# with busybox nc (md5sum and size compared), then iperf3 each way. The guest's tx offloads
# (ethtool -K) and its NIC's offload features (virtio-net-pci properties)
# vary per run. Asserts:
#   - the data: both files arrive with the sender's checksum, iperf3 succeeds;
#   - the path uvnetd took, from its queue counters (uvnetd ctl show queues):
#     GSO frames from the TAP pass to a guest that negotiated GUEST_TSO4 and
#     are segmented in software for one that did not (checksums completed
#     only for a guest without GUEST_CSUM); the guest's TSO frames reach the
#     TAP whole when its tso is on, none when off;
#   - no malformed-offload drops and no errors on either port.
#
# Usage: uvnetd_offload.sh --uvnetd PATH [--test-name NAME] [--ethtool "tso off tx off"]
#        [--nic-opt K=V]... [--mrg-rxbuf on|off] [--packed on|off] [--uvnetd-opt OPT]...
#        [--file-mb N] [--iperf-seconds N]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib/guest.sh"
source "$HERE/lib/netns.sh"
source "$HERE/lib/uvnetd.sh"

name=uvnetd_offload ethtool_k='' file_mb=8 iperf_s=3
declare -a gopts=() uopts=()
while (($#)); do
	case $1 in
	--uvnetd) UVNETD=$2; shift 2 ;;
	--test-name) name=$2; shift 2 ;;
	--ethtool) ethtool_k=$2; shift 2 ;;
	--nic-opt | --mrg-rxbuf | --packed) gopts+=("$1" "$2"); shift 2 ;;
	--uvnetd-opt) uopts+=("$2"); shift 2 ;;
	--file-mb) file_mb=$2; shift 2 ;;
	--iperf-seconds) iperf_s=$2; shift 2 ;;
	*) echo "unknown option $1" >&2; exit 2 ;;
	esac
done

uvn_test_init "$name"
uvn_need_root "network namespaces and TAP devices"
guest_prepare
uvn_deps iperf3
command -v iperf3 >/dev/null || uvn_skip "no iperf3 on the host"

netns_create NS tap
SOCK=$UVN_RUN/vhost0.sock CTL=$UVN_RUN/ctl.sock TAP=uvntap0
HOST_IP=198.18.5.1 GUEST_IP=198.18.5.2
uvnetd_start sw --netns "$NS" -- --port "vhost-user:$SOCK" --port "tap:$TAP" --ctl "$CTL" "${uopts[@]}"
uvn_wait_for 10 "TAP device" netns_exec "$NS" ip link show "$TAP"
uvn_wait_for 10 "control socket" test -S "$CTL"
netns_addr "$NS" "$TAP" "$HOST_IP/24"

# The host ends: iperf3 server; a receiver and a sender for the files. busybox
# nc half-closes on stdin EOF and its peer then stops: the receiver's stdin
# is a fifo we hold open, so it never ends.
netns_spawn iperf_pid "iperf3 server" "$UVN_LOG_DIR/iperf3-server.log" "$NS" iperf3 -s -B "$HOST_IP" -p 5201
head -c "$((file_mb * 1048576))" /dev/urandom >"$UVN_RUN/to_guest.bin"
sum() { echo "$(md5sum <"$1" | cut -d' ' -f1)-$(wc -c <"$1" | tr -d ' ')"; }
want_in=$(sum "$UVN_RUN/to_guest.bin")
uvn_hold_fifo hold_fd "$UVN_RUN/hold"
uvn_spawn rx_pid "nc receiver" "$UVN_LOG_DIR/nc-rx.log" "$UVN_RUN/hold" \
	ip netns exec "$NS" sh -c 'exec busybox nc -l -p 5001 >"$0"' "$UVN_RUN/from_guest.bin"
uvn_spawn tx_pid "nc sender" "$UVN_LOG_DIR/nc-tx.log" "$UVN_RUN/to_guest.bin" \
	ip netns exec "$NS" busybox nc -l -p 5002

rc=0
guest_start --sock "$SOCK" --ip "$GUEST_IP/24" --env PEER=$HOST_IP --env "ETHTOOL_K=$ethtool_k" \
	--env FILE_MB="$file_mb" --env IPERF_SECONDS="$iperf_s" --env HOLD=3 \
	--script "$HERE/guest/offload.sh" --watch "$(uvnetd_pid sw)" --timeout 480 "${gopts[@]}"
# uvnetd's guest queues go away with the guest: read them while it holds on
results=$(guest_dir)/results.log
queues=
while uvn_alive "${GUEST_PID[g0]}" && ((SECONDS < GUEST_DEADLINE[g0])); do
	if grep -aq 'phase.done=1' "$results" 2>/dev/null; then
		queues=$("$UVNETD" ctl "$CTL" show queues --json) || queues=
		break
	fi
	uvn_sleep 0.5
done
guest_wait || rc=$?
echo "$queues" >"$UVN_LOG_DIR/queues.json"
uvnetd_stop sw

uvn_assert_eq "guest status" "$rc" 0
uvn_check "queue counters read while the guest ran" test -n "$queues"

# --- the data
rx_done() { ! uvn_alive "$rx_pid"; }
uvn_wait_for 20 "the nc receiver to finish" rx_done || uvn_die "nc receiver still running: the file did not end"
uvn_kill "$rx_pid"
uvn_kill "$tx_pid"
uvn_assert_eq "file guest -> TAP namespace (md5-bytes)" "$(sum "$UVN_RUN/from_guest.bin")" \
	"$(guest_result file.out.sum)"
uvn_assert_eq "file TAP namespace -> guest (md5-bytes)" "$(guest_result file.in.sum)" "$want_in"
uvn_assert_eq "iperf3 guest -> TAP status" "$(guest_result iperf3.tx.rc)" 0
uvn_assert_eq "iperf3 TAP -> guest status" "$(guest_result iperf3.rx.rc)" 0
uvn_log "informational: iperf3 $(guest_result iperf3.tx.mbps) Mb/s guest->TAP," \
	"$(guest_result iperf3.rx.mbps) Mb/s TAP->guest; files $(guest_result file.out.seconds) s out," \
	"$(guest_result file.in.seconds) s in"

# --- the path taken
# The "dev" counters of the guest's rx queue(s) and of the TAP, summed per field.
devs() { grep -oE "\"dir\":\"$1\"([^{}]|\{[^{}]*\})*" <<<"$queues" | grep -oE "\"dev\":\{[^}]*\}" || true; }
rx_devs=$(devs guest_rx) tap_devs=$(devs tap)
field() {   # field DEVS NAME
	local s=0 re="\"$2\":([0-9]+)(.*)" rest=$1
	while [[ $rest =~ $re ]]; do
		s=$((s + BASH_REMATCH[1]))
		rest=${BASH_REMATCH[2]}
	done
	echo "$s"
}
for f in gso_pass gso_sw gso_segs csum_sw csum_pass drop_gso_hdr drop_gso_len drop_gso_size drop_csum \
	drop_offload drop_toobig drop_nobuf packets; do
	declare "rx_$f=$(field "$rx_devs" "$f")"
done
for f in offload_flags rx_gso rx_csum rx_big rx_toolong rx_bad_hdr tx_gso tx_csum tx_gso_sw tx_gso_bad tx_err; do
	declare "tap_$f=$(field "$tap_devs" "$f")"
done
uvn_log "guest rx queue: packets=$rx_packets gso_pass=$rx_gso_pass gso_sw=$rx_gso_sw gso_segs=$rx_gso_segs" \
	"csum_sw=$rx_csum_sw csum_pass=$rx_csum_pass drop_nobuf=$rx_drop_nobuf drop_toobig=$rx_drop_toobig"
uvn_log "tap queue: offload_flags=$tap_offload_flags rx_gso=$tap_rx_gso rx_csum=$tap_rx_csum rx_big=$tap_rx_big" \
	"tx_gso=$tap_tx_gso tx_csum=$tap_tx_csum tx_gso_sw=$tap_tx_gso_sw tx_err=$tap_tx_err"

guest_tso4=$(guest_feature 0 7) guest_csum=$(guest_feature 0 1) host_tso4=$(guest_feature 0 11)
uvn_log "negotiated: GUEST_CSUM=$guest_csum GUEST_TSO4=$guest_tso4 HOST_TSO4=$host_tso4;" \
	"guest ethtool: tso=$(guest_result ethtool.tso) tx=$(guest_result ethtool.tx)"
uvn_assert_eq "kernel gives the TAP port TSO4 frames (TUN_F_TSO4)" "$((tap_offload_flags & 2))" 2
uvn_assert_ge "GSO frames from the kernel (tap rx_gso)" "$tap_rx_gso" 1
if [[ $guest_tso4 == 1 && $guest_csum == 1 ]]; then
	uvn_assert_ge "GSO frames passed to the guest whole (gso_pass)" "$rx_gso_pass" 1
	uvn_assert_eq "GSO frames segmented for the guest (gso_sw)" "$rx_gso_sw" 0
else
	uvn_assert_eq "GSO frames passed to the guest whole (gso_pass)" "$rx_gso_pass" 0
	uvn_assert_ge "GSO frames segmented for the guest (gso_sw)" "$rx_gso_sw" 1
	uvn_assert_ge "segments made (gso_segs > gso_sw)" "$rx_gso_segs" "$((rx_gso_sw + 1))"
fi
if [[ $guest_csum == 1 ]]; then
	uvn_assert_eq "checksums completed for a GUEST_CSUM guest (csum_sw)" "$rx_csum_sw" 0
else
	uvn_assert_ge "checksums completed in software (csum_sw)" "$rx_csum_sw" 1
	uvn_assert_eq "partial checksums passed (csum_pass)" "$rx_csum_pass" 0
fi
if [[ $(guest_result ethtool.tso) == on && $host_tso4 == 1 ]]; then
	uvn_assert_ge "guest TSO frames written to the TAP whole (tap tx_gso)" "$tap_tx_gso" 1
else
	uvn_assert_eq "GSO frames written to the TAP (tap tx_gso)" "$tap_tx_gso" 0
fi
if [[ $(guest_result ethtool.tx) == off ]]; then
	uvn_assert_eq "partial-checksum frames written to the TAP (tap tx_csum)" "$tap_tx_csum" 0
else
	uvn_assert_ge "partial-checksum frames written to the TAP (tap tx_csum)" "$tap_tx_csum" 1
fi
uvn_assert_eq "malformed offload drops at the guest" \
	"$((rx_drop_gso_hdr + rx_drop_gso_len + rx_drop_gso_size + rx_drop_csum + rx_drop_offload))" 0
uvn_assert_eq "TAP: bad headers, cut frames, bad GSO, refused writes" \
	"$((tap_rx_bad_hdr + tap_rx_toolong + tap_tx_gso_bad + tap_tx_err))" 0
uvn_assert_eq "uvnetd vhost port errors" "$(uvnetd_stat sw 0 errors)" 0
uvn_assert_eq "uvnetd tap port errors" "$(uvnetd_stat sw 1 errors)" 0
