#!/bin/bash
# uvnetd's live control socket: show ports|queues|fdb|stats (text and JSON),
# set zerocopy, bad commands refused with exit status 1, `show` and silent
# clients never parking the workers, the socket removed at exit. Then
# (issue 12) --ctl never removes a regular file or a live uvnetd's socket,
# and names with a quote, a backslash and a control character are escaped
# in every JSON answer and stats line (an honest pair of HOSTILE's drivers
# fills the fdb). Poll mode's busy and idle cycles in show stats.
# Usage: test_ctl.sh UVNETD HOSTILE
set -euo pipefail
UVNETD=$1 HOSTILE=$2
DIR=$(mktemp -d /tmp/uvn-ctl.XXXXXX)
PID=
cleanup() { [[ -n "$PID" ]] && kill -TERM "$PID" 2>/dev/null && wait "$PID" 2>/dev/null; rm -rf "$DIR"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
ctl() { "$UVNETD" ctl "$DIR/ctl.sock" "$@"; }

"$UVNETD" --port "vhost-user:$DIR/a.sock" --port "vhost-user:$DIR/b.sock,queues=2,max-kpps=300" \
	--ctl "$DIR/ctl.sock" --zerocopy auto >"$DIR/log" 2>&1 &
PID=$!
for _ in $(seq 50); do [[ -S "$DIR/ctl.sock" ]] && break; sleep 0.1; done
[[ -S "$DIR/ctl.sock" ]] || fail "no control socket: $(cat "$DIR/log")"

out=$(ctl show ports)
[[ $(grep -c '^vhost-user:' <<<"$out") == 2 ]] || fail "show ports: $out"
grep -q 'rx_packets=0' <<<"$out" || fail "show ports counters: $out"
grep -q 'b.sock .*max-kpps=300 policed=0' <<<"$out" || fail "show ports limit: $out"
json=$(ctl show ports --json)
python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert len(d["ports"])==2 and d["ports"][0]["kind"]=="vhost-user" and "tx_packets" in d["ports"][1] and d["ports"][1]["max_kpps"]==300 and d["ports"][0]["max_kpps"]==0' "$json" ||
	fail "show ports --json: $json"
json=$(ctl show queues --json)
python3 -c 'import json,sys; assert json.loads(sys.argv[1])=={"queues":[]}' "$json" || fail "show queues --json: $json"
json=$(ctl show fdb --json)
python3 -c 'import json,sys; assert json.loads(sys.argv[1])=={"fdb":[]}' "$json" || fail "show fdb --json: $json"
json=$(ctl show stats --json)
python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["zerocopy"]=="auto" and d["workers"]==1 and d["poll_busy_cycles"]==d["poll_idle_cycles"]==0' "$json" ||
	fail "show stats --json: $json"
# `show` runs beside the workers; `set` parks them once, for the change
pauses() { ctl show stats --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["worker_pauses"])'; }
p0=$(pauses)
ctl show ports >/dev/null && ctl show queues >/dev/null && ctl show fdb >/dev/null
[[ $(pauses) == "$p0" ]] || fail "show parked the workers ($p0 -> $(pauses))"
[[ $(ctl set zerocopy off) == "zerocopy off" ]] || fail "set zerocopy off"
grep -q '"zerocopy":"off"' <<<"$(ctl show stats --json)" || fail "zerocopy not off"
[[ $(pauses) == $((p0 + 1)) ]] || fail "set zerocopy: workers parked $p0 -> $(pauses) times, want one more"
if ctl set zerocopy sideways 2>/dev/null; then fail "bad mode accepted"; fi
[[ $(pauses) == $((p0 + 1)) ]] || fail "a refused set parked the workers"
if ctl show nothing 2>/dev/null; then fail "bad command accepted"; fi
# a client that connects and says nothing does not stall the daemon
python3 -c 'import socket,sys,time; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); time.sleep(1)' "$DIR/ctl.sock" &
SILENT=$!
sleep 0.1
[[ $(ctl set zerocopy on) == "zerocopy on" ]] || fail "daemon stalled by a silent client"
wait "$SILENT"
[[ $(pauses) == $((p0 + 2)) ]] || fail "a silent client parked the workers"
# Connections are served side by side: a line sent in two pieces is one
# command, answered after another client's; ten silent clients hold at
# most all slots, the oldest closed first.
python3 - "$DIR/ctl.sock" "$UVNETD" <<'PY' || fail "concurrent clients"
import socket, subprocess, sys
path, uvnetd = sys.argv[1:]
def conn():
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)  # blocking: waits while the backlog is full
    s.settimeout(5)
    return s
silent = [conn() for _ in range(10)]
a = conn()
a.sendall(b"show sta")
out = subprocess.run([uvnetd, "ctl", path, "show", "ports"], capture_output=True, text=True, timeout=5)
assert out.returncode == 0 and out.stdout.count("vhost-user:") == 2, out
a.sendall(b"ts\n")
ans = b"".join(iter(lambda: a.recv(4096), b"")).decode()
assert ans.startswith("forwarded "), ans
# 8 slots: the 10 silent ones, a and the show took 12, so the four oldest
# silent clients were closed, the rest still wait
for i, s in enumerate(silent[:4]):
    assert s.recv(1) == b"", i
for s in silent[4:]:
    s.setblocking(False)
    try:
        s.recv(1)
        raise AssertionError("a waiting client was closed")
    except BlockingIOError:
        pass
PY
# uvnetd with these arguments exits at once, with an error (not one that
# started and had to be stopped)
refused() {
	local rc=0
	timeout 5 "$UVNETD" "$@" >"$DIR/log2" 2>&1 || rc=$?
	((rc != 0 && rc != 124))
}
# --ctl at a live uvnetd's socket: refused, that one keeps answering
refused --port "vhost-user:$DIR/x.sock" --ctl "$DIR/ctl.sock" ||
	fail "a second uvnetd took a live control socket"
grep -q 'in use' "$DIR/log2" || fail "no reason given: $(cat "$DIR/log2")"
ctl show stats >/dev/null || fail "the first uvnetd lost its control socket"
kill -TERM "$PID"
wait "$PID" || fail "uvnetd exit status"
PID=
[[ ! -e "$DIR/ctl.sock" ]] || fail "control socket left behind"
grep -q 'totals' "$DIR/log" || fail "no final totals"

# max-kpps: out of range or malformed, refused with the expected form;
# a limit shows in show ports
for spec in "vhost-user:$DIR/x.sock,max-kpps=0" "vhost-user:$DIR/x.sock,max-kpps=12x" \
	"vhost-user:$DIR/x.sock,max-kpps=100001" "tap:,max-kpps=5" "vhost-user:$DIR/x.sock,max-kpps="; do
	refused --port "$spec" || fail "uvnetd started with --port $spec"
	grep -q 'max-kpps=N' "$DIR/log2" || fail "no reason given for $spec: $(cat "$DIR/log2")"
done

# --version; UVN_LOG by name: error hides info, an unknown level is said
[[ $("$UVNETD" --version) =~ ^uvnetd\ [0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "--version: $("$UVNETD" --version)"
log_of() { # UVN_LOG value -> what uvnetd --ctl (stopped at once) logged
	UVN_LOG=$1 "$UVNETD" --ctl "$DIR/log.sock" -q 2>"$DIR/log3" &
	local p=$!
	for _ in $(seq 50); do [[ -S $DIR/log.sock ]] && break; sleep 0.05; done
	kill -TERM "$p"
	wait "$p"
	cat "$DIR/log3"
}
grep -q "uvnet info: running" <<<"$(log_of info)" || fail "UVN_LOG=info: $(cat "$DIR/log3")"
grep -q "uvnet info" <<<"$(log_of error)" && fail "UVN_LOG=error still logs info"
grep -q "uvnet info" <<<"$(log_of err)" && fail "UVN_LOG=err still logs info"
grep -q "UVN_LOG=loud: not error" <<<"$(log_of loud)" || fail "UVN_LOG=loud was not refused"

# a TAP name the kernel would cut: refused, not truncated
refused --port tap:uvn-name-over-15-chars || fail "uvnetd started with a 23-character TAP name"
grep -q "interface names have 1 to 15 characters" "$DIR/log2" || fail "no reason given: $(cat "$DIR/log2")"

# a TAP uvnetd creates is up (root only: CI runs as root)
if ((EUID == 0)); then
	tap=uvnctl$$
	tap=${tap:0:15}
	"$UVNETD" --port "tap:$tap" -q >"$DIR/log4" 2>&1 &
	tpid=$!
	for _ in $(seq 50); do [[ -e /sys/class/net/$tap ]] && break; sleep 0.05; done
	flags=$(cat "/sys/class/net/$tap/flags" 2>/dev/null || echo 0)
	kill -TERM "$tpid"
	wait "$tpid" || fail "uvnetd with a TAP: exit status"
	(((flags & 1) == 1)) || fail "TAP $tap not up (flags $flags): $(cat "$DIR/log4")"
elif [[ ${CI:-} == true ]]; then
	fail "not root under CI: the TAP bring-up check cannot run"
else
	echo "note: not root, the TAP bring-up check did not run"
fi

# --ctl at a regular file: refused, the file untouched
echo "precious" >"$DIR/file"
refused --port "vhost-user:$DIR/x.sock" --ctl "$DIR/file" ||
	fail "uvnetd started with --ctl at a regular file"
[[ $(cat "$DIR/file") == precious ]] || fail "--ctl removed or changed a regular file"
grep -q 'not a socket' "$DIR/log2" || fail "no reason given: $(cat "$DIR/log2")"
[[ ! -e "$DIR/x.sock" ]] || fail "a refused start left its port socket"
# a socket file nobody listens on (left by a dead process) is replaced
python3 -c 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$DIR/stale.sock"

# Strings in JSON: a port whose path holds a quote, a backslash and a
# control character, in every writer (ctl show ports/fdb, --json stats).
WEIRD="$DIR/q\"b\\c"$'\x01'".sock"
"$UVNETD" --port "vhost-user:$WEIRD" --port "vhost-user:$DIR/c.sock" --ctl "$DIR/stale.sock" \
	--json --stats-interval 0.2 >"$DIR/out" 2>"$DIR/log" &
PID=$!
for _ in $(seq 50); do [[ -S "$DIR/c.sock" ]] && break; sleep 0.1; done
[[ -S "$DIR/c.sock" ]] || fail "uvnetd on a stale control socket did not start: $(cat "$DIR/log")"
ctl() { "$UVNETD" ctl "$DIR/stale.sock" "$@"; }
"$HOSTILE" honest "$WEIRD" "$DIR/c.sock" 1 >/dev/null || fail "traffic from the oddly named port"
check_json() { # WHAT JSON PYTHON-CHECK (d: the object, w: the expected name)
	python3 -c 'import json,sys; d=json.loads(sys.argv[1]); w="vhost-user:"+sys.argv[2]; '"$3" "$2" "$WEIRD" ||
		fail "$1: $2"
}
check_json "show ports --json" "$(ctl show ports --json)" 'assert d["ports"][0]["name"]==w, d'
check_json "show fdb --json" "$(ctl show fdb --json)" 'assert w in [e["port"] for e in d["fdb"]], d'
kill -TERM "$PID"
wait "$PID" || fail "uvnetd exit status"
PID=
n=0
while IFS= read -r line; do
	check_json "--json stats line" "$line" 'p=d["ports"][0]; assert p["name"]==w and p["mtu_drops"]==0 and p["guest_filtered"]==0, d'
	n=$((n + 1))
done <"$DIR/out"
((n >= 2)) || fail "stats lines: $(cat "$DIR/out")"
grep -q '"final":true' "$DIR/out" || fail "no final JSON totals"

# Poll mode counts where its worker's cycles go (event mode, above, does
# not): idle rounds while nothing comes in, busy ones when frames do.
"$UVNETD" --poll --port "vhost-user:$DIR/p.sock" --port "vhost-user:$DIR/q.sock" \
	--ctl "$DIR/poll.sock" >"$DIR/log" 2>&1 &
PID=$!
for _ in $(seq 50); do [[ -S "$DIR/poll.sock" ]] && break; sleep 0.1; done
[[ -S "$DIR/poll.sock" ]] || fail "uvnetd --poll did not start: $(cat "$DIR/log")"
ctl() { "$UVNETD" ctl "$DIR/poll.sock" "$@"; }
cycles() { ctl show stats --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["poll_busy_cycles"], d["poll_idle_cycles"])'; }
read -r b0 i0 <<<"$(cycles)"
sleep 0.2
read -r b1 i1 <<<"$(cycles)"
((b1 == b0 && i1 > i0)) || fail "poll cycles with no guest: busy $b0 -> $b1, idle $i0 -> $i1"
timeout 10 "$HOSTILE" honest "$DIR/p.sock" "$DIR/q.sock" 1 >/dev/null || fail "traffic in poll mode"
read -r b2 i2 <<<"$(cycles)"
((b2 > b1 && i2 > i1)) || fail "poll cycles with traffic: busy $b1 -> $b2, idle $i1 -> $i2"
# the traffic over, rounds are idle again (not every round since a frame)
sleep 0.2
read -r b3 i3 <<<"$(cycles)"
((b3 == b2 && i3 > i2)) || fail "poll cycles after traffic: busy $b2 -> $b3, idle $i2 -> $i3"
out=$(ctl show stats)
grep -Eq '^poll cycles busy [0-9]+ idle [0-9]+ \([0-9.]+ % busy since start\)$' <<<"$out" || fail "show stats: $out"
out=$(ctl show stats --format openmetrics)
grep -Eq '^uvnetd_poll_busy_cycles_total [1-9][0-9]*$' <<<"$out" || fail "openmetrics: $out"
kill -TERM "$PID"
wait "$PID" || fail "uvnetd --poll exit status"
PID=
echo "ok"
