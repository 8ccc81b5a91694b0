#!/bin/bash
# uvnetd against DPDK testpmd's net_vhost as the vhost-user device, both
# driven by the same DPDK virtio-user (testpmd) on the other CPU, poll mode:
#   g2h: virtio-user txonly -> device (uvnetd --forward sink | testpmd rxonly)
#   h2g: device (uvnetd --forward txonly | testpmd txonly) -> virtio-user rxonly
# The rate is read on the virtio-user side for both devices (Tx-pps: frames
# the device took from the ring; Rx-pps: frames it delivered), median of the
# per-second samples after a warm-up. Runs are interleaved (A B A B ...) so
# the machine's drift cancels; the table gives medians with min-max.
# For g2h the table also gives uvnetd's idle share: the polls of the guest
# TX queue that found no frame (counter 'empty' against 'bursts'). Near
# 100 % the device waits for the driver, and the rate is the driver's.
#
# Usage: bench/uvnetd-vs-dpdk.sh [--runs N] [--seconds S] [--sizes "64 1518"]
#            [--rings "split packed"] [--dirs "g2h h2g"] [--uvnetd PATH] [--json]
#            [--zerocopy on|off|auto]   (uvnetd's guest-TX zero-copy; default auto)
#            [--baseline PATH]   (another uvnetd build in DPDK's place: A/B of two builds)
#            [--monitor HZ|silent]  (during every uvnetd run a client runs `uvnetd ctl
#                    PATH show queues` HZ times a second: what monitoring costs;
#                    silent: clients connect and say nothing, one after another)
# Needs root (DPDK), installs dpdk-dev and its vhost/virtio PMDs when missing.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
RUNS=5 SECS=8 SIZES="64 1518" RINGS="split" DIRS="g2h h2g" JSON=0 ZC=auto BASE= MON=0
UVNETD=$HERE/../build-perf/tools/uvnetd/uvnetd
while (($#)); do
	case $1 in
	--runs) RUNS=$2; shift 2 ;;
	--seconds) SECS=$2; shift 2 ;;
	--sizes) SIZES=$2; shift 2 ;;
	--rings) RINGS=$2; shift 2 ;;
	--dirs) DIRS=$2; shift 2 ;;
	--uvnetd) UVNETD=$2; shift 2 ;;
	--json) JSON=1; shift ;;
	--zerocopy) ZC=$2; shift 2 ;;
	--baseline) BASE=$2; shift 2 ;;
	--monitor) MON=$2; shift 2 ;;
	-h | --help) sed -n '2,20p' "$0"; exit 0 ;;
	*) echo "unknown option $1" >&2; exit 2 ;;
	esac
done
"$HERE/../scripts/deps.sh" dpdk-dev librte-net-vhost23 librte-mempool-ring23 librte-net-virtio23
[[ -x "$UVNETD" ]] || { echo "uvnetd not found at $UVNETD (build: meson setup build-perf --buildtype=release && ninja -C build-perf)" >&2; exit 1; }

WORK=$(mktemp -d /tmp/uvn-bench.XXXXXX)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill -INT "$p" 2>/dev/null || true; done
	sleep 0.5
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
	rm -rf "$WORK" /var/run/dpdk/uvb$$*
}
trap cleanup EXIT
SOCK=$WORK/vh.sock
EAL="--no-pci --no-huge -m 512"
PMD="--nb-cores=1 --burst=32 --total-num-mbufs=16384 --stats-period 1 -a"

# virtio_user DIR SIZE RING -> median pps of the direction's counter
virtio_user() {
	local dir=$1 size=$2 ring=$3 fwd=txonly key=Tx-pps args=
	[[ $dir == h2g ]] && { fwd=rxonly; key=Rx-pps; }
	[[ $ring == packed ]] && args=,packed_vq=1
	timeout -s INT "$SECS" dpdk-testpmd --lcores 0@1,1@1 $EAL --file-prefix=uvb$$vu \
		--vdev "net_virtio_user0,path=$SOCK,queues=1$args" -- $PMD --forward-mode=$fwd \
		--txpkts="$size" >"$WORK/vu.log" 2>&1 || true
	# skip the first two samples (start-up), median of the rest
	grep -o "$key: *[0-9]*" "$WORK/vu.log" | awk '{print $2}' | tail -n +3 | sort -n |
		awk '{a[NR]=$1} END{if (NR) print a[int((NR+1)/2)]; else print 0}'
}

device_uvnetd() { # device_uvnetd DIR SIZE [BINARY]
	local dir=$1 size=$2 mode=sink bin=${3:-$UVNETD}
	[[ $dir == h2g ]] && mode=txonly
	rm -f "$SOCK"
	"$bin" --port "vhost-user:$SOCK" --forward $mode --txonly-size "$size" --zerocopy "$ZC" --poll --cpu 0 -q \
		--ctl "$WORK/ctl.sock" >"$WORK/dev.log" 2>&1 &
	PIDS+=($!)
	for _ in $(seq 50); do [[ -S $SOCK ]] && break; sleep 0.1; done
}

device_baseline() {
	device_uvnetd "$1" "$2" "$BASE"
}

device_dpdk() {
	local dir=$1 size=$2 fwd=rxonly
	[[ $dir == h2g ]] && fwd=txonly
	rm -f "$SOCK"
	timeout -s INT 60 dpdk-testpmd --lcores 0@0,1@0 $EAL --file-prefix=uvb$$vh \
		--vdev "net_vhost0,iface=$SOCK,queues=1" -- $PMD --forward-mode=$fwd --txpkts="$size" \
		>"$WORK/dev.log" 2>&1 &
	PIDS+=($!)
	for _ in $(seq 100); do [[ -S $SOCK ]] && break; sleep 0.1; done
}

stop_device() {
	local p=${PIDS[-1]}
	kill -INT "$p" 2>/dev/null || true
	wait "$p" 2>/dev/null || true
	unset 'PIDS[-1]'
}

# uvnetd's guest TX queue: percent of polls that found nothing, or -
idle_share() {
	"$UVNETD" ctl "$WORK/ctl.sock" show queues --json 2>/dev/null | tr '{}' '\n\n' |
		awk -F'[:,]' '/"bursts":/ { for (i = 1; i < NF; i++) { if ($i == "\"bursts\"") b = $(i + 1);
			if ($i == "\"empty\"") e = $(i + 1) } if (e > 0) { printf "%.0f\n", 100 * e / (e + b); done = 1 } }
			END { if (!done) print "-" }'
}

# monitor HZ|silent: `show queues` HZ times a second, or silent clients
# (each connected for 0.3 s), until killed
monitor() {
	local gap
	if [[ $1 == silent ]]; then
		exec python3 -c 'import socket,sys,time
while True:
    s = socket.socket(socket.AF_UNIX)
    try: s.connect(sys.argv[1]); time.sleep(0.3)
    except OSError: time.sleep(0.1)
    s.close()' "$WORK/ctl.sock"
	fi
	gap=$(awk -v h="$1" 'BEGIN{printf "%.4f", 1 / h}')
	while :; do
		"$UVNETD" ctl "$WORK/ctl.sock" show queues >/dev/null 2>&1 || true
		sleep "$gap"
	done
}

one() { # one DEVICE DIR SIZE RING -> pps (uvnetd g2h: appends its idle share to $WORK/idle)
	local mon=
	"device_$1" "$2" "$3"
	(
		sleep $((SECS - 1))
		[[ $1 == uvnetd && $2 == g2h ]] && idle_share >>"$WORK/idle"
	) &
	local watcher=$!
	if [[ $MON != 0 && $1 != dpdk ]]; then
		monitor "$MON" &
		mon=$!
	fi
	virtio_user "$2" "$3" "$4"
	if [[ -n $mon ]]; then
		kill "$mon" 2>/dev/null || true
		wait "$mon" 2>/dev/null || true
	fi
	wait "$watcher" 2>/dev/null || true
	stop_device
}

stats() { # stats values... -> "median min max"
	printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)], a[1], a[NR]}'
}

pingpong_regime() {
	local f=$WORK/pp.c
	cat >"$f" <<'PP'
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
static _Atomic int flag;
static void pin(int c){cpu_set_t s;CPU_ZERO(&s);CPU_SET(c,&s);pthread_setaffinity_np(pthread_self(),sizeof(s),&s);}
static void *peer(void *a){(void)a;pin(1);for(int i=0;i<200000;i++){while(atomic_load(&flag)!=1);atomic_store(&flag,0);}return 0;}
int main(void){pthread_t t;struct timespec a,b;pin(0);pthread_create(&t,0,peer,0);clock_gettime(CLOCK_MONOTONIC,&a);
for(int i=0;i<200000;i++){atomic_store(&flag,1);while(atomic_load(&flag)!=0);}clock_gettime(CLOCK_MONOTONIC,&b);
pthread_join(t,0);printf("%.0f\n",((b.tv_sec-a.tv_sec)*1e9+(b.tv_nsec-a.tv_nsec))/200000.0);}
PP
	cc -O2 -pthread -o "$WORK/pp" "$f" && "$WORK/pp"
}

OTHER=dpdk OTHER_NAME="DPDK vhost"
if [[ -n $BASE ]]; then
	[[ -x $BASE ]] || { echo "baseline uvnetd not found at $BASE" >&2; exit 1; }
	OTHER=baseline OTHER_NAME="baseline uvnetd"
fi
echo "# uvnetd vs ${BASE:-DPDK net_vhost}, DPDK virtio-user peer, $RUNS interleaved runs of ${SECS}s, uvnetd --zerocopy $ZC, $(date -u +%FT%TZ), $(nproc) CPUs"
[[ $MON != 0 ]] && echo "# during every uvnetd run: ctl clients ($MON)"
echo "# cache-line round trip CPU0<->CPU1 before: $(pingpong_regime) ns"
printf '%-4s %5s %-6s | %-28s | %-28s | %-30s | %s\n' dir size ring "uvnetd Mpps med (min-max)" \
	"$OTHER_NAME Mpps med (min-max)" "ratio (Gb/s uvnetd / other)" "uvnetd idle polls"
for ring in $RINGS; do
	for dir in $DIRS; do
		for size in $SIZES; do
			A=() B=()
			: >"$WORK/idle"
			for _ in $(seq "$RUNS"); do
				A+=("$(one uvnetd "$dir" "$size" "$ring")")
				B+=("$(one "$OTHER" "$dir" "$size" "$ring")")
			done
			read -r am amin amax <<<"$(stats "${A[@]}")"
			read -r bm bmin bmax <<<"$(stats "${B[@]}")"
			ratio=$(awk -v a="$am" -v b="$bm" 'BEGIN{printf "%.2f", b ? a / b : 0}')
			gb() { awk -v p="$1" -v s="$size" 'BEGIN{printf "%.1f", p * s * 8 / 1e9}'; }
			idle=-
			if [[ -s $WORK/idle ]] && ! grep -q -- - "$WORK/idle"; then
				read -r im imin imax <<<"$(stats $(cat "$WORK/idle"))"
				idle="$im % ($imin-$imax)"
			fi
			printf '%-4s %5s %-6s | %6.2f (%5.2f-%5.2f)        | %6.2f (%5.2f-%5.2f)        | %-30s | %s\n' \
				"$dir" "$size" "$ring" "$(awk -v v="$am" 'BEGIN{print v/1e6}')" \
				"$(awk -v v="$amin" 'BEGIN{print v/1e6}')" "$(awk -v v="$amax" 'BEGIN{print v/1e6}')" \
				"$(awk -v v="$bm" 'BEGIN{print v/1e6}')" "$(awk -v v="$bmin" 'BEGIN{print v/1e6}')" \
				"$(awk -v v="$bmax" 'BEGIN{print v/1e6}')" "${ratio}x ($(gb "$am") / $(gb "$bm") Gb/s)" "$idle"
			if ((JSON)); then
				printf '{"dir":"%s","size":%s,"ring":"%s","uvnetd_pps":[%s],"dpdk_pps":[%s],"ratio":%s}\n' \
					"$dir" "$size" "$ring" "$(IFS=,; echo "${A[*]}")" "$(IFS=,; echo "${B[*]}")" "$ratio"
			fi
		done
	done
done
echo "# cache-line round trip after: $(pingpong_regime) ns"
