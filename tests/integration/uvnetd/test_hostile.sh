#!/bin/bash
# One hostile vhost-user frontend against a running uvnetd with three
# ports: A (hostile), B and C (an honest pair, B -> C). While A attacks,
# B's frames keep reaching C, and uvnetd exits cleanly within 1 s of
# SIGTERM.
#   kickswap: A starts its TX ring with kick fd k1, replaces it by k2,
#             switches the ring to NOFD and keeps writing to k1 and k2
#             (issue 12, finding 4: closed kick fds left in a worker's
#             epoll set, then a call through a NULL handler);
#   fulltx:   A keeps its TX ring full, avail->idx = used->idx + num
#             (finding 5: a drain loop without a budget starved the other
#             queues and kept the workers from parking, so SIGTERM hung).
# Usage: test_hostile.sh UVNETD HOSTILE kickswap|fulltx
set -euo pipefail
UVNETD=$1 HOSTILE=$2 MODE=$3
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
"$UVNETD" --zerocopy off --port "vhost-user:$DIR/a.sock" --port "vhost-user:$DIR/b.sock" \
	--port "vhost-user:$DIR/c.sock" --ctl "$DIR/ctl.sock" >"$DIR/log" 2>&1 &
PID=$!
for _ in $(seq 100); do [[ -S "$DIR/ctl.sock" ]] && break; sleep 0.05; done
[[ -S "$DIR/ctl.sock" ]] || fail "uvnetd did not start"

"$HOSTILE" "$MODE" "$DIR/a.sock" 15 >"$DIR/hostile.out" 2>&1 &
HPID=$!
for _ in $(seq 100); do grep -q ready "$DIR/hostile.out" && break; gone "$HPID" && break; sleep 0.05; done
grep -q ready "$DIR/hostile.out" || fail "the attack did not start: $(cat "$DIR/hostile.out")"

"$HOSTILE" honest "$DIR/b.sock" "$DIR/c.sock" 3 || fail "the honest pair was disturbed"
gone "$PID" && fail "uvnetd died"
json=$("$UVNETD" ctl "$DIR/ctl.sock" show ports --json) || fail "control socket does not answer"
if [[ $MODE == fulltx ]]; then
	# the attack is real: A's frames came in all along, beside B's
	python3 -c 'import json,sys; p=json.loads(sys.argv[1])["ports"]; assert p[0]["rx_packets"] > 10000, p[0]' \
		"$json" || fail "A's full ring was not served"
fi

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
