# guest script (busybox sh, helpers from lib/guest-lib.sh): jumbo frames
# through NIC 0. Reports the MTU the device gave the driver, then pings
# PEER (a port of the same MTU) with COUNT jumbo pings and PEER_SMALL (a
# port of MTU 1500) with COUNT jumbo pings, which must not come back, and
# COUNT pings of 1500 bytes, which must.
# busybox ping has no -M do: the kernel sets DF on what fits the route's
# MTU (IP_PMTUDISC_WANT) and fragments only what does not, so with an
# MTU of 9000 the 9000-byte pings leave whole, with DF (the host checks
# that they arrived as jumbo frames, from its counters).
# Env: PEER, PEER_SMALL (required), COUNT (default 5), JUMBO (ICMP payload,
# default 8972: a 9000-byte IP packet)
: "${PEER:?PEER not set}" "${PEER_SMALL:?PEER_SMALL not set}"
COUNT=${COUNT:-5}
JUMBO=${JUMBO:-8972}
uvn_result nic0.mtu="$(cat "/sys/class/net/$UVN_IF0/mtu")"
uvn_result nic0.f_mtu="$(uvn_feature "$UVN_IF0" 3)"
arping -c 2 -w 5 -I "$UVN_IF0" "$PEER"
uvn_result arping.rc=$?
arping -c 2 -w 5 -I "$UVN_IF0" "$PEER_SMALL"
uvn_result arping_small.rc=$?
uvn_ping jumbo "$PEER" "$COUNT" -I "$UVN_IF0" -i 0.2 -s "$JUMBO"
rc=$?
uvn_ping jumbo_small "$PEER_SMALL" "$COUNT" -I "$UVN_IF0" -i 0.2 -s "$JUMBO"
uvn_ping small "$PEER_SMALL" "$COUNT" -I "$UVN_IF0" -i 0.2 -s 1472
[ $? = 0 ] || rc=1
uvn_settle
uvn_counters nic0 "$UVN_IF0"
exit $rc
