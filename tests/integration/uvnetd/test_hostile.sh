#!/bin/bash
# One hostile vhost-user frontend against a running uvnetd with three
# ports: A (hostile, with a control queue), B and C (an honest pair,
# B -> C). While A attacks, B's frames keep reaching C, the workers are not
# parked by A's kicks, and uvnetd exits cleanly within 1 s of SIGTERM.
#   kickswap: A starts its TX ring with kick fd k1, replaces it by k2,
#             switches the ring to NOFD and keeps writing to k1 and k2
#             (issue 12, finding 4: closed kick fds left in a worker's
#             epoll set, then a call through a NULL handler);
#   fulltx:   A keeps its TX ring full, avail->idx = used->idx + num
#             (finding 5: a drain loop without a budget starved the other
#             queues and kept the workers from parking, so SIGTERM hung).
# and through bench's uvnet-hostile (its attack names):
#   packed-batch: packed + IN_ORDER TX and control rings re-armed behind
#             the device's back (finding 1), kicked without pause: a queue
#             breaks with its reason in show queues, no worker parks;
#   stale-ring: a disabled TX ring, then a memory table without it
#             (finding 2: use after munmap in the drain of disabled rings);
#   blocking-fd: a full blocking pipe as call and error fd (finding 3: the
#             handler froze with every worker parked): refused, counted;
#   memfd-shrink: A shrinks its memfd to 0 (finding 6: SIGBUS): A loses
#             its connection, counted, the others go on;
#   kick-storm: every kick fd written as fast as A can, its control
#             queue's too (handled on the control thread: it used to park
#             every worker per kick);
#   msg-flood: GET_FEATURES without pause: read in step with a budget.
# Usage: test_hostile.sh UVNETD HOSTILE UVNET_HOSTILE MODE
set -euo pipefail
UVNETD=$1 HOSTILE=$2 UVNET_HOSTILE=$3 MODE=$4
DIR=$(mktemp -d /tmp/uvn-hostile.XXXXXX)
PID= HPID=
cleanup() {
	local rc=$?
	set +e
	[[ -n "$HPID" ]] && kill -KILL "$HPID" 2>/dev/null && wait "$HPID" 2>/dev/null
	[[ -n "$PID" ]] && kill -KILL "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
	rm -rf "$DIR"
	exit "$rc"
}
trap cleanup EXIT
fail() { echo "FAIL ($MODE): $*" >&2; echo "--- uvnetd log:" >&2; tail -20 "$DIR/log" >&2; exit 1; }
# exited (or a zombie, not yet waited for)
gone() { local st; st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 0; [[ $st == Z ]]; }

# Copies, not zero copy: a big frame costs uvnetd time, so the guest
# keeps its ring full even when it loses its CPU now and then.
"$UVNETD" --zerocopy off --port "vhost-user:$DIR/a.sock,queues=2" --port "vhost-user:$DIR/b.sock" \
	--port "vhost-user:$DIR/c.sock" --ctl "$DIR/ctl.sock" >"$DIR/log" 2>&1 &
PID=$!
for _ in $(seq 100); do [[ -S "$DIR/ctl.sock" ]] && break; sleep 0.05; done
[[ -S "$DIR/ctl.sock" ]] || fail "uvnetd did not start"

case $MODE in
kickswap | fulltx) "$HOSTILE" "$MODE" "$DIR/a.sock" 15 >"$DIR/hostile.out" 2>&1 & ;;
*) "$UVNET_HOSTILE" --socket "$DIR/a.sock" --attack "$MODE" --seconds 15 >"$DIR/hostile.out" 2>&1 & ;;
esac
HPID=$!
for _ in $(seq 100); do grep -q ready "$DIR/hostile.out" && break; gone "$HPID" && break; sleep 0.05; done
grep -q ready "$DIR/hostile.out" || fail "the attack did not start: $(cat "$DIR/hostile.out")"

ctl() { timeout 2 "$UVNETD" ctl "$DIR/ctl.sock" "$@" || fail "control socket does not answer: $*"; }
pauses() { ctl show stats --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["worker_pauses"])'; }
# A's kicks, however many, never park the workers (A's own set-up is done).
# vhost-user messages are handled with the workers parked: a frontend gets
# 64 of them per 100 ms (msg-flood), and stale-ring's few are its attack.
case $MODE in
stale-ring) max_parks=100000 ;;
msg-flood) max_parks=1000 ;;
*) max_parks=5 ;;
esac
sleep 0.5
p0=$(pauses)
sleep 1
p1=$(pauses)
((p1 - p0 <= max_parks)) || fail "the workers were parked $((p1 - p0)) times in 1 s of attack"

"$HOSTILE" honest "$DIR/b.sock" "$DIR/c.sock" 3 || fail "the honest pair was disturbed"
gone "$PID" && fail "uvnetd died"
json=$("$UVNETD" ctl "$DIR/ctl.sock" show ports --json) || fail "control socket does not answer"
# the attack is real, and it cost A what it should
a_queues() { ctl show queues --json | python3 -c 'import json,sys
for q in json.load(sys.stdin)["queues"]:
    if q["port"].endswith("/a.sock"): print(q["dir"], q["broken"], q.get("reason", ""))'; }
case $MODE in
fulltx)	# A's frames came in all along, beside B's
	python3 -c 'import json,sys; p=json.loads(sys.argv[1])["ports"]; assert p[0]["rx_packets"] > 10000, p[0]' \
		"$json" || fail "A's full ring was not served" ;;
packed-batch)
	q=$(a_queues)
	grep -q "True more ring slots" <<<"$q" || fail "no queue of A broken by the overrun: $q" ;;
blocking-fd)
	grep -q "fd is not an eventfd" "$DIR/log" || fail "the pipe was not refused as a call/error fd" ;;
msg-flood)
	grep -q "messages in 100 ms: read in step" "$DIR/log" || fail "the message budget did not act" ;;
memfd-shrink)
	grep -q "guest memory vanished" "$DIR/log" || fail "A's connection was not dropped for its memory"
	ctl show queues | grep -q a.sock && fail "A still has queues after shrinking its memory" ;;
stale-ring)
	grep -q "not in the new memory table" "$DIR/log" || fail "the stale ring was not seen" ;;
esac

# SIGTERM while the attack goes on
t0=$(date +%s%N)
kill -TERM "$PID"
for _ in $(seq 300); do gone "$PID" && break; sleep 0.01; done
ms=$((($(date +%s%N) - t0) / 1000000))
gone "$PID" || fail "uvnetd still running ${ms} ms after SIGTERM"
rc=0
wait "$PID" || rc=$?
PID=
((rc == 0)) || fail "uvnetd exit status $rc"
((ms <= 1000)) || fail "uvnetd took ${ms} ms to exit after SIGTERM"
echo "ok: $MODE, uvnetd exited ${ms} ms after SIGTERM"
