#!/bin/bash
# Ports at run time: uvnetd started with no port (--ctl only), ports added
# and removed by name with `uvnetd ctl PATH add-port|del-port` while an
# honest pair B -> C streams numbered frames through the switch. Across
# 100 add/del cycles of a third port C gets every frame uvnetd took from B,
# once and in order; a removed port's socket is gone and its name free;
# removing a port whose frontend keeps its TX ring full leaves uvnetd and
# the pair alone; bad requests are refused with a reason, changing nothing.
# Usage: test_ports.sh UVNETD HOSTILE
set -euo pipefail
UVNETD=$1 HOSTILE=$2
DIR=$(mktemp -d /tmp/uvn-ports.XXXXXX)
PID= HPID= FPID=
cleanup() {
	local rc=$?
	set +e
	for p in $FPID $HPID $PID; do kill -KILL "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
	rm -rf "$DIR"
	exit "$rc"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; echo "--- uvnetd log:" >&2; tail -20 "$DIR/log" >&2; exit 1; }
ctl() { timeout 5 "$UVNETD" ctl "$DIR/ctl.sock" "$@"; }
names() { ctl show ports --json | python3 -c 'import json,sys; print(" ".join(p["name"] for p in json.load(sys.stdin)["ports"]))'; }
wait_ready() { for _ in $(seq 100); do grep -q ready "$1" && return 0; sleep 0.05; done; return 1; }

"$UVNETD" --ctl "$DIR/ctl.sock" --zerocopy off >"$DIR/log" 2>&1 &
PID=$!
for _ in $(seq 100); do [[ -S "$DIR/ctl.sock" ]] && break; sleep 0.05; done
[[ -S "$DIR/ctl.sock" ]] || fail "uvnetd with --ctl and no port did not start"
[[ -z $(names) ]] || fail "ports before any was added: $(names)"

ctl add-port "vhost-user:$DIR/b.sock" name=b >/dev/null || fail "add-port b"
ctl add-port "vhost-user:$DIR/c.sock,name=c" >/dev/null || fail "add-port c (name in the spec)"
ctl add-port "vhost-user:$DIR/d.sock" >/dev/null || fail "add-port d (default name)"
[[ $(names) == "b c vhost-user:$DIR/d.sock" ]] || fail "names: $(names)"
ctl del-port "vhost-user:$DIR/d.sock" >/dev/null || fail "del-port by the default name"
[[ ! -e $DIR/d.sock ]] || fail "a removed port's socket is left"

# refused, with a reason, nothing changed
out=$(ctl add-port "vhost-user:$DIR/e.sock" name=b 2>&1) && fail "a second port named b: $out"
grep -q "name exists" <<<"$out" || fail "no reason: $out"
[[ ! -e $DIR/e.sock ]] || fail "a refused port left its socket"
out=$(ctl add-port "vhost-user:$DIR/b.sock" name=b2 2>&1) && fail "a second port on b's socket: $out"
out=$(ctl add-port "vhost-user:$DIR/f.sock,queues=99" 2>&1) && fail "a bad spec: $out"
grep -q "bad port spec" <<<"$out" || fail "no reason: $out"
out=$(ctl add-port "vhost-user:$DIR/f.sock" "name=a b" 2>&1) && fail "a name with a space: $out"
out=$(ctl del-port nosuch 2>&1) && fail "del-port of no port: $out"
grep -q "no such port" <<<"$out" || fail "no reason: $out"
[[ $(names) == "b c" ]] || fail "names after refusals: $(names)"

# OpenMetrics, parsed by Prometheus' own (strict) parser: every number of
# show ports and show queues --json is there; with VALUES=1 (counters at
# rest) with the same value.
check_metrics() { # VALUES MIN_NUMBERS
	ctl show stats --format openmetrics >"$DIR/metrics" || fail "show stats --format openmetrics"
	ctl show ports --json >"$DIR/ports.json"
	ctl show queues --json >"$DIR/queues.json"
	/usr/bin/python3 - "$DIR" "$1" "$2" <<'PY' || fail "openmetrics: $(head -c 600 "$DIR/metrics")"
import json, sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
d, values, least = sys.argv[1], sys.argv[2] == "1", int(sys.argv[3])
gauges = ("queues", "size", "max_kpps", "broken", "zerocopy", "zc_held", "zc_held_peak", "offload_flags",
          "fdb_entries", "mac_limit", "mtu")  # tools/uvnetd/metrics.c: gauges[]
got = {}
for fam in text_string_to_metric_families(open(d + "/metrics").read()):
    for s in fam.samples:
        got[(s.name, tuple(sorted(s.labels.items())))] = s.value
n = 0
def want(name, labels, v, field):
    global n
    if field not in gauges:
        name += "_total"
    k = (name, tuple(sorted(labels.items())))
    assert k in got, ("missing", k)
    assert not values or got[k] == float(v), (k, got[k], v)
    n += 1
for p in json.load(open(d + "/ports.json"))["ports"]:
    for f, v in p.items():
        if isinstance(v, (int, float)):
            want("uvnetd_port_" + f, {"port": p["name"], "kind": p["kind"]}, v, f)
for q in json.load(open(d + "/queues.json"))["queues"]:
    lab = {"port": q["port"], "vq": str(q["vq"]), "dir": q["dir"]}
    for f, v in q.items():
        if isinstance(v, dict):
            for g, w in v.items():
                if isinstance(w, (int, float)):
                    want("uvnetd_queue_%s_%s" % (f, g), lab, w, g)
        elif isinstance(v, (int, float)) and f not in ("vq", "queue"):
            want("uvnetd_queue_" + f, lab, v, f)
assert n >= least, (n, least)
print("openmetrics: %d numbers found%s" % (n, " with their values" if values else ""))
PY
}

# the pair streams while a third port comes and goes 100 times
"$HOSTILE" exact "$DIR/b.sock" "$DIR/c.sock" 6 >"$DIR/pair.out" 2>&1 &
HPID=$!
wait_ready "$DIR/pair.out" || fail "the pair did not start: $(cat "$DIR/pair.out")"
# before the cycles: on a loaded machine 200 ctl calls can outlast the stream
check_metrics 0 200   # the pair's queues are there while it streams
for i in $(seq 100); do
	ctl add-port "vhost-user:$DIR/x.sock" name=x >/dev/null || fail "cycle $i: add-port x"
	ctl del-port x >/dev/null || fail "cycle $i: del-port x"
done
[[ ! -e $DIR/x.sock ]] || fail "x's socket is left after the cycles"
rc=0
wait "$HPID" || rc=$?
HPID=
cat "$DIR/pair.out"
((rc == 0)) || fail "the pair lost frames or stalled while ports came and went"
check_metrics 1 20    # at rest: the ports' counters, value for value

# a port whose frontend keeps its TX ring full, removed under it
ctl add-port "vhost-user:$DIR/a.sock,queues=2" name=a >/dev/null || fail "add-port a"
"$HOSTILE" fulltx "$DIR/a.sock" 10 >"$DIR/a.out" 2>&1 &
FPID=$!
wait_ready "$DIR/a.out" || fail "the flooder did not start: $(cat "$DIR/a.out")"
sleep 0.3
ctl del-port a >/dev/null || fail "del-port a under load"
[[ $(names) == "b c" ]] || fail "names after removing a: $(names)"
"$HOSTILE" exact "$DIR/b.sock" "$DIR/c.sock" 2 >"$DIR/pair2.out" 2>&1 || fail "the pair after a went: $(cat "$DIR/pair2.out")"
kill -0 "$PID" 2>/dev/null || fail "uvnetd died"
kill -KILL "$FPID" 2>/dev/null
wait "$FPID" 2>/dev/null || true
FPID=

kill -TERM "$PID"
rc=0
wait "$PID" || rc=$?
PID=
((rc == 0)) || fail "uvnetd exit status $rc"
[[ ! -e $DIR/b.sock && ! -e $DIR/ctl.sock ]] || fail "sockets left after exit"
echo "ok: ports added and removed at run time"
