#!/bin/bash
# uvnetd_migrate: a Linux guest live-migrates between two QEMU processes
# attached to two ports of one uvnetd, under traffic.
#
#   netns peer (TAP) --- uvnetd --- src.sock: QEMU A (the guest boots here)
#                               \-- dst.sock: QEMU B (-incoming)
#
# A TCP stream of pseudo-random data runs from the peer to the guest (rate
# limited so that it spans the migration; the peer keeps the md5 of what it
# sent, the guest of what it received), and the peer pings the guest 50
# times a second. QEMU A migrates to B over QMP. Asserted:
#   - the stream arrives whole: same size and md5 on both ends;
#   - the ping stream resumes; its longest gap (the downtime as the guest's
#     peers saw it) is printed and at most --max-gap ms;
#   - uvnetd's FDB has the guest's MAC on the dst port within --max-fdb ms
#     of QEMU saying "completed", before the peer's traffic could have
#     reached the guest (it goes to the src port until the FDB moves): the
#     guest's announce (GUEST_ANNOUNCE negotiated, no SEND_RARP) or, with
#     --nic-opt guest_announce=off, the RARP uvnetd sends for it on QEMU's
#     SEND_RARP (GUEST_ANNOUNCE not negotiated, SEND_RARP answered);
#   - replies come back through dst.sock afterwards, no TX watchdog or ring
#     error in the guest, no error counted on any of uvnetd's ports.
# With a stream running the guest soon sends on its own after the switch
# (a delayed ACK), which moves the FDB too. --quiet leaves only the pings,
# whose replies cannot come before the FDB moved: the announce (or the
# RARP) alone moves it (the stream is then empty, opened afterwards).
#
# Guest RAM is 262304 KiB, not a multiple of 256 KiB, on purpose: QEMU 7.2
# loses TCG writes in migration (fixed in 9.0 by 03bfc2188f, "physmem: Fix
# migration dirty bitmap coherency with TCG memory access": the bitmap
# sync's fast path, taken for RAM blocks of whole 256 KiB words, clears
# dirty bits without resetting the TLB). Seen here as pages of the guest
# kernel (counters, skb heads) older on the destination than on the
# source, all of them CPU writes, every byte the device wrote identical;
# the guest then crashes. An unaligned RAM size takes the slow path.
#
# Usage: uvnetd_migrate.sh --uvnetd PATH [--test-name NAME] [--nic-opt K=V]...
#        [--uvnetd-opt OPT]... [--rate KBPS] [--max-gap MS] [--max-fdb MS]
#        [--accel SPEC] [--quiet] [guest ring options: --packed on --mrg-rxbuf off ...]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib/guest.sh"
source "$HERE/lib/netns.sh"
source "$HERE/lib/uvnetd.sh"

name=uvnetd_migrate rate=1024 max_gap=5000 max_fdb=1000 rarp=0 accel=tcg quiet=0
declare -a uopts=() gopts=()
while (($#)); do
	case $1 in
	--uvnetd) UVNETD=$2; shift 2 ;;
	--test-name) name=$2; shift 2 ;;
	--uvnetd-opt) uopts+=("$2"); shift 2 ;;
	--rate) rate=$2; shift 2 ;;
	--max-gap) max_gap=$2; shift 2 ;;
	--max-fdb) max_fdb=$2; shift 2 ;;
	--accel) accel=$2; shift 2 ;;
	--quiet) quiet=1; shift ;;
	--nic-opt)
		[[ "$2" == guest_announce=off ]] && rarp=1
		gopts+=("$1" "$2"); shift 2 ;;
	--packed | --mrg-rxbuf | --event-idx | --indirect) gopts+=("$1" "$2"); shift 2 ;;
	*) echo "unknown option $1" >&2; exit 2 ;;
	esac
done

uvn_test_init "$name"
uvn_need_root "network namespaces and TAP devices"
[[ -x "${UVNETD:-}" ]] || uvn_die "--uvnetd PATH: no uvnetd binary"
command -v python3 >/dev/null || uvn_deps python3
guest_prepare

MAC=52:54:00:a5:0e:01 GIP=198.18.3.2 PIP=198.18.3.1
SRC=$UVN_RUN/src.sock DST=$UVN_RUN/dst.sock CTL=$UVN_RUN/ctl.sock MIG=$UVN_RUN/mig.sock
QMP_SRC=$UVN_RUN/qmp-src.sock QMP_DST=$UVN_RUN/qmp-dst.sock STOP=$UVN_RUN/stop
PY=$UVN_RUN/migrate.py

# The host side's helpers, one python3 per role (no ping(8) on the host):
#   pinger IP RATE            ICMP echo at RATE/s; on SIGTERM: the summary
#   sender IP PORT KBPS STOP  connect (retrying), send seeded pseudo-random
#                             bytes at KBPS until the file STOP exists
#   migrate QMP_SRC URI CTL MAC PORTNAME MAX_S
#                             migrate over QMP, then watch uvnetd's FDB
cat >"$PY" <<'EOF'
import hashlib, json, os, random, signal, socket, struct, subprocess, sys, time

def now_ms():
    return time.monotonic() * 1000.0

def csum(b):
    if len(b) % 2:
        b += b'\0'
    s = sum(struct.unpack('!%dH' % (len(b) // 2), b))
    s = (s >> 16) + (s & 0xffff)
    s += s >> 16
    return ~s & 0xffff

def pinger(ip, rate):
    sk = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    sk.setblocking(False)
    ident, seq, interval = os.getpid() & 0xffff, 0, 1.0 / float(rate)
    sent, replies = {}, []
    done = []
    signal.signal(signal.SIGTERM, lambda *a: done.append(1))
    nxt = time.monotonic()
    print('pinger: %s at %s/s' % (ip, rate), flush=True)
    while not done:
        t = time.monotonic()
        if t >= nxt:
            hdr = struct.pack('!BBHHH', 8, 0, 0, ident, seq & 0xffff)
            data = struct.pack('!d', t) + b'uvnet-migrate'
            pkt = struct.pack('!BBHHH', 8, 0, csum(hdr + data), ident, seq & 0xffff) + data
            try:
                sk.sendto(pkt, (ip, 0))
            except OSError:
                pass
            sent[seq & 0xffff] = t
            seq += 1
            nxt += interval
            if nxt < t:
                nxt = t + interval
        try:
            while True:
                b = sk.recv(2048)
                ihl = (b[0] & 15) * 4
                typ, _, _, rid, rseq = struct.unpack('!BBHHH', b[ihl:ihl + 8])
                if typ == 0 and rid == ident and rseq in sent:
                    replies.append((time.monotonic(), rseq))
                    print('reply seq=%d t=%.3f' % (rseq, time.monotonic()), flush=True)
        except BlockingIOError:
            pass
        time.sleep(min(0.002, max(0.0, nxt - time.monotonic())))
    # the longest time without a reply, between two replies
    gap, at, got = 0.0, 0.0, set(s for _, s in replies)
    for (t0, _), (t1, _) in zip(replies, replies[1:]):
        if t1 - t0 > gap:
            gap, at = t1 - t0, t0
    lost = sum(1 for s in range(seq) if (s & 0xffff) not in got)
    print('PINGER sent=%d received=%d lost=%d max_gap_ms=%d gap_at=%.3f' %
          (seq, len(replies), lost, int(gap * 1000), at), flush=True)

def sender(ip, port, kbps, stop):
    deadline = time.monotonic() + 240
    while True:
        try:
            sk = socket.create_connection((ip, int(port)), timeout=2)
            break
        except OSError:
            if time.monotonic() > deadline:
                print('SENDER could not connect', flush=True)
                sys.exit(1)
            time.sleep(0.5)
    sk.settimeout(None)
    print('SENDER connected t=%.3f' % time.monotonic(), flush=True)
    rnd, md5, total = random.Random(20261201), hashlib.md5(), 0
    chunk, rate = 4096, int(kbps) * 1024
    t0 = time.monotonic()
    while not os.path.exists(stop):
        b = rnd.getrandbits(chunk * 8).to_bytes(chunk, 'little')
        sk.sendall(b)
        md5.update(b)
        total += chunk
        ahead = total / rate - (time.monotonic() - t0)
        if ahead > 0:
            time.sleep(ahead)
    sk.shutdown(socket.SHUT_WR)
    sk.settimeout(30)
    try:
        while sk.recv(4096):
            pass
    except OSError:
        pass
    sk.close()
    print('SENDER bytes=%d md5=%s' % (total, md5.hexdigest()), flush=True)

class Qmp:
    def __init__(self, path):
        self.sk = socket.socket(socket.AF_UNIX)
        self.sk.connect(path)
        self.f = self.sk.makefile('rw')
        json.loads(self.f.readline())
        self.cmd('qmp_capabilities')

    def cmd(self, name, **args):
        self.f.write(json.dumps({'execute': name, 'arguments': args}) + '\n')
        self.f.flush()
        while True:
            r = json.loads(self.f.readline())
            if 'event' in r:
                continue
            if 'error' in r:
                raise RuntimeError('%s: %s' % (name, r['error']))
            return r['return']

def fdb_port(ctl, mac):
    out = subprocess.run([os.environ['UVNETD'], 'ctl', ctl, 'show', 'fdb', '--json'],
                         capture_output=True, text=True).stdout
    for e in json.loads(out or '{"fdb":[]}')['fdb']:
        if e['mac'] == mac:
            return e['port']
    return None

def migrate(qmp, uri, ctl, mac, port, max_s):
    mac = mac.replace(':', '').lower()
    q = Qmp(qmp)
    q.cmd('migrate-set-parameters', **{'max-bandwidth': 4 << 30, 'downtime-limit': 300})
    print('MIGRATE fdb before: %s' % fdb_port(ctl, mac), flush=True)
    t0 = now_ms()
    q.cmd('migrate', uri=uri)
    while True:
        st = q.cmd('query-migrate')
        if st.get('status') in ('completed', 'failed', 'cancelled'):
            break
        time.sleep(0.01)
    t_done = now_ms()
    at_done = fdb_port(ctl, mac)
    print('MIGRATE status=%s total_ms=%d qemu_downtime_ms=%s fdb_at_completed=%s done_t=%.3f' %
          (st['status'], t_done - t0, st.get('downtime', '?'), at_done, t_done / 1000.0), flush=True)
    if st['status'] != 'completed':
        sys.exit(1)
    cur, t = at_done, t_done
    while cur != port and now_ms() - t_done < max_s * 1000:
        time.sleep(0.005)
        cur, t = fdb_port(ctl, mac), now_ms()
    print('MIGRATE fdb_port=%s fdb_ms=%d' % (cur, t - t_done), flush=True)

role = sys.argv[1]
if role == 'pinger':
    pinger(sys.argv[2], sys.argv[3])
elif role == 'sender':
    sender(*sys.argv[2:6])
elif role == 'migrate':
    migrate(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6], float(sys.argv[7]))
EOF
export UVNETD

# ------------------------------------------------------------------ set-up
netns_create NS tap
TAP=uvntap0
netns_tap "$NS" "$TAP"
netns_addr "$NS" "$TAP" "$PIP/24"
uvnetd_start sw --netns "$NS" -- --port "vhost-user:$SRC,name=src" --port "vhost-user:$DST,name=dst" \
	--port "tap:$TAP,name=tap" --ctl "$CTL" "${uopts[@]}"
SW_PID=$(uvnetd_pid sw)

# the same machine on both sides (QEMU B differs only by -incoming)
gargs=(--mac "$MAC" --ip "$GIP/24" --script "$HERE/guest/migrate_recv.sh" --timeout 400 --accel "$accel"
	--mem 262304k "${gopts[@]}")
guest_start --name src --sock "$SRC" "${gargs[@]}" --watch "$SW_PID" --qmp "$QMP_SRC"

# the stream: the guest listens, the peer connects once it can
start_stream() {
	netns_spawn snd_pid "stream sender" "$UVN_LOG_DIR/sender.log" "$NS" python3 "$PY" sender "$GIP" 5001 "$rate" "$STOP"
	uvn_wait_for 180 "the stream to connect" grep -q 'SENDER connected' "$UVN_LOG_DIR/sender.log" ||
		uvn_die "the stream did not start: $(tail -n 3 "$UVN_LOG_DIR/sender.log")"
}
if ((quiet)); then
	uvn_wait_for 180 "the guest to listen" grep -q 'recv.listening=1' "$(guest_dir src)/results.log" ||
		uvn_die "the guest script did not start"
else
	start_stream
fi
netns_spawn ping_pid "ping stream" "$UVN_LOG_DIR/pinger.log" "$NS" python3 "$PY" pinger "$GIP" 50
uvn_wait_for 20 "ping replies" grep -q '^reply' "$UVN_LOG_DIR/pinger.log" || uvn_die "the guest does not answer pings"

guest_start --name dst --sock "$DST" "${gargs[@]}" --watch "$SW_PID" --qmp "$QMP_DST" \
	--incoming "unix:$MIG"
uvn_wait_for 30 "QEMU B to wait for the migration" test -S "$MIG" || uvn_die "QEMU B does not listen on $MIG"
uvn_sleep 2   # the stream and the pings run on A a while

# ---------------------------------------------------------------- migrate
uvn_log "migrating A -> B"
python3 "$PY" migrate "$QMP_SRC" "unix:$MIG" "$CTL" "$MAC" dst 10 >"$UVN_LOG_DIR/migrate.log" 2>&1 ||
	uvn_die "migration failed: $(cat "$UVN_LOG_DIR/migrate.log")"
sed 's/^/    /' "$UVN_LOG_DIR/migrate.log" >&2
guest_stop --name src   # paused in postmigrate: its part is over
# the FDB first: without it moving, nothing reaches the guest any more
fdb=$(grep -o 'fdb_port=.*' "$UVN_LOG_DIR/migrate.log")
fdb_ms=$(sed -E 's/.*fdb_ms=([0-9]+).*/\1/' <<<"$fdb")
uvn_assert_eq "FDB: the guest's MAC after the migration" "$(sed -E 's/fdb_port=([^ ]+).*/\1/' <<<"$fdb")" dst
uvn_check "FDB moved ${fdb_ms} ms after completed (<= $max_fdb ms)" test "$fdb_ms" -le "$max_fdb"
if ((quiet)); then   # an empty stream, now, so that the guest script ends
	touch "$STOP"
	start_stream
fi

uvn_sleep 3   # the stream goes on through B
touch "$STOP"
uvn_wait_for 60 "the sender to finish" grep -q 'SENDER bytes' "$UVN_LOG_DIR/sender.log" ||
	uvn_die "the sender did not finish: $(tail -n 3 "$UVN_LOG_DIR/sender.log")"
uvn_reap "$snd_pid" || true
grc=0
guest_wait --name dst || grc=$?
uvn_kill "$ping_pid" 5
uvnetd_stop sw

# ----------------------------------------------------------------- verdict
sent=$(grep -o 'SENDER bytes=.*' "$UVN_LOG_DIR/sender.log")
pinger=$(grep '^PINGER' "$UVN_LOG_DIR/pinger.log") || uvn_die "the pinger printed no summary"
gap=$(sed -E 's/.*max_gap_ms=([0-9]+).*/\1/' <<<"$pinger")
uvn_log "stream: $sent"
uvn_log "pings:  $pinger"
uvn_log "migration: $(grep -o 'total_ms=.*' "$UVN_LOG_DIR/migrate.log")"
uvn_assert_eq "guest status" "$grc" 0
uvn_assert_eq "stream bytes received" "$(guest_result dst recv.bytes)" "$(sed -E 's/.*bytes=([0-9]+).*/\1/' <<<"$sent")"
uvn_assert_eq "stream md5 received" "$(guest_result dst recv.md5)" "$(sed -E 's/.*md5=([0-9a-f]+).*/\1/' <<<"$sent")"
uvn_check "downtime (longest ping gap) ${gap} ms <= $max_gap ms" test "$gap" -le "$max_gap"
done_t=$(grep -o 'done_t=[0-9.]*' "$UVN_LOG_DIR/migrate.log" | cut -d= -f2)
after=$(awk -v t="$done_t" '/^reply/ { sub("t=", "", $3); if ($3 + 0 > t + 0) n++ } END { print n + 0 }' \
	"$UVN_LOG_DIR/pinger.log")
uvn_assert_ge "ping replies after the migration (through dst.sock)" "$after" 25
uvn_assert_ge "frames the guest sent through dst.sock" "$(uvnetd_stat sw 1 rx_packets)" 1
uvn_assert_ge "frames to the guest through dst.sock" "$(uvnetd_stat sw 1 tx_packets)" 1
for p in 0 1 2; do uvn_assert_eq "errors on uvnetd port $p" "$(uvnetd_stat sw "$p" errors)" 0; done
# who moved the FDB: the guest's own announce, or the RARP uvnetd sent for it
rarps=$(grep -c 'SEND_RARP [0-9a-f:]*$' "$(uvnetd_log sw)" || true)
if ((rarp)); then
	uvn_assert_eq "GUEST_ANNOUNCE negotiated (guest_announce=off)" "$(guest_feature src 0 21)" 0
	uvn_assert_ge "SEND_RARP requests uvnetd answered" "$rarps" 1
else
	uvn_assert_eq "GUEST_ANNOUNCE negotiated" "$(guest_feature src 0 21)" 1
	uvn_assert_eq "SEND_RARP requests (the guest announces itself)" "$rarps" 0
fi
uvn_assert_eq "guest TX watchdog timeouts" "$(guest_result dst recv.watchdog)" 0
uvn_assert_eq "guest virtio ring errors/warnings" "$(guest_result dst recv.ring_msgs)" 0
uvn_log "RESULT downtime_ms=$gap fdb_ms=$fdb_ms stream=$(guest_result dst recv.bytes)B md5_ok=1"
