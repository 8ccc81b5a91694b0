# guest script (busybox sh): the active side of a two-guest multiqueue test.
# Turns all queue pairs on, waits for PEER, pings; then one pair, pings;
# then all again, pings: the device must follow the guest's MQ setting live.
# Env: PEER (required), COUNT (default 3), WAIT_SECONDS (default 120)
: "${PEER:?PEER not set}"
COUNT=${COUNT:-3}
WAIT_SECONDS=${WAIT_SECONDS:-120}
Q=${UVN_QUEUES:-1}
ethtool -L "$UVN_IF0" combined "$Q"
t=0
until arping -c 1 -w 1 -I "$UVN_IF0" "$PEER" >/dev/null 2>&1; do
	t=$((t + 1))
	[ "$t" -ge "$WAIT_SECONDS" ] && break
done
uvn_result arping.tries=$t
rc=0
for pairs in "$Q" 1 "$Q"; do
	ethtool -L "$UVN_IF0" combined "$pairs"
	uvn_result "channels.$pairs=$(ethtool -l "$UVN_IF0" | awk '/^Current/{c=1} c && /^Combined:/{print $2}')"
	uvn_ping "ping$pairs" "$PEER" "$COUNT" -I "$UVN_IF0" -i 0.2 || rc=1
done
sleep 0.5
exit $rc
