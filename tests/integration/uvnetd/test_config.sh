#!/bin/bash
# uvnetd's config file and what goes with it: start-up from --config (the
# command line's single-valued options win, ports add up), errors naming
# the file and line, `ctl save` and a restart from the saved file giving the
# same ports, SIGHUP applying the port difference while an honest pair
# B -> C streams numbered frames through an unchanged port (nothing lost),
# a bad file changing nothing, --socket-group/--socket-mode and per-port
# group=/mode= (a member of the group connects, anyone else cannot), and
# sd_notify readiness (READY=1 once the ports listen, RELOADING=1/READY=1
# around a reload, STOPPING=1) when uvnetd is built with libsystemd.
# Usage: test_config.sh UVNETD HOSTILE notify|no-notify
set -euo pipefail
UVNETD=$1 HOSTILE=$2 NOTIFY=$3
DIR=$(mktemp -d /tmp/uvn-config.XXXXXX)
chmod 755 "$DIR" # the socket test's other users reach the sockets
PID= HPID= GROUP=uvnet-test MADE_GROUP=
cleanup() {
	local rc=$?
	set +e
	for p in $HPID $PID; do kill -KILL "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
	[[ -n $MADE_GROUP ]] && groupdel "$GROUP"
	rm -rf "$DIR"
	exit "$rc"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; echo "--- uvnetd log:" >&2; tail -20 "$DIR/log" >&2; exit 1; }
ctl() { timeout 5 "$UVNETD" ctl "$DIR/ctl.sock" "$@"; }
names() { ctl show ports --json | python3 -c 'import json,sys; print(" ".join(p["name"] for p in json.load(sys.stdin)["ports"]))'; }
zc() { ctl show stats --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["zerocopy"])'; }
# what show ports says of each port, counters aside
shape() { ctl show ports --json | python3 -c 'import json,sys
for p in json.load(sys.stdin)["ports"]: print(p["name"], p["kind"], p["max_kpps"])'; }
wait_ready() { for _ in $(seq 100); do grep -q ready "$1" && return 0; sleep 0.05; done; return 1; }
start() { # uvnetd ARGS..., up once its control socket answers
	"$UVNETD" "$@" >"$DIR/log" 2>&1 &
	PID=$!
	for _ in $(seq 100); do ctl show stats >/dev/null 2>&1 && return 0; sleep 0.05; done
	fail "uvnetd $* did not start"
}
stop() {
	kill -TERM "$PID"
	local rc=0
	wait "$PID" || rc=$?
	PID=
	((rc == 0)) || fail "uvnetd exit status $rc"
}
# uvnetd with these arguments exits at once, with an error
refused() {
	local rc=0
	timeout 5 "$UVNETD" "$@" >"$DIR/log2" 2>&1 || rc=$?
	((rc != 0 && rc != 124))
}
# wait until `show ports` lists these names (a reload is applied)
wait_names() { for _ in $(seq 100); do [[ $(names) == "$1" ]] && return 0; sleep 0.05; done; return 1; }

# --- start-up from a file; the command line wins and adds ports
cat >"$DIR/a.conf" <<EOF
# uvnetd test configuration
port vhost-user:$DIR/a.sock,name=a

   port   vhost-user:$DIR/b.sock,name=b,max-kpps=50
ctl $DIR/ctl.sock
zerocopy off
quiet
EOF
start --config "$DIR/a.conf"
[[ $(names) == "a b" ]] || fail "ports from the file: $(names)"
[[ $(zc) == off ]] || fail "zerocopy from the file: $(zc)"
stop
start --config "$DIR/a.conf" --zerocopy on --port "vhost-user:$DIR/c.sock,name=c"
[[ $(names) == "a b c" ]] || fail "file and command-line ports: $(names)"
[[ $(zc) == on ]] || fail "the command line's zerocopy did not win: $(zc)"

# --- save: what runs now, ports added at run time in, removed ones out
ctl add-port "vhost-user:$DIR/d.sock,queues=2" name=d >/dev/null || fail "add-port d"
ctl del-port a >/dev/null || fail "del-port a"
# FILE relative to the client's directory, not uvnetd's
out=$(cd "$DIR" && timeout 5 "$UVNETD" ctl "$DIR/ctl.sock" save saved.conf) || fail "save: $out"
grep -q "saved.*3 ports.*$DIR/saved.conf" <<<"$out" || fail "save answered: $out"
before=$(shape)
[[ $(ls "$DIR") == *saved.conf.* ]] && fail "save left a temporary file: $(ls "$DIR")"
out=$(ctl save "$DIR/no/such/dir.conf" 2>&1) && fail "save into a missing directory: $out"
grep -q "^error:" <<<"$out" || fail "no error answered: $out"
stop
grep -q "^zerocopy on$" "$DIR/saved.conf" || fail "saved file: no zerocopy on: $(cat "$DIR/saved.conf")"
grep -q "port vhost-user:$DIR/d.sock,queues=2,name=d" "$DIR/saved.conf" ||
	fail "saved file: no port d as given: $(cat "$DIR/saved.conf")"
start --config "$DIR/saved.conf"
[[ $(shape) == "$before" ]] || fail "restart from the saved file: $(shape), before: $before"
# saved over its own --config: the same file again, the same ports
ctl save >/dev/null || fail "save to the --config file"
stop
start --config "$DIR/saved.conf"
[[ $(shape) == "$before" ]] || fail "after save to --config: $(shape), before: $before"
stop
# a file written by save, with the command line it came from: one port each
start --config "$DIR/saved.conf" --port "vhost-user:$DIR/c.sock,name=c"
[[ $(names) == "$(cut -d' ' -f1 <<<"$before" | tr '\n' ' ' | sed 's/ $//')" ]] ||
	fail "ports given in the file and on the command line: $(names)"
stop

# --- static FDB entries: from the file and the command line, saved, and a
# reload makes them the file's
fdbs() { ctl fdb show --json | python3 -c 'import json,sys
print(" ".join(sorted("%s@%s/%d" % (e["mac"], e["port"], e["vlan"]) for e in json.load(sys.stdin)["fdb"] if e["static"])))'; }
cat >"$DIR/f.conf" <<EOF
ctl $DIR/ctl.sock
port vhost-user:$DIR/a.sock,name=a
port vhost-user:$DIR/b.sock,name=b
fdb-static 02:00:00:00:00:0a port=a
EOF
start --config "$DIR/f.conf" --fdb-static "02:00:00:00:00:0b port=b vlan=0"
[[ $(fdbs) == "02000000000a@a/0 02000000000b@b/0" ]] || fail "fdb-static at start-up: $(fdbs)"
ctl fdb add 02:00:00:00:00:0c port=b >/dev/null || fail "fdb add 0c"
ctl save "$DIR/f2.conf" >/dev/null || fail "save with static entries"
stop
(($(grep -c "^fdb-static " "$DIR/f2.conf") == 3)) || fail "saved static entries: $(cat "$DIR/f2.conf")"
start --config "$DIR/f2.conf"
[[ $(fdbs) == "02000000000a@a/0 02000000000b@b/0 02000000000c@b/0" ]] || fail "from the saved file: $(fdbs)"
ctl fdb add 02:00:00:00:00:0d port=a >/dev/null || fail "fdb add 0d"
sed -i '/:0c port=/d' "$DIR/f2.conf"
kill -HUP "$PID"
for _ in $(seq 100); do grep -q "static FDB entries set" "$DIR/log" && break; sleep 0.05; done
[[ $(fdbs) == "02000000000a@a/0 02000000000b@b/0" ]] || fail "after a reload: $(fdbs)"
stop
refused --config "$DIR/f.conf" --fdb-static "02:00:00:00:00:0e port=nope" || fail "started with a static entry on no port"
grep -q "fdb-static 02:00:00:00:00:0e port=nope: no port 'nope'" "$DIR/log2" || fail "no reason: $(cat "$DIR/log2")"
refused --config "$DIR/f.conf" --fdb-static "01:00:00:00:00:0e port=a" || fail "started with a multicast static entry"
grep -q "unicast" "$DIR/log2" || fail "no reason for a multicast entry: $(cat "$DIR/log2")"

# --- errors name the file and the line; nothing starts
bad() { # LINE MESSAGE CONTENT: uvnetd refuses the file, saying FILE:LINE and why
	printf '%s\n' "$3" >"$DIR/bad.conf"
	refused --config "$DIR/bad.conf" || fail "uvnetd started with: $3"
	grep -q "$DIR/bad.conf:$1: .*$2" "$DIR/log2" || fail "no file:line or reason for '$3': $(cat "$DIR/log2")"
}
bad 2 "unknown key 'colour'" $'ctl /x.sock\ncolour blue'
bad 2 "bad fdb-static 'zz port=a'" $'ctl /x.sock\nfdb-static zz port=a'
bad 3 "poll takes no value" $'ctl /x.sock\n\npoll yes'
bad 1 "cpus needs a value" "cpus"
bad 2 "bad value 'sideways' for zerocopy" $'# c\nzerocopy sideways'
bad 2 "bad port 'vhost-user:/x.sock,queues=99'.*max-kpps=N" $'ctl /x.sock\nport vhost-user:/x.sock,queues=99'
bad 3 "port 'p': a port of that name" \
	$'port vhost-user:/x.sock,name=p\n#\nport vhost-user:/y.sock,name=p'
bad 1 "a config file cannot name another" "config /etc/passwd"
refused --config "$DIR/missing.conf" || fail "uvnetd started with a missing config file"
grep -q "missing.conf: No such file" "$DIR/log2" || fail "missing file: $(cat "$DIR/log2")"
refused --port "vhost-user:$DIR/x.sock" --socket-mode 0999 || fail "--socket-mode 0999 accepted"
grep -q "bad value '0999' for --socket-mode" "$DIR/log2" || fail "no reason: $(cat "$DIR/log2")"
refused --port "vhost-user:$DIR/x.sock" --socket-group no-such-group-here || fail "a missing group accepted"

# --- SIGHUP: the port difference, the pair on b and c streaming through it
cat >"$DIR/r.conf" <<EOF
ctl $DIR/ctl.sock
port vhost-user:$DIR/b.sock,name=b
port vhost-user:$DIR/c.sock,name=c
port vhost-user:$DIR/x1.sock,name=x1
port vhost-user:$DIR/m.sock,name=m
zerocopy off
EOF
start --config "$DIR/r.conf"
"$HOSTILE" exact "$DIR/b.sock" "$DIR/c.sock" 6 >"$DIR/pair.out" 2>&1 &
HPID=$!
wait_ready "$DIR/pair.out" || fail "the pair did not start: $(cat "$DIR/pair.out")"
# x1 goes, x2 comes, m is made again with two queues, b and c stay
cp "$DIR/r.conf" "$DIR/r1.conf"
sed -e 's/x1/x2/g' -e 's/name=m$/name=m,queues=2/' "$DIR/r1.conf" >"$DIR/r2.conf"
for i in $(seq 10); do
	cp "$DIR/r2.conf" "$DIR/r.conf"
	kill -HUP "$PID"
	wait_names "b c x2 m" || fail "reload $i: ports $(names)"
	[[ ! -e $DIR/x1.sock ]] || fail "reload $i: x1's socket is left"
	cp "$DIR/r1.conf" "$DIR/r.conf"
	kill -HUP "$PID"
	wait_names "b c x1 m" || fail "reload $i back: ports $(names)"
done
rc=0
wait "$HPID" || rc=$?
HPID=
cat "$DIR/pair.out"
((rc == 0)) || fail "the pair on unchanged ports lost frames or stalled through the reloads"
grep -q "port b removed\|port c removed" "$DIR/log" && fail "an unchanged port was re-created"
(($(grep -c "port m added" "$DIR/log") == 21)) || fail "m was not re-created on each reload"

# zerocopy changes live (after the stream: switching it under traffic is
# `set zerocopy`'s own business, tested with it)
sed -i 's/zerocopy off/zerocopy on/' "$DIR/r.conf"
kill -HUP "$PID"
for _ in $(seq 100); do [[ $(zc) == on ]] && break; sleep 0.05; done
[[ $(zc) == on ]] || fail "reload: zerocopy not changed live: $(zc)"
[[ $(names) == "b c x1 m" ]] || fail "reload of zerocopy alone changed the ports: $(names)"

# options that cannot change live are said to need a restart
echo "cpus 0" >>"$DIR/r.conf"
kill -HUP "$PID"
for _ in $(seq 100); do grep -q "cpus changed.*needs a restart" "$DIR/log" && break; sleep 0.05; done
grep -q "cpus changed.*needs a restart" "$DIR/log" || fail "no 'needs a restart' for cpus"

# a bad file changes nothing, and says why
cp "$DIR/r.conf" "$DIR/good.conf"
printf 'ctl %s\nport vhost-user:%s/y.sock,name=y\nwhat is this\n' "$DIR" "$DIR" >"$DIR/r.conf"
kill -HUP "$PID"
for _ in $(seq 100); do grep -q "not applied" "$DIR/log" && break; sleep 0.05; done
grep -q "$DIR/r.conf:3: unknown key 'what'" "$DIR/log" || fail "bad reload: no file:line"
grep -q "r.conf not applied, nothing changed" "$DIR/log" || fail "bad reload: not said"
[[ $(names) == "b c x1 m" ]] || fail "a bad file changed the ports: $(names)"
[[ ! -e $DIR/y.sock ]] || fail "a bad file made a socket"
# a file that cannot be read: the same
rm "$DIR/r.conf"
kill -HUP "$PID"
for _ in $(seq 100); do (($(grep -c "not applied" "$DIR/log") == 2)) && break; sleep 0.05; done
(($(grep -c "not applied" "$DIR/log") == 2)) || fail "a missing file on reload: not said"
[[ $(names) == "b c x1 m" ]] || fail "a missing file changed the ports: $(names)"
kill -0 "$PID" || fail "uvnetd died"
stop

# --- socket group and mode: a member of the group connects, others cannot
if [[ $(id -u) != 0 ]]; then
	[[ ${CI:-} == true ]] && fail "the socket ownership check needs root under CI"
	echo "SKIP: socket group/mode: not root (cannot make a group nor be another user)"
else
	if ! getent group "$GROUP" >/dev/null; then
		groupadd --system "$GROUP" || fail "groupadd $GROUP"
		MADE_GROUP=1
	fi
	gid=$(getent group "$GROUP" | cut -d: -f3)
	start --ctl "$DIR/ctl.sock" --socket-group "$GROUP" --socket-mode 0660 \
		--port "vhost-user:$DIR/g.sock,name=g" --port "vhost-user:$DIR/o.sock,name=o,mode=0600" \
		--port "vhost-user:$DIR/p.sock,name=p,group=0,mode=0666"
	[[ $(stat -c '%G %a' "$DIR/g.sock") == "$GROUP 660" ]] || fail "g.sock: $(stat -c '%G %a' "$DIR/g.sock")"
	[[ $(stat -c '%G %a' "$DIR/o.sock") == "$GROUP 600" ]] || fail "o.sock: $(stat -c '%G %a' "$DIR/o.sock")"
	[[ $(stat -c '%g %a' "$DIR/p.sock") == "0 666" ]] || fail "p.sock: $(stat -c '%g %a' "$DIR/p.sock")"
	# nobody, as a member of the group (libvirt's qemu user) or not
	as() { # GID SOCK: connect as uid 65534 with only that group
		setpriv --reuid=65534 --regid="$1" --clear-groups /usr/bin/python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1])
except PermissionError:
    sys.exit(3)' "$2"
	}
	as "$gid" "$DIR/g.sock" || fail "a member of $GROUP cannot connect to g.sock"
	rc=0; as 65534 "$DIR/g.sock" || rc=$?
	((rc == 3)) || fail "a non-member connected to g.sock (or failed otherwise: $rc)"
	rc=0; as "$gid" "$DIR/o.sock" || rc=$?
	((rc == 3)) || fail "mode=0600 did not keep the group out of o.sock ($rc)"
	as 65534 "$DIR/p.sock" || fail "mode=0666 did not let anyone in p.sock"
	# ports added at run time get them too; a bad group or mode refuses the port
	ctl add-port "vhost-user:$DIR/h.sock" name=h >/dev/null || fail "add-port h"
	[[ $(stat -c '%G %a' "$DIR/h.sock") == "$GROUP 660" ]] || fail "h.sock: $(stat -c '%G %a' "$DIR/h.sock")"
	for spec in "vhost-user:$DIR/i.sock,group=no-such-group-here" "vhost-user:$DIR/i.sock,mode=0999" \
		"vhost-user:$DIR/i.sock,client,mode=0660" "tap:uvncfg0,group=0"; do
		out=$(ctl add-port "$spec" 2>&1) && fail "add-port $spec: $out"
		grep -q "bad port spec" <<<"$out" || fail "no reason for $spec: $out"
	done
	[[ ! -e $DIR/i.sock ]] || fail "a refused port left its socket"
	[[ $(names) == "g o p h" ]] || fail "names: $(names)"
	stop
	[[ ! -e $DIR/g.sock ]] || fail "g.sock left"
	echo "ok: socket group and mode"
fi

# --- sd_notify: READY=1 once the ports listen, around a reload, at stop
if [[ $NOTIFY != notify ]]; then
	[[ ${CI:-} == true ]] && fail "uvnetd was built without libsystemd: the sd_notify check cannot run under CI"
	echo "SKIP: sd_notify: uvnetd was built without libsystemd (the rest was checked)"
else
	cat >"$DIR/n.conf" <<EOF
port vhost-user:$DIR/n1.sock,name=n1
port vhost-user:$DIR/n2.sock,name=n2,queues=4
EOF
	python3 - "$UVNETD" "$DIR" <<'PY' || fail "sd_notify"
import os, signal, socket, subprocess, sys
uvnetd, d = sys.argv[1], sys.argv[2]
n = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
n.bind(d + "/notify.sock")
n.settimeout(10)
env = dict(os.environ, NOTIFY_SOCKET=d + "/notify.sock")
log = open(d + "/nlog", "w")
p = subprocess.Popen([uvnetd, "--config", d + "/n.conf", "-q"], env=env, stderr=log)
def expect(what):
    while True:
        try:
            msg = n.recv(4096).decode()
        except socket.timeout:
            p.kill()
            raise SystemExit("no %s from uvnetd" % what)
        if what in msg.split("\n"):
            return
try:
    expect("READY=1")
    # sent once every port listens: they all take a connection now
    for s in ("n1", "n2"):
        c = socket.socket(socket.AF_UNIX)
        c.connect("%s/%s.sock" % (d, s))
        c.close()
    p.send_signal(signal.SIGHUP)
    expect("RELOADING=1")
    expect("READY=1")
    p.send_signal(signal.SIGTERM)
    expect("STOPPING=1")
    if p.wait(timeout=10) != 0:
        raise SystemExit("uvnetd exit status %d" % p.returncode)
finally:
    if p.poll() is None:
        p.kill()
print("ok: sd_notify READY, RELOADING, STOPPING")
PY
fi
echo "ok: config file, save, reload, socket ownership"
