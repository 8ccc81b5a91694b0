# guest script (busybox sh, helpers from lib/guest-lib.sh): ping a peer
# through NIC 0 and resolve it with arping first.
# Env: PEER (required), COUNT (default 5)
: "${PEER:?PEER not set}"
COUNT=${COUNT:-5}
uvn_result ethtool.driver="$(ethtool -i "$UVN_IF0" 2>/dev/null | awk '/^driver:/{print $2}')"
if [ "${UVN_QUEUES:-1}" -gt 1 ]; then
	# the driver starts with one queue pair per vCPU: turn the others on
	ethtool -L "$UVN_IF0" combined "$UVN_QUEUES"
	uvn_result channels.combined="$(ethtool -l "$UVN_IF0" | awk '/^Current/{c=1} c && /^Combined:/{print $2}')"
fi
arping -c 2 -w 5 -I "$UVN_IF0" "$PEER"
uvn_result arping.rc=$?
uvn_ping ping "$PEER" "$COUNT" -I "$UVN_IF0" -i 0.2
rc=$?
ip neigh show dev "$UVN_IF0"
exit $rc
