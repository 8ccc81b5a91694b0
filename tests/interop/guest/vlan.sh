# guest script (busybox sh, helpers from lib/guest-lib.sh): NIC 0 is on an
# access port of VLAN 10; NIC 1, on a trunk of VLANs 10 and 20, goes into
# its own network namespace with VLAN devices vl10 and vl20 on it (the
# 8021q driver). NIC 0 reaches vl10's address; vl20 reaches the host's TAP
# (an access port of VLAN 20); then NIC 0, with a second address on the
# VLAN-20 subnet, must reach neither vl20's address nor the TAP, and vl20
# must receive no frame meanwhile. The namespace is a strong host
# (arp_ignore=1, rp_filter=1): it does not answer for vl20's address on vl10.
# Env: COUNT (default 5), TAP20 (the TAP's VLAN-20 address, required)
: "${TAP20:?TAP20 not set}"
COUNT=${COUNT:-5}
rc=0
uvn_modprobe 8021q || exit 1
uvn_netns_new
uvn_netns_move "$UVN_IF1" || { uvn_log "moving $UVN_IF1 into the netns failed"; exit 1; }
uvn_in_ns sh -c 'for k in arp_ignore rp_filter; do
	echo 1 >/proc/sys/net/ipv4/conf/all/$k; echo 1 >/proc/sys/net/ipv4/conf/default/$k; done'
uvn_in_ns ip link set "$UVN_IF1" up
for v in 10 20; do
	uvn_in_ns ip link add link "$UVN_IF1" name "vl$v" type vlan id "$v" || exit 1
	uvn_in_ns ip addr add "198.18.$v.1/24" dev "vl$v"
	uvn_in_ns ip link set "vl$v" up
done
n=100
until uvn_in_ns ip link show "$UVN_IF1" | grep -q LOWER_UP || [ $n -eq 0 ]; do sleep 0.1; n=$((n - 1)); done

# VLAN 10: access port <-> trunk, untagged <-> tagged
arping -c 2 -w 5 -I "$UVN_IF0" 198.18.10.1
uvn_result arping10.rc=$?
uvn_ping ping10 198.18.10.1 "$COUNT" -I "$UVN_IF0" -i 0.2 || rc=1
# VLAN 20: trunk <-> the TAP's access port
uvn_in_ns arping -c 2 -w 5 -I vl20 "$TAP20"
uvn_result arping20tap.rc=$?
out=$(uvn_in_ns ping -c "$COUNT" -W 2 -i 0.2 "$TAP20")
echo "$out" | tail -n 2
uvn_result ping20tap.received="$(echo "$out" | awk '/packets transmitted/{print $4}')"

# NIC 0 on the VLAN-20 subnet: its frames stay in VLAN 10
uvn_settle "$UVN_NS_PID"
rx20=$(uvn_in_ns cat /sys/class/net/vl20/statistics/rx_packets)
ip addr add 198.18.20.2/24 dev "$UVN_IF0"
arping -c 2 -w 3 -I "$UVN_IF0" -s 198.18.20.2 198.18.20.1
uvn_result arping20.rc=$?
uvn_ping ping20 198.18.20.1 "$COUNT" -I "$UVN_IF0" -i 0.2
uvn_ping ping20tap_from10 "$TAP20" "$COUNT" -I "$UVN_IF0" -i 0.2
uvn_result vl20.leaked=$(($(uvn_in_ns cat /sys/class/net/vl20/statistics/rx_packets) - rx20))
ip neigh show dev "$UVN_IF0"
uvn_netns_del
exit $rc
