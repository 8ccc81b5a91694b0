#!/bin/bash
# Zero-copy guest TX against copying, at the same throughput: two uvnet
# drivers through uvnetd's switch (uvnet-perf stream --pair, A sends to B),
# event mode, A paced with --rate so both settings move the same bytes;
# --zerocopy off and on interleaved (off on off on ...). Reports uvnetd's
# CPU per KB delivered (service demand of the device side), median (min-max),
# and the on/off ratio; with --perf, where uvnetd's CPU goes in one extra run
# of each setting (perf record: the share of memmove, i.e. of the copies).
#
# Usage: bench/zerocopy-cpu.sh [--runs N] [--sizes "4096 16384 65536"]
#            [--rate GBPS] [--seconds S] [--dirty] [--perf] [--build DIR]
# Builds nothing: run `meson setup build-perf --buildtype=release && ninja -C build-perf` first.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
RUNS=5 SIZES="4096 16384 65536" RATE=5 SECS=3 DIRTY= PERF=0 BUILD=$HERE/../build-perf
while (($#)); do
	case $1 in
	--runs) RUNS=$2; shift 2 ;;
	--sizes) SIZES=$2; shift 2 ;;
	--rate) RATE=$2; shift 2 ;;
	--seconds) SECS=$2; shift 2 ;;
	--dirty) DIRTY=--dirty; shift ;;
	--perf) PERF=1; shift ;;
	--build) BUILD=$2; shift 2 ;;
	-h | --help) sed -n '2,14p' "$0"; exit 0 ;;
	*) echo "unknown option $1" >&2; exit 2 ;;
	esac
done
PERFTOOL=$BUILD/tools/uvnet-perf/uvnet-perf
UVNETD=$BUILD/tools/uvnetd/uvnetd
for b in "$PERFTOOL" "$UVNETD"; do
	[[ -x $b ]] || { echo "$b not built (meson setup $BUILD --buildtype=release && ninja -C $BUILD)" >&2; exit 1; }
done
if ((PERF)); then
	"$HERE/../scripts/deps.sh" linux-perf
fi
WORK=$(mktemp -d /tmp/uvn-zc.XXXXXX)
# cpu_samples runs in a subshell: it leaves the PID of the uvnet-perf run it
# profiles in bg.pid, for an interrupted script to stop it.
cleanup() {
	[[ -s $WORK/bg.pid ]] && kill "$(cat "$WORK/bg.pid")" 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

run() { # run ZC SIZE -> "sd gbps drops sent" of one run
	"$PERFTOOL" stream --pair --uvnetd "$UVNETD" --zerocopy "$1" -s "$2" -M event --merge-size adaptive \
		-l "$SECS" -w 1 --rate "$RATE" --burst 8 $DIRTY --json -q 2>/dev/null | tail -n 1 >"$WORK/r.json" || true
	local f=$WORK/r.json
	num() { grep -o "\"$1\":[-0-9.e]*" "$f" | head -n 1 | cut -d: -f2; }
	echo "$(num service_demand_device_us_per_kb) $(num gbps) $(num drops) $(num sent)"
}

stats() { # values... -> "median min max"
	printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END{print a[int((NR+1)/2)], a[1], a[NR]}'
}

# uvnetd's CPU samples during one run of ZC SIZE: "all N, copies M (P %)".
cpu_samples() {
	"$PERFTOOL" stream --pair --uvnetd "$UVNETD" --zerocopy "$1" -s "$2" -M event --merge-size adaptive \
		-l $((SECS + 2)) -w 1 --rate "$RATE" --burst 8 $DIRTY -q >/dev/null 2>&1 &
	local p=$! pid=
	echo "$p" >"$WORK/bg.pid"
	for _ in $(seq 50); do
		pid=$(pgrep -P "$p" -x "$(basename "$UVNETD")" || true)
		[[ -n $pid ]] && break
		sleep 0.1
	done
	sleep 1.5
	[[ -n $pid ]] && perf record -q -F 2000 -o "$WORK/perf.data" -p "$pid" -- sleep "$SECS" >/dev/null 2>&1 || true
	wait "$p" || true
	rm -f "$WORK/bg.pid"
	perf report -n -q -i "$WORK/perf.data" --stdio --no-children --sort sym 2>/dev/null |
		awk '$2 ~ /^[0-9]+$/ { all += $2; if (/memmove|memcpy/) c += $2 }
			END { printf "all %d, copies %d (%.0f %%)", all, c, all ? 100 * c / all : 0 }'
}

echo "# zero-copy off/on at equal throughput: uvnet-perf stream --pair, event mode, --rate $RATE, $RUNS interleaved runs of ${SECS}s (+1 s warm-up) ${DIRTY:+(--dirty)}"
echo "# $(date -u +%FT%TZ), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $(git -C "$HERE/.." rev-parse --short HEAD 2>/dev/null)"
echo "# command (per run): uvnet-perf stream --pair --uvnetd BIN --zerocopy off|on -s SIZE -M event --merge-size adaptive -l $SECS -w 1 --rate $RATE --burst 8 $DIRTY --json"
printf '%-6s | %-22s | %-22s | %-26s | %-26s | %-7s | %s\n' size "Gb/s off" "Gb/s on" "dev SD us/KB off" \
	"dev SD us/KB on" "on/off" "drops off / on"
for size in $SIZES; do
	SO=() SN=() GO=() GN=() DO=0 DN=0 TO=0 TN=0
	for _ in $(seq "$RUNS"); do
		read -r sd g d s <<<"$(run off "$size")"
		SO+=("${sd:-nan}"); GO+=("${g:-nan}"); DO=$((DO + ${d:-0})); TO=$((TO + ${s:-0}))
		read -r sd g d s <<<"$(run on "$size")"
		SN+=("${sd:-nan}"); GN+=("${g:-nan}"); DN=$((DN + ${d:-0})); TN=$((TN + ${s:-0}))
	done
	read -r som somin somax <<<"$(stats "${SO[@]}")"
	read -r snm snmin snmax <<<"$(stats "${SN[@]}")"
	read -r gom gomin gomax <<<"$(stats "${GO[@]}")"
	read -r gnm gnmin gnmax <<<"$(stats "${GN[@]}")"
	printf '%-6s | %5.2f (%5.2f-%5.2f)    | %5.2f (%5.2f-%5.2f)    | %6.3f (%6.3f-%6.3f)     | %6.3f (%6.3f-%6.3f)     | %sx  | %s / %s %%\n' \
		"$size" "$gom" "$gomin" "$gomax" "$gnm" "$gnmin" "$gnmax" "$som" "$somin" "$somax" \
		"$snm" "$snmin" "$snmax" "$(awk -v a="$snm" -v b="$som" 'BEGIN{printf "%.2f", (b > 0) ? a / b : 0}')" \
		"$(awk -v d="$DO" -v t="$TO" 'BEGIN{printf "%.1f", t ? 100 * d / t : 0}')" \
		"$(awk -v d="$DN" -v t="$TN" 'BEGIN{printf "%.1f", t ? 100 * d / t : 0}')"
	if ((PERF)); then
		echo "#   $size B, uvnetd's CPU samples over ${SECS} s (perf, 2 kHz): off $(cpu_samples off "$size"); on $(cpu_samples on "$size")"
	fi
done
