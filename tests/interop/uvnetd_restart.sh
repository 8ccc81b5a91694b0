#!/bin/bash
# uvnetd_restart: uvnetd is SIGKILLed under running traffic and started
# again with the same arguments; the traffic must come back by itself.
# One role after the other (--role picks some), each with one peer:
#   qemu_server    a Linux guest, QEMU the vhost-user server (server=on),
#                  uvnetd's port ",client" (uvnetd reconnects)
#   qemu_client    the same with QEMU the client (reconnect=1), uvnetd
#                  listening: the restarted uvnetd finds its SIGKILLed
#                  predecessor's socket file and must take it over
#   testpmd_server DPDK virtio-user server=1, uvnetd the client
#   testpmd_client DPDK virtio-user client, uvnetd listening; DPDK's
#                  client never reconnects, so testpmd plugs the port in
#                  again (detach, attach) once the new uvnetd runs
#   qemu_packed    a guest with packed rings (QEMU server), which uvnetd
#                  cannot resume: its rings are refused, broken and counted
#                  (show queues, the totals), and a testpmd port beside it
#                  still works (see qemu_packed_role)
# Guest roles: the guest pings a TAP address in a private netns through
# uvnetd (switch) every 50 ms; uvnetd dies mid-stream and is down for
# --down seconds. Asserted: the stream resumes; the replies missing lie
# in one span no longer than the pings sent from the kill to the first
# reply after the restart (+2, see loss_ok); the guest logged no TX watchdog
# timeout and no virtio ring error, its carrier is up at the end.
# testpmd roles: flowgen on one port, uvnetd in loopback (and --ctl, whose
# socket is taken over too); frames come back, and once testpmd stops,
# every buffer the new uvnetd took from either ring went back used.
# Every role: no error on the new uvnetd's ports, and "restart -> traffic"
# (uvnetd's start to the first reply or frame back) is printed and at most
# 2 s, + 1 s (QEMU's reconnect timer) when QEMU is the client.
#
# The TAP is persistent and created by the test, as whatever runs uvnetd
# for real would (its address must outlive the process that serves it).
#
# Usage: uvnetd_restart.sh --uvnetd PATH [--test-name NAME] [--role R]...
#        [--uvnetd-opt OPT]... [--down S] [--vu-args DEVARGS (testpmd)]
#        [guest ring options: --packed on --mrg-rxbuf off ...]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib/guest.sh"
source "$HERE/lib/netns.sh"
source "$HERE/lib/testpmd.sh"
source "$HERE/lib/uvnetd.sh"

name=uvnetd_restart down=1 vuargs= queues=1
declare -a roles=() uopts=() gopts=()
while (($#)); do
	case $1 in
	--uvnetd) UVNETD=$2; shift 2 ;;
	--test-name) name=$2; shift 2 ;;
	--role) roles+=("$2"); shift 2 ;;
	--uvnetd-opt) uopts+=("$2"); shift 2 ;;
	--down) down=$2; shift 2 ;;
	--vu-args) vuargs=$2; shift 2 ;;
	--queues) queues=$2; gopts+=("$1" "$2"); shift 2 ;;
	--packed | --mrg-rxbuf | --event-idx | --indirect) gopts+=("$1" "$2"); shift 2 ;;
	*) echo "unknown option $1" >&2; exit 2 ;;
	esac
done
((${#roles[@]})) || roles=(qemu_server qemu_client testpmd_server testpmd_client)

uvn_test_init "$name"
uvn_need_root "network namespaces and TAP devices"
[[ -x "${UVNETD:-}" ]] || uvn_die "--uvnetd PATH: no uvnetd binary"

INTERVAL=0.05 RATE=20   # guest pings: RATE per second
declare -a SW_ARGS=()
SW_PID= SW_N=0
declare -A RESUME_MS=()

now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }

# sw_start: uvnetd with SW_ARGS, in the netns when NS is set. Unlike
# uvnetd_start it leaves a socket file where it is: taking over the one a
# SIGKILLed uvnetd left is part of what is tested.
sw_start() {
	local log=$UVN_LOG_DIR/uvnetd-$SW_N.log
	echo "# $UVNETD ${SW_ARGS[*]} --json -s 1" >"$log"
	if [[ -n "${NS:-}" ]]; then
		netns_spawn SW_PID "uvnetd #$SW_N" "$log" "$NS" "$UVNETD" "${SW_ARGS[@]}" --json -s 1
	else
		uvn_spawn SW_PID "uvnetd #$SW_N" "$log" /dev/null "$UVNETD" "${SW_ARGS[@]}" --json -s 1
	fi
	SW_N=$((SW_N + 1))
}
# sw_check: fail at once when the uvnetd just started has exited
sw_check() {
	[[ -z "$SW_PID" ]] || uvn_alive "$SW_PID" ||
		uvn_die "uvnetd (pid $SW_PID) exited: $(tail -n 3 "$UVN_LOG_DIR/uvnetd-$((SW_N - 1)).log")"
}
sw_kill9() {
	kill -KILL "$SW_PID"
	uvn_reap "$SW_PID" || true
	uvn_log "uvnetd (pid $SW_PID) SIGKILLed"
	SW_PID=
}
# sw_stop ROLE: SIGTERM the running uvnetd; its final totals must show no
# error on any port (a ring it could not resume counts as one)
sw_stop() {
	local log=$UVN_LOG_DIR/uvnetd-$((SW_N - 1)).log final
	[[ -n "$SW_PID" ]] || return 0
	uvn_alive "$SW_PID" || uvn_die "uvnetd (pid $SW_PID) died: $(tail -n 5 "$log")"
	uvn_kill "$SW_PID" 5
	SW_PID=
	grep -v '^{' "$log" | grep -i 'warn\|error\|broken' | sed 's/^/    | /' >&2 || true
	final=$(grep '"final":true' "$log" | tail -n 1) || uvn_die "$1: uvnetd printed no final totals"
	uvn_assert_eq "$1: errors on the restarted uvnetd's ports" \
		"$(grep -o '"errors":[0-9]*' <<<"$final" | awk -F: '{ s += $2 } END { print s + 0 }')" 0
}

# ---------------------------------------------------------------- guests
# The console is followed through a read fd (no forks): CON_SEQ is the
# number of reply lines seen, CON_START set once the stream began.
CON_FD= CON_PART= CON_SEQ=0 CON_START=0 CON_END=0
con_open() {
	exec {CON_FD}<"$1"
	UVN_HELD_FDS+=("$CON_FD")
	CON_PART= CON_SEQ=0 CON_START=0 CON_END=0
}
con_poll() {
	local chunk line
	while IFS= read -r -u "$CON_FD" chunk; do
		line=${CON_PART}${chunk}
		CON_PART=
		case $line in
		*"bytes from"*seq=*) CON_SEQ=$((CON_SEQ + 1)) ;;
		"UVN_STREAM start"*) CON_START=1 ;;
		"UVN_STREAM end"*) CON_END=1 ;;
		esac
	done
	CON_PART+=$chunk
	return 0
}
# con_wait_seq N TIMEOUT_S: until N reply lines were seen (or the stream ended)
con_wait_seq() {
	local want=$1 deadline=$((SECONDS + $2))
	while :; do
		con_poll
		((CON_SEQ >= want)) && return 0
		((CON_END == 0 && SECONDS < deadline)) || return 1
		uvn_alive "${GUEST_PID[g0]:-0}" || return 1
		sw_check
		uvn_sleep 0.02
	done
}

# loss_ok CONSOLE KILL_MS RESUME_MS: the replies missing all lie in one
# span of the stream no longer than the pings sent from the kill to the
# first reply after the restart, + 2: the request in flight when uvnetd
# died (sent before the kill, its reply lost) and the rounding of a window
# into whole pings. The span may hold replies: requests the guest queued
# in its TX ring before it saw the link go down are sent by the new uvnetd
# (late, not lost). The host sees the first reply late (console poll,
# serial output), which only widens the window it allows.
loss_ok() {
	local con=$1 window_ms=$(($3 - $2))
	local allowed=$(((window_ms * RATE + 999) / 1000 + 2))
	local out
	out=$(tr -d '\r' <"$con" | awk -v allowed="$allowed" '
		/bytes from .* seq=/ { for (i = 1; i <= NF; i++) if ($i ~ /^seq=/) got[substr($i, 5) + 0] = 1 }
		/ DUP!/ { dup++ }
		/packets transmitted/ { sent = $1; recv = $4 }
		END {
			lost = 0; first = -1; last = -1; gaps = 0
			for (s = 0; s < sent; s++) if (!(s in got)) {
				lost++; last = s; if (first < 0) first = s
				if (s == 0 || (s - 1) in got) gaps++
			}
			span = lost ? last - first + 1 : 0
			printf "sent=%d received=%d lost=%d in %d gap(s), span %d..%d (%d pings), allowed %d, duplicates %d\n",
				sent, recv, lost, gaps, first, last, span, allowed, dup
			exit !(sent > 0 && lost == sent - recv && span <= allowed)
		}')
	local rc=$?
	uvn_log "ping stream: $out (window ${window_ms} ms at $RATE/s)"
	return $rc
}

# qemu_role server|client
qemu_role() {
	local mode=$1 role=qemu_$1
	local sock=$UVN_RUN/$role.sock count=$((RATE * 16))
	local -a gargs=(--sock "$sock" --ip 198.18.3.2/24 --env PEER=198.18.3.1 --env COUNT=$count
		--env INTERVAL=$INTERVAL --script "$HERE/guest/ping_stream.sh" --timeout 240 "${gopts[@]}")
	uvn_log "=== $role: ping stream, uvnetd SIGKILLed and restarted after ${down}s"
	if [[ $mode == server ]]; then
		SW_ARGS=(--port "vhost-user:$sock,queues=$queues,client" --port "tap:$TAP" "${uopts[@]}")
		guest_start --server "${gargs[@]}"
		sw_start
	else
		SW_ARGS=(--port "vhost-user:$sock,queues=$queues" --port "tap:$TAP" "${uopts[@]}")
		sw_start
		uvn_wait_for 10 "uvnetd socket" test -S "$sock" || uvn_die "uvnetd did not listen on $sock"
		# reconnect=1 on the chardev guest.sh made (-set applies to it by id)
		guest_start "${gargs[@]}" --qemu-arg -set --qemu-arg chardev.chr0.reconnect=1
	fi
	local con
	con=$(guest_dir)/console.log
	con_open "$con"
	con_wait_seq $((RATE * 2)) 120 || uvn_die "$role: the ping stream did not start (see $con)"
	local before t_kill t_start t_resume
	before=$CON_SEQ
	t_kill=$(now_ms)
	sw_kill9
	uvn_sleep "$down"
	con_poll
	before=$CON_SEQ   # replies already on their way at the kill
	t_start=$(now_ms)
	sw_start
	con_wait_seq $((before + 1)) 30 || uvn_die "$role: no reply within 30 s of uvnetd's restart (see $con)"
	t_resume=$(now_ms)
	RESUME_MS[$role]=$((t_resume - t_start))
	uvn_log "$role: restart -> first reply: ${RESUME_MS[$role]} ms (down $((t_start - t_kill)) ms)"
	local rc=0
	guest_wait || rc=$?
	uvn_release_fd "$CON_FD"
	sw_stop "$role"
	uvn_assert_eq "$role: guest status" "$rc" 0
	uvn_check "$role: the replies missing lie within the outage" loss_ok "$con" "$t_kill" "$t_resume"
	uvn_assert_eq "$role: guest TX watchdog timeouts" "$(guest_result stream.watchdog)" 0
	uvn_assert_eq "$role: guest virtio ring errors/warnings" "$(guest_result stream.ring_msgs)" 0
	uvn_assert_eq "$role: guest carrier at the end" "$(guest_result stream.carrier)" 1
	uvn_log "$role: guest carrier changes during the stream: $(guest_result stream.carrier_changes)"
	# 2 s, + QEMU's reconnect timer (reconnect=1) when it is the client
	local limit
	[[ $mode == client ]] && limit=3000 || limit=2000
	uvn_check "$role: restart -> traffic ${RESUME_MS[$role]} ms <= $limit ms" \
		test "${RESUME_MS[$role]}" -le "$limit"
}

# qemu_packed: what uvnetd can do for a guest with packed rings, which it
# cannot resume. QEMU (7.2, and to this day) keeps a packed ring's position
# of its last start when its backend dies and sends that again
# (virtio_queue_packed_restore_last_avail_idx() does nothing), and the ring
# itself does not tell where it is: the restarted uvnetd must refuse the
# guest's rings, clean and counted, and serve its other ports. A second
# port, testpmd's virtio-user (split, rxonly, server=1), is plugged in all
# along; after the restart broadcasts from the TAP's namespace reach it
# through uvnetd.
# 20 UDP broadcasts to argv[1] (no ping on the host)
BCAST='import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
for _ in range(20):
    s.sendto(bytes(64), (sys.argv[1], 9)); time.sleep(0.01)'
guest_queues() {   # guest_queues CTL PORT: "dir broken err_base reason" per queue
	"$UVNETD" ctl "$1" show queues --json | python3 -c 'import json, sys
for q in json.load(sys.stdin)["queues"]:
    if q["port"] == sys.argv[1]:
        e = sum(v for k, v in q["ring"].items() if k.endswith("err_base"))
        print(q["dir"], int(q["broken"]), e, q.get("reason", "-").replace(" ", "_"))' "$2"
}
guest_refused() {
	local out
	out=$(guest_queues "$1" "$2" 2>/dev/null) && [[ -n "$out" ]] && awk '$2 != 1 || $3 < 1 { bad = 1 } END { exit bad }' <<<"$out"
}
qemu_packed_role() {
	local role=qemu_packed sock=$UVN_RUN/qemu_packed.sock tpsock=$UVN_RUN/qemu_packed_tp.sock
	local CTL=$UVN_RUN/ctl-qemu_packed.sock count=$((RATE * 16)) port
	local -a gargs=(--sock "$sock" --ip 198.18.3.2/24 --env PEER=198.18.3.1 --env COUNT=$count
		--env INTERVAL=$INTERVAL --script "$HERE/guest/ping_stream.sh" --timeout 240 "${gopts[@]}"
		--packed on)
	port=vhost-user:$sock
	uvn_log "=== $role: packed rings, uvnetd SIGKILLed and restarted after ${down}s; a testpmd port beside"
	SW_ARGS=(--port "vhost-user:$sock,queues=$queues,client" --port "tap:$TAP"
		--port "vhost-user:$tpsock,client" --ctl "$CTL" "${uopts[@]}")
	guest_start --server "${gargs[@]}"
	sw_start
	testpmd_start tp --virtio-user "$tpsock,server=1" --fwd rxonly --lcores 0@0,1@1 --start
	local con
	con=$(guest_dir)/console.log
	con_open "$con"
	con_wait_seq $((RATE * 2)) 120 || uvn_die "$role: the ping stream did not start (see $con)"
	sw_kill9
	uvn_sleep "$down"
	sw_start
	# The other port: broadcasts from the namespace reach testpmd (and
	# are flooded to the guest's rx ring too, which marks it broken).
	local r0 r1 deadline=$((SECONDS + 20))
	r0=$(testpmd_stat tp 0 rx_packets)
	while r1=$(testpmd_stat tp 0 rx_packets); ((r1 < r0 + 5)); do
		((SECONDS < deadline)) || uvn_die "$role: testpmd's port got no frames after the restart ($r0 -> $r1)"
		sw_check
		netns_exec "$NS" python3 -c "$BCAST" 198.18.3.255 || true
	done
	# Every ring of the guest refused: broken once served, each counted.
	if ! uvn_wait_for 30 "the guest's packed rings refused" guest_refused "$CTL" "$port"; then
		guest_queues "$CTL" "$port" >&2 || true
		uvn_die "$role: the guest's rings are not all refused and counted"
	fi
	uvn_log "$role: guest queues (dir broken err_base reason): $(guest_queues "$CTL" "$port" | tr '\n' ';')"
	uvn_assert_eq "$role: rings refused in uvnetd's log" \
		"$(grep -c 'packed ring not at its base' "$UVN_LOG_DIR/uvnetd-$((SW_N - 1)).log")" $((2 * queues))
	uvn_log "$role: testpmd's port after the restart: $((r1 - r0)) frames"
	uvn_release_fd "$CON_FD"
	guest_stop
	testpmd_stop tp
	local log=$UVN_LOG_DIR/uvnetd-$((SW_N - 1)).log final
	uvn_alive "$SW_PID" || uvn_die "uvnetd (pid $SW_PID) died: $(tail -n 5 "$log")"
	uvn_kill "$SW_PID" 5
	SW_PID=
	final=$(grep '"final":true' "$log" | tail -n 1) || uvn_die "$role: uvnetd printed no final totals"
	uvn_check "$role: the refused rings are errors in uvnetd's totals" \
		test "$(grep -o '"errors":[0-9]*' <<<"$final" | awk -F: '{ s += $2 } END { print s + 0 }')" -ge 1
}

# --------------------------------------------------------------- testpmd
tp_rx() { testpmd_stat tp 0 rx_packets; }
# ring_counts CTL: "dir bufs used" per queue of the running uvnetd
ring_counts() {
	"$UVNETD" ctl "$1" show queues --json | python3 -c 'import json, sys
for q in json.load(sys.stdin)["queues"]:
    print(q["dir"], q["ring"].get("bufs", 0), q["ring"].get("used", 0))'
}
rings_settled() {
	local out
	out=$(ring_counts "$1") && [[ -n "$out" ]] && awk '$2 != $3 { exit 1 }' <<<"$out"
}
# tp_replug DEVARGS: DPDK's virtio-user as a client never reconnects (its
# server mode exists for that: DPDK 18.05's release note); the application
# plugs the port in again once uvnetd listens (its log says it runs).
tp_replug() {
	local log=$UVN_LOG_DIR/uvnetd-$((SW_N - 1)).log
	local t0
	uvn_wait_for 10 "uvnetd to run" grep -q 'running:' "$log" || uvn_die "uvnetd did not start: $(tail -n 5 "$log")"
	t0=$(now_ms)
	testpmd_cmd tp stop >/dev/null
	testpmd_cmd tp "port stop 0" >/dev/null
	testpmd_cmd tp "port detach 0" >/dev/null
	testpmd_cmd tp "port attach net_virtio_user0,path=$1" | grep -i 'attach\|fail\|error' >&2 || true
	testpmd_cmd tp "port start 0" >/dev/null
	testpmd_cmd tp start >/dev/null
	uvn_log "testpmd port 0 detached and attached again ($(($(now_ms) - t0)) ms after uvnetd ran)"
}
# tp_role server|client
testpmd_role() {
	local mode=$1 role=testpmd_$1
	local sock=$UVN_RUN/$role.sock vu limit CTL=$UVN_RUN/ctl-$role.sock
	uvn_log "=== $role: flowgen <-> uvnetd loopback, uvnetd SIGKILLed and restarted after ${down}s"
	vu=$sock${vuargs:+,$vuargs}
	if [[ $mode == server ]]; then
		# virtio-user server=1 waits for the backend at start: uvnetd
		# (client) must be connecting already
		SW_ARGS=(--port "vhost-user:$sock,client" --forward loopback --cpu 0 --ctl "$CTL" "${uopts[@]}")
		sw_start
		testpmd_start tp --virtio-user "$vu,server=1" --fwd flowgen --lcores 0@0,1@1
		limit=2000
	else
		SW_ARGS=(--port "vhost-user:$sock" --forward loopback --cpu 0 --ctl "$CTL" "${uopts[@]}")
		sw_start
		uvn_wait_for 10 "uvnetd socket" test -S "$sock" || uvn_die "uvnetd did not listen on $sock"
		# closing a port whose backend is gone writes to its dead
		# socket: without this the SIGPIPE ends testpmd
		trap '' PIPE
		# (no link check: "port start" would wait for a link event)
		testpmd_start tp --virtio-user "$vu" --fwd flowgen --lcores 0@0,1@1 -- --disable-link-check
		trap - PIPE
		limit=2000
	fi
	testpmd_cmd tp start >/dev/null
	local r0 r1 t_kill t_start t_resume deadline
	r0=$(tp_rx)
	uvn_sleep 1
	r1=$(tp_rx)
	((r1 > r0)) || uvn_die "$role: no frames back before the restart ($r0 -> $r1)"
	uvn_log "$role: $((r1 - r0)) frames back in about 1 s before the kill"
	t_kill=$(now_ms)
	sw_kill9
	uvn_sleep "$down"
	r0=$(tp_rx)
	t_start=$(now_ms)
	sw_start
	if [[ $mode == client ]]; then
		tp_replug "$vu"
		r0=0   # a new port: its counters start at 0
	fi
	deadline=$((SECONDS + 20))
	while r1=$(tp_rx); ((r1 <= r0)); do
		((SECONDS < deadline)) || break
		sw_check
		uvn_sleep 0.02
	done
	t_resume=$(now_ms)
	if ((r1 <= r0)); then
		testpmd_cmd tp "show port info 0" | grep -i 'link status' >&2 || true
		uvn_die "$role: no frames back within 20 s of uvnetd's restart"
	fi
	RESUME_MS[$role]=$((t_resume - t_start))
	uvn_log "$role: restart -> frames back: ${RESUME_MS[$role]} ms (down $((t_start - t_kill)) ms)"
	r0=$(tp_rx)
	uvn_sleep 1
	r1=$(tp_rx)
	uvn_log "$role: $((r1 - r0)) frames back in about 1 s after the restart"
	testpmd_cmd tp stop >/dev/null
	# Every buffer the new uvnetd took from testpmd's rings went back used
	# (the --ctl socket, like the vhost-user one, was taken over too).
	uvn_wait_for 5 "uvnetd to return every buffer" rings_settled "$CTL" ||
		uvn_die "$role: uvnetd holds buffers: $("$UVNETD" ctl "$CTL" show queues)"
	uvn_log "$role: rings after the restart (taken/used): $(ring_counts "$CTL" | tr '\n' ' ')"
	testpmd_stop tp
	sw_stop "$role"
	((r1 > r0)) || uvn_die "$role: frames stopped again after the restart"
	uvn_check "$role: restart -> traffic ${RESUME_MS[$role]} ms <= $limit ms" \
		test "${RESUME_MS[$role]}" -le "$limit"
}

for r in "${roles[@]}"; do
	case $r in
	qemu_server | qemu_client | qemu_packed)
		if [[ -z "${NS:-}" ]]; then
			guest_prepare
			netns_create NS tap
			TAP=uvntap0
			netns_tap "$NS" "$TAP"
			netns_addr "$NS" "$TAP" 198.18.3.1/24
		fi
		if [[ $r == qemu_packed ]]; then
			testpmd_prepare
			qemu_packed_role
		else
			qemu_role "${r#qemu_}"
		fi
		;;
	testpmd_server | testpmd_client)
		testpmd_prepare
		NS_SAVE=${NS:-}
		NS=
		testpmd_role "${r#testpmd_}"
		NS=$NS_SAVE
		;;
	*) uvn_die "unknown role $r" ;;
	esac
done
for r in "${roles[@]}"; do
	if [[ -n "${RESUME_MS[$r]:-}" ]]; then
		uvn_log "restart -> traffic, $r: ${RESUME_MS[$r]} ms"
	fi
done
