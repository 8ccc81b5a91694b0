# shellcheck shell=bash
# tests/interop/lib/uvnetd.sh - uvnetd as the switch under test.
#
#   uvnetd_start NAME [--netns NS] -- UVNETD_ARGS...
#       start uvnetd (with --json -s 1 added) in the background, optionally
#       inside a network namespace (its TAP ports are then created there);
#       waits until every listening vhost-user socket of the arguments exists
#   uvnetd_stop NAME      SIGTERM; uvnetd prints its final totals and exits
#   uvnetd_stat NAME PORT FIELD   a field of port PORT (0-based, command-line
#                         order) in the final totals: rx_packets, tx_packets,
#                         drops, errors, kicks, calls, calls_suppressed
#   uvnetd_pid NAME / uvnetd_log NAME
# The binary is $UVNETD (meson passes it with --uvnetd PATH).

# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

declare -A UVNETD_PID=() UVNETD_LOG=()

uvnetd_pid() { echo "${UVNETD_PID[$1]}"; }
uvnetd_log() { echo "${UVNETD_LOG[$1]}"; }

uvnetd_start() {
	local name=$1 ns= s
	shift
	[[ -x "${UVNETD:-}" ]] || uvn_die "UVNETD not set to the uvnetd binary"
	if [[ "${1:-}" == --netns ]]; then ns=$2; shift 2; fi
	[[ "${1:-}" == -- ]] && shift
	local log=$UVN_LOG_DIR/uvnetd-$name.log
	local -a socks=()
	for s in "$@"; do
		[[ "$s" == vhost-user:* && "$s" != *,client* ]] && socks+=("${s#vhost-user:}")
	done
	for s in "${socks[@]}"; do rm -f "${s%%,*}"; done
	echo "# $UVNETD $* --json -s 1" >"$log"
	if [[ -n "$ns" ]]; then
		netns_spawn "UVNETD_PID[$name]" "uvnetd $name" "$log" "$ns" "$UVNETD" "$@" --json -s 1
	else
		uvn_spawn "UVNETD_PID[$name]" "uvnetd $name" "$log" /dev/null "$UVNETD" "$@" --json -s 1
	fi
	UVNETD_LOG[$name]=$log
	for s in "${socks[@]}"; do
		uvn_wait_for 10 "uvnetd socket ${s%%,*}" test -S "${s%%,*}" ||
			uvn_die "uvnetd $name did not create ${s%%,*}: $(tail -5 "$log")"
	done
}

uvnetd_stop() {
	local name=$1 pid=${UVNETD_PID[$1]:-} i
	[[ -n "$pid" ]] || return 0
	kill -TERM "$pid" 2>/dev/null || true
	for ((i = 0; i < 50; i++)); do uvn_alive "$pid" || break; uvn_sleep 0.1; done
	uvn_kill "$pid" 1
	UVNETD_PID[$name]=
	grep -q '"final":true' "${UVNETD_LOG[$name]}" || uvn_die "uvnetd $name printed no final totals"
	uvn_log "uvnetd $name: $(grep '"final":true' "${UVNETD_LOG[$name]}")"
}

uvnetd_stat() {
	local name=$1 port=$2 field=$3
	grep '"final":true' "${UVNETD_LOG[$name]}" | tail -n 1 |
		grep -o "\"$field\":[0-9.]*" | sed -n "$((port + 1))p" | cut -d: -f2
}
