# guest script (busybox sh): the active side of a two-guest test. Waits
# until PEER answers ARP (the other guest may still be booting), then pings.
# Env: PEER (required), COUNT (default 5), WAIT_SECONDS (default 120)
: "${PEER:?PEER not set}"
COUNT=${COUNT:-5}
WAIT_SECONDS=${WAIT_SECONDS:-120}
t=0
until arping -c 1 -w 1 -I "$UVN_IF0" "$PEER" >/dev/null 2>&1; do
	t=$((t + 1))
	[ "$t" -ge "$WAIT_SECONDS" ] && break
done
uvn_result arping.tries=$t
uvn_ping ping "$PEER" "$COUNT" -I "$UVN_IF0" -i 0.2
rc=$?
sleep 0.5
exit $rc
