#!/bin/bash
# uvnetd_vlan: VLANs in uvnetd's switch with a Linux guest (issue 14).
# Ports: the guest's NIC 0 on VLAN 10 (vlan=10, an access port); its NIC 1
# a trunk of VLANs 10 and 20 (trunks=10:20), which the guest puts in a
# network namespace of its own with Linux VLAN devices vl10 (198.18.10.1)
# and vl20 (198.18.20.1); a TAP in a private namespace of the host on VLAN
# 20 (vlan=20, 198.18.20.3). The host kernel here has no 8021q driver, so
# the tagged end is the guest's (the guest kernel has it); the TAP carries
# the VLAN-20 side untagged.
#  - NIC 0 arpings and pings vl10: untagged at the access port, tagged on
#    the trunk, and back;
#  - vl20 pings the TAP: tagged on the trunk, untagged at the TAP;
#  - NIC 0 with a second address on the VLAN-20 subnet reaches neither
#    vl20 nor the TAP, and vl20 receives no frame meanwhile;
#  - the FDB has NIC 0's MAC in VLAN 10 only, NIC 1's (both VLAN devices
#    use it) in VLANs 10 and 20, on their ports.
#
# Usage: uvnetd_vlan.sh --uvnetd PATH [--test-name NAME] [--uvnetd-opt OPT]...
#        [guest ring options: --packed on --mrg-rxbuf off ...]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib/guest.sh"
source "$HERE/lib/netns.sh"
source "$HERE/lib/uvnetd.sh"

name=uvnetd_vlan count=5
declare -a gopts=() uopts=()
while (($#)); do
	case $1 in
	--uvnetd) UVNETD=$2; shift 2 ;;
	--test-name) name=$2; shift 2 ;;
	--uvnetd-opt) uopts+=("$2"); shift 2 ;;
	--packed | --mrg-rxbuf | --event-idx | --indirect) gopts+=("$1" "$2"); shift 2 ;;
	*) echo "unknown option $1" >&2; exit 2 ;;
	esac
done

uvn_test_init "$name"
uvn_need_root "network namespaces and TAP devices"
guest_prepare

netns_create NS tap
S0=$UVN_RUN/access10.sock S1=$UVN_RUN/trunk.sock CTL=$UVN_RUN/ctl.sock TAP=uvnvlan0
MAC0=52:54:00:a5:10:00 MAC1=52:54:00:a5:10:01
uvnetd_start sw --netns "$NS" -- --port "vhost-user:$S0,name=access10,vlan=10" \
	--port "vhost-user:$S1,name=trunk,trunks=10:20" --port "tap:$TAP,name=tap20,vlan=20" \
	--ctl "$CTL" "${uopts[@]}"
uvn_wait_for 10 "TAP device" netns_exec "$NS" ip link show "$TAP"
netns_addr "$NS" "$TAP" 198.18.20.3/24
rc=0
guest_run --sock "$S0" --sock "$S1" --mac "$MAC0" --mac "$MAC1" --ip 198.18.10.2/24 \
	--env TAP20=198.18.20.3 --env COUNT=$count --script "$HERE/guest/vlan.sh" \
	--watch "$(uvnetd_pid sw)" "${gopts[@]}" || rc=$?
uvn_assert_eq "guest status" "$rc" 0
uvn_assert_eq "VLAN 10, access -> trunk: arping status" "$(guest_result arping10.rc)" 0
uvn_assert_eq "VLAN 10, access -> trunk: ping replies" "$(guest_result ping10.received)" "$count"
uvn_assert_eq "VLAN 20, trunk -> TAP: arping status" "$(guest_result arping20tap.rc)" 0
uvn_assert_eq "VLAN 20, trunk -> TAP: ping replies" "$(guest_result ping20tap.received)" "$count"
uvn_check "VLAN 10 -> 20: arping fails" test "$(guest_result arping20.rc)" != 0
uvn_assert_eq "VLAN 10 -> 20 (vl20): ping replies" "$(guest_result ping20.received)" 0
uvn_assert_eq "VLAN 10 -> 20 (TAP): ping replies" "$(guest_result ping20tap_from10.received)" 0
uvn_assert_eq "frames vl20 received from VLAN 10" "$(guest_result vl20.leaked)" 0
fdb=$("$UVNETD" ctl "$CTL" fdb show --json)
uvn_log "fdb: $fdb"
uvn_check "FDB: NIC 0 in VLAN 10 on access10; NIC 1 in VLANs 10 and 20 on trunk" python3 -c '
import json, sys
fdb = json.loads(sys.argv[1])["fdb"]
def at(mac):
    return sorted((x["vlan"], x["port"]) for x in fdb if x["mac"] == mac.replace(":", ""))
assert at(sys.argv[2]) == [(10, "access10")], at(sys.argv[2])
assert at(sys.argv[3]) == [(10, "trunk"), (20, "trunk")], at(sys.argv[3])' "$fdb" "$MAC0" "$MAC1"
uvn_log "ports: $("$UVNETD" ctl "$CTL" show ports)"
uvnetd_stop sw
for p in 0 1 2; do
	uvn_assert_eq "uvnetd port $p errors" "$(uvnetd_stat sw "$p" errors)" 0
done
