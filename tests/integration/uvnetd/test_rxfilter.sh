#!/bin/bash
# A guest's receive filter set through its control queue (our driver: a
# port with queues=2 has one) is applied by uvnetd: frames flooded to the
# guest for another MAC are refused (counted as guest_filtered) until it
# turns promiscuous mode on; the same with a control queue set up without
# a kick fd (NOFD: uvnetd polls it). Then qmp= and nic= in port specs.
# Usage: test_rxfilter.sh UVNETD HOSTILE
set -euo pipefail
UVNETD=$1 HOSTILE=$2
DIR=$(mktemp -d /tmp/uvn-rxf.XXXXXX)
PID=
cleanup() { [[ -n "$PID" ]] && kill -TERM "$PID" 2>/dev/null && wait "$PID" 2>/dev/null; rm -rf "$DIR"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$UVNETD" --port "vhost-user:$DIR/b.sock,name=b" --port "vhost-user:$DIR/c.sock,name=c,queues=2" \
	--ctl "$DIR/ctl.sock" >"$DIR/log" 2>&1 &
PID=$!
for _ in $(seq 50); do [[ -S "$DIR/ctl.sock" ]] && break; sleep 0.1; done
[[ -S "$DIR/ctl.sock" ]] || fail "no control socket: $(cat "$DIR/log")"
"$HOSTILE" filter "$DIR/b.sock" "$DIR/c.sock" || fail "the filter was not applied: $(tail -5 "$DIR/log")"
json=$("$UVNETD" ctl "$DIR/ctl.sock" show ports --json)
python3 -c 'import json,sys
p = {x["name"]: x for x in json.loads(sys.argv[1])["ports"]}
assert p["c"]["guest_filtered"] == 200 and p["c"]["drops"] == 0, p["c"]
assert p["b"]["guest_filtered"] == 0, p["b"]' "$json" || fail "counters: $json"
"$HOSTILE" filter-polled "$DIR/b.sock" "$DIR/c.sock" ||
	fail "a control queue without a kick fd was not served: $(tail -5 "$DIR/log")"
json=$("$UVNETD" ctl "$DIR/ctl.sock" show ports --json)
python3 -c 'import json,sys
p = {x["name"]: x for x in json.loads(sys.argv[1])["ports"]}
assert p["c"]["guest_filtered"] == 400, p["c"]' "$json" || fail "counters: $json"
kill -TERM "$PID"
wait "$PID" || fail "uvnetd exit status $?"
PID=

# qmp= (a socket nobody listens on yet: uvnetd keeps trying) and nic=
"$UVNETD" --port "vhost-user:$DIR/q.sock,qmp=$DIR/qmp.sock,nic=net0-a.b_c" >"$DIR/log2" 2>&1 &
PID=$!
for _ in $(seq 50); do [[ -S "$DIR/q.sock" ]] && break; sleep 0.1; done
[[ -S "$DIR/q.sock" ]] || fail "qmp= port not created: $(cat "$DIR/log2")"
kill -TERM "$PID"
wait "$PID" || fail "uvnetd exit status $?"
PID=
for spec in "vhost-user:$DIR/x.sock,nic=a" "vhost-user:$DIR/x.sock,qmp=$DIR/qmp.sock,nic=9a" \
	"vhost-user:$DIR/x.sock,qmp=" "vhost-user:$DIR/x.sock,qmp=$DIR/qmp.sock,nic=a\"b"; do
	if "$UVNETD" --port "$spec" >"$DIR/log3" 2>&1; then fail "accepted: $spec"; fi
done
echo "PASS"
