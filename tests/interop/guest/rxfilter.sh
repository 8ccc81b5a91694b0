# guest script (busybox sh, helpers from lib/guest-lib.sh): count frames
# that reach NIC 0 while a peer floods it with unicast frames for another
# address, first as the driver left the NIC (not promiscuous: the switch
# must filter them), then in promiscuous mode (they must arrive).
# Env: SECS (default 3): each counting window.
SECS=${SECS:-3}
rxp() { cat "/sys/class/net/$UVN_IF0/statistics/rx_packets"; }
window() {
	sleep 2 # the switch learns the new filter from QEMU within its round trip
	_a=$(rxp)
	sleep "$SECS"
	echo $(($(rxp) - _a))
}
uvn_result filtered.delta="$(window)"
ip link set "$UVN_IF0" promisc on
uvn_result promisc.delta="$(window)"
ip link set "$UVN_IF0" promisc off
uvn_result off_again.delta="$(window)"
exit 0
