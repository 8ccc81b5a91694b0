#!/bin/bash
# Isolation, measured: two honest uvnet drivers stream through uvnetd's
# switch (uvnet-perf stream --pair) while a third, hostile vhost-user
# frontend (bench/uvnet-hostile) runs one attack. Per attack, runs are
# interleaved, baseline (the hostile port idle) and attacked, A B A B ...;
# each run is a fresh uvnetd with three vhost-user ports (the pair's two,
# and the hostile one with queues=2 so it has a control queue) and --ctl.
# uvnet-perf starts uvnetd through a wrapper that adds the third port and
# the control socket and, when the run ends, asks `uvnetd ctl ... show
# queues|ports|stats` (2 s at most: no answer is "froze"), stops the
# attacker, checks uvnetd again, and stops it (SIGTERM; SIGKILL after
# 1.5 s, reported). A uvnetd that dies or freezes costs that run only.
#
# Per attack: the pair's Gb/s median (min-max) without and with the
# attacker and the ratio (goal >= 0.9), uvnetd's fate over the attacked
# runs, how long it took to stop, the hostile queues/connection as ctl
# shows them in the last attacked run (broken queues and non-zero error
# counters), uvnetd's RSS, and the attacker's own summary.
#
# The attacker and the pair share CPU 1 (two CPUs: uvnetd has the other),
# and an attacker that spins takes part of the pair's CPU whatever uvnetd
# does; a profile shows it (full-tx: the hostile process got a quarter of
# the samples at SCHED_IDLE, the pair a third less). So each attack that
# keeps a CPU busy also gets a control run, interleaved (A C B A C B ...):
# idle-spin (the same set-up and spin, nothing posted, kicked or asked),
# ctl-show for port-churn (the same ctl clients asking `show ports`). The
# "÷ ctrl" column, the pair with the attacker over the pair with the
# control, is what the attack costs through uvnetd. --no-controls skips it.
#
# port-churn is not an attack but an operator: a port added and removed
# 100 times over the run (uvnetd ctl add-port/del-port), to show what that
# costs the pair (issue 14: ports changed live keep >= 95 % of the rate).
# An attack written ATTACK@K runs with the hostile port limited to K
# thousand frames/s taken in (uvnetd's max-kpps=K), in both of its runs.
#
# Usage: bench/isolation.sh [--uvnetd PATH] [--perf PATH] [--hostile PATH]
#            [--runs N] [--seconds S] [--warmup S] [--size N] [--mode event|poll]
#            [--attacks "packed-batch stale-ring ..."] [--attacker-cpu N]
#            [--attacker-sched idle|normal] [--keep] [--no-controls]   (--keep: leave the work dir)
# Defaults: uvnetd from build-release, else build-test; uvnet-perf and
# uvnet-hostile from the same build dir; 5 runs of 5 s after 1 s warm-up,
# 1518 B frames, event mode (where a drain without a budget and a blocked
# fd write bite), uvnetd on CPU 0, the pair on CPU 1, the attacker on CPU 1
# as SCHED_IDLE (so that it takes little more than the CPU the pair
# leaves; the control runs measure what it still takes).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
RUNS=5 SECS=5 WARM=1 SIZE=1518 MODE=event ACPU=1 ASCHED=idle KEEP=0 CONTROLS=1
ATTACKS="packed-batch stale-ring blocking-fd kick-fd-swap full-tx full-tx@500 memfd-shrink kick-storm msg-flood accept-flood reconnect-flood rx-hoard sparse-mem port-churn"
UVNETD= PERF= HOSTILE=
while (($#)); do
	case $1 in
	--uvnetd) UVNETD=$2; shift 2 ;;
	--perf) PERF=$2; shift 2 ;;
	--hostile) HOSTILE=$2; shift 2 ;;
	--runs) RUNS=$2; shift 2 ;;
	--seconds) SECS=$2; shift 2 ;;
	--warmup) WARM=$2; shift 2 ;;
	--size) SIZE=$2; shift 2 ;;
	--mode) MODE=$2; shift 2 ;;
	--attacks) ATTACKS=$2; shift 2 ;;
	--attacker-cpu) ACPU=$2; shift 2 ;;
	--attacker-sched) ASCHED=$2; shift 2 ;;
	--keep) KEEP=1; shift ;;
	--no-controls) CONTROLS=0; shift ;;
	-h | --help) sed -n '2,45p' "$0"; exit 0 ;;
	*) echo "unknown option $1" >&2; exit 2 ;;
	esac
done
if [[ -z $UVNETD ]]; then
	for b in build-release build-test; do
		[[ -x $ROOT/$b/tools/uvnetd/uvnetd ]] && { UVNETD=$ROOT/$b/tools/uvnetd/uvnetd; break; }
	done
fi
[[ -n $UVNETD && -x $UVNETD ]] || { echo "no uvnetd (build-release or build-test, or --uvnetd PATH)" >&2; exit 1; }
UVNETD=$(readlink -f "$UVNETD")
BUILD=$(dirname "$(dirname "$(dirname "$UVNETD")")")
PERF=${PERF:-$BUILD/tools/uvnet-perf/uvnet-perf}
HOSTILE=${HOSTILE:-$BUILD/bench/uvnet-hostile}
for x in "$PERF" "$HOSTILE"; do
	[[ -x $x ]] || { echo "not found: $x (ninja -C $BUILD)" >&2; exit 1; }
done
case $ASCHED in idle) CHRT=(chrt --idle 0) ;; normal) CHRT=() ;; *) echo "bad --attacker-sched" >&2; exit 2 ;; esac

WORK=$(mktemp -d /tmp/uvn-iso.XXXXXX)
PIDS=()
# Everything started is stopped by PID: uvnet-perf and attackers (ours),
# uvnetd (from the pid files the wrapper leaves).
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for f in "$WORK"/r*/uvnetd.pid; do
		[[ -f $f ]] && kill -KILL "$(cat "$f")" 2>/dev/null
	done
	sleep 0.3
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	if ((KEEP)); then echo "# work dir kept: $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The wrapper uvnet-perf starts as "uvnetd": the real one with the hostile
# port and the control socket added, and the verdict taken when the run ends.
cat >"$WORK/uvnetd-wrap" <<'WRAP'
#!/bin/bash
D=$ISO_DIR REAL=$ISO_REAL
[[ " $* " == *" --port "* ]] || exec "$REAL" "$@"
"$REAL" "$@" --port "vhost-user:$D/h.sock,queues=2$ISO_HOPTS" --ctl "$D/ctl.sock" 2>"$D/uvnetd.err" &
U=$!
echo "$U" >"$D/uvnetd.pid"
stop=0
trap 'stop=1' INT TERM
while :; do
	wait "$U"
	rc=$?
	((stop)) && break
	# uvnetd ended on its own
	if ((rc > 128)); then echo "died (SIG$(kill -l $((rc - 128))))"; else echo "died (exit $rc)"; fi >"$D/fate"
	rm -f "$D/uvnetd.pid"
	exit "$rc"
done
ctl() { timeout "$1" "$REAL" ctl "$D/ctl.sock" "${@:2}"; }
gone() { ! kill -0 "$1" 2>/dev/null; }
if gone "$U"; then
	echo "died" >"$D/fate"
elif ctl 2 show queues --json >"$D/queues.json" 2>/dev/null; then
	echo "alive" >"$D/fate"
	ctl 1 show ports --json >"$D/ports.json" 2>/dev/null
	ctl 1 show stats --json >"$D/stats.json" 2>/dev/null
else
	echo "froze (no answer from ctl within 2 s)" >"$D/fate"
fi
awk '/VmRSS/ {print $2}' "/proc/$U/status" >"$D/rss" 2>/dev/null
# The attacker goes; is uvnetd still there?
if [[ -f $D/hostile.pid ]]; then
	H=$(cat "$D/hostile.pid")
	kill -TERM "$H" 2>/dev/null
	for _ in $(seq 10); do gone "$H" && break; sleep 0.05; done
fi
if [[ $(cat "$D/fate") == alive ]]; then
	if gone "$U"; then echo "died after the attacker left"
	elif ctl 1 show stats >/dev/null 2>&1; then echo "alive"
	else echo "froze after the attacker left"; fi >"$D/after"
fi
t0=$(date +%s%N)
kill -TERM "$U" 2>/dev/null
for _ in $(seq 30); do gone "$U" && break; sleep 0.05; done
if gone "$U"; then
	echo "$((($(date +%s%N) - t0) / 1000000)) ms" >"$D/stop"
else
	echo "SIGKILL (SIGTERM ignored 1.5 s)" >"$D/stop"
	kill -KILL "$U" 2>/dev/null
fi
wait "$U"
rc=$?
rm -f "$D/uvnetd.pid"
exit "$rc"
WRAP
chmod +x "$WORK/uvnetd-wrap"

# 100 add/del cycles of a port spread over the run's warm-up and
# measurement (each cycle starts on its own schedule, a late one at once).
# ctl-show, its control, runs the same 200 ctl clients on the same
# schedule, each asking `show ports`: what the clients themselves cost the
# pair's CPU, apart from any change to uvnetd's ports.
churn() { # RUNDIR port-churn|ctl-show
	local d=$1 i ok=0 t0 step one=(add-port "vhost-user:$d/churn.sock" name=churn) two=(del-port churn)
	[[ $2 == ctl-show ]] && one=(show ports) two=(show ports)
	trap 'echo "rc=0 ops=$ok nacks=$((i - 1 - ok)) errs=0 conn=up note=\"cycles done of $((i - 1)) started (stopped early)\""; exit 0' TERM
	t0=$(date +%s%N) step=$(((WARM + SECS) * 10000000))
	for i in $(seq 100); do
		# on the attacker's CPU and class: what is measured is uvnetd's cost
		taskset -c "$ACPU" "${CHRT[@]}" "$UVNETD" ctl "$d/ctl.sock" "${one[@]}" >/dev/null &&
			taskset -c "$ACPU" "${CHRT[@]}" "$UVNETD" ctl "$d/ctl.sock" "${two[@]}" \
				>/dev/null && ok=$((ok + 1))
		local wait_ns=$((t0 + i * step - $(date +%s%N)))
		((wait_ns > 0)) && sleep "$(awk -v n="$wait_ns" 'BEGIN{printf "%.3f", n / 1e9}')"
	done
	echo "rc=0 ops=$ok nacks=$((100 - ok)) errs=0 conn=up note=\"cycles done of 100\""
}

# The control run of an attack that keeps a CPU busy: the same CPU use
# without the attack (idle-spin, ctl-show); none for the attacks that sleep.
control_of() { # ATTACK
	case ${1%@*} in
	packed-batch | full-tx | kick-storm | msg-flood | accept-flood | reconnect-flood) echo idle-spin ;;
	port-churn) echo ctl-show ;;
	esac
}

N=0 RUN_DIR=
# one ATTACK|none: one run; RUN_DIR is its dir (perf.json, fate, ... inside).
# Not in a subshell: PIDS must be ours.
one() {
	local a=${1%@*} d p h= i hopts=
	[[ $1 == *@* ]] && hopts=",max-kpps=${1#*@}"
	N=$((N + 1))
	d=$WORK/r$N
	mkdir -p "$d"
	ISO_DIR=$d ISO_REAL=$UVNETD ISO_HOPTS=$hopts timeout -s TERM $((WARM + SECS + 90)) "$PERF" stream --pair -M "$MODE" \
		-s "$SIZE" -l "$SECS" -w "$WARM" --json -q --uvnetd "$WORK/uvnetd-wrap" --device-cpu 0 \
		--driver-cpu 1 >"$d/perf.json" 2>"$d/perf.err" &
	p=$!
	PIDS+=("$p")
	if [[ $a == port-churn || $a == ctl-show ]]; then
		for i in $(seq 100); do [[ -S $d/ctl.sock ]] && break; sleep 0.05; done
		churn "$d" "$a" >"$d/hostile.out" 2>"$d/hostile.err" &
		h=$!
		PIDS+=("$h")
		echo "$h" >"$d/hostile.pid"
	elif [[ $a != none ]]; then
		for i in $(seq 100); do [[ -S $d/h.sock ]] && break; sleep 0.05; done
		taskset -c "$ACPU" "${CHRT[@]}" "$HOSTILE" --socket "$d/h.sock" --attack "$a" \
			--seconds $((WARM + SECS + 60)) >"$d/hostile.out" 2>"$d/hostile.err" &
		h=$!
		PIDS+=("$h")
		echo "$h" >"$d/hostile.pid"
	fi
	wait "$p"
	if [[ -n $h ]]; then
		kill -TERM "$h" 2>/dev/null
		for i in $(seq 20); do kill -0 "$h" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$h" 2>/dev/null
		wait "$h" 2>/dev/null
	fi
	[[ -f $d/uvnetd.pid ]] && kill -KILL "$(cat "$d/uvnetd.pid")" 2>/dev/null
	PIDS=()
	RUN_DIR=$d
}

gbps() { # RUNDIR -> Gb/s of the pair (0 when the run failed)
	local g
	g=$(grep -o '"gbps":[0-9.]*' "$1/perf.json" 2>/dev/null | head -1 | cut -d: -f2)
	echo "${g:-0}"
}

stats() { # values... -> "median min max"
	printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END{print a[int((NR+1)/2)], a[1], a[NR]}'
}

# The hostile port as ctl showed it: broken queues, non-zero error counters.
hostile_state() { # RUNDIR
	python3 - "$1" <<'PY'
import json, os, sys
d = sys.argv[1]
def load(n):
    try:
        with open(os.path.join(d, n)) as f:
            return json.load(f)
    except Exception:
        return None
q, p = load("queues.json"), load("ports.json")
if q is None:
    print("-"); sys.exit()
bad = lambda k: k.startswith(("err", "drop", "broken")) or k in ("ctrl_err", "reason", "state")
out = []
mine = [x for x in q.get("queues", []) if x.get("port", "").endswith("/h.sock")]
for x in mine:
    cnt = {}
    for part in ("ring", "dev"):
        for k, v in (x.get(part) or {}).items():
            if bad(k) and v not in (0, "", None, False):
                cnt[k] = v
    for k, v in x.items():
        if k not in ("port", "vq", "queue", "dir", "size", "broken", "zerocopy", "ring", "dev") \
                and v not in (0, "", None, False):
            cnt[k] = v
    if x.get("broken") or cnt:
        out.append("vq%s %s%s%s" % (x.get("vq"), x.get("dir"), " BROKEN" if x.get("broken") else "",
                   (" " + " ".join("%s=%s" % kv for kv in cnt.items())) if cnt else ""))
if not mine:
    out.append("no queues (rings paused or connection closed)")
elif not out:
    out.append("%d queues, none broken, no errors" % len(mine))
for x in (p or {}).get("ports", []):
    if x.get("name", "").endswith("/h.sock"):
        extra = {k: v for k, v in x.items() if k not in ("name", "kind") and not k.startswith(("rx_", "tx_", "calls", "kicks")) and v}
        out.append("port: " + " ".join("%s=%s" % kv for kv in extra.items()) if extra else "port: queues=0")
print("; ".join(out))
PY
}

field() { [[ -f $1 ]] && cat "$1" || echo "${2:--}"; }

echo "# isolation: uvnet-perf stream --pair, $SIZE B, $MODE mode, $RUNS interleaved runs of ${SECS}s (+${WARM}s warm-up) per attack"
echo "# uvnetd $UVNETD (git $(git -C "$BUILD/.." rev-parse --short HEAD 2>/dev/null)), $(date -u +%FT%TZ), $(nproc) CPUs; uvnetd CPU 0, pair CPU 1, attacker CPU $ACPU ($ASCHED)"
echo "# host: $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1), kernel $(uname -r)"
printf '| %-12s | %-20s | %-20s | %-5s | %-30s | %-7s | %-28s | %-12s | %s | %s |\n' attack "pair Gb/s alone" \
	"with attacker" ratio "with its control (name)" "÷ ctrl" "uvnetd (attacked runs)" "stop (max)" \
	"hostile queues/connection (ctl, last run); uvnetd RSS" "attacker (last run)"
printf '|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|\n' -------------- ---------------------- ---------------------- ------- \
	-------------------------------- --------- ------------------------------ -------------- ---- ----
for a in $ATTACKS; do
	A=() B=() C=() fates=() stops=() last= ctl=$( ((CONTROLS)) && control_of "$a")
	for _ in $(seq "$RUNS"); do
		if [[ $a == *@* ]]; then one "none@${a#*@}"; else one none; fi
		A+=("$(gbps "$RUN_DIR")")
		if [[ -n $ctl ]]; then
			one "$ctl"
			C+=("$(gbps "$RUN_DIR")")
		fi
		one "$a"
		d=$RUN_DIR
		B+=("$(gbps "$d")")
		f=$(field "$d/fate" "no verdict")
		[[ $f == alive && -f $d/after && $(cat "$d/after") != alive ]] && f=$(cat "$d/after")
		fates+=("$f")
		stops+=("$(field "$d/stop" "-")")
		last=$d
	done
	read -r am amin amax <<<"$(stats "${A[@]}")"
	read -r bm bmin bmax <<<"$(stats "${B[@]}")"
	ratio=$(awk -v a="$am" -v b="$bm" 'BEGIN{printf "%.2f", (a > 0 ? b / a : 0)}')
	cm=- cmin=- cmax=- cratio=-
	if [[ -n $ctl ]]; then
		read -r cm cmin cmax <<<"$(stats "${C[@]}")"
		cratio=$(awk -v c="$cm" -v b="$bm" 'BEGIN{printf "%.2f", (c > 0 ? b / c : 0)}')
		cm=$(printf '%.2f (%.2f-%.2f) %s' "$cm" "$cmin" "$cmax" "$ctl")
	fi
	fate=$(printf '%s\n' "${fates[@]}" | sort | uniq -c | awk '{c=$1; $1=""; printf "%s%s %d/'"$RUNS"'", (NR > 1 ? ", " : ""), substr($0, 2), c}')
	stop=$(printf '%s\n' "${stops[@]}" | awk '/SIGKILL/ {k++} /ms$/ {if ($1 > m) m = $1} END {if (k) print "SIGKILL " k "x"; else if (m != "") print m " ms"; else print "-"}')
	rss=$(cat "$last/rss" 2>/dev/null)
	st=$(hostile_state "$last")
	[[ $rss =~ ^[0-9]+$ ]] && st="$st; RSS $((rss / 1024)) MB"
	att=$(sed -n 's/.*rc=\([-0-9]*\) ops=\([0-9]*\) nacks=\([0-9]*\) errs=\([0-9]*\) conn=\([a-z]*\) note="\(.*\)"/rc \1, ops \2, nacks \3, conn \5 \6/p' "$last/hostile.out" 2>/dev/null)
	printf '| %-12s | %5.2f (%5.2f-%5.2f)  | %5.2f (%5.2f-%5.2f)  | %5s | %-30s | %-7s | %-28s | %-12s | %s | %s |\n' \
		"$a" "$am" "$amin" "$amax" "$bm" "$bmin" "$bmax" "$ratio" "$cm" "$cratio" "$fate" "$stop" "$st" \
		"${att:-none}"
done
