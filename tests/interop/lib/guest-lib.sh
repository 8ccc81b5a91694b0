# shellcheck shell=sh
# tests/interop/lib/guest-lib.sh - helpers INSIDE the guest (busybox ash).
# Installed as /uvn/lib.sh in the initramfs; /init sources it, and a test's
# guest script runs with these functions already defined.
#
# Result lines go to the console (ttyS0) and to the result channel (ttyS1,
# the host's results.log), one per call:
#   UVN_RESULT key=value [key=value ...]
# Keys are [A-Za-z0-9_.]+, values contain no spaces.  The host reads them
# with guest_result NAME KEY (the last value of KEY wins).

UVN_RES_DEV=${UVN_RES_DEV:-/dev/ttyS1}

# uvn_result KEY=VALUE...  - emit one result line
uvn_result() {
	echo "UVN_RESULT $*"
	[ -c "$UVN_RES_DEV" ] && echo "UVN_RESULT $*" >"$UVN_RES_DEV"
	return 0
}

# uvn_log MSG...  - a human-readable console line
uvn_log() { echo "UVN_LOG [$(cut -d' ' -f1 /proc/uptime)] $*"; }

uvn_uptime() { cut -d' ' -f1 /proc/uptime; }

# uvn_modprobe NAME  - load a module shipped in the initramfs (with its deps)
uvn_modprobe() {
	[ -f "/lib/modules/$1.order" ] || { uvn_log "module $1 not in initramfs"; return 1; }
	while read -r _m; do
		[ -d "/sys/module/${_m%.ko}" ] && continue
		[ -d "/sys/module/$(echo "${_m%.ko}" | tr - _)" ] && continue
		insmod "/lib/modules/$_m" || { uvn_log "insmod $_m failed"; return 1; }
	done <"/lib/modules/$1.order"
}

# uvn_nic_by_mac MAC  - print the interface name with this MAC
uvn_nic_by_mac() {
	for _d in /sys/class/net/*; do
		[ "$(cat "$_d/address" 2>/dev/null)" = "$1" ] && { echo "${_d##*/}"; return 0; }
	done
	return 1
}

# uvn_features IFACE  - the virtio feature bits the driver negotiated, as a
# string of 0/1 where character N is bit N
uvn_features() { cat "/sys/class/net/$1/device/features" 2>/dev/null || echo unknown; }

# uvn_feature IFACE BIT  - print 0 or 1
uvn_feature() { uvn_features "$1" | cut -c"$(($2 + 1))"; }

# uvn_wait_carrier IFACE [TIMEOUT_S]  - wait until the link has carrier
uvn_wait_carrier() {
	_n=$((${2:-10} * 10))
	while [ "$_n" -gt 0 ]; do
		[ "$(cat "/sys/class/net/$1/carrier" 2>/dev/null)" = 1 ] && return 0
		sleep 0.1
		_n=$((_n - 1))
	done
	uvn_log "no carrier on $1"
	return 1
}

# uvn_counters PREFIX IFACE [NSPID]  - result line with the interface's
# counters (from /proc/net/dev, so it also works for an interface that was
# moved into the netns of process NSPID):
#   PREFIX.rx_packets= rx_bytes= rx_errors= rx_dropped= tx_packets= tx_bytes= tx_errors= tx_dropped=
uvn_counters() {
	if [ -n "${3:-}" ]; then _dev=$(nsenter -t "$3" -n cat /proc/net/dev); else _dev=$(cat /proc/net/dev); fi
	_line=$(echo "$_dev" | sed 's/:/ /' | awk -v i="$2" '$1 == i {print}')
	[ -n "$_line" ] || { uvn_log "uvn_counters: no interface $2"; return 1; }
	set -- "$1" $_line
	uvn_result "$1.rx_bytes=$3" "$1.rx_packets=$4" "$1.rx_errors=$5" "$1.rx_dropped=$6" \
		"$1.tx_bytes=${11}" "$1.tx_packets=${12}" "$1.tx_errors=${13}" "$1.tx_dropped=${14}"
}

# uvn_settle [NSPID]  - wait (up to 5 s) until no interface counter changes
# for 0.3 s, so counters read next are final (TX completions are reaped
# lazily by virtio_net)
uvn_settle() {
	_n=0
	_prev=
	while [ "$_n" -lt 16 ]; do
		if [ -n "${1:-}" ]; then _cur=$(nsenter -t "$1" -n cat /proc/net/dev); else _cur=$(cat /proc/net/dev); fi
		[ "$_cur" = "$_prev" ] && return 0
		_prev=$_cur
		sleep 0.3
		_n=$((_n + 1))
	done
	uvn_log "uvn_settle: counters still moving"
	return 1
}

# uvn_ping PREFIX PEER COUNT [PING_ARGS...]  - ping and report
#   PREFIX.sent= PREFIX.received= PREFIX.rc=
# Returns ping's exit status (0 when at least one reply came back).
uvn_ping() {
	_pfx=$1 _peer=$2 _cnt=$3
	shift 3
	_out=$(ping -c "$_cnt" -W 2 "$@" "$_peer" 2>&1)
	_rc=$?
	echo "$_out"
	_st=$(echo "$_out" | grep 'packets transmitted')
	_tx=$(echo "$_st" | awk '{print $1}')
	_rx=$(echo "$_st" | awk '{print $4}')
	uvn_result "$_pfx.sent=${_tx:-0}" "$_pfx.received=${_rx:-0}" "$_pfx.rc=$_rc"
	return $_rc
}

# uvn_netns_new  - create a network namespace (held by a sleeping process);
# sets UVN_NS_PID.  uvn_in_ns CMD... runs a command in it; uvn_netns_move
# IFACE moves an interface into it; uvn_netns_del kills the holder.
uvn_netns_new() {
	unshare -n sleep 1000000 &
	UVN_NS_PID=$!
	_n=50
	while [ "$_n" -gt 0 ]; do
		[ "$(readlink /proc/$UVN_NS_PID/ns/net)" != "$(readlink /proc/self/ns/net)" ] && break
		sleep 0.1
		_n=$((_n - 1))
	done
	nsenter -t "$UVN_NS_PID" -n ip link set lo up
}
uvn_in_ns() { nsenter -t "$UVN_NS_PID" -n "$@"; }
uvn_netns_move() { ip link set "$1" netns "$UVN_NS_PID"; }
uvn_netns_del() { kill "$UVN_NS_PID" 2>/dev/null; wait "$UVN_NS_PID" 2>/dev/null; UVN_NS_PID=; }
