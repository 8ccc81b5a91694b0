#!/bin/bash
# perf_compare: uvnet-perf --compare dpdk with short runs, against the real
# DPDK testpmd (net_vhost as device, net_virtio_user as driver):
#   1. JSON, stream at 1518 B both directions, 3 interleaved runs of the 4
#      driver x device pairs: 24 objects, every one "ok", both sides' totals
#      agree: unaccounted 0 with uvnet's driver, which drains before it
#      disconnects; testpmd's virtio-user neither waits for the device to take
#      its last frames when stopped nor reads after the device leaves, so
#      with it what sat in the rings stays uncounted (never negative, at most
#      a few rings of 256);
#      pairs in A B C D order;
#   2. the text table and --plot for 64 B tx, 1 run: a row per test with the
#      four pairs, DPDK->DPDK at 1.00x, and a PNG written.
# Behaviour only: no speed is asserted (numbers are logged).
#
# Usage: perf_compare.sh --uvnet-perf PATH --uvnetd PATH [--test-name NAME]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib/common.sh"

name=perf_compare perf= uvnetd=
while (($#)); do
	case $1 in
	--uvnet-perf) perf=$2; shift 2 ;;
	--uvnetd) uvnetd=$2; shift 2 ;;
	--test-name) name=$2; shift 2 ;;
	*) echo "unknown option $1" >&2; exit 2 ;;
	esac
done
[[ -x "$perf" && -x "$uvnetd" ]] || { echo "need --uvnet-perf and --uvnetd" >&2; exit 2; }

uvn_test_init "$name"
uvn_deps dpdk-dev librte-net-vhost23 librte-mempool-ring23 librte-net-virtio23 gnuplot-nox
command -v dpdk-testpmd >/dev/null || uvn_skip "dpdk-testpmd not found after installing dpdk-dev"

# 1. JSON objects of every run
json=$UVN_LOG_DIR/compare-1518.json
uvn_log "uvnet-perf --compare dpdk --size 1518 --runs 3 (JSON)"
"$perf" --compare dpdk --size 1518 --runs 3 -l 1 -w 0.3 --json --uvnetd "$uvnetd" \
	>"$json" 2>"$UVN_LOG_DIR/compare-1518.stderr" || uvn_die "uvnet-perf failed (see $UVN_LOG_DIR)"
uvn_assert_eq "objects" "$(grep -c '"compare":"dpdk"' "$json")" 24
uvn_assert_eq "objects with status ok" "$(grep -c '"status":"ok"' "$json")" 24
# the first line says what ran where; the tests follow, one object each
uvn_check "a metadata line first" grep -q '^{"metadata":{"tool":"uvnet-perf"' <(head -n 1 "$json")
tests=$UVN_LOG_DIR/compare-1518.tests.json
grep '"compare":"dpdk"' "$json" >"$tests"
while read -r line; do
	u=$(grep -o '"unaccounted":-*[0-9]*' <<<"$line" | cut -d: -f2)
	if grep -q '"driver":"dpdk"' <<<"$line"; then
		((u >= 0 && u <= 1024)) || uvn_die "testpmd driver: $u frames unaccounted: $line"
	else
		((u == 0)) || uvn_die "$u frames unaccounted: $line"
	fi
done <"$tests"
uvn_log "ok: every frame accounted for (with testpmd's driver: what sat in its rings)"
for dir in tx rx; do
	uvn_assert_eq "$dir objects" "$(grep -c "\"direction\":\"$dir\"" "$json")" 12
done
order=$(grep -o '"pair":"[^"]*"' "$json" | head -4 | cut -d'"' -f4 | tr '\n' ' ')
uvn_assert_eq "interleaved order" "$order" "DPDK->DPDK uvnet->DPDK DPDK->uvnetd uvnet->uvnetd "
while read -r line; do
	uvn_log "informational: $(grep -o '"pair":"[^"]*"' <<<"$line") $(grep -o '"direction":"[^"]*"' <<<"$line") $(grep -o '"gbps":[0-9.]*' <<<"$line")"
done <"$tests"

# 2. the table and a chart
txt=$UVN_LOG_DIR/compare-64.txt
plots=$UVN_LOG_DIR/plots
uvn_log "uvnet-perf --compare dpdk --size 64 --direction tx --runs 1 --plot (table)"
"$perf" --compare dpdk --size 64 --direction tx --runs 1 -l 1 -w 0.3 -q --plot "$plots" \
	--uvnetd "$uvnetd" >"$txt" 2>"$UVN_LOG_DIR/compare-64.stderr" || uvn_die "uvnet-perf failed (see $txt)"
cat "$txt" >&2
for t in pps stream; do
	row=$(grep -E "^$t +tx +64 " "$txt") || uvn_die "no $t row in the table"
	uvn_assert_eq "$t row: 4 pair cells, regime, limits" "$(awk -F'|' '{print NF}' <<<"$row")" 7
	uvn_check "$t row: DPDK->DPDK is the reference (1.00x)" grep -q '1.00x' <<<"$row"
done
uvn_check "header names the four pairs" grep -q 'DPDK->DPDK.*uvnet->DPDK.*DPDK->uvnetd.*uvnet->uvnetd' "$txt"
uvn_check "machine and command recorded" grep -q '^# command: uvnet-perf --compare dpdk' "$txt"
uvn_check "a PNG chart" bash -c "head -c 8 '$plots/compare-dpdk.png' | grep -q PNG"
uvn_log "PASS"
