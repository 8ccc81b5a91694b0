#!/bin/bash
# Deferred rx allocation (seed 000, docs/seeds.md) counted rather than timed:
# the driver's instructions, loads, stores and simulated cache misses per
# received frame, deferred_alloc off and on, for several ring sizes. A
# host->guest stream of 1514 B frames (uvnetd --forward txonly) into
# uvnet-drvbench (mergeable buffers) run under callgrind, which counts only
# the driver's run loop; the counts do not depend on the machine's load, so
# the 7 % the Linux thread reported can be checked on a busy host where Gb/s
# cannot resolve it. Two caches are simulated as the first level: the L1
# (32 KB, 8-way) and, with --l2, a 1 MB 16-way one (the private L2).
#
# Usage: bench/seeds-deferred.sh [--rings "256 1024 4096"] [--seconds S]
#            [--mode mergeable|big] [--l2] [--build DIR]
# Builds nothing: run `meson setup build-perf --buildtype=release && ninja -C build-perf` first.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
RINGS="256 1024 4096" SECS=3 MODE=mergeable L2=0 BUILD=$HERE/../build-perf
while (($#)); do
	case $1 in
	--rings) RINGS=$2; shift 2 ;;
	--seconds) SECS=$2; shift 2 ;;
	--mode) MODE=$2; shift 2 ;;
	--l2) L2=1; shift ;;
	--build) BUILD=$2; shift 2 ;;
	-h | --help) sed -n '2,14p' "$0"; exit 0 ;;
	*) echo "unknown option $1" >&2; exit 2 ;;
	esac
done
DRVBENCH=$BUILD/bench/uvnet-drvbench
UVNETD=$BUILD/tools/uvnetd/uvnetd
for b in "$DRVBENCH" "$UVNETD"; do
	[[ -x $b ]] || { echo "$b not built (meson setup $BUILD --buildtype=release && ninja -C $BUILD)" >&2; exit 1; }
done
command -v valgrind >/dev/null || { echo "valgrind is needed (apt-get install valgrind)" >&2; exit 1; }
D1=32768,8,64
((L2)) && D1=1048576,16,64
WORK=$(mktemp -d /tmp/uvn-seeds-deferred.XXXXXX)
DEV=
cleanup() {
	[[ -n $DEV ]] && kill "$DEV" 2>/dev/null && wait "$DEV" 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT

# one RING DEFERRED: prints "frames Ir Dr Dw D1mr D1mw"
one() {
	local sock=$WORK/s-$1-$2.sock out=$WORK/cg-$1-$2 frames
	"$UVNETD" --port "vhost-user:$sock" --forward txonly --txonly-size 1514 --poll --cpu 0 \
		>"$WORK/uvnetd-$1-$2.log" 2>&1 &
	DEV=$!
	for _ in $(seq 50); do [[ -S $sock ]] && break; sleep 0.1; done
	valgrind --tool=callgrind --cache-sim=yes --D1=$D1 --collect-atstart=no --toggle-collect=run \
		--callgrind-out-file="$out" "$DRVBENCH" -c "$sock" -d rx -m "$MODE" -C 1 -t "$SECS" -w 1 \
		-o "deferred_alloc=$2,queue_size=$1" --stats >"$WORK/drv-$1-$2.log" 2>&1
	kill "$DEV"; wait "$DEV" 2>/dev/null || true
	DEV=
	frames=$(awk '$1 == "packets" { print $2; exit }' "$WORK/drv-$1-$2.log")
	# events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw
	awk -v f="$frames" '/^summary:/ { print f, $2, $3, $4, $6, $7 }' "$out"
}

echo "# deferred rx allocation, counted: uvnet-drvbench -d rx -m $MODE under callgrind (first-level cache $D1)"
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -srm), uvnet $(git -C "$HERE/.." describe --always --dirty 2>/dev/null || echo '?')"
printf '%-6s %-9s %9s %10s %8s %8s %12s\n' ring deferred frames instr/f loads/f stores/f misses/f
for ring in $RINGS; do
	for d in off on; do
		read -r fr ir dr dw mr mw < <(one "$ring" "$d")
		if [[ -z ${fr:-} || $fr -eq 0 ]]; then
			printf '%-6s %-9s no frames (see %s)\n' "$ring" "$d" "$WORK"; trap - EXIT; continue
		fi
		awk -v r="$ring" -v d="$d" -v f="$fr" -v ir="$ir" -v dr="$dr" -v dw="$dw" -v m=$((mr + mw)) \
			'BEGIN { printf "%-6s %-9s %9d %10.1f %8.1f %8.1f %12.2f\n", r, d, f, ir / f, dr / f, dw / f, m / f }'
	done
done
echo "# instructions per frame include empty polls: if uvnetd did not keep the ring full, a row is polling, not receiving"
