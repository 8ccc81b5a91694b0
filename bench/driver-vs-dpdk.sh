#!/bin/bash
# driver-vs-dpdk.sh: uvnet's virtio-net driver (uvnet-drvbench) against DPDK's
# virtio-user PMD (dpdk-testpmd net_virtio_user), both facing the same DPDK
# testpmd net_vhost backend, side by side, and each seed switch on/off.
#
#   backend:  dpdk-testpmd --lcores 0@0,1@0 net_vhost (rxonly for g2h, txonly for h2g)
#   A (dpdk): dpdk-testpmd --lcores 0@1,1@1 net_virtio_user (txonly / rxonly)
#   B (uvnet): uvnet-drvbench --cpu 1 (poll mode: no eventfds)
# Runs are interleaved (A B A B ...), RUNS of each; every rate is read on the
# backend (its per-second Rx-pps for g2h, Tx-pps for h2g), the same observer
# for both sides: median of the steady seconds of a run. The table gives the
# median over runs with min-max, and B/A of the medians, and for g2h the
# backend's busy share: its CPU cycles per frame in bursts that received
# frames (--record-core-cycles) times that rate, over its clock. Near 100 %,
# the backend sets the rate, and a driver raises it only by making the
# backend's work per frame cheaper.
# Before each run the vCPUs' placement is read (uvnet-xline --rtt: a cache-
# line round trip CPU 0 <-> CPU 1, ns; "near" below 150 ns as uvnet-perf's
# regimes); the table counts the runs of each. (The rates also jump 2-3x
# between runs the round trip does not tell apart: read the medians.)
#
# Both sides negotiate the same features (virtio-user's: VERSION_1,
# MRG_RXBUF, IN_ORDER, INDIRECT_DESC; no CSUM, no EVENT_IDX), split ring,
# 256 entries, burst 32, no hugepages (this machine reserves none; DPDK's
# numbers in tools/dpdk/summary.txt "split-nohuge" are the same setting).
#
# The machine is shared: before each run the script waits (up to --quiet-wait
# seconds) until processes that are not the benchmark's use less than 15 % of
# a CPU, and it records that foreign CPU use during the run. A run with more
# than --max-foreign % is redone (up to 3 times) and otherwise kept but
# marked; the table uses only clean runs when at least 3 are clean.
#
# Usage: bench/driver-vs-dpdk.sh [--runs N] [--seconds S] [--build DIR] [--out DIR]
#                                [--cases main,seeds] [--only NAME]
#                                [--quiet-wait S] [--max-foreign PCT]
#   cases "main":  g2h_64 g2h_1518 h2g_64 h2g_1518        (A = dpdk, B = uvnet)
#   cases "seeds": deferred_64 deferred_1518  (h2g, deferred_alloc on vs off)
#                  sizing_1514                 (h2g MTU frames, hdr_mtu vs mtu_only)
#                  desccache_2seg              (g2h 64 B in 2 segments + header push,
#                                               indirect tables: cache on vs off)
#                  desccache_4seg              (g2h 256 B in 4 segments)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
RUNS=5 SECS=8 BUILD=$REPO/build-h6rel OUT=/tmp/uvnet-driver-vs-dpdk CASES=main,seeds ONLY=
QUIET_WAIT=120 MAX_FOREIGN=25
while (($#)); do
	case $1 in
	--runs) RUNS=$2; shift 2 ;;
	--seconds) SECS=$2; shift 2 ;;
	--build) BUILD=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--cases) CASES=$2; shift 2 ;;
	--only) ONLY=$2; shift 2 ;;
	--quiet-wait) QUIET_WAIT=$2; shift 2 ;;
	--max-foreign) MAX_FOREIGN=$2; shift 2 ;;
	*) sed -n '2,41p' "$0"; exit 2 ;;
	esac
done
DRVBENCH=$BUILD/bench/uvnet-drvbench XLINE=$BUILD/bench/uvnet-xline
[[ -x "$DRVBENCH" ]] || { echo "no $DRVBENCH (meson setup $BUILD --buildtype=release && ninja -C $BUILD)" >&2; exit 1; }
command -v dpdk-testpmd >/dev/null || { echo "dpdk-testpmd not found (apt-get install dpdk-dev)" >&2; exit 1; }
mkdir -p "$OUT"
RUN=$(mktemp -d /tmp/uvn-dvd.XXXXXX)
SOCK=$RUN/vh.sock
declare -a PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill -INT "$p" 2>/dev/null; done
	sleep 1
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	rm -rf "$RUN" /var/run/dpdk/uvndvd$$*
}
trap cleanup EXIT
trap 'exit 130' INT TERM

SAME_FEATURES=csum=0,guest_csum=0,event_idx=0,ctrl_vq=0
EAL_MEM="--no-huge -m 1024"
TP_APP="--nb-cores=1 --burst=32 --total-num-mbufs=16384 --stats-period 1"

# backend FWD SIZE LOG: net_vhost on CPU 0, forwarding from the start
backend() {
	rm -f "$SOCK"
	dpdk-testpmd --lcores 0@0,1@0 --no-pci $EAL_MEM --file-prefix=uvndvd$$vh \
		--vdev "net_vhost0,iface=$SOCK,queues=1" -- $TP_APP --record-core-cycles --forward-mode="$1" --txpkts="$2" -a \
		>"$3" 2>&1 &
	BPID=$!
	PIDS+=("$BPID")
	for _ in $(seq 200); do [[ -S "$SOCK" ]] && return 0; sleep 0.05; done
	echo "backend did not come up (see $3)" >&2
	return 1
}

stop_backend() {
	kill -INT "$BPID" 2>/dev/null
	wait "$BPID" 2>/dev/null
	PIDS=("${PIDS[@]/$BPID/}")
}

# cpu_snap FILE: "pid ticks ours" for every process (ours: the benchmark's
# own, recognised by this run's directory or file prefix in the command line)
HZ=$(getconf CLK_TCK)
cpu_snap() {
	local f pid st rest cmd ours
	: >"$1"
	for f in /proc/[0-9]*/stat; do
		pid=${f#/proc/}
		pid=${pid%/stat}
		{ read -r st <"$f"; } 2>/dev/null || continue
		rest=${st##*) }
		cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || continue
		ours=0
		[[ "$cmd" == *"$RUN"* || "$cmd" == *uvndvd$$* || $pid == $$ ]] && ours=1
		# fields after "comm)": state=1 ... utime=12 stime=13
		set -- $rest
		echo "$pid $((${12} + ${13})) $ours"
	done >>"$1"
}

# foreign_pct BEFORE AFTER SECONDS: CPU % used by processes not ours
foreign_pct() {
	awk -v hz="$HZ" -v s="$3" '
		FNR == NR { t0[$1] = $2; next }
		!$3 { d += $2 - (($1 in t0) ? t0[$1] : 0) }
		END { printf "%.0f\n", d / hz / s * 100 }' "$1" "$2"
}

# wait_quiet: until foreign CPU use over one second is below 15 % (at most QUIET_WAIT s)
wait_quiet() {
	local t0 end=$((SECONDS + QUIET_WAIT))
	while ((SECONDS < end)); do
		cpu_snap "$RUN/q0"
		sleep 1
		cpu_snap "$RUN/q1"
		(($(foreign_pct "$RUN/q0" "$RUN/q1" 1) < 15)) && return 0
	done
	return 1
}

# rate LOG FIELD: median of the backend's per-second FIELD (Rx-pps|Tx-pps)
# over the steady seconds (nonzero ones, first two and last dropped)
rate() {
	awk -v f="$2:" '$1 == f && $2 > 0 { print $2 }' "$1" | awk '
		{ v[n++] = $1 }
		END { lo = n > 3 ? 2 : 0; hi = n > 3 ? n - 2 : n - 1; for (i = lo; i <= hi; i++) print v[i] }' |
		sort -g | awk '{ v[++n] = $1 } END { if (!n) print 0; else print (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }'
}

# backend_busy LOG PPS: the backend's busy share at PPS, percent, from what
# it prints when it stops: "CPU cycles/packet=X (... rxonly ...) at F MHz
# Clock". Receiving (g2h) only: DPDK 22.11 counts the cycles of bursts that
# received frames there, but of every burst in txonly, idle ones and those
# before the driver came included, which measures nothing ("-").
backend_busy() {
	awk -v pps="$2" '/CPU cycles\/packet=.*rxonly/ { c = $2; sub(/.*=/, "", c)
			if (match($0, /at [0-9]+ MHz/)) f = substr($0, RSTART + 3, RLENGTH - 7) }
		END { if (c && f) printf "%.0f%%\n", 100 * c * pps / (f * 1e6); else print "-" }' "$1"
}

# side_dpdk DIR SIZE LOGPREFIX: virtio-user testpmd on CPU 1 for SECS
side_dpdk() {
	local fwd=txonly
	[[ $1 == h2g ]] && fwd=rxonly
	timeout -s INT $((SECS + 6)) dpdk-testpmd --lcores 0@1,1@1 --no-pci $EAL_MEM \
		--file-prefix=uvndvd$$vu --vdev "net_virtio_user0,path=$SOCK,queues=1" -- \
		$TP_APP --forward-mode=$fwd --txpkts="$2" -a >"$3.peer.log" 2>&1
}

# side_uvnet DIR SIZE LOGPREFIX [drvbench args]: uvnet-drvbench on CPU 1 for SECS
side_uvnet() {
	local dir=tx
	[[ $1 == h2g ]] && dir=rx
	local size=$2 log=$3
	shift 3
	"$DRVBENCH" --connect "$SOCK" --dir $dir --size "$size" --cpu 1 --warmup 2 --duration "$SECS" \
		--json "$@" >"$log.peer.log" 2>&1
}

# one CASE RUN SIDE(A|B) DIR SIZE -- cmd...
one() {
	local case=$1 run=$2 side=$3 dir=$4 size=$5 log try r foreign t0 quiet busy rtt
	shift 5
	log="$OUT/${case}_${side}_r$run"
	for try in 1 2 3 4; do
		quiet=quiet
		wait_quiet || quiet=busy
		rtt=$("$XLINE" --rtt 1 2>/dev/null) || rtt=-
		cpu_snap "$RUN/c0"
		t0=$SECONDS
		backend "$([[ $dir == g2h ]] && echo rxonly || echo txonly)" "$size" "$log.backend.log" || return 1
		"$1" "$dir" "$size" "$log" "${@:2}"
		stop_backend
		cpu_snap "$RUN/c1"
		foreign=$(foreign_pct "$RUN/c0" "$RUN/c1" $((SECONDS - t0 > 0 ? SECONDS - t0 : 1)))
		r=$(rate "$log.backend.log" "$([[ $dir == g2h ]] && echo Rx-pps || echo Tx-pps)")
		((foreign <= MAX_FOREIGN)) && break
		printf '  %-16s run %d %s: %8.3f Mpps, %s%% foreign CPU (%s before): redo\n' "$case" "$run" \
			"$side" "$(echo "$r" | awk '{print $1/1e6}')" "$foreign" "$quiet"
	done
	busy=$(backend_busy "$log.backend.log" "$r")
	echo "$r $foreign $busy $rtt" >"$log.pps"
	printf '  %-16s run %d %s: %8.3f Mpps  (foreign CPU %s%%, backend busy %s, rtt %s ns)\n' "$case" "$run" \
		"$side" "$(echo "$r" | awk '{print $1/1e6}')" "$foreign" "$busy" "$rtt"
}

# compare CASE DIR SIZE LABEL_A "CMD_A" LABEL_B "CMD_B"
declare -a TABLE=()
compare() {
	local case=$1 dir=$2 size=$3 la=$4 ca=$5 lb=$6 cb=$7 run
	[[ -z "$ONLY" || "$ONLY" == "$case" ]] || return 0
	echo "== $case ($dir, $size B): A=$la B=$lb"
	echo "   A: $ca"
	echo "   B: $cb"
	for run in $(seq 1 "$RUNS"); do
		# shellcheck disable=SC2086
		one "$case" "$run" A "$dir" "$size" $ca
		# shellcheck disable=SC2086
		one "$case" "$run" B "$dir" "$size" $cb
	done
	TABLE+=("$(summarize "$case" "$dir" "$size" "$la" "$lb")")
}

# summarize CASE DIR SIZE LA LB: one table row
summarize() {
	local case=$1 dir=$2 size=$3 la=$4 lb=$5 s clean=1
	# Clean runs only, when each side has at least 3 of them.
	for s in A B; do
		(($(cat "$OUT/${case}_${s}_r"*.pps | awk -v m="$MAX_FOREIGN" '$2 <= m' | wc -l) >= 3)) || clean=0
	done
	for s in A B; do
		cat "$OUT/${case}_${s}_r"*.pps | awk -v m="$MAX_FOREIGN" -v c=$clean '!c || $2 <= m { print $1, $3, $4 }' |
			sort -g >"$RUN/$s"
	done
	awk -v c="$case" -v d="$dir" -v z="$size" -v la="$la" -v lb="$lb" -v clean=$clean '
		function med(a, n) { return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
		FNR == 1 { f++ }
		f == 1 { a[++na] = $1; ab[na] = $2 } f == 2 { b[++nb] = $1; bb[nb] = $2 }
		$3 ~ /^[0-9]/ { if ($3 < 150) near++; else far++ }
		END {
			# busy: the backend share in the middle run (by rate)
			ma = med(a, na); mb = med(b, nb)
			printf "%-15s %-4s %5d  %-14s %7.2f Mpps (%5.2f-%5.2f) %7.2f Gb/s busy %4s | %-16s %7.2f Mpps (%5.2f-%5.2f) %7.2f Gb/s busy %4s | B/A %.2f",
				c, d, z, la, ma / 1e6, a[1] / 1e6, a[na] / 1e6, ma * z * 8 / 1e9, ab[int((na + 1) / 2)],
				lb, mb / 1e6, b[1] / 1e6, b[nb] / 1e6, mb * z * 8 / 1e9, bb[int((nb + 1) / 2)], ma ? mb / ma : 0
			printf " | near %d far %d", near, far
			printf "%s\n", clean ? "" : "  (too few quiet runs: all runs counted)"
		}' "$RUN/A" "$RUN/B" | sed -z 's/\n$//' | tr -s '\n' ' ' 
}

{
echo "# driver-vs-dpdk $(date -Is) runs=$RUNS seconds=$SECS host=$(hostname) load=$(cut -d' ' -f1-3 /proc/loadavg)"
echo "# commit $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null)"
} | tee "$OUT/summary.txt"

if [[ ",$CASES," == *,main,* ]]; then
	for dir in g2h h2g; do
		for size in 64 1518; do
			compare "${dir}_$size" "$dir" "$size" dpdk-virtio-user side_dpdk \
				uvnet-driver "side_uvnet -o $SAME_FEATURES"
		done
	done
fi
if [[ ",$CASES," == *,seeds,* ]]; then
	for size in 64 1518; do
		compare "deferred_$size" h2g "$size" deferred=off "side_uvnet -o $SAME_FEATURES,deferred_alloc=off" \
			deferred=on "side_uvnet -o $SAME_FEATURES,deferred_alloc=on"
	done
	compare sizing_1514 h2g 1514 mtu_only "side_uvnet -o $SAME_FEATURES,mrg_sizing=mtu_only" \
		hdr_mtu "side_uvnet -o $SAME_FEATURES,mrg_sizing=hdr_mtu"
	compare desccache_2seg g2h 64 cache=off "side_uvnet --segs 2 -o $SAME_FEATURES,desc_cache=off" \
		cache=on "side_uvnet --segs 2 -o $SAME_FEATURES,desc_cache=on"
	compare desccache_4seg g2h 256 cache=off "side_uvnet --segs 4 -o $SAME_FEATURES,desc_cache=off" \
		cache=on "side_uvnet --segs 4 -o $SAME_FEATURES,desc_cache=on"
fi

{
echo
printf '%-15s %-4s %5s  %-14s %s\n' case dir bytes "side A" "median (min-max) over runs, read on the net_vhost backend; side B likewise"
printf '%s\n' "${TABLE[@]}"
} | tee -a "$OUT/summary.txt"
echo "logs and per-run rates in $OUT"
