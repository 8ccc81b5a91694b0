# shellcheck shell=bash
# tests/interop/lib/common.sh - plumbing shared by the interop harness:
# logging, skip/fail, per-test work dirs, package installs, and the process
# and cleanup registry that makes every test leave nothing running.
#
# Source it (guest.sh, testpmd.sh and netns.sh do), then call
#   uvn_test_init NAME
# once at the top of a test.  After that:
#   - every process started with uvn_spawn is killed by PID on exit, error,
#     timeout or Ctrl-C (TERM, then KILL), and reaped;
#   - every command registered with uvn_at_exit runs on exit, newest first;
#   - $UVN_LOG_DIR keeps the logs (kept after the test), $UVN_RUN is a short
#     private dir for sockets and fifos (removed on exit).
# Exit status 77 means "skipped" (meson's convention); uvn_skip prints why.

[[ -n "${UVN_COMMON_LOADED:-}" ]] && return 0
UVN_COMMON_LOADED=1
set -euo pipefail

UVN_INTEROP_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
UVN_REPO=$(cd "$UVN_INTEROP_DIR/../.." && pwd)
UVN_CACHE=${UVN_INTEROP_CACHE:-/var/tmp/uvnet-interop}
UVN_SKIP_RC=77
UVN_TEST=${UVN_TEST:-interop}

declare -a UVN_CLEANUPS=()   # commands (already shell-quoted), run newest first
declare -A UVN_PIDS=()       # pid -> description, killed on exit
declare -a UVN_HELD_FDS=()   # fds this shell holds open (fifo writers); closed in children
UVN_SIGNALLED=0              # set when a signal ends the test: cleanup skips graceful steps

# ------------------------------------------------------------------ logging
uvn_log() { printf '[%s %(%T)T] %s\n' "$UVN_TEST" -1 "$*" >&2; }
uvn_die() { uvn_log "FAIL: $*"; exit 1; }
uvn_skip() { uvn_log "SKIP: $*"; exit "$UVN_SKIP_RC"; }

# uvn_check COND_DESC CMD...  - run CMD; fail the test with COND_DESC if it fails
uvn_check() {
	local desc=$1; shift
	if "$@"; then uvn_log "ok: $desc"; else uvn_die "$desc"; fi
}
# uvn_assert_eq WHAT GOT WANT
uvn_assert_eq() {
	[[ "$2" == "$3" ]] || uvn_die "$1: got '$2', want '$3'"
	uvn_log "ok: $1 = $2"
}
# uvn_assert_ge WHAT GOT MIN  (integers)
uvn_assert_ge() {
	[[ "$2" =~ ^[0-9]+$ ]] || uvn_die "$1: '$2' is not a number"
	(( $2 >= $3 )) || uvn_die "$1: got $2, want >= $3"
	uvn_log "ok: $1 = $2 (>= $3)"
}

# uvn_wait_for TIMEOUT_S DESC CMD...  - poll CMD every 0.1 s until it succeeds
uvn_wait_for() {
	local timeout=$1 desc=$2; shift 2
	local deadline=$((SECONDS + timeout))
	until "$@"; do
		((SECONDS < deadline)) || { uvn_log "timed out after ${timeout}s waiting for $desc"; return 1; }
		uvn_sleep 0.1
	done
}

# ------------------------------------------------------------------ packages
# uvn_deps PKG...  - install missing Debian packages via scripts/deps.sh;
# skips the test (77) when they are missing and cannot be installed.
uvn_deps() {
	local p missing=()
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
	done
	((${#missing[@]} == 0)) && return 0
	[[ $(id -u) == 0 ]] || uvn_skip "missing Debian packages (${missing[*]}) and not root to install them"
	uvn_log "installing ${missing[*]}"
	"$UVN_REPO/scripts/deps.sh" "${missing[@]}" ||
		uvn_skip "cannot install Debian packages: ${missing[*]} (see /tmp/uvnet-apt.log)"
}

# uvn_need_root WHY  - skip unless running as root
uvn_need_root() { [[ $(id -u) == 0 ]] || uvn_skip "needs root: $1"; }

# ------------------------------------------------------ processes + cleanup
# uvn_at_exit CMD [ARG...]  - run this command on exit (newest first)
uvn_at_exit() { UVN_CLEANUPS+=("$(printf '%q ' "$@")"); }

# uvn_spawn VAR DESC OUT_FILE IN_FILE CMD...  - start CMD in the background
# with stdout+stderr appended to OUT_FILE and stdin from IN_FILE (/dev/null
# if empty); store its PID in VAR and track it for cleanup.  CMD is exec'd,
# so the PID is the program's own.  Fds this shell holds (fifo writers) are
# closed in the child so that EOF still works.  Never call in $(...).
uvn_spawn() {
	local -n _pidvar=$1
	local desc=$2 out=$3 in=${4:-/dev/null}; shift 4
	(
		for fd in "${UVN_HELD_FDS[@]}"; do eval "exec ${fd}>&-"; done
		exec "$@" <"$in" >>"$out" 2>&1
	) &
	_pidvar=$!
	UVN_PIDS[$_pidvar]=$desc
	uvn_log "started $desc (pid $_pidvar)"
}

# uvn_alive PID  - true while the process exists and is not a zombie
# (no fork: polled often, and forks are slow on a loaded 2-CPU machine)
uvn_alive() {
	local st
	kill -0 "$1" 2>/dev/null || return 1
	read -r st <"/proc/$1/stat" 2>/dev/null || return 1
	st=${st##*) }
	[[ "${st%% *}" != Z ]]
}

# uvn_sleep SECONDS  - sleep without forking (read with a timeout on a fifo
# nobody writes); falls back to sleep(1) before uvn_test_init
uvn_sleep() {
	if [[ -n "${UVN_SLEEP_FD:-}" ]]; then
		read -r -t "$1" -u "$UVN_SLEEP_FD" _ || true
	else
		sleep "$1"
	fi
}

# uvn_kill PID [GRACE_S]  - SIGTERM, wait up to GRACE_S (default 5), SIGKILL;
# reap it and forget it.  Only for PIDs this shell started.
uvn_kill() {
	local pid=$1 grace=${2:-5} i
	if uvn_alive "$pid"; then
		kill -TERM "$pid" 2>/dev/null || true
		for ((i = 0; i < grace * 10; i++)); do uvn_alive "$pid" || break; uvn_sleep 0.1; done
		if uvn_alive "$pid"; then
			uvn_log "pid $pid (${UVN_PIDS[$pid]:-?}) ignored SIGTERM, SIGKILL"
			kill -KILL "$pid" 2>/dev/null || true
		fi
	fi
	wait "$pid" 2>/dev/null || true
	unset "UVN_PIDS[$pid]"
}

# uvn_reap PID  - wait for a tracked process that is exiting on its own;
# returns its exit status
uvn_reap() {
	local pid=$1 rc=0
	wait "$pid" 2>/dev/null || rc=$?
	unset "UVN_PIDS[$pid]"
	return "$rc"
}

uvn__on_exit() {
	local rc=$? i pid
	set +e
	trap - EXIT INT TERM HUP
	# a signal may arrive while a command with redirections runs (e.g.
	# "wait $pid 2>/dev/null"): the cleanup must log to the real stdout/stderr
	[[ -n "${UVN_STDOUT_FD:-}" ]] && exec 1>&"$UVN_STDOUT_FD" 2>&"$UVN_STDERR_FD"
	for ((i = ${#UVN_CLEANUPS[@]} - 1; i >= 0; i--)); do
		eval "${UVN_CLEANUPS[$i]}" || uvn_log "cleanup failed: ${UVN_CLEANUPS[$i]}"
	done
	for pid in "${!UVN_PIDS[@]}"; do
		uvn_log "killing leftover ${UVN_PIDS[$pid]} (pid $pid)"
		uvn_kill "$pid" 3
	done
	for fd in "${UVN_HELD_FDS[@]}"; do eval "exec ${fd}>&-" 2>/dev/null; done
	[[ -n "${UVN_RUN:-}" && -d "$UVN_RUN" ]] && rm -rf "$UVN_RUN"
	case $rc in
	0) uvn_log "PASS (${SECONDS}s, logs in ${UVN_LOG_DIR:-?})" ;;
	77) uvn_log "skipped (${SECONDS}s)" ;;
	*) uvn_log "exit status $rc (${SECONDS}s, logs in ${UVN_LOG_DIR:-?})" ;;
	esac
	exit "$rc"
}

uvn__on_signal() {
	UVN_SIGNALLED=1
	exec 1>&"$UVN_STDOUT_FD" 2>&"$UVN_STDERR_FD"
	uvn_log "$1"
	exit "$2"
}

# uvn__sweep_run_dirs  - remove runtime dirs of harness runs that died
# without cleaning up (SIGKILL): /tmp/uvn<pid>-<test>.XXXXXX, pid gone
uvn__sweep_run_dirs() {
	local d pid
	for d in /tmp/uvn[0-9]*-*.??????; do
		[[ -d "$d" && "${d##*/}" =~ ^uvn([0-9]+)- ]] || continue
		pid=${BASH_REMATCH[1]}
		kill -0 "$pid" 2>/dev/null || rm -rf "$d"
	done
	return 0
}

# uvn_test_init NAME  - set up a test: traps, $UVN_LOG_DIR, $UVN_RUN
uvn_test_init() {
	UVN_TEST=$1
	SECONDS=0
	UVN_LOG_DIR=${UVN_INTEROP_LOGDIR:-/tmp/uvnet-interop-logs}/$UVN_TEST
	rm -rf "$UVN_LOG_DIR"
	mkdir -p "$UVN_LOG_DIR"
	uvn__sweep_run_dirs
	exec {UVN_STDOUT_FD}>&1 {UVN_STDERR_FD}>&2
	UVN_HELD_FDS+=("$UVN_STDOUT_FD" "$UVN_STDERR_FD")
	# sockets live in a short path (sun_path is 108 bytes); the PID in the
	# name lets a later run remove it if this one is SIGKILLed
	UVN_RUN=$(mktemp -d "/tmp/uvn$$-${UVN_TEST:0:20}.XXXXXX")
	trap uvn__on_exit EXIT
	trap 'uvn__on_signal "interrupted (SIGINT)" 130' INT
	trap 'uvn__on_signal "terminated (SIGTERM)" 143' TERM
	trap 'uvn__on_signal "hangup" 129' HUP
	uvn_hold_fifo UVN_SLEEP_FD "$UVN_RUN/.sleep"
	uvn_log "logs in $UVN_LOG_DIR, runtime dir $UVN_RUN"
}

# uvn_hold_fifo VAR PATH  - create a fifo and hold it open read-write in this
# shell (fd stored in VAR), so a reader never sees EOF until we close it
uvn_hold_fifo() {
	local -n _fdvar=$1
	rm -f "$2"
	mkfifo "$2"
	exec {_fdvar}<>"$2"
	UVN_HELD_FDS+=("$_fdvar")
}

# uvn_release_fd FD  - close a held fd (the fifo's reader then sees EOF)
uvn_release_fd() {
	local fd=$1 i
	eval "exec ${fd}>&-" 2>/dev/null || true
	for i in "${!UVN_HELD_FDS[@]}"; do
		[[ "${UVN_HELD_FDS[$i]}" == "$fd" ]] && unset "UVN_HELD_FDS[$i]"
	done
	UVN_HELD_FDS=("${UVN_HELD_FDS[@]}")
}

# uvn_lock VAR NAME [TIMEOUT_S]  - take an exclusive flock on $UVN_CACHE/NAME.lock
# (fd in VAR); uvn_unlock FD releases it
uvn_lock() {
	local -n _lockfd=$1
	mkdir -p "$UVN_CACHE"
	exec {_lockfd}>"$UVN_CACHE/$2.lock"
	flock -w "${3:-1200}" "$_lockfd" || uvn_die "could not lock $UVN_CACHE/$2.lock"
}
uvn_unlock() { eval "exec $1>&-"; }
