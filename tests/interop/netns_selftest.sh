#!/bin/bash
# netns_selftest: lib/netns.sh on its own (no guest, no DPDK): two private
# namespaces joined by a veth pair ping each other; a TAP created inside a
# namespace stays there; a process spawned in a namespace is killed when it
# is destroyed; nothing is left in the root namespace or in `ip netns list`.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib/netns.sh"

uvn_test_init netns_selftest
uvn_need_root "network namespaces"
uvn_deps busybox-static iproute2

netns_create A a
netns_create B b
netns_veth "$A" uvnva "$B" uvnvb
netns_addr "$A" uvnva 198.18.7.1/24
netns_addr "$B" uvnvb 198.18.7.2/24
out=$(netns_exec "$A" busybox ping -c 3 -i 0.2 -W 2 198.18.7.2 2>&1) || true
echo "$out" >&2
uvn_check "veth ping A -> B got 3 replies" grep -q '3 packets received' <<<"$out"

netns_tap "$A" uvntap0
uvn_check "TAP exists inside $A" ip -n "$A" link show uvntap0
uvn_check "TAP is not in the root namespace" bash -c '! ip link show uvntap0 2>/dev/null'
uvn_check "veth ends are not in the root namespace" bash -c '! ip link show uvnva 2>/dev/null && ! ip link show uvnvb 2>/dev/null'

sleeper=
netns_spawn sleeper "sleeper" "$UVN_LOG_DIR/sleeper.log" "$B" sleep 600
uvn_wait_for 5 "sleeper in $B" bash -c "ip netns pids '$B' | grep -qx '$sleeper'"
netns_destroy "$B"
uvn_check "process in $B was killed" bash -c "! kill -0 $sleeper 2>/dev/null"
uvn_check "$B is gone" bash -c "! ip netns list | grep -qw '$B'"
netns_destroy "$A"
uvn_check "$A is gone" bash -c "! ip netns list | grep -qw '$A'"
