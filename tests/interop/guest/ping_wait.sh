# guest script (busybox sh): the passive side of a two-guest test. Answers
# pings until it has received WAIT_RX frames more than at start (or
# WAIT_SECONDS pass), then a little longer so the last replies leave.
# Env: WAIT_RX (default 8), WAIT_SECONDS (default 120)
WAIT_RX=${WAIT_RX:-8}
[ "${UVN_QUEUES:-1}" -gt 1 ] && ethtool -L "$UVN_IF0" combined "$UVN_QUEUES"
WAIT_SECONDS=${WAIT_SECONDS:-120}
S=/sys/class/net/$UVN_IF0/statistics
start=$(cat $S/rx_packets) t=0
while [ $(( $(cat $S/rx_packets) - start )) -lt "$WAIT_RX" ] && [ "$t" -lt $((WAIT_SECONDS * 5)) ]; do
	sleep 0.2
	t=$((t + 1))
done
uvn_result wait.rx=$(( $(cat $S/rx_packets) - start ))
sleep 2
exit 0
