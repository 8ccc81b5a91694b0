# shellcheck shell=bash
# tests/interop/lib/netns.sh - private network namespaces for tests in which
# a guest talks through a switch to a TAP (or veth) end in a namespace.
# Namespaces are named uvn<test pid>-<label>, so they are unique per run,
# and are deleted on exit.  Nothing here touches the host's own interfaces:
# links are created directly inside the namespaces, which have no routes
# to the outside.
#
#   netns_create VAR [LABEL]       create a namespace (lo up); name in VAR
#   netns_exec NS CMD...           run CMD inside NS (foreground)
#   netns_spawn VAR DESC LOG NS CMD...
#                                  start CMD inside NS in the background,
#                                  tracked like uvn_spawn (PID in VAR)
#   netns_veth NS1 IF1 NS2 IF2     a veth pair with one end in each namespace
#   netns_tap NS IF                a persistent TAP device created inside NS
#                                  (a process attaches to it from inside NS)
#   netns_move NS IF               move an existing link (e.g. the TAP a switch
#                                  just created in the root namespace) into NS
#   netns_addr NS IF ADDR/PFX      assign an address and bring IF up
#   netns_destroy NS               kill our processes in it, delete it

# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

declare -a NETNS_LIST=()

netns_create() {
	local -n _nsvar=$1
	local label=${2:-ns}
	uvn_need_root "network namespaces"
	command -v ip >/dev/null || uvn_deps iproute2
	netns__sweep
	local ns="uvn$$-${label}${#NETNS_LIST[@]}"
	ip netns add "$ns" || uvn_die "ip netns add $ns failed"
	NETNS_LIST+=("$ns")
	uvn_at_exit netns_destroy "$ns"
	ip -n "$ns" link set lo up
	# no IPv6 chatter (router/neighbour solicitations) to disturb counters
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 2>/dev/null || true
	_nsvar=$ns
	uvn_log "netns $ns created"
}

# netns__sweep  - delete namespaces left by harness runs that were SIGKILLed
# (uvn<pid>-*, that pid gone, no process inside)
netns__sweep() {
	local ns pid
	for ns in $(ip netns list 2>/dev/null | awk '{print $1}'); do
		[[ "$ns" =~ ^uvn([0-9]+)- ]] || continue
		pid=${BASH_REMATCH[1]}
		kill -0 "$pid" 2>/dev/null && continue
		[[ -z "$(ip netns pids "$ns" 2>/dev/null)" ]] || continue
		ip netns del "$ns" 2>/dev/null && uvn_log "removed stale netns $ns"
	done
	return 0
}

netns_exec() {
	local ns=$1
	shift
	ip netns exec "$ns" "$@"
}

netns_spawn() {
	local _ns_var=$1 _ns_desc=$2 _ns_log=$3 _ns=$4
	shift 4
	uvn_spawn "$_ns_var" "$_ns_desc (netns $_ns)" "$_ns_log" /dev/null ip netns exec "$_ns" "$@"
}

netns_veth() {
	ip link add "$2" netns "$1" type veth peer name "$4" netns "$3" ||
		uvn_die "cannot create veth $2@$1 <-> $4@$3"
}

netns_tap() {
	ip -n "$1" tuntap add dev "$2" mode tap || uvn_die "cannot create TAP $2 in $1"
}

netns_move() {
	ip link set "$2" netns "$1" || uvn_die "cannot move $2 into $1"
}

# The peer answers and never asks: a neighbour it learnt stays in DELAY
# instead of being probed 5 s after its first use, so the peer sends
# nothing of its own (an ARP probe) while a guest reads its final counters.
netns_addr() {
	ip -n "$1" addr add "$3" dev "$2" || uvn_die "cannot add $3 to $2 in $1"
	netns_exec "$1" sysctl -qw "net.ipv4.neigh.$2.delay_first_probe_time=600"
	ip -n "$1" link set "$2" up
}

netns_destroy() {
	local ns=$1 pid i
	[[ -e /run/netns/$ns ]] || return 0	# where ip netns keeps its names
	for pid in $(ip netns pids "$ns" 2>/dev/null); do
		if [[ -n "${UVN_PIDS[$pid]:-}" ]]; then
			uvn_kill "$pid" 5
		else
			uvn_log "WARNING: pid $pid ($(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)) still in $ns, not started by this test"
		fi
	done
	ip netns del "$ns" || uvn_log "WARNING: ip netns del $ns failed"
	for i in "${!NETNS_LIST[@]}"; do [[ "${NETNS_LIST[$i]}" == "$ns" ]] && unset "NETNS_LIST[$i]"; done
	uvn_log "netns $ns deleted"
}
