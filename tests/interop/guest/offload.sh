# guest script (busybox sh, helpers from lib/guest-lib.sh): TCP between
# this guest and PEER (a TAP in the host's test namespace, through uvnetd)
# with the NIC's offloads as ETHTOOL_K sets them:
#   1. a file of FILE_MB random MiB to PEER:5001 (md5sum and size reported;
#      the host checks what it got)
#   2. a file from PEER:5002 (md5sum and size reported)
#   3. iperf3 to PEER:5201, both directions, IPERF_SECONDS each
# then reports "phase.done" and waits HOLD seconds, so the host can read
# uvnetd's queue counters while this NIC is still attached.
# Env: PEER (required), ETHTOOL_K (e.g. "tso off tx off"; empty: defaults),
#      FILE_MB (default 8), IPERF_SECONDS (default 3), HOLD (default 3)
: "${PEER:?PEER not set}"
FILE_MB=${FILE_MB:-8}
IPERF_SECONDS=${IPERF_SECONDS:-3}
HOLD=${HOLD:-3}
IF=$UVN_IF0
rc=0

feat() { ethtool -k "$IF" | awk -v k="$1:" '$1 == k {print $2}'; }
if [ -n "${ETHTOOL_K:-}" ]; then
	# shellcheck disable=SC2086
	ethtool -K "$IF" $ETHTOOL_K || rc=1
fi
uvn_result ethtool.tso="$(feat tcp-segmentation-offload)" ethtool.tx="$(feat tx-checksumming)" \
	ethtool.sg="$(feat scatter-gather)" ethtool.rxcsum="$(feat rx-checksumming)"

# the host side is up before we boot; still, wait for ARP
n=0
until arping -c 1 -w 1 -I "$IF" "$PEER" >/dev/null 2>&1 || [ $n -ge 20 ]; do n=$((n + 1)); done

dd if=/dev/urandom of=/tmp/out.bin bs=64k count=$((FILE_MB * 16)) 2>/dev/null
sum() { echo "$(md5sum <"$1" | cut -d' ' -f1)-$(wc -c <"$1" | tr -d ' ')"; }
uvn_result file.out.sum="$(sum /tmp/out.bin)"
t0=$(uvn_uptime)
nc -w 10 "$PEER" 5001 </tmp/out.bin
r=$?
uvn_result file.out.rc=$r file.out.seconds="$(echo "$(uvn_uptime) $t0" | awk '{print $1 - $2}')"
[ $r = 0 ] || rc=1
rm -f /tmp/out.bin

# busybox nc half-closes on stdin EOF and the sender stops at that: give
# it a stdin that never ends (a fifo we hold open) while it receives
mkfifo /tmp/hold
exec 3<>/tmp/hold
t0=$(uvn_uptime)
nc -w 10 "$PEER" 5002 <&3 >/tmp/in.bin
r=$?
exec 3>&-
uvn_result file.in.rc=$r file.in.sum="$(sum /tmp/in.bin)" \
	file.in.seconds="$(echo "$(uvn_uptime) $t0" | awk '{print $1 - $2}')"
[ $r = 0 ] || rc=1
rm -f /tmp/in.bin

for dir in tx rx; do
	flag=
	[ $dir = rx ] && flag=-R
	out=$(iperf3 -c "$PEER" -t "$IPERF_SECONDS" -f m $flag 2>&1)
	r=$?
	echo "$out" | tail -n 4
	mbps=$(echo "$out" | awk '/receiver/{for (i = 1; i <= NF; i++) if ($i == "Mbits/sec") print $(i - 1)}' | tail -n 1)
	uvn_result "iperf3.$dir.rc=$r" "iperf3.$dir.mbps=${mbps:-0}"
	[ $r = 0 ] || rc=1
done

uvn_settle
uvn_counters nic0 "$IF"
uvn_result phase.done=1
sleep "$HOLD"
exit $rc
