#!/bin/bash
# vm2vm.sh: VM-to-VM through a switch, side by side. Two guests' worth of
# virtio-net drivers on CPU 1 send through the switch under test on CPU 0:
#
#   switches  uvnetd   uvnetd --forward switch, two vhost-user ports (--poll
#                      unless --mode event)
#             ovs      OVS-DPDK 3.1 (Debian openvswitch-switch-dpdk), a private
#                      ovsdb-server and ovs-vswitchd-dpdk in this run's dir, one
#                      PMD thread on CPU 0, bridge datapath_type=netdev, two
#                      dpdkvhostuser ports (above 9710 B: dpdkvhostuserclient
#                      ports with userspace TSO), the default NORMAL flow
#             testpmd  dpdk-testpmd, two net_vhost ports, io forwarding: DPDK's
#                      floor for a switch that learns nothing
#   guests    testpmd  dpdk-testpmd, two net_virtio_user ports, io forwarding,
#                      primed with `start tx_first 8`: frames lap A->B->A...
#                      through the switch in both directions; the rate is both
#                      ports' Rx-pps summed (frames the switch delivered)
#             pair     uvnet-perf stream --pair --connect SOCK_A,SOCK_B
#                      --connect-pid SWITCH: uvnet's driver A sends to B
#                      through the switch's two sockets; the rate is B's (one
#                      direction), lost = frames A sent that B never got
#                      (uvnet-perf's "unaccounted": the switch dropped them)
#
# Runs are interleaved per frame size and guest: uvnetd ovs testpmd uvnetd
# ovs testpmd ...; the table gives medians (min-max) in Mpps and Gb/s of
# frame bytes, and over the same window what each side's counters say:
#   uvnetd   idle: the share of its worker's cycles spent in poll rounds
#            that brought in no frame (ctl show stats: poll_idle_cycles, as
#            OVS counts idle cycles; poll mode only); empty-polls: the share
#            of its polls of the busy guest TX queues that found nothing (a
#            count, not a time: an empty poll costs little); burst: frames
#            per poll of those queues that found any; nobuf: frames
#            uvnetd dropped because a guest RX ring was full; cpu/frame: CPU
#            of the uvnetd process per delivered frame (event mode's figure)
#   ovs      idle: the PMD thread's idle cycles (dpif-netdev/pmd-stats-show)
#   testpmd  idle: the share of the window its core spent outside bursts
#            that moved frames (set record-core-cycles: busy cycles);
#            empty-bursts: RX bursts that returned no frame, a count
#            (set record-burst-stats, show fwd stats)
#   guest    testpmd: its own empty RX bursts and busy share the same way;
#            pair: the CPU the driver process got (uvnet-perf cpu_driver,
#            1.0 = a whole core); rtt0: a cache-line round trip CPU 0 <->
#            CPU 1 in ns (uvnet-xline --rtt) read before the run's switch
#            started, the vCPUs' placement: near below 150 ns, far above
#   sw cpu   ns of the switch process's CPU per delivered frame / the share
#            of a core it got (in event mode the switch's cost; in poll mode
#            its core is busy anyway): for the pair uvnet-perf's own
#            cpu_device over its measured window (--connect-pid)
# A switch idle on most of its polls waits for the guest side: the guest sets
# the rate. A switch never idle while the guest side often is: the switch does.
# The switch's counters are read over the guest's window (testpmd guest) or,
# for the pair, over its measured window less half a second at each end
# (its CPU per frame over the window itself).
#
# 64 KB frames: 65226 bytes by default, the largest TSO frame a Linux guest
# builds at MTU 1500 (45 segments of 1448 B and 66 B of headers). The pair
# sends TSO frames where the switch offers HOST_TSO4 (uvnetd; testpmd's
# net_vhost with tso=1; OVS with userspace-tso-enable), jumbo frames
# otherwise; testpmd's txonly frames (the testpmd guest) never carry TSO, so
# OVS (MTU at most 9710) has no testpmd-guest row above 1518 B. OVS 3.1 offers
# TSO only on dpdkvhostuserclient ports (its dpdkvhostuser ports ask DPDK for
# linear buffers without external ones), so for frames above 9710 B OVS runs
# those, with userspace-tso-enable=true, and the pair listens (--listen).
# DPDK 22.11's external buffers hold at most 65535 bytes with their headroom:
# OVS drops 65535-byte frames ("failed mbuf alloc"), 65226-byte ones pass.
#
# Usage: bench/vm2vm.sh [--runs N] [--seconds S] [--warmup S] [--sizes "64 1518 65226"]
#            [--switches "uvnetd ovs testpmd"] [--guests "testpmd pair"]
#            [--mode poll|event] [--rate GBPS] [--uvnetd PATH] [--perf PATH] [--keep]
#   --rate GBPS: the pair's sender paced to GBPS (uvnet-perf --rate); unpaced,
#   A sends whatever B's ring can take and the switch drops the rest (lost)
#   --mode event: uvnetd and the pair sleep on notifications (OVS and testpmd
#   only poll); --keep: leave the run dir (logs) in place.
# Needs root (DPDK, hugepages for OVS); installs dpdk-dev and, for ovs,
# openvswitch-switch-dpdk when they are missing. OVS gets 256 x 2 MB hugepages
# on top of what is reserved, on a hugetlbfs mounted in the run dir; both go
# on exit.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
CMDLINE="$0 $*"
RUNS=5 SECS=8 WARM=2 SIZES="64 1518 65226" SWITCHES="uvnetd ovs testpmd" GUESTS="testpmd pair"
MODE=poll UVNETD= PERF= KEEP=0 RATE=
while (($#)); do
	case $1 in
	--runs) RUNS=$2; shift 2 ;;
	--seconds) SECS=$2; shift 2 ;;
	--warmup) WARM=$2; shift 2 ;;
	--sizes) SIZES=$2; shift 2 ;;
	--switches) SWITCHES=$2; shift 2 ;;
	--guests) GUESTS=$2; shift 2 ;;
	--mode) MODE=$2; shift 2 ;;
	--uvnetd) UVNETD=$2; shift 2 ;;
	--perf) PERF=$2; shift 2 ;;
	--keep) KEEP=1; shift ;;
	--rate) RATE=$2; shift 2 ;;
	-h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d'; exit 0 ;;
	*) echo "unknown option $1" >&2; exit 2 ;;
	esac
done
[[ $MODE == poll || $MODE == event ]] || { echo "--mode poll|event" >&2; exit 2; }
((SECS >= 2)) || { echo "--seconds must be at least 2" >&2; exit 2; }
if [[ -z $UVNETD ]]; then
	for b in build-release build-h8 build-test; do
		[[ -x $ROOT/$b/tools/uvnetd/uvnetd ]] && { UVNETD=$ROOT/$b/tools/uvnetd/uvnetd; break; }
	done
fi
[[ -n $UVNETD && -x $UVNETD ]] || { echo "no uvnetd (build-release, or --uvnetd PATH)" >&2; exit 1; }
UVNETD=$(readlink -f "$UVNETD")
BUILD=$(dirname "$(dirname "$(dirname "$UVNETD")")")
PERF=${PERF:-$BUILD/tools/uvnet-perf/uvnet-perf}
XLINE=$BUILD/bench/uvnet-xline
[[ -x $PERF ]] || { echo "no uvnet-perf at $PERF (--perf PATH)" >&2; exit 1; }
"$ROOT/scripts/deps.sh" dpdk-dev librte-net-vhost23 librte-net-virtio23 librte-mempool-ring23
VSWITCHD=/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk
if [[ " $SWITCHES " == *" ovs "* ]]; then
	"$ROOT/scripts/deps.sh" openvswitch-switch-dpdk
	[[ -x $VSWITCHD ]] || { echo "no $VSWITCHD after installing openvswitch-switch-dpdk" >&2; exit 1; }
fi

R=$(mktemp -d /tmp/uvn-vm2vm.XXXXXX)
PFX=uvnvm$$
PIDS=()
HP_ADDED=0 HP_SET=
cleanup() {
	local p alive
	{ exec 7>&- 8>&-; } 2>/dev/null
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	# uvnet-perf stops its own children in order: give everyone 5 s
	for _ in $(seq 50); do
		alive=0
		for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
		((alive)) || break
		sleep 0.1
	done
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	if mountpoint -q "$R/huge" 2>/dev/null; then
		rm -f "$R"/huge/*
		umount "$R/huge"
	fi
	# give back the hugepages this script added, unless someone changed the count since
	if ((HP_ADDED)) && [[ $(cat /proc/sys/vm/nr_hugepages) == "$HP_SET" ]]; then
		echo $((HP_SET - HP_ADDED)) >/proc/sys/vm/nr_hugepages
	fi
	rm -rf /var/run/dpdk/"$PFX"*
	if ((KEEP)); then echo "# run dir kept: $R" >&2; else rm -rf "$R"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# stop PID: SIGINT (testpmd and uvnetd print totals), SIGKILL after 3 s
stop() {
	local p=$1 i
	kill -INT "$p" 2>/dev/null
	for i in $(seq 30); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$p" 2>/dev/null
	wait "$p" 2>/dev/null
	local keep=()
	for i in "${PIDS[@]}"; do [[ $i == "$p" ]] || keep+=("$i"); done
	PIDS=("${keep[@]}")
}

wait_for() { # wait_for SECONDS TEST...: until TEST succeeds
	local n=$(($1 * 10)) i
	shift
	for i in $(seq "$n"); do "$@" && return 0; sleep 0.1; done
	return 1
}
socks_up() { [[ -S $SOCK_A && -S $SOCK_B ]]; }
# a frontend is connected to the listening socket PATH (an accepted socket
# bears its path, state 03 in /proc/net/unix)
connected() { awk -v p="$1" '$6 == "03" && $8 == p { f = 1 } END { exit !f }' /proc/net/unix; }

# CPU time (ns) of a process and all its threads
cpu_ns() {
	awk -v hz="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); printf "%.0f\n", ($12 + $13) * 1e9 / hz }' \
		"/proc/$1/stat" 2>/dev/null || echo 0
}

EAL="--no-pci --no-huge -m 512"

# ---------------------------------------------------------------- switches
# sw_start_X SIZE: start it, set SW_PID, SOCK_A, SOCK_B; sw_mark_X begin|end:
# counters at the window's edges; sw_idle_X: "idle% extra" over the window.

sw_start_uvnetd() {
	SOCK_A=$R/sw/a.sock SOCK_B=$R/sw/b.sock
	local poll=--poll
	[[ $MODE == event ]] && poll=
	"$UVNETD" --port "vhost-user:$SOCK_A,name=a" --port "vhost-user:$SOCK_B,name=b" --forward switch \
		$poll --cpu 0 --ctl "$R/sw/ctl.sock" -q >"$R/sw/log" 2>&1 &
	SW_PID=$!
	PIDS+=("$SW_PID")
	wait_for 10 socks_up
}
sw_mark_uvnetd() {
	"$UVNETD" ctl "$R/sw/ctl.sock" show queues --json >"$R/sw/q.$1" 2>/dev/null
	"$UVNETD" ctl "$R/sw/ctl.sock" show stats --json >"$R/sw/s.$1" 2>/dev/null
}
sw_idle_uvnetd() {
	python3 - "$R/sw/q.begin" "$R/sw/q.end" "$R/sw/s.begin" "$R/sw/s.end" <<'PY'
import json, sys
def load(f):
    try:
        with open(f) as h:
            return {(q["port"], q["vq"]): q["dev"] for q in json.load(h)["queues"]}
    except Exception:
        return {}
def cycles(f):
    try:
        with open(f) as h:
            d = json.load(h)
        return d["poll_busy_cycles"], d["poll_idle_cycles"]
    except Exception:
        return None
a, b = load(sys.argv[1]), load(sys.argv[2])
if not b:
    print("- -"); sys.exit()
c0, c1 = cycles(sys.argv[3]), cycles(sys.argv[4])
# both ends read, or no share: one missing would make a window of the totals
busy, idle = (c1[0] - c0[0], c1[1] - c0[1]) if c0 and c1 else (0, 0)
d = lambda k, f: b[k].get(f, 0) - a.get(k, {}).get(f, 0)
empty = bursts = nobuf = frames = 0
for k, q in b.items():
    if "packets" in q and d(k, "packets") > 0 and k[1] % 2 == 1:   # guest TX queues that moved frames
        empty += d(k, "empty"); bursts += d(k, "bursts"); frames += d(k, "packets")
    if k[1] % 2 == 0:
        nobuf += d(k, "drop_nobuf")
# poll mode: the share of the worker's cycles in rounds that found nothing
# (as OVS's idle cycles); event mode has none: "-" (its cost is cpu/frame)
print("%s nobuf=%d,empty-polls=%.0f%%,burst=%.1f" % ("%.0f%%" % (100.0 * idle / (busy + idle)) if busy + idle else "-",
      nobuf, 100.0 * empty / (empty + bursts) if empty + bursts else 0, frames / bursts if bursts else 0))
PY
}
sw_stop_uvnetd() { stop "$SW_PID"; }
sw_ready_uvnetd() { true; }

OVSENV=()
ovs_setup_once() {
	[[ -d $R/huge ]] && return 0
	mkdir -p "$R/huge"
	HP_SET=$(($(cat /proc/sys/vm/nr_hugepages) + 256))
	echo "$HP_SET" >/proc/sys/vm/nr_hugepages
	HP_ADDED=256
	mount -t hugetlbfs -o pagesize=2M nodev "$R/huge" || return 1
}
ovs_vsctl() { env "${OVSENV[@]}" ovs-vsctl --db="unix:$R/sw/db.sock" --timeout=60 "$@"; }
sw_start_ovs() {
	local d=$R/sw tso=false
	# TSO (userspace, experimental in 3.1) only where frames need it: it
	# changes how OVS handles every packet
	(($1 > 9710)) && tso=true
	ovs_setup_once || return 1
	OVSENV=(OVS_RUNDIR="$d" OVS_DBDIR="$d" OVS_LOGDIR="$d" OVS_SYSCONFDIR="$d")
	env "${OVSENV[@]}" ovsdb-tool create "$d/conf.db" /usr/share/openvswitch/vswitch.ovsschema || return 1
	env "${OVSENV[@]}" ovsdb-server "$d/conf.db" --remote="punix:$d/db.sock" \
		--unixctl="$d/ovsdb.ctl" --log-file="$d/ovsdb.log" >"$d/ovsdb.out" 2>&1 &
	OVSDB_PID=$!
	PIDS+=("$OVSDB_PID")
	wait_for 10 test -S "$d/db.sock" || return 1
	ovs_vsctl --no-wait init
	ovs_vsctl --no-wait set Open_vSwitch . other_config:dpdk-init=true other_config:dpdk-lcore-mask=0x1 \
		other_config:pmd-cpu-mask=0x1 other_config:dpdk-socket-mem=256 \
		"other_config:userspace-tso-enable=$tso" \
		"other_config:dpdk-extra=--no-pci --iova-mode=va --huge-dir=$R/huge --file-prefix=${PFX}ovs"
	# not pinned as a whole: the lcore mask puts the main thread and the PMD on
	# CPU 0, and DPDK's control threads (vhost-user messages) go to the CPUs
	# left; pinned to CPU 0 they starve behind the PMD and a guest's
	# SET_MEM_TABLE times out
	env "${OVSENV[@]}" "$VSWITCHD" "unix:$d/db.sock" --unixctl="$d/vswitchd.ctl" \
		--log-file="$d/vswitchd.log" >"$d/vswitchd.out" 2>&1 &
	SW_PID=$!
	PIDS+=("$SW_PID")
	ovs_vsctl add-br br0 -- set bridge br0 datapath_type=netdev || return 1
	if [[ $tso == true ]]; then
		# the pair listens on these; OVS connects (and retries every second)
		SOCK_A=$d/a.sock SOCK_B=$d/b.sock SW_LISTEN=1
		ovs_vsctl add-port br0 vhu0 -- set Interface vhu0 type=dpdkvhostuserclient \
			"options:vhost-server-path=$SOCK_A" &&
			ovs_vsctl add-port br0 vhu1 -- set Interface vhu1 type=dpdkvhostuserclient \
				"options:vhost-server-path=$SOCK_B"
		return
	fi
	ovs_vsctl add-port br0 vhu0 -- set Interface vhu0 type=dpdkvhostuser &&
		ovs_vsctl add-port br0 vhu1 -- set Interface vhu1 type=dpdkvhostuser || return 1
	SOCK_A=$d/vhu0 SOCK_B=$d/vhu1
	wait_for 20 socks_up
}
# both vhost-user devices up in OVS (its PMD polls them): before that, frames
# a guest sends are lost, and primed frames that are lost never lap
ovs_added() { (($(grep -c "vHost Device .* has been added" "$R/sw/vswitchd.log") >= 2)); }
sw_ready_ovs() { wait_for 15 ovs_added; }
ovs_appctl() { env "${OVSENV[@]}" ovs-appctl -t "$R/sw/vswitchd.ctl" "$@"; }
sw_mark_ovs() {
	if [[ $1 == begin ]]; then
		ovs_appctl dpif-netdev/pmd-stats-clear >/dev/null 2>&1
	else
		ovs_appctl dpif-netdev/pmd-stats-show >"$R/sw/pmd.end" 2>&1
		ovs_vsctl get Interface vhu0 statistics >>"$R/sw/pmd.end" 2>&1
		ovs_vsctl get Interface vhu1 statistics >>"$R/sw/pmd.end" 2>&1
	fi
}
sw_idle_ovs() {
	[[ -f $R/sw/pmd.end ]] || { echo "- -"; return; }
	# the PMD thread's idle cycles; tx drops: frames OVS could not place (guest RX ring full)
	awk '/pmd thread/ {p = 1} p && /idle cycles/ {gsub(/[()%]/, "", $4); i = $4; p = 0}
		{ while (match($0, /ovs_tx_failure_drops=[0-9]+/)) { d += substr($0, RSTART + 21, RLENGTH - 21); $0 = substr($0, RSTART + RLENGTH) } }
		END { printf "%s%% txfail=%d\n", (i == "" ? "-" : sprintf("%.0f", i)), d }' "$R/sw/pmd.end"
}
sw_stop_ovs() {
	stop "$SW_PID"
	stop "$OVSDB_PID"
	rm -f "$R"/huge/*
}

# testpmd as a program fed through a FIFO on fd FD: tp_start NAME FD ARGS...
tp_start() {
	local name=$1 fd=$2
	shift 2
	mkfifo "$R/$name.in"
	# line-buffered: a file gets what was printed, not what filled a buffer
	stdbuf -oL dpdk-testpmd "$@" <"$R/$name.in" >"$R/$name.log" 2>&1 &
	TP_PID=$!
	PIDS+=("$TP_PID")
	eval "exec $fd>\"$R/$name.in\""
}
tp_prompt() { grep -q 'testpmd>' "$1"; }

sw_start_testpmd() {
	local mb=16384 tso=
	SOCK_A=$R/sw/a.sock SOCK_B=$R/sw/b.sock
	(($1 > 2048)) && { mb=65536; tso=,tso=1; }
	tp_start sw/tp 8 --lcores 0@0,1@0 $EAL --file-prefix="${PFX}sw" \
		--vdev "net_vhost0,iface=$SOCK_A,queues=1$tso" --vdev "net_vhost1,iface=$SOCK_B,queues=1$tso" -- \
		-i --nb-cores=1 --burst=32 --total-num-mbufs=$mb --forward-mode=io
	SW_PID=$TP_PID
	wait_for 60 tp_prompt "$R/sw/tp.log" || return 1
	echo "set record-burst-stats on" >&8
	echo "set record-core-cycles on" >&8
	echo "start" >&8
	wait_for 10 socks_up
}
sw_ready_testpmd() { true; }
sw_mark_testpmd() {
	if [[ $1 == begin ]]; then
		echo "clear fwd stats all" >&8
		TP_T0=$(date +%s%N)
		sleep 0.1
		SW_LOGPOS=$(wc -l <"$R/sw/tp.log")
	else
		echo "show fwd stats all" >&8
		TP_T1=$(date +%s%N)
		sleep 0.3
	fi
}
# share of empty RX bursts since the last "clear fwd stats" in a testpmd log:
# "RX-bursts : N [a% of 0 pkts + b% of 32 pkts + ...]", per stream
tp_empty() {
	awk '/RX-bursts :/ { n = $3; z = 0
			if (match($0, /[0-9]+% of 0 pkts/)) z = substr($0, RSTART, RLENGTH) + 0
			tot += n; zero += n * z / 100 }
		END { if (tot) printf "%.0f%%\n", 100 * zero / tot; else print "-" }' "$1"
}
# share of a window (its ends in ns) its forwarding core spent on bursts that
# moved frames (record-core-cycles: "CPU cycles/packet=X (total cycles=N /
# total io packets=M) at F MHz Clock"; DPDK 22.11 counts only bursts that
# received frames, which it calls total, later releases call them busy)
tp_busy() { # FILE T0_NS T1_NS (the window's ends, date +%s%N)
	awk -v s="$(((${3:-0} - ${2:-0}) / 1000000))" '/CPU cycles\/packet=/ { if (match($0, /(busy|total) cycles=[0-9]+/)) { v = substr($0, RSTART, RLENGTH); sub(/.*=/, "", v); b += v }
			if (match($0, /at [0-9]+ MHz/)) f = substr($0, RSTART + 3, RLENGTH - 7) }
		END { if (f && s > 0) printf "%.0f%%\n", 100 * b / (f * 1e3 * s); else print "-" }' "$1"
}
sw_idle_testpmd() {
	# what it printed after the window began: the "show fwd stats all" at its end
	tail -n +$((SW_LOGPOS + 1)) "$R/sw/tp.log" >"$R/sw/fwd.end"
	local busy
	busy=$(tp_busy "$R/sw/fwd.end" "$TP_T0" "$TP_T1")
	echo "$([[ $busy == - ]] && echo - || echo "$((100 - ${busy%\%}))%") empty-bursts=$(tp_empty "$R/sw/fwd.end")"
}
sw_stop_testpmd() {
	echo "stop" >&8
	echo "quit" >&8
	exec 8>&-
	local i
	for i in $(seq 30); do kill -0 "$SW_PID" 2>/dev/null || break; sleep 0.1; done
	stop "$SW_PID"
}

# ---------------------------------------------------------------- guests
# guest_X SWITCH SIZE: run it; prints "pps guestinfo switchinfo cpu_switch_ns_per_frame"

mark() { # mark begin|end: the switch's counters and CPU
	"sw_mark_$SW" "$1"
	SW_CPU[$1]=$(cpu_ns "$SW_PID")
	SW_T[$1]=$(date +%s%N)
}
declare -A SW_CPU SW_T

guest_testpmd() {
	local size=$1 segs mb=16384 pps
	segs=$size
	if ((size > 2048)); then # 2 KB mbufs: the frame in 2048-byte segments
		segs=$(awk -v s="$size" 'BEGIN { for (; s > 2048; s -= 2048) printf "2048,"; print s }')
		mb=65536
	fi
	tp_start g 7 --lcores 0@1,1@1 $EAL --file-prefix="${PFX}g" \
		--vdev "net_virtio_user0,path=$SOCK_A,queues=1,mac=02:00:00:00:0a:01" \
		--vdev "net_virtio_user1,path=$SOCK_B,queues=1,mac=02:00:00:00:0b:01" -- \
		-i --nb-cores=1 --burst=32 --total-num-mbufs=$mb --txpkts="$segs" \
		--eth-peer=0,02:00:00:00:0b:01 --eth-peer=1,02:00:00:00:0a:01 --forward-mode=io
	local gpid=$TP_PID
	if ! wait_for 60 tp_prompt "$R/g.log"; then
		GOUT="0 guest-did-not-start"
		stop "$gpid"
		return
	fi
	"sw_ready_$SW"
	sleep 0.5
	echo "set record-burst-stats on" >&7
	echo "set record-core-cycles on" >&7
	echo "start tx_first 8" >&7
	sleep "$WARM"
	echo "show port stats all" >&7
	echo "clear fwd stats all" >&7
	local pos t0 t1
	t0=$(date +%s%N)
	sleep 0.1
	pos=$(wc -l <"$R/g.log")
	mark begin
	sleep "$SECS"
	echo "show port stats all" >&7
	mark end
	echo "show fwd stats all" >&7
	t1=$(date +%s%N)
	sleep 0.5
	# the last two Rx-pps lines: ports 0 and 1 over the window (testpmd's clock)
	pps=$(grep -o 'Rx-pps: *[0-9]*' "$R/g.log" | tail -2 | awk '{s += $2} END {print s + 0}')
	tail -n +$((pos + 1)) "$R/g.log" | sed -n '/Forward statistics/,$p' >"$R/g.fwd"
	local gidle
	gidle="empty=$(tp_empty "$R/g.fwd"),busy=$(tp_busy "$R/g.fwd" "$t0" "$t1")"
	# why a run moved nothing: no stats printed, or no frame lapped (primed frames lost)
	if [[ $pps == 0 ]]; then
		if (($(grep -c 'Rx-pps' "$R/g.log") < 4)); then gidle+=",no-port-stats"; else gidle+=",no-frame-lapped"; fi
	fi
	echo "stop" >&7
	echo "quit" >&7
	exec 7>&-
	local i
	for i in $(seq 30); do kill -0 "$gpid" 2>/dev/null || break; sleep 0.1; done
	stop "$gpid"
	cp "$R/g.log" "$R/logs/g.$SW.$size.$RUN.log" 2>/dev/null
	rm -f "$R/g.in"
	GOUT="$pps $gidle"
}

# The pair drives the switch's two sockets; --connect-pid gives uvnet-perf
# the switch's CPU over its own measured window (PAIR_CPU, a share of a core).
guest_pair() {
	local size=$1 p opts=()
	((SW_LISTEN)) && opts+=(--listen)
	[[ -n $RATE ]] && opts+=(--rate "$RATE")
	"$PERF" stream --pair -M "$MODE" -s "$size" -l "$SECS" -w "$WARM" --json "${opts[@]}" \
		--connect "$SOCK_A,$SOCK_B" --connect-pid "$SW_PID" --device-cpu 0 --driver-cpu 1 \
		>"$R/p.json" 2>"$R/p.err" &
	p=$!
	PIDS+=("$p")
	# uvnet-perf measures from the warm-up's end after its driver is up
	# (both sockets connected): the switch is read from 0.5 s after that to
	# 0.5 s before the end
	if wait_for 60 connected "$SOCK_A" && wait_for 10 connected "$SOCK_B"; then
		sleep "$WARM.5"
		mark begin
		sleep $((SECS - 1))
		mark end
	fi
	wait "$p"
	local keep=() i
	for i in "${PIDS[@]}"; do [[ $i == "$p" ]] || keep+=("$i"); done
	PIDS=("${keep[@]}")
	cp "$R/p.json" "$R/logs/p.$SW.$size.$RUN.json" 2>/dev/null
	cp "$R/p.err" "$R/logs/p.$SW.$size.$RUN.err" 2>/dev/null
	local out
	out=$(python3 - "$R/p.json" <<'PY'
import json, sys
try:
    j = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
except Exception:
    print("0 error -"); sys.exit()
if j.get("status") != "ok":
    print("0 %s -" % (j.get("reason") or j.get("status")).replace(" ", "_")[:160]); sys.exit()
cpu, dev = j.get("cpu_driver"), j.get("cpu_device")
print("%d cpu=%s,%s,rtt=%s,lost=%s %s" % (j["pps"], "-" if cpu is None else "%.2f" % cpu, j.get("offload"),
      j.get("rtt_ns"), j.get("unaccounted"), "-" if dev is None else dev))
PY
)
	PAIR_CPU=${out##* }
	GOUT=${out% *}
}

# one SWITCH GUEST SIZE: LINE="pps guestinfo switchidle switchinfo cpu_ns_per_frame/core"
# (no subshell: every process started is in PIDS for the trap)
one() {
	local r out rtt0
	SW=$1
	rm -rf "$R/sw"
	mkdir -p "$R/sw"
	SW_CPU=() SW_T=() TP_T0= TP_T1= SW_LOGPOS=0 SW_LISTEN=0
	# the vCPUs' placement while nothing of the run is up yet
	rtt0=$("$XLINE" --rtt 1 2>/dev/null) || rtt0=-
	if ! "sw_start_$SW" "$3"; then
		LINE="0 switch-did-not-start - - -"
		cp -r "$R/sw" "$R/logs/sw.$SW.$3.$RUN.failed" 2>/dev/null
		"sw_stop_$SW" 2>/dev/null
		return
	fi
	GOUT="0 -" PAIR_CPU=-
	"guest_$2" "$3"
	out="$GOUT,rtt0=$rtt0"
	r=$("sw_idle_$SW")
	"sw_stop_$SW"
	local pps=${out%% *} cpf=-
	if [[ $PAIR_CPU != - && $pps != 0 ]]; then
		# uvnet-perf's: the switch's CPU over the pair's measured window
		cpf=$(awk -v c="$PAIR_CPU" -v p="$pps" 'BEGIN { printf "%.0f/%.2f", c * 1e9 / p, c }')
	elif [[ -n ${SW_CPU[end]:-} && $pps != 0 ]]; then
		cpf=$(awk -v c0="${SW_CPU[begin]}" -v c1="${SW_CPU[end]}" -v t0="${SW_T[begin]}" -v t1="${SW_T[end]}" \
			-v p="$pps" 'BEGIN { printf "%.0f", (c1 - c0) / ((t1 - t0) / 1e9) / p }')
		# with the CPU the switch got over the window
		cpf="$cpf/$(awk -v c0="${SW_CPU[begin]}" -v c1="${SW_CPU[end]}" -v t0="${SW_T[begin]}" \
			-v t1="${SW_T[end]}" 'BEGIN { printf "%.2f", (c1 - c0) / (t1 - t0) }')"
	fi
	LINE="$out ${r:-- -} $cpf"
}

stats() { # values... -> "median min max"
	printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END{print a[int((NR+1)/2)], a[1], a[NR]}'
}
na_reason() { # SWITCH GUEST SIZE -> why that cell cannot run, or nothing
	if [[ $2 == testpmd && $1 == ovs ]] && (($3 > 1518)); then
		echo "OVS MTU 1500 (testpmd sends no TSO)"
	elif [[ $1 == ovs ]] && (($3 > 65226)); then
		echo "OVS drops 65535 B frames (DPDK 22.11 external buffers: 64 KB with headroom)"
	fi
}

# the host's CPU model, as lscpu names it
host_cpu() { lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1; }

mkdir -p "$R/logs"
echo "# $CMDLINE"
echo "# VM-to-VM through a switch on CPU 0, guest side on CPU 1; $RUNS interleaved runs of ${SECS}s (+${WARM}s warm-up), $MODE mode (uvnetd, pair)"
echo "# uvnetd $UVNETD (git $(git -C "$BUILD/.." describe --always --dirty 2>/dev/null)), OVS $("$VSWITCHD" --version 2>/dev/null | head -1 | awk '{print $NF}'), DPDK $(dpkg-query -W -f '${Version}' dpdk-dev 2>/dev/null)"
echo "# $(date -u +%FT%TZ), host: $(host_cpu), $(nproc) CPUs, kernel $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# switch idle: uvnetd = worker cycles in rounds that brought in nothing (poll mode), ovs = PMD idle cycles, testpmd = cycles outside busy bursts;"
echo "# guest: testpmd empty RX bursts and busy cycles, pair cpu_driver, offload, CPU0<->CPU1 cache-line round trip (ns; rtt0 before the switch started) and frames the switch lost; sw cpu = ns of switch CPU per frame / share of a core it got"
RAW=()
declare -A RES INFO
for size in $SIZES; do
	for guest in $GUESTS; do
		for RUN in $(seq "$RUNS"); do
			for sw in $SWITCHES; do
				[[ -n $(na_reason "$sw" "$guest" "$size") ]] && continue
				one "$sw" "$guest" "$size"
				line=$LINE
				RAW+=("$size $guest $sw run$RUN: $line")
				echo "# raw $size $guest $sw run$RUN: pps=${line%% *} ${line#* } ($(date -u +%T))" >&2
				RES[$size.$guest.$sw]+="${line%% *} "
				INFO[$size.$guest.$sw]+="$(awk '{print $2 "|" $3 "|" $4 "|" $5}' <<<"$line") "
			done
		done
	done
done
echo
printf '| %-5s | %-7s | %-7s | %-26s | %-22s | %-24s | %-28s | %s |\n' frame guest switch "Mpps median (min-max)" \
	"Gb/s median (min-max)" "median / other switch's" "switch idle (runs)" "guest (runs); sw cpu ns/frame/core"
printf '|%s|%s|%s|%s|%s|%s|%s|%s|\n' ------- --------- --------- ---------------------------- ------------------------ \
	-------------------------- ------------------------------ ----
for size in $SIZES; do
	for guest in $GUESTS; do
		for sw in $SWITCHES; do
			why=$(na_reason "$sw" "$guest" "$size")
			if [[ -n $why ]]; then
				printf '| %-5s | %-7s | %-7s | n/a: %s |\n' "$size" "$guest" "$sw" "$why"
				continue
			fi
			# a run that moved nothing failed (its raw line says why): not in the median
			ok=$(tr ' ' '\n' <<<"${RES[$size.$guest.$sw]}" | awk '$1 > 0')
			nfail=$(($(wc -w <<<"${RES[$size.$guest.$sw]}") - $(wc -w <<<"$ok")))
			if [[ -z $ok ]]; then
				printf '| %-5s | %-7s | %-7s | all %d runs failed (raw lines) |\n' "$size" "$guest" "$sw" "$nfail"
				continue
			fi
			read -r m mn mx <<<"$(stats $ok)"
			rel=
			for o in ovs testpmd; do
				[[ $o == "$sw" ]] && continue
				ov=$(stats $(tr ' ' '\n' <<<"${RES[$size.$guest.$o]:-0}" | awk '$1 > 0') | cut -d' ' -f1)
				rel+="$o $(awk -v a="$m" -v b="$ov" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else printf "-" }') "
			done
			idle=$(tr ' ' '\n' <<<"${INFO[$size.$guest.$sw]}" | awk -F'|' 'NF {printf "%s%s", (n++ ? "," : ""), $2 ($3 != "-" && $3 != "" ? " " $3 : "")}')
			((nfail)) && rel+="($nfail of $RUNS runs failed) "
			gi=$(tr ' ' '\n' <<<"${INFO[$size.$guest.$sw]}" |
				awk -F'|' 'NF {printf "%s%s/%s", (n++ ? "," : ""), (length($1) > 60 ? "failed" : $1), $4}')
			printf '| %-5s | %-7s | %-7s | %6.3f (%5.3f-%5.3f)    | %6.2f (%5.2f-%5.2f)  | %-24s | %-28s | %s |\n' \
				"$size" "$guest" "$sw" \
				"$(awk -v v="$m" 'BEGIN{print v/1e6}')" "$(awk -v v="$mn" 'BEGIN{print v/1e6}')" \
				"$(awk -v v="$mx" 'BEGIN{print v/1e6}')" \
				"$(awk -v v="$m" -v s="$size" 'BEGIN{print v*s*8/1e9}')" "$(awk -v v="$mn" -v s="$size" 'BEGIN{print v*s*8/1e9}')" \
				"$(awk -v v="$mx" -v s="$size" 'BEGIN{print v*s*8/1e9}')" "$rel" "$idle" "$gi"
		done
	done
done
echo
echo "raw (pps guest switch-idle switch-extra switch-cpu-ns-per-frame/core-share):"
printf '  %s\n' "${RAW[@]}"
