#!/bin/bash
# driver_testpmd: uvnet's virtio-net driver (tests/interop/driver_peer) against
# DPDK testpmd's net_vhost, one testpmd for the whole matrix (the driver
# connects once per job). For every ring layout x rx mode (mergeable on for
# "mergeable", off for "small"/"big") x indirect on/off, counters cleared
# before each job:
#   rxonly:  the driver sends N frames (mixed sizes)   -> testpmd rx == N; with
#            indirect on, frames above 2 KB in indirect tables, all cached
#   txonly:  testpmd sends for ~1 s, then stops        -> driver rx == testpmd tx,
#            every frame testpmd's IPv4/UDP template
#   macswap: N frames out and back                     -> contents exact with the
#            MACs swapped, testpmd rx == tx == N
# and after each job every buffer is back in its pool (driver_peer checks).
# Last: testpmd killed while the driver runs traffic -> the driver gets
# -ENOTCONN (not a hang) and still returns every buffer.
#
# Usage: driver_testpmd.sh --peer PATH/driver_peer [--test-name NAME] [--frames N]
#        [--only RING:MODE:INDIRECT] [--huge]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib/testpmd.sh"

name=driver_testpmd peer= frames=2000 only=
declare -a mem=()
while (($#)); do
	case $1 in
	--test-name) name=$2; shift 2 ;;
	--peer) peer=$2; shift 2 ;;
	--frames) frames=$2; shift 2 ;;
	--only) only=$2; shift 2 ;;
	--huge) mem=(--huge); shift ;;
	*) echo "unknown option $1" >&2; exit 2 ;;
	esac
done

uvn_test_init "$name"
[[ -x "$peer" ]] || uvn_die "driver_peer not found: '$peer' (meson passes --peer)"
testpmd_prepare
SOCK=$UVN_RUN/vhost.sock
# Jumbo frames for macswap: 2 KB mbufs, chained by the vhost PMD.
testpmd_start vh --vhost "$SOCK" --fwd rxonly --cpu 0 --mem 512 --mbufs 32768 "${mem[@]}"
testpmd_cmd vh start >/dev/null

cnt() { testpmd_stat vh 0 "$1"; }
clear_stats() { testpmd_cmd vh "clear port stats all" >/dev/null; }
set_fwd() {
	testpmd_cmd vh stop >/dev/null
	testpmd_cmd vh "set fwd $1" >/dev/null
	clear_stats
}
kv() { sed -n "s/.*\b$1=\([^ ]*\).*/\1/p" "$2" | tail -n 1; }

# peer_run LOG ARGS...  - run driver_peer in the foreground, fail on its error
peer_run() {
	local log=$1 rc=0
	shift
	"$peer" --connect "$SOCK" "$@" >"$log" 2>&1 || rc=$?
	if ((rc)); then
		cat "$log" >&2
		uvn_die "driver_peer $* failed (rc $rc)"
	fi
	uvn_assert_eq "$(basename "$log" .log): every buffer back in its pool" "$(kv returned "$log")" yes
}

cells=0
for ring in split packed; do
	for mode in small big mergeable; do
		for ind in 1 0; do
			cell="$ring:$mode:$ind"
			[[ -z "$only" || "$only" == "$cell" ]] || continue
			cells=$((cells + 1))
			opt="ring=$ring,rx_mode=$mode,indirect=$ind${EXTRA_OPT:+,$EXTRA_OPT}"
			case $mode in
			small) sizes=60,64,1000,1514,1518 ;;
			*) sizes=60,64,1514,4000,9000 ;;
			esac
			tag="${ring}_${mode}_ind$ind"
			uvn_log "== $cell"

			# rxonly: exactly what we sent arrives
			set_fwd rxonly
			testpmd_cmd vh start >/dev/null
			peer_run "$UVN_LOG_DIR/$tag-send.log" --opt "$opt" send "$frames" "$sizes"
			testpmd_cmd vh stop >/dev/null
			uvn_assert_eq "$cell rxonly: testpmd rx" "$(cnt rx_packets)" "$frames"
			uvn_assert_eq "$cell rxonly: driver tx" "$(kv tx_packets "$UVN_LOG_DIR/$tag-send.log")" "$frames"
			f=$(kv features "$UVN_LOG_DIR/$tag-send.log")
			uvn_assert_eq "$cell: RING_PACKED negotiated" $(((f >> 34) & 1)) $([[ $ring == packed ]] && echo 1 || echo 0)
			uvn_assert_eq "$cell: MRG_RXBUF negotiated" $(((f >> 15) & 1)) $([[ $mode == mergeable ]] && echo 1 || echo 0)
			uvn_assert_eq "$cell: INDIRECT_DESC negotiated" $(((f >> 28) & 1)) "$ind"
			# Frames above 2 KB go out from application memory behind a
			# header slot: a two-entry indirect table, from the
			# descriptor cache's small class (docs/seeds.md, 002), which
			# net_vhost must read right.
			n=$(kv tx_indirect "$UVN_LOG_DIR/$tag-send.log")
			h=$(kv tx_desc_cache_hit "$UVN_LOG_DIR/$tag-send.log")
			if [[ $ind == 1 && $mode != small ]]; then
				((n > 0 && h == n)) || uvn_die "$cell: indirect tables $n, from the cache $h"
				uvn_log "ok: $cell: $n indirect tables, all from the cache"
			else
				uvn_assert_eq "$cell: indirect tables" "$n" 0
			fi

			# txonly: every frame testpmd put into our ring, and nothing else
			set_fwd txonly
			log="$UVN_LOG_DIR/$tag-recv.log"
			rm -f "$UVN_RUN/recv-stop"
			uvn_spawn ppid "driver_peer recv" "$log" "" "$peer" --connect "$SOCK" --opt "$opt" \
				recv 300 "$UVN_RUN/recv-stop"
			uvn_wait_for 20 "driver connected" grep -q features= "$log" || uvn_die "driver did not connect"
			testpmd_wait_link vh 0 20 || uvn_die "link not up"
			testpmd_cmd vh start >/dev/null
			uvn_sleep 1
			testpmd_cmd vh stop >/dev/null
			: >"$UVN_RUN/recv-stop"   # testpmd sends no more: drain and count
			uvn_reap "$ppid" || { cat "$log" >&2; uvn_die "driver_peer recv failed"; }
			uvn_assert_eq "$tag-recv: every buffer back in its pool" "$(kv returned "$log")" yes
			tp_tx=$(cnt tx_packets)
			uvn_assert_ge "$cell txonly: testpmd tx" "$tp_tx" 1
			uvn_assert_eq "$cell txonly: driver rx == testpmd tx" "$(kv received "$log")" "$tp_tx"
			uvn_assert_eq "$cell txonly: frames not testpmd's template" "$(kv bad "$log")" 0

			# macswap: contents both ways
			set_fwd macswap
			testpmd_cmd vh start >/dev/null
			n=$((frames / 4))
			peer_run "$UVN_LOG_DIR/$tag-echo.log" --opt "$opt" echo "$n" "$sizes"
			testpmd_cmd vh stop >/dev/null
			uvn_assert_eq "$cell macswap: echoed" "$(kv echoed "$UVN_LOG_DIR/$tag-echo.log")" "$n"
			uvn_assert_eq "$cell macswap: testpmd rx" "$(cnt rx_packets)" "$n"
			uvn_assert_eq "$cell macswap: testpmd tx" "$(cnt tx_packets)" "$n"
			if [[ $mode == mergeable ]]; then
				# 4000 and 9000 bytes span several 1536-byte buffers
				uvn_assert_ge "$cell macswap: multi-buffer frames" \
					"$(kv rx_mrg_multi "$UVN_LOG_DIR/$tag-echo.log")" 1
			fi
		done
	done
done
uvn_assert_ge "cells run" "$cells" 1

# mrg_sizing=mtu_only (Linux's sizing before header + MTU, docs/seeds.md 003)
# with a real peer: MTU-size frames take two buffers.
if [[ -z "$only" ]]; then
	set_fwd macswap
	testpmd_cmd vh start >/dev/null
	peer_run "$UVN_LOG_DIR/mtu_only-echo.log" --opt rx_mode=mergeable,mrg_sizing=mtu_only echo 200 1514
	uvn_assert_eq "mtu_only: MTU frames in two buffers" "$(kv rx_mrg_multi "$UVN_LOG_DIR/mtu_only-echo.log")" 200
	peer_run "$UVN_LOG_DIR/hdr_mtu-echo.log" --opt rx_mode=mergeable,mrg_sizing=hdr_mtu echo 200 1514
	uvn_assert_eq "hdr_mtu: MTU frames in one buffer" "$(kv rx_mrg_multi "$UVN_LOG_DIR/hdr_mtu-echo.log")" 0
	testpmd_cmd vh stop >/dev/null
fi

# The backend dies mid-traffic: an error, not a hang; buffers all returned.
set_fwd macswap
testpmd_cmd vh start >/dev/null
log="$UVN_LOG_DIR/until-error.log"
uvn_spawn ppid "driver_peer until-error" "$log" "" "$peer" --connect "$SOCK" until-error
uvn_wait_for 20 "driver running" grep -q running= "$log" || uvn_die "driver did not start"
uvn_sleep 0.5
uvn_kill "$(testpmd_pid vh)" 5
uvn_wait_for 30 "driver_peer to see the backend gone" eval '! uvn_alive '"$ppid" || uvn_die "driver_peer hangs after the backend died"
uvn_reap "$ppid" || { cat "$log" >&2; uvn_die "driver_peer until-error failed"; }
uvn_assert_eq "backend killed: driver error" "$(kv backend_error "$log")" ENOTCONN
uvn_assert_eq "backend killed: every buffer back in its pool" "$(kv returned "$log")" yes
testpmd_stop vh
uvn_log "PASS: $cells cells"
