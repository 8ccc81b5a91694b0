#!/bin/bash
# FDB control through the control socket (issue 14): `fdb show` (text and
# JSON, VLAN and static flag), `fdb add MAC port=NAME [vlan=N]` (static:
# traffic does not move it; only on a port of that VLAN), `fdb del`, `fdb flush [port=NAME]` (learned
# entries only), bad requests refused with a reason; the ports' VLANs,
# mac-limit and FDB counters in `show ports`. An honest pair of HOSTILE's
# drivers (B broadcasts from 02:00:00:00:00:bb, C counts) makes the
# learned entries.
# Usage: test_fdb.sh UVNETD HOSTILE
set -euo pipefail
UVNETD=$1 HOSTILE=$2
DIR=$(mktemp -d /tmp/uvn-fdb.XXXXXX)
PID=
cleanup() {
	local rc=$?
	set +e
	[[ -n "$PID" ]] && kill -TERM "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
	rm -rf "$DIR"
	exit "$rc"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; echo "--- uvnetd log:" >&2; tail -20 "$DIR/log" >&2; exit 1; }
ctl() { timeout 5 "$UVNETD" ctl "$DIR/ctl.sock" "$@"; }
refused() { # WORDS... : the command fails, with an error on stderr
	local out
	out=$(ctl "$@" 2>&1) && fail "accepted: $* -> $out"
	grep -q '^error: ' <<<"$out" || fail "no reason for '$*': $out"
}
fdb() { ctl fdb show --json; }
# PYTHON-CHECK on the fdb list (e: the entries)
check_fdb() { fdb | python3 -c 'import json,sys; e=json.load(sys.stdin)["fdb"]; '"$1" || fail "$2: $(fdb)"; }
traffic() { "$HOSTILE" honest "$DIR/b.sock" "$DIR/c.sock" 1 >/dev/null || fail "traffic B -> C"; }

"$UVNETD" --port "vhost-user:$DIR/b.sock,name=b,mac-limit=1" --port "vhost-user:$DIR/c.sock,name=c" \
	--port "vhost-user:$DIR/d.sock,name=d,trunks=10:20:100-199" \
	--port "vhost-user:$DIR/e.sock,name=e,vlan=10" --ctl "$DIR/ctl.sock" >"$DIR/log" 2>&1 &
PID=$!
for _ in $(seq 100); do [[ -S "$DIR/ctl.sock" ]] && break; sleep 0.05; done
[[ -S "$DIR/ctl.sock" ]] || fail "uvnetd did not start"

[[ $(fdb) == '{"fdb":[]}' ]] || fail "an empty fdb: $(fdb)"
[[ $(ctl show fdb --json) == '{"fdb":[]}' ]] || fail "show fdb --json: $(ctl show fdb --json)"
ctl show ports --json | python3 -c '
import json, sys
p = {x["name"]: x for x in json.load(sys.stdin)["ports"]}
assert p["b"]["mac_limit"] == 1 and p["b"]["fdb_entries"] == 0 and p["b"]["mac_limit_drops"] == 0, p["b"]
assert p["b"]["vlans"] == "all" and p["c"]["mac_limit"] == 0, p
assert p["d"]["vlans"] == "trunks=10:20:100-199" and p["e"]["vlans"] == "vlan=10", p
assert all(x["vlan_drops"] == 0 for x in p.values()), p
' || fail "show ports --json: $(ctl show ports --json)"
out=$(ctl show ports)
grep -q '^b .* mac-limit=1 fdb_entries=0 mac_limit_drops=0' <<<"$out" || fail "show ports: $out"
grep -q '^d .* trunks=10:20:100-199 vlan_drops=0' <<<"$out" || fail "show ports: $out"

# learned: B's address on b, VLAN 0, not static
traffic
check_fdb 'assert [(x["vlan"], x["mac"], x["port"], x["static"]) for x in e] == [(0, "0200000000bb", "b", False)], e' \
	"learned entry"
ctl show ports --json | python3 -c 'import json,sys; p=json.load(sys.stdin)["ports"][0]; assert p["fdb_entries"]==1, p' ||
	fail "fdb_entries of b: $(ctl show ports --json)"

# static entries: listed with their VLAN, never moved by traffic
[[ $(ctl fdb add 02:00:00:00:00:01 port=c vlan=10) == "static entry added (vlan 10, port c)" ]] ||
	fail "fdb add"
ctl fdb add 02:00:00:00:00:BB port=c >/dev/null || fail "fdb add over a learned entry"
traffic
check_fdb 'assert sorted((x["vlan"], x["mac"], x["port"], x["static"]) for x in e) == [(0, "0200000000bb", "c", True), (10, "020000000001", "c", True)], e' \
	"static entries after traffic"
out=$(ctl fdb show)
grep -Eq '^ +10  02:00:00:00:00:01  c +static$' <<<"$out" || fail "fdb show text: $out"
ctl show ports --json | python3 -c 'import json,sys; p=json.load(sys.stdin)["ports"][0]; assert p["fdb_entries"]==0, p' ||
	fail "a static entry counted as learned: $(ctl show ports --json)"

# del: learned again from traffic; a second del finds nothing
[[ $(ctl fdb del 02:00:00:00:00:bb) == "entry removed" ]] || fail "fdb del"
refused fdb del 02:00:00:00:00:bb
refused fdb del 02:00:00:00:00:01 vlan=20
traffic
check_fdb 'assert sorted((x["vlan"], x["mac"], x["port"], x["static"]) for x in e) == [(0, "0200000000bb", "b", False), (10, "020000000001", "c", True)], e' \
	"learned again after del"

# flush: learned entries of a port, or of all; static ones stay
[[ $(ctl fdb flush port=c) == "flushed 0 learned entries" ]] || fail "fdb flush port=c"
[[ $(ctl fdb flush port=b) == "flushed 1 learned entries" ]] || fail "fdb flush port=b"
check_fdb 'assert [(x["mac"], x["static"]) for x in e] == [("020000000001", True)], e' "after flush port=b"
traffic
[[ $(ctl fdb flush) == "flushed 1 learned entries" ]] || fail "fdb flush"
check_fdb 'assert [x["mac"] for x in e] == ["020000000001"], e' "after flush"

# refused, with a reason
refused fdb add 02:00:00:00:00:02 port=nosuch
refused fdb add 02:00:00:00:00:02 port=e vlan=20
refused fdb add 02:00:00:00:00:02 port=e
refused fdb add 02:00:00:00:00:02 port=d vlan=30
ctl fdb add 02:00:00:00:00:03 port=e vlan=10 >/dev/null || fail "fdb add on an access port of the VLAN"
ctl fdb add 02:00:00:00:00:04 port=d vlan=150 >/dev/null || fail "fdb add on a trunk of the VLAN"
ctl fdb del 02:00:00:00:00:03 vlan=10 >/dev/null && ctl fdb del 02:00:00:00:00:04 vlan=150 >/dev/null ||
	fail "fdb del with a VLAN"
refused fdb add 02:00:00:00:00:02 port=c vlan=4095
refused fdb add 02:00:00:00:00:02 port=c vlan=x
refused fdb add 01:00:5e:00:00:01 port=c
refused fdb add 02:00:00:00:00 port=c
refused fdb add 02:00:00:00:00:0g port=c
refused fdb add 02:00:00:00:00:02:03 port=c
refused fdb add 02:00:00:00:00:02
refused fdb flush port=nosuch
refused fdb flush port=c extra
refused fdb show --yaml
refused fdb sideways
check_fdb 'assert [x["mac"] for x in e] == ["020000000001"], e' "after refusals"

# a port removed takes its static entries along
ctl del-port c >/dev/null || fail "del-port c"
[[ $(fdb) == '{"fdb":[]}' ]] || fail "a removed port's static entry: $(fdb)"
kill -TERM "$PID"
wait "$PID" || fail "uvnetd exit status"
PID=
echo "ok"
