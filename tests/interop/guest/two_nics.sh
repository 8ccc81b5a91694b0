# guest script (busybox sh, helpers from lib/guest-lib.sh): NIC 1 goes into
# its own network namespace, NIC 0 stays; traffic between them crosses the
# vhost-user backend (e.g. testpmd io-forwarding port0 <-> port1).
# Env: IP1 (ADDR/PFX for NIC 1), PEER (NIC 1's address), COUNT (pings,
# default 5), IPERF_SECONDS (default 2; 0 = no iperf3)
: "${IP1:?}" "${PEER:?}"
COUNT=${COUNT:-5}
IPERF_SECONDS=${IPERF_SECONDS:-2}
rc=0
uvn_netns_new
uvn_netns_move "$UVN_IF1" || { uvn_log "moving $UVN_IF1 into the netns failed"; exit 1; }
uvn_in_ns ip addr add "$IP1" dev "$UVN_IF1"
uvn_in_ns ip link set "$UVN_IF1" up
# carrier as seen from inside the namespace
n=100
until uvn_in_ns ip link show "$UVN_IF1" | grep -q LOWER_UP || [ $n -eq 0 ]; do sleep 0.1; n=$((n - 1)); done
uvn_ping ping "$PEER" "$COUNT" -I "$UVN_IF0" -i 0.2 || rc=1

if [ "$IPERF_SECONDS" != 0 ] && command -v iperf3 >/dev/null; then
	uvn_in_ns iperf3 -s -D -B "${PEER}" >/dev/null 2>&1
	sleep 0.5
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
	uvn_in_ns killall iperf3 2>/dev/null
elif [ "$IPERF_SECONDS" != 0 ]; then
	uvn_log "no iperf3 in this initramfs"
	uvn_result iperf3.tx.rc=missing
fi
# NIC 1's counters from inside the namespace, once final (init reports
# NIC 0's at the end)
uvn_settle "$UVN_NS_PID"
uvn_counters nic1 "$UVN_IF1" "$UVN_NS_PID"
uvn_netns_del
exit $rc
