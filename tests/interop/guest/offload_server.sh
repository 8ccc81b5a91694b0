# guest script (busybox sh, helpers from lib/guest-lib.sh): the passive end
# of guest/offload.sh when the peer is another guest. Serves:
#   5001: receives a file (md5sum and size reported as file.recv.sum)
#   5002: sends a file of FILE_MB random MiB (file.sent.sum)
#   5201: iperf3, until IPERF_TESTS tests are done
# reports "server.ready" once listening, then waits for all of it (up to
# WAIT_SECONDS) and holds HOLD seconds so the host can read uvnetd's counters
# while both guests are attached.
# Env: FILE_MB (default 8), IPERF_TESTS (default 2), HOLD (default 8),
#      WAIT_SECONDS (default 300)
FILE_MB=${FILE_MB:-8}
IPERF_TESTS=${IPERF_TESTS:-2}
HOLD=${HOLD:-8}
WAIT_SECONDS=${WAIT_SECONDS:-300}
rc=0

sum() { echo "$(md5sum <"$1" | cut -d' ' -f1)-$(wc -c <"$1" | tr -d ' ')"; }
dd if=/dev/urandom of=/tmp/to_peer.bin bs=64k count=$((FILE_MB * 16)) 2>/dev/null
uvn_result file.sent.sum="$(sum /tmp/to_peer.bin)"
# busybox nc half-closes on stdin EOF and its peer then stops: the receiver's
# stdin is a fifo held open
mkfifo /tmp/hold
exec 3<>/tmp/hold
nc -l -p 5001 <&3 >/tmp/from_peer.bin &
rx=$!
nc -l -p 5002 </tmp/to_peer.bin &
tx=$!
iperf3 -s -p 5201 --forceflush >/tmp/iperf3.log 2>&1 &
ip3=$!
sleep 1
uvn_result server.ready=1

wait $rx
uvn_result file.recv.rc=$? file.recv.sum="$(sum /tmp/from_peer.bin)"
wait $tx
uvn_result file.sent.rc=$?
exec 3>&-
# iperf3 says "Server listening" once at start and once after each test
t=0
while [ "$(grep -c 'Server listening' /tmp/iperf3.log)" -le "$IPERF_TESTS" ]; do
	t=$((t + 1))
	[ $t -ge $((WAIT_SECONDS * 5)) ] && { uvn_log "iperf3 tests did not finish"; rc=1; break; }
	sleep 0.2
done
uvn_result iperf3.tests="$(($(grep -c 'Server listening' /tmp/iperf3.log) - 1))"
kill $ip3 2>/dev/null
sleep "$HOLD"
exit $rc
