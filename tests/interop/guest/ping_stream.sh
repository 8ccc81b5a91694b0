# guest script (busybox sh): a ping stream for the host to break and watch
# come back (uvnetd_restart.sh). Waits until PEER answers ARP, prints
# "UVN_STREAM start", pings COUNT times every INTERVAL s with one console
# line per reply (the host follows the console), then reports what the
# kernel said about its NIC: TX watchdog timeouts, virtio ring errors, and
# how often the carrier went down and up (QEMU sets the link down while
# the backend is gone).
# Env: PEER (required), COUNT (default 400), INTERVAL (default 0.05)
: "${PEER:?PEER not set}"
COUNT=${COUNT:-400}
INTERVAL=${INTERVAL:-0.05}
# the driver starts with one queue pair per vCPU: turn the others on
[ "${UVN_QUEUES:-1}" -gt 1 ] && ethtool -L "$UVN_IF0" combined "$UVN_QUEUES"
t=0
until arping -c 1 -w 1 -I "$UVN_IF0" "$PEER" >/dev/null 2>&1; do
	t=$((t + 1))
	[ "$t" -ge 60 ] && break
done
uvn_result arping.tries=$t
c0=$(cat "/sys/class/net/$UVN_IF0/carrier_changes")
echo "UVN_STREAM start"
ping -c "$COUNT" -i "$INTERVAL" -W 2 -I "$UVN_IF0" "$PEER"
rc=$?
echo "UVN_STREAM end rc=$rc"
pat_wd='NETDEV WATCHDOG|transmit queue [0-9]+ timed out'
# virtio_ring's BAD_RING (a buffer used twice, an id out of range), oopses
pat_ring='not a head|out of range|used idx|is broken|BUG|WARNING:|Call Trace'
dmesg | grep -E "$pat_wd|$pat_ring" | sed 's/^/UVN_DMESG /'
uvn_result stream.rc=$rc \
	stream.watchdog="$(dmesg | grep -c -E "$pat_wd")" \
	stream.ring_msgs="$(dmesg | grep -c -E "$pat_ring")" \
	stream.carrier_changes=$(($(cat "/sys/class/net/$UVN_IF0/carrier_changes") - c0)) \
	stream.carrier="$(cat "/sys/class/net/$UVN_IF0/carrier")"
exit 0
