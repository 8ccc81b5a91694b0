/* SPDX-License-Identifier: MIT */
/*
 * The driver survives a backend restart (uvn_drv_cfg::reconnect): uvnetd
 * in loopback is SIGKILLed with frames in flight and started again with the
 * same arguments, in both socket roles (uvnetd listening and the driver
 * connecting again; the driver listening and uvnetd connecting again), with
 * and without INFLIGHT_SHMFD, split and packed rings (packed: in order too). Traffic resumes by itself; the time from
 * uvnetd's new start to the first frame back is printed. Every tx packet
 * comes back to its pool exactly once, every rx buffer is either posted or
 * delivered (none held by the backend once traffic is quiet), and the
 * frames lost or repeated are at most those in flight at the kill.
 * A backend that comes back without a feature negotiated before fails the
 * instance with -ENOTSUP, counted. UVNETD names the binary.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <uvnet/driver.h>

#define F(b) (1ull << (b))
#define WINDOW 64u
/* vhost-user.rst: the protocol feature bit (not in a public header) */
#define PROTO_F_INFLIGHT_SHMFD 12

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

struct peer {
	char dir[64], sock[128], out[128];
	char port[200];
	pid_t pid;
};

/* The peer still running, killed by the teardown when a test fails midway. */
static struct peer the_peer;
static bool peer_live;

static int kill_leftovers(void **state)
{
	(void)state;
	if (peer_live) {
		int st;

		kill(the_peer.pid, SIGKILL);
		waitpid(the_peer.pid, &st, 0);
		peer_live = false;
	}
	unlink(the_peer.out);
	unlink(the_peer.sock);
	rmdir(the_peer.dir);
	return 0;
}

static void peer_init(struct peer *p, bool client, unsigned queues)
{
	snprintf(p->dir, sizeof(p->dir), "/tmp/uvn-drvrc-XXXXXX");
	assert_non_null(mkdtemp(p->dir));
	snprintf(p->sock, sizeof(p->sock), "%s/vu.sock", p->dir);
	snprintf(p->out, sizeof(p->out), "%s/uvnetd.out", p->dir);
	snprintf(p->port, sizeof(p->port), "vhost-user:%s,queues=%u%s", p->sock, queues,
		 client ? ",client" : "");
}

/* (Re)start uvnetd in loopback with the peer's port. @return the time of the exec. */
static uint64_t peer_run(struct peer *p)
{
	const char *bin = getenv("UVNETD");
	uint64_t t;

	assert_non_null(bin);
	t = now_us();
	p->pid = fork();
	assert_true(p->pid >= 0);
	if (p->pid == 0) {
		int fd = open(p->out, O_WRONLY | O_CREAT | O_APPEND, 0600);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(fd, 1);
		dup2(fd, 2);
		execl(bin, bin, "--port", p->port, "--forward", "loopback", "--poll", "--json",
		      (char *)NULL);
		_exit(127);
	}
	peer_live = true;
	return t;
}

static void peer_kill9(struct peer *p)
{
	int st;

	kill(p->pid, SIGKILL);
	assert_int_equal(waitpid(p->pid, &st, 0), p->pid);
	peer_live = false;
}

static void peer_term(struct peer *p)
{
	int st;

	kill(p->pid, SIGTERM);
	assert_int_equal(waitpid(p->pid, &st, 0), p->pid);
	peer_live = false;
}

/* Frames: to 02:..:bb from 02:..:aa, a sequence number after the header. */
static void make_frame(uint8_t *b, unsigned len, uint32_t seq)
{
	static const uint8_t hdr[14] = { 2, 0, 0, 0, 0, 0xbb, 2, 0, 0, 0, 0, 0xaa, 0x88, 0xb5 };

	memcpy(b, hdr, 14);
	memcpy(b + 14, &seq, 4);
	for (unsigned i = 18; i < len; i++)
		b[i] = (uint8_t)(seq + i);
}

struct traffic {
	struct uvn_drv *d;
	uint32_t next_seq;   /* frames sent */
	uint64_t received;
	uint64_t rx_bad;     /* frames that are not ours, swapped */
	bool sending;
};

/* One step: receive what is there, send while fewer than WINDOW are out,
 * reclaim (each queue is called on every step, as the driver asks). */
static int pump(struct traffic *t)
{
	struct uvn_pkt *pkts[32];
	int n = uvn_rx_burst(t->d, 0, pkts, 32), r;

	if (n < 0)
		return n;
	r = uvn_tx_reclaim(t->d, 0);
	if (r < 0)
		return r;
	for (int i = 0; i < n; i++) {
		uint8_t b[64];
		uint32_t seq;

		uvn_pkt_read(pkts[i], 0, b, 18);
		memcpy(&seq, b + 14, 4);
		if (memcmp(b, "\x02\x00\x00\x00\x00\xaa\x02\x00\x00\x00\x00\xbb", 12) ||
		    seq >= t->next_seq || pkts[i]->len != 60 + seq % 400)
			t->rx_bad++;
	}
	uvn_pkt_free_bulk(pkts, (unsigned)n);
	t->received += (unsigned)n;
	if (t->sending && t->next_seq < t->received + WINDOW) {
		struct uvn_pkt *p;
		unsigned len = 60 + t->next_seq % 400;

		if (uvn_drv_tx_alloc(t->d, 0, &p, 1, len) == 1) {
			make_frame(p->seg[0].iov_base, len, t->next_seq);
			r = uvn_tx_burst(t->d, 0, &p, 1);
			if (r < 0)
				return r;
			if (r == 1)
				t->next_seq++;
			else
				uvn_pkt_free(p);
		} else {
			r = uvn_tx_reclaim(t->d, 0);
			if (r < 0)
				return r;
		}
	}
	return n;
}

static void pump_until(struct traffic *t, uint64_t received, uint64_t timeout_us)
{
	uint64_t end = now_us() + timeout_us;

	while (t->received < received) {
		assert_true(pump(t) >= 0);
		assert_true(now_us() < end);
	}
}

/* Stop sending; wait until every tx buffer is back and nothing more arrives. */
static void quiesce(struct traffic *t)
{
	struct uvn_drv_mem_info mi;
	uint64_t end = now_us() + 10000000;

	t->sending = false;
	for (;;) {
		assert_true(pump(t) >= 0);
		assert_true(uvn_tx_reclaim(t->d, 0) >= 0);
		uvn_drv_mem_info(t->d, 0, &mi);
		if (mi.tx_in_flight == 0)
			break;
		assert_true(now_us() < end);
	}
	/* uvnetd loops a frame back before it returns the tx buffer. */
	while (pump(t) > 0)
		;
}

static void check_returned(struct uvn_drv *d)
{
	struct uvn_drv_mem_info mi;

	uvn_drv_mem_info(d, 0, &mi);
	assert_int_equal(mi.rx_frags_out, 0);
	assert_int_equal(mi.rx_frag_pages, 0);
	assert_int_equal(mi.rx_pkts_free, mi.rx_pkts_total);
	assert_int_equal(mi.tx_pkts_free, mi.tx_pkts_total);
	assert_int_equal(mi.tx_in_flight, 0);
}

static struct uvn_drv *open_drv_ring(const struct peer *p, bool server, bool inflight,
				     enum uvn_ring_layout ring, bool in_order);

static struct uvn_drv *open_drv(const struct peer *p, bool server, bool inflight)
{
	return open_drv_ring(p, server, inflight, UVN_RING_SPLIT, false);
}

static struct uvn_drv *open_drv_ring(const struct peer *p, bool server, bool inflight,
				     enum uvn_ring_layout ring, bool in_order)
{
	struct uvn_drv_cfg cfg;
	struct uvn_drv *d = NULL;

	uvn_drv_cfg_init(&cfg);
	cfg.path = p->sock;
	cfg.server = server;
	cfg.ring = ring;
	cfg.poll = true;
	cfg.rx_mode = UVN_RX_MERGEABLE;
	cfg.reconnect = true;
	cfg.no_inflight = !inflight;
	cfg.timeout_ms = 10000; /* uvnetd as client retries once a second */
	/* Out of order allowed: the base and the in-flight region decide alone. */
	cfg.features_off = in_order ? 0 : F(VIRTIO_F_IN_ORDER);
	assert_int_equal(uvn_drv_open(&cfg, &d), 0);
	if (in_order)
		assert_true(uvn_drv_features(d) & F(VIRTIO_F_IN_ORDER));
	assert_true(uvn_drv_link_up(d));
	assert_int_equal(!!(uvn_drv_protocol_features(d) & F(PROTO_F_INFLIGHT_SHMFD)),
			 inflight);
	return d;
}

static void wait_socket(const struct peer *p)
{
	for (uint64_t end = now_us() + 10000000; access(p->sock, F_OK);) {
		assert_true(now_us() < end);
		usleep(1000);
	}
}

static void restart_ring(bool server, bool inflight, enum uvn_ring_layout ring, bool in_order);

static void restart(bool server, bool inflight)
{
	restart_ring(server, inflight, UVN_RING_SPLIT, false);
}

static void restart_ring(bool server, bool inflight, enum uvn_ring_layout ring, bool in_order)
{
	const char *kind = ring == UVN_RING_PACKED ? (in_order ? "packed in order" : "packed") : "split";
	struct peer *p = &the_peer;
	struct traffic t = { .sending = true };
	struct uvn_drv_link_stats ls;
	struct uvn_drv_txq_stats ts;
	struct uvn_drv_rxq_stats rs;
	struct uvn_drv_mem_info mi;
	uint64_t t_start, t_first, end, before, sent_at_kill;
	const unsigned rounds = 5;

	peer_init(p, server, 1);
	if (!server) {
		peer_run(p);
		wait_socket(p);
	} else {
		peer_run(p); /* it connects to us once we listen */
	}
	t.d = open_drv_ring(p, server, inflight, ring, in_order);
	for (unsigned round = 0; round < rounds; round++) {
		pump_until(&t, t.received + 3000, 20000000);
		/* SIGKILL with frames in flight. */
		while (t.next_seq < t.received + WINDOW)
			assert_true(pump(&t) >= 0);
		sent_at_kill = t.next_seq;
		peer_kill9(p);
		for (end = now_us() + 10000000; uvn_drv_link_up(t.d);) {
			assert_true(pump(&t) >= 0); /* the queues keep working */
			assert_true(now_us() < end);
		}
		/* Whatever the dead backend finished is received before it restarts. */
		while (pump(&t) > 0)
			;
		before = t.received;
		t_start = peer_run(p);
		for (end = now_us() + 10000000; t.received == before;) {
			assert_true(pump(&t) >= 0);
			assert_true(now_us() < end);
		}
		t_first = now_us();
		/* Frames flow from DRIVER_OK; the link is up once the control state is replayed. */
		for (end = now_us() + 10000000; !uvn_drv_link_up(t.d);) {
			assert_true(pump(&t) >= 0);
			assert_true(now_us() < end);
		}
		uvn_drv_link_stats(t.d, &ls);
		printf("# restart %u, %s, driver as %s, inflight %s: first frame %.1f ms after "
		       "uvnetd's start (driver: down %.1f ms); %u frames were out\n", round, kind,
		       server ? "server" : "client", inflight ? "on" : "off",
		       (double)(t_first - t_start) / 1000.0, (double)ls.last_down_us / 1000.0,
		       (unsigned)(sent_at_kill - before));
		fflush(stdout);
		pump_until(&t, t.received + 3000, 20000000);
	}
	quiesce(&t);
	uvn_drv_link_stats(t.d, &ls);
	printf("# %s, driver as %s, inflight %s: %u restarts, %llu %s\n", kind,
	       server ? "server" : "client", inflight ? "on" : "off", rounds,
	       (unsigned long long)ls.resubmitted,
	       ring == UVN_RING_PACKED ? "chains laid out again" : "avail slots rewritten");
	assert_int_equal(ls.err_resubmit, 0);
	assert_int_equal(ls.fix_skipped, 0);
	if (inflight)
		assert_int_equal(ls.resubmitted, 0);
	assert_int_equal(ls.disconnects, rounds);
	assert_int_equal(ls.reconnects, rounds);
	assert_int_equal(ls.err_features, 0);
	assert_int_equal(ls.inflight_sets, inflight ? rounds + 1 : 0);
	assert_int_equal(t.rx_bad, 0);
	/* At most the frames in flight at each kill are lost or repeated. */
	assert_true(t.received + rounds * WINDOW >= t.next_seq);
	assert_true(t.received <= t.next_seq + rounds * WINDOW);
	/* Every tx packet taken was reclaimed exactly once. */
	uvn_drv_txq_stats(t.d, 0, &ts);
	assert_int_equal(ts.reclaimed, ts.packets);
	assert_int_equal(ts.packets, t.next_seq);
	uvn_drv_mem_info(t.d, 0, &mi);
	assert_int_equal(mi.tx_pkts_free, mi.tx_pkts_total);
	assert_int_equal(mi.tx_in_flight, 0);
	/* rx: every buffer posted is in the ring or came back. */
	uvn_drv_rxq_stats(t.d, 0, &rs);
	assert_int_equal(rs.bufs_posted - rs.bufs_used, mi.rx_posted);
	assert_int_equal(rs.drops, 0);
	/* ... and the backend holds none of them: nothing was lost to it. */
	uvn_drv_stop(t.d);
	uvn_drv_link_stats(t.d, &ls);
	assert_int_equal(ls.held_at_stop, 0);
	check_returned(t.d);
	uvn_drv_close(t.d);
	peer_term(p);
	if (server)
		assert_int_equal(access(p->sock, F_OK), -1);
}

static void test_client_inflight(void **state)
{
	(void)state;
	restart(false, true);
}

static void test_client_no_inflight(void **state)
{
	(void)state;
	restart(false, false);
}

static void test_server_inflight(void **state)
{
	(void)state;
	restart(true, true);
}

static void test_server_no_inflight(void **state)
{
	(void)state;
	restart(true, false);
}

/* Packed rings: no in-flight region (the driver puts the ring right). */
static void test_packed_client(void **state)
{
	(void)state;
	restart_ring(false, false, UVN_RING_PACKED, false);
}

static void test_packed_server(void **state)
{
	(void)state;
	restart_ring(true, false, UVN_RING_PACKED, false);
}

static void test_packed_in_order_client(void **state)
{
	(void)state;
	restart_ring(false, false, UVN_RING_PACKED, true);
}

/* uvnetd comes back with one queue pair instead of two: no control queue. */
static void test_features_changed(void **state)
{
	struct peer *p = &the_peer;
	struct traffic t = { .sending = true };
	struct uvn_drv_link_stats ls;
	uint64_t end;
	int r = 0;

	(void)state;
	peer_init(p, false, 2);
	peer_run(p);
	wait_socket(p);
	t.d = open_drv(p, false, true);
	assert_true(uvn_drv_has_ctrl(t.d));
	pump_until(&t, 500, 20000000);
	peer_kill9(p);
	snprintf(p->port, sizeof(p->port), "vhost-user:%.120s,queues=1", p->sock);
	peer_run(p);
	for (end = now_us() + 20000000; r >= 0;) {
		r = pump(&t);
		assert_true(now_us() < end);
	}
	assert_int_equal(r, -ENOTSUP);
	assert_int_equal(uvn_drv_error(t.d), -ENOTSUP);
	assert_false(uvn_drv_link_up(t.d));
	uvn_drv_link_stats(t.d, &ls);
	assert_int_equal(ls.err_features, 1);
	assert_int_equal(ls.reconnects, 0);
	assert_int_equal(uvn_drv_set_promisc(t.d, true) < 0, true);
	uvn_drv_stop(t.d);
	check_returned(t.d);
	uvn_drv_close(t.d);
	peer_term(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_client_inflight, kill_leftovers),
		cmocka_unit_test_teardown(test_client_no_inflight, kill_leftovers),
		cmocka_unit_test_teardown(test_server_inflight, kill_leftovers),
		cmocka_unit_test_teardown(test_server_no_inflight, kill_leftovers),
		cmocka_unit_test_teardown(test_packed_client, kill_leftovers),
		cmocka_unit_test_teardown(test_packed_server, kill_leftovers),
		cmocka_unit_test_teardown(test_packed_in_order_client, kill_leftovers),
		cmocka_unit_test_teardown(test_features_changed, kill_leftovers),
	};

	if (!getenv("UVNETD")) {
		fprintf(stderr, "UVNETD must name the uvnetd binary\n");
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests_name("driver_reconnect", tests, NULL, NULL);
}
