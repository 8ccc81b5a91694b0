# shellcheck shell=bash
# tests/interop/lib/testpmd.sh - DPDK 22.11 dpdk-testpmd as a test peer:
# net_vhost (vhost-user backend, server or client) and net_virtio_user
# (vhost-user frontend) ports, driven interactively through a fifo.
#
#   testpmd_start NAME [OPTIONS] [-- EXTRA_TESTPMD_ARGS...]
#       --vhost SOCK          net_vhost port; testpmd listens (client=0)
#       --vhost-client SOCK   net_vhost port; testpmd connects (client=1) to a
#                             listening frontend (QEMU --server, uvnet's driver)
#       --virtio-user SOCK[,DEVARGS]
#                             net_virtio_user port, e.g. "$S,packed_vq=1,mrg_rxbuf=0"
#       --vdev SPEC           any other vdev (e.g. net_tap0,iface=tap0)
#       --fwd MODE            io (default) | macswap | rxonly | txonly | icmpecho | ...
#       --queues N            queue pairs per port (default 1)
#       --cpu N               run both lcores on CPU N (default 1): --lcores 0@N,1@N
#       --lcores SPEC         explicit --lcores
#       --huge                use 2 MiB hugepages (skips the test when fewer than
#                             --mem MB are free); default --no-huge
#       --mem MB              EAL memory (default 256)
#       --mbufs N             --total-num-mbufs (default 16384)
#       --txpkts LEN --burst N
#       --start               start forwarding once it is up
#       --netns NS            run inside network namespace NS (lib/netns.sh),
#                             e.g. so that a net_tap port's TAP lives there
#     Ports are numbered in the order given.  Returns once the prompt is up
#     and every --vhost socket exists.
#   testpmd_cmd NAME CMD          run an interactive command; prints its output
#   testpmd_stats NAME            one line per port:
#       port=P rx_packets= rx_missed= rx_bytes= rx_errors= rx_nombuf= tx_packets= tx_errors= tx_bytes=
#   testpmd_stat NAME PORT FIELD  one of those values
#   testpmd_wait_link NAME PORT [TIMEOUT_S]   wait for "Link status: up"
#   testpmd_stop NAME             stop forwarding, quit, kill by PID if needed,
#                                 remove /var/run/dpdk/<prefix>; idempotent
#   testpmd_pid NAME / testpmd_log NAME
# Every instance is stopped on exit (uvn_at_exit).  Logs: $UVN_LOG_DIR/testpmd-NAME.log

# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

declare -A TESTPMD_PID=() TESTPMD_FD=() TESTPMD_RFD=() TESTPMD_PREFIX=() TESTPMD_LOG=()
TESTPMD_BIN=${UVN_TESTPMD:-dpdk-testpmd}
TESTPMD_RUNDIR=/var/run/dpdk

# testpmd_prepare  - install DPDK when missing; remove runtime dirs left by
# killed harness runs (their owner PID is gone)
testpmd_prepare() {
	uvn_deps dpdk-dev librte-net-vhost23 librte-mempool-ring23 librte-net-virtio23
	command -v "$TESTPMD_BIN" >/dev/null || uvn_skip "$TESTPMD_BIN not found after installing dpdk-dev"
	local d pid
	for d in "$TESTPMD_RUNDIR"/uvn*_* $(testpmd__huge_files 'uvn*_*'); do
		[[ -e "$d" ]] || continue
		pid=${d##*/uvn}
		pid=${pid%%_*}
		[[ "$pid" =~ ^[0-9]+$ ]] && ! kill -0 "$pid" 2>/dev/null && rm -rf "$d"
	done
	return 0
}

# testpmd__huge_files GLOB  - hugepage files matching GLOB on hugetlbfs mounts
testpmd__huge_files() {
	local m f
	for m in $(awk '$3 == "hugetlbfs" {print $2}' /proc/mounts); do
		for f in "$m"/$1; do [[ -e "$f" ]] && echo "$f"; done
	done
	return 0
}

testpmd_log() { echo "${TESTPMD_LOG[$1]}"; }
testpmd_pid() { echo "${TESTPMD_PID[$1]}"; }

testpmd_start() {
	local name=$1
	shift
	[[ "$name" =~ ^[A-Za-z0-9]+$ ]] || uvn_die "testpmd_start: name '$name' must be alphanumeric"
	[[ -z "${TESTPMD_PID[$name]:-}" ]] || uvn_die "testpmd $name already running"
	local fwd=io queues=1 cpu=1 lcores= huge=0 mem=256 mbufs=16384 txpkts= burst= start=0 netns=
	local nvh=0 nvu=0 v s
	local -a vdevs=() extra=() server_socks=()
	while (($#)); do
		case $1 in
		--vhost | --vhost-client)
			v="net_vhost$nvh,iface=$2,queues=@Q@,client=$([[ $1 == --vhost ]] && echo 0 || echo 1)"
			[[ $1 == --vhost ]] && { server_socks+=("$2"); rm -f "$2"; }
			vdevs+=("$v")
			nvh=$((nvh + 1))
			shift 2
			;;
		--virtio-user)
			s=${2%%,*}
			v="net_virtio_user$nvu,path=$s,queues=@Q@"
			[[ "$2" == *,* ]] && v+=",${2#*,}"
			vdevs+=("$v")
			nvu=$((nvu + 1))
			shift 2
			;;
		--vdev) vdevs+=("$2"); shift 2 ;;
		--fwd) fwd=$2; shift 2 ;;
		--queues) queues=$2; shift 2 ;;
		--cpu) cpu=$2; shift 2 ;;
		--lcores) lcores=$2; shift 2 ;;
		--huge) huge=1; shift ;;
		--mem) mem=$2; shift 2 ;;
		--mbufs) mbufs=$2; shift 2 ;;
		--txpkts) txpkts=$2; shift 2 ;;
		--burst) burst=$2; shift 2 ;;
		--start) start=1; shift ;;
		--netns) netns=$2; shift 2 ;;
		--) shift; extra=("$@"); break ;;
		*) uvn_die "testpmd_start: unknown option $1" ;;
		esac
	done
	((${#vdevs[@]})) || uvn_die "testpmd_start: no ports"
	testpmd_prepare
	[[ -n "$lcores" ]] || lcores="0@$cpu,1@$cpu"
	local prefix="uvn$$_$name"
	local log=$UVN_LOG_DIR/testpmd-$name.log
	local -a eal=(--lcores "$lcores" --no-pci --file-prefix="$prefix")
	if ((huge)); then
		local free
		free=$(awk '/HugePages_Free/{print $2}' /proc/meminfo)
		((free * 2 >= mem)) || uvn_skip "testpmd --huge: only ${free:-0} free 2 MiB hugepages (need $((mem / 2)))"
		grep -q hugetlbfs /proc/mounts || uvn_skip "testpmd --huge: no hugetlbfs mounted"
		# virtio-user needs one file per memory region (else "Too many memory regions")
		# (--huge-unlink is incompatible with --single-file-segments: testpmd_stop
		# removes the <prefix>map_* files, testpmd_prepare those of dead runs)
		eal+=(--single-file-segments -m "$mem")
	else
		eal+=(--no-huge -m "$mem")
	fi
	for v in "${vdevs[@]}"; do eal+=(--vdev "${v//@Q@/$queues}"); done
	local -a app=(-i --forward-mode="$fwd" --total-num-mbufs="$mbufs" --rxq="$queues" --txq="$queues" --nb-cores=1)
	[[ -n "$txpkts" ]] && app+=(--txpkts="$txpkts")
	[[ -n "$burst" ]] && app+=(--burst="$burst")
	local -a argv=(stdbuf -oL -eL "$TESTPMD_BIN" "${eal[@]}" -- "${app[@]}" "${extra[@]}")
	[[ -n "$netns" ]] && argv=(ip netns exec "$netns" "${argv[@]}")
	printf '# %s\n' "$(printf '%q ' "${argv[@]}")" >"$log"

	local fd rfd pid
	uvn_hold_fifo fd "$UVN_RUN/testpmd-$name.stdin"
	TESTPMD_FD[$name]=$fd
	TESTPMD_PREFIX[$name]=$prefix
	TESTPMD_LOG[$name]=$log
	uvn_at_exit testpmd_stop "$name"
	uvn_spawn pid "testpmd $name" "$log" "$UVN_RUN/testpmd-$name.stdin" "${argv[@]}"
	TESTPMD_PID[$name]=$pid
	exec {rfd}<"$log"
	UVN_HELD_FDS+=("$rfd")
	TESTPMD_RFD[$name]=$rfd
	uvn_log "testpmd $name: fwd=$fwd queues=$queues lcores=$lcores ports: ${vdevs[*]//@Q@/$queues}"
	if ! uvn_wait_for 90 "testpmd $name prompt" testpmd__up "$name"; then
		tail -n 30 "$log" >&2
		uvn_die "testpmd $name did not come up"
	fi
	uvn_alive "$pid" || { tail -n 30 "$log" >&2; uvn_die "testpmd $name exited at start (see $log)"; }
	for s in "${server_socks[@]}"; do
		uvn_wait_for 10 "socket $s" test -S "$s" || uvn_die "testpmd $name: no socket $s"
	done
	((start)) && testpmd_cmd "$name" start >/dev/null
	return 0
}
testpmd__up() { grep -aq 'testpmd> ' "${TESTPMD_LOG[$1]}" || ! uvn_alive "${TESTPMD_PID[$1]}"; }

# testpmd_cmd NAME CMD  - send one interactive command and print its output
# once testpmd has finished it.  A sync token (an unknown command) follows
# CMD; testpmd reads it only after CMD completed and answers "Command not
# found".  The log is followed through a read fd, without forks.
testpmd_cmd() {
	local name=$1 cmd=$2 fd rfd pid log tok chunk line pending= seen=0 deadline
	local -a out=()
	log=${TESTPMD_LOG[$name]:-}
	fd=${TESTPMD_FD[$name]:-}
	rfd=${TESTPMD_RFD[$name]:-}
	pid=${TESTPMD_PID[$name]:-}
	[[ -n "$pid" ]] && uvn_alive "$pid" || uvn_die "testpmd $name is not running (command '$cmd')"
	while IFS= read -r -u "$rfd" chunk; do :; done   # skip older output
	tok="uvnsync${BASHPID}x${RANDOM}x${SECONDS}"
	printf '%s\n%s\n' "$cmd" "$tok" 1>&"$fd"
	deadline=$((SECONDS + 30))
	while :; do
		if IFS= read -r -u "$rfd" chunk; then
			line=${pending}${chunk}
			pending=
			line=${line//$'\r'/}
			if ((seen)); then
				[[ "$line" == *"Command not found"* ]] && break
			elif [[ "$line" == *"$tok"* ]]; then
				seen=1
			elif [[ "$line" != *"testpmd> "* ]]; then
				out+=("$line")
			fi
			continue
		fi
		pending+=$chunk   # EOF inside a line: keep the part we got
		uvn_alive "$pid" || uvn_die "testpmd $name died during '$cmd' (see $log)"
		((SECONDS < deadline)) || uvn_die "testpmd $name did not answer '$cmd' within 30s (see $log)"
		uvn_sleep 0.02
	done
	((${#out[@]} == 0)) || printf '%s\n' "${out[@]}"
}

# testpmd_stats NAME  - parse "show port stats all"
testpmd_stats() {
	testpmd_cmd "$1" "show port stats all" | awk '
		/NIC statistics for port/ { for (i = 1; i <= NF; i++) if ($i == "port") p = $(i + 1); next }
		p != "" && /(RX|TX)-/ {
			for (i = 1; i < NF; i++) if ($i ~ /^(RX|TX)-[a-z]+:$/) {
				k = tolower(substr($i, 1, length($i) - 1)); sub("-", "_", k); v[p, k] = $(i + 1); keys[k] = 1
			}
		}
		/^ *#+ *$/ && p != "" { ports[++n] = p; p = "" }
		END {
			split("rx_packets rx_missed rx_bytes rx_errors rx_nombuf tx_packets tx_errors tx_bytes", order, " ")
			for (j = 1; j <= n; j++) {
				line = "port=" ports[j]
				for (o = 1; o <= 8; o++) line = line " " order[o] "=" v[ports[j], order[o]]
				print line
			}
		}'
}

# testpmd_stat NAME PORT FIELD  - e.g. testpmd_stat tp 0 rx_packets
testpmd_stat() {
	local v
	v=$(testpmd_stats "$1" | awk -v p="port=$2" -v f="$3=" '$1 == p { for (i = 2; i <= NF; i++) if (index($i, f) == 1) print substr($i, length(f) + 1) }')
	[[ -n "$v" ]] || uvn_die "testpmd $1: no counter $3 for port $2"
	echo "$v"
}

# testpmd_wait_link NAME PORT [TIMEOUT_S]  - wait until the port's link is up
# (a vhost port: the frontend connected and started its rings)
testpmd_wait_link() {
	uvn_wait_for "${3:-60}" "testpmd $1 port $2 link up" testpmd__link_up "$1" "$2"
}
testpmd__link_up() { [[ $(testpmd_cmd "$1" "show port info $2") == *'Link status: up'* ]]; }

# testpmd_stop NAME  - graceful quit, then SIGTERM/SIGKILL by PID; cleanup
testpmd_stop() {
	local name=$1 pid fd
	pid=${TESTPMD_PID[$name]:-}
	fd=${TESTPMD_FD[$name]:-}
	if [[ -n "$pid" ]]; then
		if uvn_alive "$pid" && [[ -n "$fd" ]] && ((!UVN_SIGNALLED)); then
			printf 'stop\nquit\n' 1>&"$fd" 2>/dev/null || true
			uvn_wait_for 15 "testpmd $name to quit" testpmd__gone "$pid" || true
		fi
		uvn_kill "$pid" $((UVN_SIGNALLED ? 2 : 5))
		uvn_log "testpmd $name stopped"
	fi
	[[ -n "$fd" ]] && uvn_release_fd "$fd"
	[[ -n "${TESTPMD_RFD[$name]:-}" ]] && uvn_release_fd "${TESTPMD_RFD[$name]}"
	if [[ -n "${TESTPMD_PREFIX[$name]:-}" ]]; then
		rm -rf "${TESTPMD_RUNDIR:?}/${TESTPMD_PREFIX[$name]}"
		# shellcheck disable=SC2046
		rm -f $(testpmd__huge_files "${TESTPMD_PREFIX[$name]}map_*")
	fi
	unset "TESTPMD_PID[$name]" "TESTPMD_FD[$name]" "TESTPMD_RFD[$name]"
	return 0
}
testpmd__gone() { ! uvn_alive "$1"; }
