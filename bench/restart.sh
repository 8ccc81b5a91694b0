#!/bin/bash
# Continuity, measured (issue 13): how long a uvnetd restart and a live
# migration take traffic away, as the peers see it. A benchmark, not a
# test: it prints medians (min-max) over --runs runs and asserts nothing.
#
# (a) restart -> traffic. uvnetd gets SIGTERM (an upgrade: `systemctl
#     restart uvnetd`) and is started again with the same arguments as soon
#     as it has exited; measured from the SIGTERM to the first frame that
#     flows through the new uvnetd. Roles, each with its own uvnetd, run
#     interleaved (run 1 of every role, then run 2, ...):
#       qemu_client     a Linux guest, QEMU the vhost-user client with
#                       reconnect=1 on its chardev, uvnetd listening
#       qemu_server     the same, QEMU the server (server=on), uvnetd's
#                       port ",client"
#       testpmd_server  DPDK virtio-user server=1 (flowgen), uvnetd the
#                       client in loopback; DPDK's client mode never
#                       reconnects by itself, so it has no role here
#     A guest pings a TAP address in a private netns through uvnetd --rate
#     times a second for the whole part (guest/ping_stream.sh); a packet
#     socket on the TAPs timestamps every frame. First frame: the first one
#     from the guest on its TAP after the new uvnetd was started (usually
#     an ARP request: the guest's neighbour cache went with the carrier).
#     Pings lost: the requests in the restart's part of the stream that
#     never got a reply; x the interval, the time without traffic. For
#     testpmd the first frame is the first one uvnetd's ctl counts going
#     back (polled, a fork each, so ~10-40 ms coarser); flowgen is not
#     paced, so a loss across the restart cannot be told from the drops of
#     every second and is not reported.
# (b) live-migration downtime: tests/interop/uvnetd_migrate.sh, run
#     --migrations times as it is (a guest moves between two QEMUs on two
#     ports of one uvnetd while a TCP stream runs and a TAP peer pings it
#     50/s): the longest gap in the ping replies, the pings lost (x 20 ms),
#     QEMU's own "downtime" from query-migrate, and when the FDB moved.
#
# The tables go to stdout, every number (one "part role run metric value"
# line each) to --raw FILE, logs under $UVN_INTEROP_LOGDIR/bench_restart
# (default /tmp/uvnet-interop-logs/bench_restart). Needs root (netns, TAP).
#
# Usage: bench/restart.sh [--uvnetd PATH] [--runs N] [--migrations N]
#            [--roles "qemu_client qemu_server testpmd_server"] [--rate PPS]
#            [--signal TERM|KILL] [--down S] [--guest-arp default|keep|static]
#            [--raw FILE]
# Defaults: uvnetd from build-release; 5 runs, as many
# migrations; 50 pings/s; SIGTERM and no pause before the start (--signal
# KILL --down 1 is tests/interop/uvnetd_restart.sh's crash case).
# QEMU takes the guest's link down while uvnetd is away, and Linux drops
# the interface's ARP entries with the carrier: the guest's next packet
# waits for an ARP request, sent again only every second (see
# docs/continuity.md). --guest-arp keep sets the guest's
# arp_evict_nocarrier to 0 (its entries stay), static pins the guest's and
# the peer's entries (permanent): what is left is the reconnect itself.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
IOP=$ROOT/tests/interop
source "$IOP/lib/guest.sh"
source "$IOP/lib/netns.sh"
source "$IOP/lib/testpmd.sh"
source "$IOP/lib/uvnetd.sh"

RUNS=5 MIGS= RATE=50 SIG=TERM DOWN=0 RAW= GARP=default ROLES="qemu_client qemu_server testpmd_server"
UVNETD=
while (($#)); do
	case $1 in
	--uvnetd) UVNETD=$2; shift 2 ;;
	--runs) RUNS=$2; shift 2 ;;
	--migrations) MIGS=$2; shift 2 ;;
	--roles) ROLES=$2; shift 2 ;;
	--rate) RATE=$2; shift 2 ;;
	--signal) SIG=$2; shift 2 ;;
	--down) DOWN=$2; shift 2 ;;
	--raw) RAW=$2; shift 2 ;;
	--guest-arp) GARP=$2; shift 2 ;;
	-h | --help) sed -n '2,51p' "$0"; exit 0 ;;
	*) echo "unknown option $1" >&2; exit 2 ;;
	esac
done
MIGS=${MIGS:-$RUNS}
UVNETD=${UVNETD:-$ROOT/build-release/tools/uvnetd/uvnetd}
[[ -x $UVNETD ]] || { echo "no uvnetd at $UVNETD (--uvnetd PATH)" >&2; exit 1; }
UVNETD=$(readlink -f "$UVNETD")
export UVNETD
[[ $SIG == TERM || $SIG == KILL ]] || { echo "--signal TERM or KILL" >&2; exit 2; }
[[ $GARP =~ ^(default|keep|static)$ ]] || { echo "--guest-arp default, keep or static" >&2; exit 2; }

uvn_test_init bench_restart
uvn_need_root "network namespaces and TAP devices"
RAW=${RAW:-$UVN_LOG_DIR/raw.txt}
: >"$RAW"
INTERVAL_MS=$((1000 / RATE))
INTERVAL=$(awk -v r="$RATE" 'BEGIN { printf "%.3f", 1 / r }')

now_us() { echo "${EPOCHREALTIME/./}"; }
raw() { printf '%s %s %s %s %s\n' "$@" >>"$RAW"; }

# ------------------------------------------------------------ (a) set-up
declare -A TAP_OF=([qemu_client]=uvnbc [qemu_server]=uvnbs)
declare -A NET_OF=([qemu_client]=198.18.3 [qemu_server]=198.18.4)
declare -A GUEST_OF=([qemu_client]=gc [qemu_server]=gs)
declare -A MAC_OF=([qemu_client]=52:54:00:a5:0c:01 [qemu_server]=52:54:00:a5:0d:01)
declare -A SOCK_OF=() CUR=() CON_FD=() CON_PART=() CON_N=() CON_MAX=() BOUNDS=()
CTL=$UVN_RUN/ctl-t.sock

# switch_start ROLE NAME: this role's uvnetd, as the first one was started
switch_start() {
	local role=$1 name=$2
	case $role in
	qemu_client) uvnetd_start "$name" --netns "$NS" -- --port "vhost-user:${SOCK_OF[$role]}" \
		--port "tap:${TAP_OF[$role]}" ;;
	qemu_server) uvnetd_start "$name" --netns "$NS" -- --port "vhost-user:${SOCK_OF[$role]},client" \
		--port "tap:${TAP_OF[$role]}" ;;
	testpmd_server) uvnetd_start "$name" -- --port "vhost-user:${SOCK_OF[$role]},client" \
		--forward loopback --cpu 0 --ctl "$CTL" ;;
	esac
	CUR[$role]=$name
}

# The guest's console, followed through a read fd (no forks): CON_N reply
# lines seen, CON_MAX the highest seq among them.
con_poll() {
	local role=$1 chunk line n=${CON_N[$1]} max=${CON_MAX[$1]}
	while IFS= read -r -u "${CON_FD[$role]}" chunk; do
		line=${CON_PART[$role]}${chunk}
		CON_PART[$role]=
		if [[ $line =~ bytes\ from.*seq=([0-9]+) ]]; then
			n=$((n + 1))
			((BASH_REMATCH[1] > max)) && max=${BASH_REMATCH[1]}
		fi
	done
	CON_PART[$role]+=$chunk
	CON_N[$role]=$n CON_MAX[$role]=$max
}
# con_wait ROLE N TIMEOUT_S: until N more replies than now were seen
con_wait() {
	local role=$1 want deadline=$((SECONDS + $3))
	con_poll "$role"
	want=$((CON_N[$role] + $2))
	while con_poll "$role"; ((CON_N[$role] < want)); do
		((SECONDS < deadline)) || return 1
		uvn_alive "${GUEST_PID[${GUEST_OF[$role]}]:-0}" || return 1
		uvn_sleep 0.05
	done
}

# The sniffer: every frame on the TAPs with its time (CLOCK_REALTIME, as
# bash's EPOCHREALTIME): "usec iface in|out kind seq", kind echo/reply
# (ICMP), arp1/arp2 (request/reply) or other.
SNIFF=$UVN_RUN/sniff.py
cat >"$SNIFF" <<'EOF'
import socket, struct, sys, time
names = set(sys.argv[1:])
sk = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
while True:
    b, a = sk.recvfrom(65536)
    if a[0] not in names:
        continue
    t = int(time.time() * 1e6)
    kind, seq = 'other', -1
    et = struct.unpack('!H', b[12:14])[0] if len(b) >= 14 else 0
    if et == 0x0806 and len(b) >= 22:
        kind = 'arp%d' % struct.unpack('!H', b[20:22])[0]
    elif et == 0x0800 and len(b) >= 34 and b[23] == 1:
        o = 14 + (b[14] & 15) * 4
        if len(b) >= o + 8:
            kind = {8: 'echo', 0: 'reply'}.get(b[o], 'icmp')
            seq = struct.unpack('!H', b[o + 6:o + 8])[0]
    print('%d %s %s %s %d' % (t, a[0], 'out' if a[2] == 4 else 'in', kind, seq), flush=True)
EOF
SNIFF_FD=
# sniff_first TAP T_US TIMEOUT_S: print the time of the first frame from
# the guest on TAP at or after T_US (lines before it are passed over)
sniff_first() {
	local tap=$1 t0=$2 deadline=$((SECONDS + $3)) t ifc dir rest
	while :; do
		while read -r -u "$SNIFF_FD" t ifc dir rest; do
			[[ $ifc == "$tap" && $dir == in ]] && ((t >= t0)) && { echo "$t"; return 0; }
		done
		((SECONDS < deadline)) || return 1
		uvn_sleep 0.01
	done
}

guest_roles=() tp_role=0
for r in $ROLES; do
	case $r in
	qemu_client | qemu_server) guest_roles+=("$r") ;;
	testpmd_server) tp_role=1 ;;
	*) uvn_die "unknown role $r" ;;
	esac
	SOCK_OF[$r]=$UVN_RUN/$r.sock
done

if ((${#guest_roles[@]})); then
	guest_prepare
	netns_create NS bench
	for r in "${guest_roles[@]}"; do
		netns_tap "$NS" "${TAP_OF[$r]}"
		netns_addr "$NS" "${TAP_OF[$r]}" "${NET_OF[$r]}.1/24"
		[[ $GARP == static ]] && ip -n "$NS" neigh replace "${NET_OF[$r]}.2" lladdr "${MAC_OF[$r]}" \
			dev "${TAP_OF[$r]}" nud permanent
	done
	# --guest-arp: the guest keeps or pins its ARP entries, then streams
	STREAM=$IOP/guest/ping_stream.sh
	if [[ $GARP != default ]]; then
		STREAM=$UVN_RUN/guest_arp.sh
		if [[ $GARP == keep ]]; then
			echo 'echo 0 >"/proc/sys/net/ipv4/conf/$UVN_IF0/arp_evict_nocarrier" && uvn_result arp=keep'
		else
			echo 'arp -i "$UVN_IF0" -s "$PEER" "$PEER_MAC" && uvn_result arp=static'
		fi >"$STREAM"
		echo '. /uvn/files/ping_stream.sh' >>"$STREAM"
	fi
	command -v python3 >/dev/null || uvn_deps python3
	: >"$UVN_LOG_DIR/frames.log"
	netns_spawn sniff_pid "sniffer" "$UVN_LOG_DIR/frames.log" "$NS" python3 "$SNIFF" \
		"${TAP_OF[qemu_client]}" "${TAP_OF[qemu_server]}"
	exec {SNIFF_FD}<"$UVN_LOG_DIR/frames.log"
	UVN_HELD_FDS+=("$SNIFF_FD")
	for r in "${guest_roles[@]}"; do
		gargs=(--name "${GUEST_OF[$r]}" --sock "${SOCK_OF[$r]}" --ip "${NET_OF[$r]}.2/24"
			--mac "${MAC_OF[$r]}" --env "PEER=${NET_OF[$r]}.1" --env "COUNT=$((RATE * 7200))"
			--env "INTERVAL=$INTERVAL" --script "$STREAM" --file "$IOP/guest/ping_stream.sh" --timeout 7200
			--env "PEER_MAC=$(ip -n "$NS" -br link show "${TAP_OF[$r]}" | awk '{ print $3 }')")
		if [[ $r == qemu_client ]]; then
			switch_start "$r" "${r}0"
			guest_start "${gargs[@]}" --qemu-arg -set --qemu-arg chardev.chr0.reconnect=1
		else
			guest_start --server "${gargs[@]}"
			switch_start "$r" "${r}0"
		fi
		exec {fd}<"$(guest_dir "${GUEST_OF[$r]}")/console.log"
		UVN_HELD_FDS+=("$fd")
		CON_FD[$r]=$fd CON_PART[$r]= CON_N[$r]=0 CON_MAX[$r]=0
	done
	for r in "${guest_roles[@]}"; do
		con_wait "$r" $((RATE * 2)) 300 || uvn_die "$r: the guest's ping stream did not start"
	done
fi
if ((tp_role)); then
	testpmd_prepare
	switch_start testpmd_server testpmd_server0
	# virtio-user server=1 waits at start for the backend (uvnetd retries
	# its connection every second until testpmd listens)
	testpmd_start tp --virtio-user "${SOCK_OF[testpmd_server]},server=1" --fwd flowgen --lcores 0@0,1@1
fi

# back_frames: frames the running uvnetd (testpmd role) sent back, 0 before
# it answers
back_frames() {
	local n
	n=$("$UVNETD" ctl "$CTL" show ports --json 2>/dev/null | grep -o '"tx_packets":[0-9]*' | head -n 1) || true
	echo "${n#*:}"
}
frames_back() { local n; n=$(back_frames); ((${n:-0} > 0)); }

# ------------------------------------------------------------ (a) restarts
# restart ROLE RUN: stop this role's uvnetd (SIG), start it again, wait
# for the first frame through the new one; raw numbers in ms from the signal
restart() {
	local role=$1 run=$2 pid t_sig t_exit t_start t_first n
	if [[ $role == testpmd_server ]]; then
		testpmd_cmd tp start >/dev/null
		uvn_wait_for 20 "frames back" frames_back || uvn_die "testpmd: no frames back"
		uvn_sleep 1
	else
		con_poll "$role"
		BOUNDS[$role]+="${CON_MAX[$role]} "
	fi
	pid=$(uvnetd_pid "${CUR[$role]}")
	t_sig=$(now_us)
	kill -"$SIG" "$pid"
	uvn_reap "$pid" || true
	t_exit=$(now_us)
	UVNETD_PID[${CUR[$role]}]=
	[[ $DOWN == 0 ]] || uvn_sleep "$DOWN"
	t_start=$(now_us)
	switch_start "$role" "$role$run"
	if [[ $role == testpmd_server ]]; then
		while n=$(back_frames); ((${n:-0} == 0)); do
			(($(now_us) - t_start < 30000000)) || uvn_die "testpmd: no frames back within 30 s"
		done
		t_first=$(now_us)
		uvn_sleep 0.5
		testpmd_cmd tp stop >/dev/null
	else
		t_first=$(sniff_first "${TAP_OF[$role]}" "$t_start" 60) ||
			uvn_die "$role: no frame from the guest within 60 s of the restart"
	fi
	raw restart "$role" "$run" stop_ms $(((t_exit - t_sig) / 1000))
	raw restart "$role" "$run" start_to_traffic_ms $(((t_first - t_start) / 1000))
	raw restart "$role" "$run" restart_to_traffic_ms $(((t_first - t_sig) / 1000))
	START_US[$role.$run]=$t_start
	uvn_log "$role run $run: SIGTERM -> exit $(((t_exit - t_sig) / 1000)) ms, restart -> traffic" \
		"$(((t_first - t_sig) / 1000)) ms ($(((t_first - t_start) / 1000)) ms after the start)"
	# the stream is back to normal (1 s of replies) before its next restart
	if [[ $role != testpmd_server ]]; then
		con_wait "$role" "$RATE" 60 || uvn_die "$role: the ping stream did not resume"
	fi
}

declare -A START_US=()
if [[ -n ${ROLES// /} && $RUNS -gt 0 ]]; then
	for ((run = 1; run <= RUNS; run++)); do
		for r in $ROLES; do restart "$r" "$run"; done
	done
fi

# Per guest restart: the pings lost in its part of the stream (after the
# highest seq answered at the signal, up to that of the next restart or the
# end), and what the sniffer saw from the guest after the start: the first
# frame's kind, the ARP requests before its first echo request, and when
# that echo request came (ms from the start).
for r in "${guest_roles[@]}"; do
	con_poll "$r"
	con=$(guest_dir "${GUEST_OF[$r]}")/console.log
	tr -d '\r' <"$con" | awk -v bounds="${BOUNDS[$r]}${CON_MAX[$r]}" '
		/bytes from .* seq=/ { for (i = 1; i <= NF; i++) if ($i ~ /^seq=/) got[substr($i, 5) + 0] = 1 }
		END {
			n = split(bounds, b, " ")
			for (k = 1; k < n; k++) {
				lost = 0
				for (s = b[k] + 1; s <= b[k + 1]; s++) if (!(s in got)) lost++
				print k, lost
			}
		}' | while read -r run lost; do
		raw restart "$r" "$run" pings_lost "$lost"
		raw restart "$r" "$run" lost_x_interval_ms $((lost * INTERVAL_MS))
	done
	for ((run = 1; run <= RUNS; run++)); do
		awk -v tap="${TAP_OF[$r]}" -v t0="${START_US[$r.$run]}" -v role="$r" -v run="$run" '
			$2 == tap && $3 == "in" && $1 >= t0 {
				if (first == "") first = $4
				if ($4 == "echo") { printf "restart %s %s first_frame %s\n", role, run, first
					printf "restart %s %s arp_requests_before_echo %d\n", role, run, arps + 0
					printf "restart %s %s start_to_echo_ms %d\n", role, run, ($1 - t0) / 1000; exit }
				if ($4 == "arp1") arps++
			}' "$UVN_LOG_DIR/frames.log" >>"$RAW"
	done
done
for r in "${guest_roles[@]}"; do guest_stop --name "${GUEST_OF[$r]}"; done
((tp_role)) && testpmd_stop tp
for r in $ROLES; do
	uvnetd_stop "${CUR[$r]}"
done

# ------------------------------------------------------------ (b) migrations
for ((run = 1; run <= MIGS; run++)); do
	name=bench_restart_mig$run
	uvn_log "migration $run of $MIGS (tests/interop/uvnetd_migrate.sh, logs in $UVN_LOG_DIR/$name)"
	uvn_spawn mig_pid "uvnetd_migrate.sh run $run" "$UVN_LOG_DIR/$name.out" /dev/null \
		env UVN_INTEROP_LOGDIR="$UVN_LOG_DIR" bash "$IOP/uvnetd_migrate.sh" --uvnetd "$UVNETD" --test-name "$name"
	rc=0
	uvn_reap "$mig_pid" || rc=$?
	d=$UVN_LOG_DIR/$name
	pinger=$(grep '^PINGER' "$d/pinger.log" 2>/dev/null) || pinger=
	mig=$(grep '^MIGRATE status' "$d/migrate.log" 2>/dev/null) || mig=
	fdb=$(grep -o 'fdb_ms=[0-9]*' "$d/migrate.log" 2>/dev/null) || fdb=
	if [[ -z $pinger || -z $mig ]]; then
		uvn_log "migration $run: no numbers (status $rc, see $UVN_LOG_DIR/$name.out)"
		continue
	fi
	((rc == 0)) || uvn_log "migration $run: the test failed (status $rc), numbers kept: $pinger"
	lost=$(sed -E 's/.*lost=([0-9]+).*/\1/' <<<"$pinger")
	raw migrate guest "$run" ping_gap_ms "$(sed -E 's/.*max_gap_ms=([0-9]+).*/\1/' <<<"$pinger")"
	raw migrate guest "$run" pings_lost "$lost"
	raw migrate guest "$run" lost_x_interval_ms $((lost * 20))
	raw migrate guest "$run" qemu_downtime_ms "$(sed -E 's/.*qemu_downtime_ms=([0-9?]+).*/\1/' <<<"$mig")"
	raw migrate guest "$run" total_ms "$(sed -E 's/.*total_ms=([0-9]+).*/\1/' <<<"$mig")"
	[[ -n $fdb ]] && raw migrate guest "$run" fdb_ms "${fdb#*=}"
	# the gap around the switch-over: between the last reply before QEMU
	# said "completed" and the first after it (the longest gap may fall
	# in the pre-copy, when TCG slows the guest down)
	done_t=$(grep -o 'done_t=[0-9.]*' "$d/migrate.log" | cut -d= -f2)
	raw migrate guest "$run" switchover_gap_ms "$(awk -v d="$done_t" '/^reply/ {
		sub("t=", "", $3); t = $3 + 0
		if (t <= d) a = t; else if (!b) b = t
	} END { printf "%d\n", (b - a) * 1000 }' "$d/pinger.log")"
	uvn_log "migration $run: $pinger; $mig"
done

# ------------------------------------------------------------ tables
# summary PART ROLE METRIC: "median (min-max)" over the runs
summary() {
	awk -v p="$1" -v r="$2" -v m="$3" '$1 == p && $2 == r && $4 == m { print $5 }' "$RAW" | sort -n | awk '
		{ v[NR] = $1 }
		END {
			if (!NR) { print "-"; exit }
			med = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "%g (%g-%g)\n", med, v[1], v[NR]
		}'
}
{
	echo
	echo "bench/restart.sh: uvnetd $("$UVNETD" --version 2>/dev/null | head -n 1), $(date -u '+%F %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
	if [[ -n ${ROLES// /} && $RUNS -gt 0 ]]; then
		echo
		echo "(a) uvnetd SIG$SIG, started again$( [[ $DOWN == 0 ]] && echo " at once" || echo " after ${DOWN}s"):" \
			"$RUNS interleaved runs, median (min-max), ms; guest pings $RATE/s, guest ARP: $GARP"
		printf '%-15s %-19s %-17s %-17s %-13s %-15s\n' role "restart->traffic" "signal->exit" "start->traffic" \
			"pings lost" "lost x ${INTERVAL_MS} ms"
		for r in $ROLES; do
			printf '%-15s %-19s %-17s %-17s %-13s %-15s\n' "$r" "$(summary restart "$r" restart_to_traffic_ms)" \
				"$(summary restart "$r" stop_ms)" "$(summary restart "$r" start_to_traffic_ms)" \
				"$(summary restart "$r" pings_lost)" "$(summary restart "$r" lost_x_interval_ms)"
		done
		echo "per run, restart->traffic in ms [guest's first frame after the start: arp = an ARP request]:"
		for r in $ROLES; do
			printf '  %-15s' "$r"
			awk -v r="$r" '$1 == "restart" && $2 == r && $4 == "restart_to_traffic_ms" { v[$3] = $5 }
				$1 == "restart" && $2 == r && $4 == "first_frame" { f[$3] = $5 == "arp1" ? " [arp]" : "" }
				END { for (i = 1; i in v; i++) printf " %s%s", v[i], f[i]; print "" }' "$RAW"
		done
	fi
	if ((MIGS)); then
		echo
		echo "(b) live migration between two ports of one uvnetd (uvnetd_migrate.sh), $MIGS runs," \
			"median (min-max), ms; TAP peer pings 50/s"
		printf '%-19s %-19s %-13s %-15s %-15s %-17s %-13s\n' "longest ping gap" "gap at switch-over" \
			"pings lost" "lost x 20 ms" "QEMU downtime" "migration total" "FDB moved"
		printf '%-19s %-19s %-13s %-15s %-15s %-17s %-13s\n' "$(summary migrate guest ping_gap_ms)" \
			"$(summary migrate guest switchover_gap_ms)" \
			"$(summary migrate guest pings_lost)" "$(summary migrate guest lost_x_interval_ms)" \
			"$(summary migrate guest qemu_downtime_ms)" "$(summary migrate guest total_ms)" "$(summary migrate guest fdb_ms)"
		printf '  per run, longest ping gap / gap at the switch-over in ms:'
		awk '$1 == "migrate" && $4 == "ping_gap_ms" { g[$3] = $5 } $1 == "migrate" && $4 == "switchover_gap_ms" { s[$3] = $5 }
			END { for (i = 1; i in g; i++) printf " %s/%s", g[i], s[i]; print "" }' "$RAW"
	fi
	echo
	echo "raw numbers: $RAW; logs: $UVN_LOG_DIR"
} | tee "$UVN_LOG_DIR/table.txt"
