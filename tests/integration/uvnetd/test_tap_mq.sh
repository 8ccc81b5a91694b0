#!/bin/bash
# Multi-queue TAP ports with two workers (--cpus 0,1): uvnetd switches
# between two TAP devices, each moved into a network namespace of its own
# with an address, and the namespaces talk both ways (UDP echoes from many
# source ports, so the kernel spreads the flows over the queues).
# Asserts: each TAP has a queue per worker; the frames uvnetd took from and
# gave to each TAP are the ones the kernel counted on the device, exactly
# (no counter lost to a race); the queues' counters add up to the port's;
# every queue carried frames both ways; no drops, no errors.
# Usage: test_tap_mq.sh UVNETD
set -euo pipefail
UVNETD=$1
if [[ $(id -u) != 0 ]]; then
	echo "SKIP: needs root (TAP devices, network namespaces)"
	exit 77
fi
DIR=$(mktemp -d /tmp/uvn-tapmq.XXXXXX)
TAG=$$
NS0=uvnmq0-$TAG NSA=uvnmqa-$TAG NSB=uvnmqb-$TAG
TA=uvnmqa$TAG TB=uvnmqb$TAG
TA=${TA:0:15} TB=${TB:0:15}
PID= EA= EB=
cleanup() {
	local rc=$?
	set +e
	for p in $EA $EB $PID; do kill -KILL "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
	for ns in $NSA $NSB $NS0; do ip netns del "$ns" 2>/dev/null; done
	rm -rf "$DIR"
	exit "$rc"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; echo "--- uvnetd log:" >&2; tail -20 "$DIR/log" >&2; exit 1; }
ctl() { timeout 5 "$UVNETD" ctl "$DIR/ctl.sock" "$@"; }
in_ns() { local ns=$1; shift; ip netns exec "$ns" "$@"; }
kstat() { in_ns "$1" cat "/sys/class/net/$2/statistics/$3"; }

for ns in $NS0 $NSA $NSB; do
	ip netns add "$ns"
	in_ns "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
done
ip netns exec "$NS0" "$UVNETD" --cpus 0,1 --ctl "$DIR/ctl.sock" --port "tap:$TA" --port "tap:$TB" \
	--zerocopy off >"$DIR/log" 2>&1 &
PID=$!
for _ in $(seq 100); do [[ -S $DIR/ctl.sock ]] && break; sleep 0.05; done
[[ -S $DIR/ctl.sock ]] || fail "uvnetd did not start"
for _ in $(seq 100); do
	[[ $(ctl show ports --json | python3 -c 'import json,sys; print(sum(p["queues"] for p in json.load(sys.stdin)["ports"]))') == 4 ]] && break
	sleep 0.05
done
ctl show ports --json | python3 -c '
import json, sys
for p in json.load(sys.stdin)["ports"]:
    assert p["queues"] == 2, (p["name"], p["queues"])' || fail "a TAP without a queue per worker: $(ctl show ports)"

# the devices move away from uvnetd (it keeps its queues' fds)
in_ns "$NS0" ip link set "$TA" netns "$NSA"
in_ns "$NS0" ip link set "$TB" netns "$NSB"
in_ns "$NSA" ip addr add 198.18.77.1/24 dev "$TA"
in_ns "$NSB" ip addr add 198.18.77.2/24 dev "$TB"
in_ns "$NSA" ip link set "$TA" up
in_ns "$NSB" ip link set "$TB" up

# UDP echo both ways, from 64 source ports each, so the kernel spreads
# the flows over the queues (one flow per source port)
echo='
import select, socket, sys, time
if sys.argv[1] == "serve":
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("", 7777))
    open(sys.argv[2], "w").close()
    while True:
        b, a = s.recvfrom(2048)
        s.sendto(b, a)
socks = []
for port in range(40000, 40064):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("", port))
    socks.append(s)
got = 0
for s in socks:
    for _ in range(10):
        s.sendto(b"x" * 200, (sys.argv[2], 7777))
    time.sleep(0.002)
end = time.time() + 3
while got < 640 and time.time() < end:
    for s in select.select(socks, [], [], 0.2)[0]:
        s.recv(2048)
        got += 1
print(got)'
# (ip netns exec becomes the server: $! is its pid)
ip netns exec "$NSA" python3 -c "$echo" serve "$DIR/a.up" >/dev/null 2>&1 &
EA=$!
ip netns exec "$NSB" python3 -c "$echo" serve "$DIR/b.up" >/dev/null 2>&1 &
EB=$!
for _ in $(seq 100); do [[ -e $DIR/a.up && -e $DIR/b.up ]] && break; sleep 0.05; done
got=$(in_ns "$NSA" python3 -c "$echo" send 198.18.77.2)
((got > 0)) || fail "no echo A -> B -> A"
got=$(in_ns "$NSB" python3 -c "$echo" send 198.18.77.1)
((got > 0)) || fail "no echo B -> A -> B"
kill "$EA" "$EB"
wait "$EA" "$EB" 2>/dev/null || true
sleep 0.5

ctl show ports --json >"$DIR/ports.json" || fail "show ports"
ctl show queues --json >"$DIR/queues.json" || fail "show queues"
echo "$(kstat "$NSA" "$TA" tx_packets) $(kstat "$NSA" "$TA" rx_packets)" \
	"$(kstat "$NSB" "$TB" tx_packets) $(kstat "$NSB" "$TB" rx_packets)" >"$DIR/kernel"
python3 - "$DIR" "tap:$TA" "tap:$TB" <<'PY' || fail "counters: $(cat "$DIR/ports.json") $(cat "$DIR/kernel")"
import json, sys
d, a, b = sys.argv[1:4]
ports = {p["name"]: p for p in json.load(open(d + "/ports.json"))["ports"]}
queues = json.load(open(d + "/queues.json"))["queues"]
k = [int(x) for x in open(d + "/kernel").read().split()]
kernel = {a: (k[0], k[1]), b: (k[2], k[3])}  # device tx (to uvnetd), rx (from it)
for name in (a, b):
    p = ports[name]
    ktx, krx = kernel[name]
    assert p["rx_packets"] == ktx, (name, "uvnetd rx", p["rx_packets"], "kernel tx", ktx)
    assert p["tx_packets"] == krx, (name, "uvnetd tx", p["tx_packets"], "kernel rx", krx)
    assert p["rx_packets"] > 600 and p["tx_packets"] > 600, (name, p)
    assert p["drops"] == 0 and p["errors"] == 0 and p["mtu_drops"] == 0, (name, p)
    qs = [q for q in queues if q["port"] == name]
    assert [q["queue"] for q in qs] == [0, 1], (name, qs)
    for f in ("rx_packets", "rx_bytes", "tx_packets", "tx_bytes"):
        assert sum(q["dev"][f] for q in qs) == p[f], (name, f)
    for q in qs:
        assert q["dev"]["rx_packets"] > 0, (name, "queue", q["queue"], "read nothing")
        assert q["dev"]["tx_packets"] > 0, (name, "queue", q["queue"], "wrote nothing")
PY

kill -TERM "$PID"
wait "$PID" || fail "uvnetd exited with $?"
PID=
echo "ok: 2 TAPs x 2 queues, 2 workers, counters exact"
