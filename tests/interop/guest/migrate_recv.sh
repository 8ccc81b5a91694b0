# guest script (busybox sh): the guest end of uvnetd_migrate's TCP stream.
# Listens on PORT and keeps what arrives until the peer closes (the guest
# migrates to another QEMU meanwhile), reports its md5 and size, then
# stays up HOLD s so the host's ping stream shows the guest reachable at
# its new port, and reports what the kernel said about its NIC.
# Env: PORT (default 5001), HOLD (default 3), WAIT_SECONDS (default 300)
PORT=${PORT:-5001}
HOLD=${HOLD:-3}
WAIT_SECONDS=${WAIT_SECONDS:-300}

# busybox nc half-closes on stdin EOF: its stdin is a fifo held open
mkfifo /tmp/hold
exec 3<>/tmp/hold
nc -l -p "$PORT" <&3 >/tmp/stream.bin &
rx=$!
uvn_result recv.listening=1
echo "UVN_MIGRATE listening"
# a watchdog: a stream that never ends must not hang the guest
( sleep "$WAIT_SECONDS"; kill $rx 2>/dev/null ) &
wd=$!
wait $rx
rc=$?
kill $wd 2>/dev/null
exec 3>&-
uvn_result recv.rc=$rc recv.md5="$(md5sum </tmp/stream.bin | cut -d' ' -f1)" \
	recv.bytes="$(wc -c </tmp/stream.bin | tr -d ' ')"
echo "UVN_MIGRATE received"
sleep "$HOLD"
pat_wd='NETDEV WATCHDOG|transmit queue [0-9]+ timed out'
pat_ring='not a head|out of range|used idx|is broken|BUG|WARNING:|Call Trace'
dmesg | grep -E "$pat_wd|$pat_ring" | sed 's/^/UVN_DMESG /'
uvn_result recv.watchdog="$(dmesg | grep -c -E "$pat_wd")" \
	recv.ring_msgs="$(dmesg | grep -c -E "$pat_ring")" \
	recv.carrier="$(cat "/sys/class/net/$UVN_IF0/carrier")"
exit 0
