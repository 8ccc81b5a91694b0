/* SPDX-License-Identifier: MIT */
/*
 * The driver against a real peer process: uvnetd, spawned per test with its
 * socket in a private temporary directory and stopped by PID.
 *  - sink:     N frames sent; uvnetd's final count of frames received is N;
 *  - txonly:   every frame uvnetd put into our rx ring is received, with
 *              its template bytes; our count equals uvnetd's;
 *  - loopback: frames come back with the MACs swapped, every other byte
 *              as sent, in order;
 * for every ring layout x rx mode x indirect (IN_ORDER alternating), in
 * uvnetd's poll mode (our driver without eventfds) and event mode (kick and
 * call eventfds, uvn_rx_wait()). Also: uvnetd killed mid-traffic gives
 * -ENOTCONN, not a hang; two queue pairs with the control queue.
 * UVNETD names the binary (meson passes it).
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

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

struct peer {
	char dir[64], sock[128], out[128];
	pid_t pid;
};

/* Peers still running: killed by the teardown when a test fails midway
 * (the peers live here, not on a test's stack, which a failure unwinds). */
static struct peer *live[4];
static struct peer peer_store[4];

static struct peer *peer_new(void)
{
	for (unsigned i = 0; i < 4; i++) {
		bool used = false;

		for (unsigned k = 0; k < 4; k++)
			used |= live[k] == &peer_store[i];
		if (!used)
			return &peer_store[i];
	}
	fail();
	return &peer_store[0]; /* not reached: fail() ends the test */
}

static void track(struct peer *p, bool on)
{
	for (unsigned i = 0; i < 4; i++) {
		if (on && !live[i]) {
			live[i] = p;
			return;
		}
		if (!on && live[i] == p)
			live[i] = NULL;
	}
}

static int kill_leftovers(void **state)
{
	(void)state;
	for (unsigned i = 0; i < 4; i++) {
		if (live[i]) {
			int st;

			kill(live[i]->pid, SIGKILL);
			waitpid(live[i]->pid, &st, 0);
			unlink(live[i]->out);
			unlink(live[i]->sock);
			rmdir(live[i]->dir);
			live[i] = NULL;
		}
	}
	return 0;
}

/* Start uvnetd; @mode: sink|txonly|loopback. */
static void peer_start(struct peer *p, const char *mode, bool poll, unsigned queues,
		       unsigned txsize)
{
	const char *bin = getenv("UVNETD");
	char port[200], size[16];

	assert_non_null(bin);
	snprintf(p->dir, sizeof(p->dir), "/tmp/uvn-drvint-XXXXXX");
	assert_non_null(mkdtemp(p->dir));
	snprintf(p->sock, sizeof(p->sock), "%s/vu.sock", p->dir);
	snprintf(p->out, sizeof(p->out), "%s/uvnetd.out", p->dir);
	snprintf(port, sizeof(port), "vhost-user:%s,queues=%u", p->sock, queues);
	snprintf(size, sizeof(size), "%u", txsize);
	p->pid = fork();
	assert_true(p->pid >= 0);
	if (p->pid == 0) {
		int fd = open(p->out, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		/* Never outlive the test (killed by a timeout, say). */
		prctl(PR_SET_PDEATHSIG, SIGKILL);

		dup2(fd, 1);
		if (poll)
			execl(bin, bin, "--port", port, "--forward", mode, "--txonly-size", size, "--poll",
			      "--json", (char *)NULL);
		else
			execl(bin, bin, "--port", port, "--forward", mode, "--txonly-size", size, "--json",
			      (char *)NULL);
		_exit(127);
	}
	track(p, true);
	/* The socket appears when uvnetd listens (the driver would also retry). */
	for (uint64_t end = now_ms() + 10000; access(p->sock, F_OK);) {
		assert_true(now_ms() < end);
		usleep(5000);
	}
}

/* uvnetd connecting to us (its "client" ports, like QEMU's server=on): the
 * driver listens, in server mode. */
static void peer_start_client(struct peer *p, const char *mode)
{
	const char *bin = getenv("UVNETD");
	char port[200];

	assert_non_null(bin);
	snprintf(p->dir, sizeof(p->dir), "/tmp/uvn-drvint-XXXXXX");
	assert_non_null(mkdtemp(p->dir));
	snprintf(p->sock, sizeof(p->sock), "%s/vu.sock", p->dir);
	snprintf(p->out, sizeof(p->out), "%s/uvnetd.out", p->dir);
	snprintf(port, sizeof(port), "vhost-user:%s,client", p->sock);
	p->pid = fork();
	assert_true(p->pid >= 0);
	if (p->pid == 0) {
		int fd = open(p->out, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(fd, 1);
		execl(bin, bin, "--port", port, "--forward", mode, "--poll", "--json", (char *)NULL);
		_exit(127);
	}
	track(p, true);
}

/* Stop uvnetd (SIGTERM: it prints its totals) and read its frame counts. */
static void peer_stop(struct peer *p, uint64_t *rx, uint64_t *tx)
{
	char buf[8192] = "", *s;
	int st;
	FILE *f;

	kill(p->pid, SIGTERM);
	/* uvnetd prints its totals and exits; one that does not is a failure, not a hang. */
	for (uint64_t end = now_ms() + 10000; waitpid(p->pid, &st, WNOHANG) != p->pid;) {
		if (now_ms() > end) {
			fprintf(stderr, "uvnetd (pid %d) ignored SIGTERM for 10 s\n", (int)p->pid);
			fail();
		}
		usleep(10000);
	}
	track(p, false);
	f = fopen(p->out, "r");
	assert_non_null(f);
	while (fgets(buf, sizeof(buf), f))
		if (strstr(buf, "\"final\""))
			break;
	fclose(f);
	s = strstr(buf, "\"final\"");
	if (rx) {
		assert_non_null(s);
		assert_non_null(strstr(s, "\"rx_packets\":"));
		*rx = strtoull(strstr(s, "\"rx_packets\":") + 13, NULL, 10);
		*tx = strtoull(strstr(s, "\"tx_packets\":") + 13, NULL, 10);
	}
	unlink(p->out);
	unlink(p->sock);
	rmdir(p->dir);
}

static void peer_kill9(struct peer *p)
{
	int st;

	kill(p->pid, SIGKILL);
	assert_int_equal(waitpid(p->pid, &st, 0), p->pid);
	track(p, false);
	unlink(p->out);
	unlink(p->sock);
	rmdir(p->dir);
}

struct cell {
	enum uvn_ring_layout ring;
	enum uvn_rx_mode mode;
	bool indirect, in_order, poll;
};

static struct uvn_drv *drv_open(const struct peer *p, const struct cell *c, unsigned pairs)
{
	struct uvn_drv_cfg cfg;
	struct uvn_drv *d = NULL;

	uvn_drv_cfg_init(&cfg);
	cfg.path = p->sock;
	cfg.ring = c->ring;
	cfg.rx_mode = c->mode;
	cfg.poll = c->poll;
	cfg.queue_pairs = pairs;
	cfg.queue_size = 256;
	if (!c->indirect)
		cfg.features_off |= F(VIRTIO_RING_F_INDIRECT_DESC);
	if (!c->in_order)
		cfg.features_off |= F(VIRTIO_F_IN_ORDER);
	assert_int_equal(uvn_drv_open(&cfg, &d), 0);
	assert_int_equal(!!(uvn_drv_features(d) & F(VIRTIO_F_RING_PACKED)), c->ring == UVN_RING_PACKED);
	assert_int_equal(!!(uvn_drv_features(d) & F(VIRTIO_NET_F_MRG_RXBUF)),
			 c->mode == UVN_RX_MERGEABLE);
	return d;
}

static void make_frame(uint8_t *b, unsigned len, unsigned seq)
{
	static const uint8_t hdr[14] = { 2, 0, 0, 0, 0, 0xbb, 2, 0, 0, 0, 0, 0xaa, 0x88, 0xb5 };

	memcpy(b, hdr, 14);
	for (unsigned i = 14; i < len; i++)
		b[i] = (uint8_t)(seq * 31 + i);
	b[14] = (uint8_t)seq;
	b[15] = (uint8_t)(seq >> 8);
}

static const unsigned sizes[] = { 60, 64, 128, 777, 1514 };
#define NSIZES 5

/* Send @n frames on @q (ring full: reclaim and retry). */
static void send_frames(struct uvn_drv *d, unsigned q, unsigned first, unsigned n)
{
	uint64_t end = now_ms() + 20000;

	for (unsigned i = first; i < first + n;) {
		struct uvn_pkt *p;
		unsigned len = sizes[i % NSIZES];
		int r;

		if (!uvn_drv_tx_alloc(d, q, &p, 1, len)) {
			assert_true(uvn_tx_reclaim(d, q) >= 0);
			continue;
		}
		make_frame(p->seg[0].iov_base, len, i);
		r = uvn_tx_burst(d, q, &p, 1);
		assert_true(r >= 0);
		if (r == 0) {
			uvn_pkt_free(p);
			assert_true(now_ms() < end);
			usleep(10);
			continue;
		}
		i++;
	}
}

/* Wait until the backend has consumed everything we sent. */
static void wait_tx_done(struct uvn_drv *d, unsigned q)
{
	struct uvn_drv_mem_info mi;
	uint64_t end = now_ms() + 20000;

	for (;;) {
		assert_true(uvn_tx_reclaim(d, q) >= 0);
		uvn_drv_mem_info(d, q, &mi);
		if (mi.tx_in_flight == 0)
			return;
		assert_true(now_ms() < end);
		usleep(100);
	}
}

static void check_returned(struct uvn_drv *d)
{
	struct uvn_drv_mem_info mi;

	for (unsigned q = 0; q < uvn_drv_queue_pairs(d); q++) {
		uvn_drv_mem_info(d, q, &mi);
		assert_int_equal(mi.rx_frags_out, 0);
		assert_int_equal(mi.rx_frag_pages, 0);
		assert_int_equal(mi.rx_pkts_free, mi.rx_pkts_total);
		assert_int_equal(mi.tx_pkts_free, mi.tx_pkts_total);
		assert_int_equal(mi.tx_in_flight, 0);
	}
}

static void do_sink(const struct cell *c)
{
	struct uvn_drv_txq_stats ts;
	struct peer *p = peer_new();
	uint64_t rx, tx;
	struct uvn_drv *d;
	const unsigned n = 3000;

	peer_start(p, "sink", c->poll, 1, 64);
	d = drv_open(p, c, 1);
	send_frames(d, 0, 0, n);
	wait_tx_done(d, 0);
	uvn_drv_txq_stats(d, 0, &ts);
	assert_int_equal(ts.packets, n);
	assert_int_equal(ts.drops, 0);
	uvn_drv_stop(d);
	check_returned(d);
	uvn_drv_close(d);
	peer_stop(p, &rx, &tx);
	assert_int_equal(rx, n);
	assert_int_equal(tx, 0);
}

/* uvnetd's txonly frame: Ethernet to 02:00:00:00:00:02, IPv4 UDP 198.18.0.1 -> .2. */
static void check_txonly_frame(const struct uvn_pkt *pk, unsigned size)
{
	static const uint8_t dst[6] = { 2, 0, 0, 0, 0, 2 };
	uint8_t b[64];

	assert_int_equal(pk->len, size);
	assert_int_equal(uvn_pkt_read(pk, 0, b, 42), 42);
	assert_memory_equal(b, dst, 6);
	assert_int_equal(b[12], 0x08);
	assert_int_equal(b[13], 0x00);
	assert_int_equal(b[14], 0x45);
	assert_int_equal(b[16] << 8 | b[17], size - 14);
	assert_int_equal(b[23], 17);
	assert_memory_equal(b + 26, "\xc6\x12\x00\x01\xc6\x12\x00\x02", 8);
	assert_int_equal(b[38] << 8 | b[39], size - 34);
}

static void do_txonly(const struct cell *c, unsigned size)
{
	struct uvn_drv_rxq_stats rs;
	uint64_t got = 0, rx, tx, end = now_ms() + 30000;
	struct uvn_pkt *pkts[32];
	struct peer *p = peer_new();
	struct uvn_drv *d;
	int n;

	peer_start(p, "txonly", c->poll, 1, size);
	d = drv_open(p, c, 1);
	while (got < 20000) {
		n = c->poll ? uvn_rx_burst(d, 0, pkts, 32)
			    : (uvn_rx_wait(d, 0, 1000) >= 0 ? uvn_rx_burst(d, 0, pkts, 32) : -1);
		assert_true(n >= 0);
		for (int i = 0; i < n; i++)
			check_txonly_frame(pkts[i], size);
		uvn_pkt_free_bulk(pkts, (unsigned)n);
		got += (unsigned)n;
		assert_true(now_ms() < end);
	}
	/* uvnetd stops and counts; every frame it put in the ring is ours. */
	peer_stop(p, &rx, &tx);
	while ((n = uvn_rx_burst(d, 0, pkts, 32)) >= 0) {
		for (int i = 0; i < n; i++)
			check_txonly_frame(pkts[i], size);
		uvn_pkt_free_bulk(pkts, (unsigned)n);
		got += (unsigned)n;
		assert_true(now_ms() < end);
	}
	assert_int_equal(n, -ENOTCONN);
	uvn_drv_rxq_stats(d, 0, &rs);
	assert_int_equal(rs.drops, 0);
	assert_int_equal(rs.packets, got);
	assert_int_equal(tx, got);
	assert_int_equal(rx, 0);
	uvn_drv_stop(d);
	check_returned(d);
	uvn_drv_close(d);
}

/* Receive frames first..first+n-1 on @q, MACs swapped, the rest as sent. */
static void recv_swapped(struct uvn_drv *d, unsigned q, unsigned first, unsigned n, bool wait)
{
	static uint8_t want[2048], got_b[2048];
	uint64_t end = now_ms() + 20000;
	unsigned got = 0;

	while (got < n) {
		struct uvn_pkt *pkts[32];
		int k;

		if (wait)
			assert_true(uvn_rx_wait(d, q, 2000) >= 0);
		k = uvn_rx_burst(d, q, pkts, 32);
		assert_true(k >= 0);
		for (int i = 0; i < k; i++) {
			unsigned seq = first + got, len = sizes[seq % NSIZES];

			assert_true(got < n);
			make_frame(want, len, seq);
			memcpy(want, "\x02\x00\x00\x00\x00\xaa\x02\x00\x00\x00\x00\xbb", 12);
			assert_int_equal(pkts[i]->len, len);
			uvn_pkt_read(pkts[i], 0, got_b, len);
			assert_memory_equal(got_b, want, len);
			got++;
		}
		uvn_pkt_free_bulk(pkts, (unsigned)k);
		assert_true(now_ms() < end);
	}
}

static void do_loopback(const struct cell *c)
{
	struct peer *p = peer_new();
	uint64_t rx, tx;
	struct uvn_drv *d;
	const unsigned n = 2000;
	struct uvn_drv_mem_info mi;
	unsigned win;

	peer_start(p, "loopback", c->poll, 1, 64);
	d = drv_open(p, c, 1);
	/* In windows no larger than the buffers posted (big mode without
	 * indirect: 15 chains of 17 pages): uvnetd never lacks a buffer. */
	uvn_drv_mem_info(d, 0, &mi);
	win = mi.rx_posted < 64 ? mi.rx_posted : 64;
	for (unsigned i = 0; i < n; i += win) {
		unsigned k = n - i < win ? n - i : win;

		send_frames(d, 0, i, k);
		recv_swapped(d, 0, i, k, !c->poll);
	}
	wait_tx_done(d, 0);
	uvn_drv_stop(d);
	check_returned(d);
	uvn_drv_close(d);
	peer_stop(p, &rx, &tx);
	assert_int_equal(rx, n);
	assert_int_equal(tx, n);
}

static void run_cell(void **state)
{
	const struct cell *c = *state;

	do_sink(c);
	do_txonly(c, c->mode == UVN_RX_SMALL ? 64 : 1514);
	do_loopback(c);
}

#define CELL(r, m, ind, ino, poll) { r, m, ind, ino, poll }
static const struct cell cells[] = {
	CELL(UVN_RING_SPLIT, UVN_RX_SMALL, false, true, true),
	CELL(UVN_RING_SPLIT, UVN_RX_SMALL, true, false, false),
	CELL(UVN_RING_SPLIT, UVN_RX_BIG, false, false, true),
	CELL(UVN_RING_SPLIT, UVN_RX_BIG, true, true, false),
	CELL(UVN_RING_SPLIT, UVN_RX_MERGEABLE, false, true, false),
	CELL(UVN_RING_SPLIT, UVN_RX_MERGEABLE, true, false, true),
	CELL(UVN_RING_PACKED, UVN_RX_SMALL, false, false, false),
	CELL(UVN_RING_PACKED, UVN_RX_SMALL, true, true, true),
	CELL(UVN_RING_PACKED, UVN_RX_BIG, false, true, false),
	CELL(UVN_RING_PACKED, UVN_RX_BIG, true, false, true),
	CELL(UVN_RING_PACKED, UVN_RX_MERGEABLE, false, false, true),
	CELL(UVN_RING_PACKED, UVN_RX_MERGEABLE, true, true, false),
};

/* uvnetd killed mid-traffic: the application gets an error, not a hang. */
static void test_peer_killed(void **state)
{
	const struct cell c = CELL(UVN_RING_SPLIT, UVN_RX_MERGEABLE, true, true, true);
	uint64_t end;
	struct peer *p = peer_new();
	struct uvn_drv *d;
	int r = 0;

	(void)state;
	peer_start(p, "loopback", true, 1, 64);
	d = drv_open(p, &c, 1);
	send_frames(d, 0, 0, 100);
	recv_swapped(d, 0, 0, 100, false);
	peer_kill9(p);
	end = now_ms() + 10000;
	while (r >= 0) {
		struct uvn_pkt *pkts[32];
		unsigned k = uvn_drv_tx_alloc(d, 0, pkts, 32, 64);

		r = uvn_tx_burst(d, 0, pkts, k);
		uvn_pkt_free_bulk(pkts + (r > 0 ? r : 0), k - (unsigned)(r > 0 ? r : 0));
		if (r >= 0) {
			r = uvn_rx_burst(d, 0, pkts, 32);
			if (r > 0)
				uvn_pkt_free_bulk(pkts, (unsigned)r);
		}
		assert_true(now_ms() < end);
	}
	assert_int_equal(r, -ENOTCONN);
	uvn_drv_stop(d);
	check_returned(d);
	uvn_drv_close(d);
}

/* Two queue pairs: the control queue sets them, each carries its frames. */
static void test_two_pairs(void **state)
{
	const struct cell c = CELL(UVN_RING_SPLIT, UVN_RX_MERGEABLE, true, true, true);
	const uint8_t mac[6] = { 2, 0, 0, 0, 0, 0x77 };
	struct peer *p = peer_new();
	uint64_t rx, tx;
	struct uvn_drv *d;

	(void)state;
	peer_start(p, "loopback", true, 2, 64);
	d = drv_open(p, &c, 2);
	assert_true(uvn_drv_has_ctrl(d));
	assert_true(uvn_drv_features(d) & F(VIRTIO_NET_F_MQ));
	assert_int_equal(uvn_drv_set_queue_pairs(d, 1), 0);
	assert_int_equal(uvn_drv_set_queue_pairs(d, 2), 0);
	/* With a control queue uvnetd takes the receive filter commands:
	 * promiscuous, so the looped frames (to our source MACs) all pass. */
	assert_int_equal(uvn_drv_set_promisc(d, true), 0);
	assert_int_equal(uvn_drv_set_mac(d, mac), 0);
	for (unsigned i = 0; i < 512; i += 64) {
		send_frames(d, 0, i, 64);
		send_frames(d, 1, 1000 + i, 64);
		recv_swapped(d, 0, i, 64, false);
		recv_swapped(d, 1, 1000 + i, 64, false);
	}
	wait_tx_done(d, 0);
	wait_tx_done(d, 1);
	uvn_drv_stop(d);
	check_returned(d);
	uvn_drv_close(d);
	peer_stop(p, &rx, &tx);
	assert_int_equal(rx, 1024);
	assert_int_equal(tx, 1024);
}

/* Server mode: the driver listens, uvnetd connects; frames go both ways. */
static void test_server_mode(void **state)
{
	struct peer *p = peer_new();
	struct uvn_drv_cfg cfg;
	struct uvn_drv *d = NULL;
	uint64_t rx, tx;

	(void)state;
	peer_start_client(p, "loopback");
	uvn_drv_cfg_init(&cfg);
	cfg.path = p->sock;
	cfg.server = true;
	cfg.poll = true;
	cfg.timeout_ms = 10000; /* uvnetd retries its connection once a second */
	assert_int_equal(uvn_drv_open(&cfg, &d), 0);
	send_frames(d, 0, 0, 64);
	recv_swapped(d, 0, 0, 64, false);
	wait_tx_done(d, 0);
	uvn_drv_stop(d);
	check_returned(d);
	uvn_drv_close(d);
	/* The driver removed its socket; uvnetd keeps trying until stopped. */
	assert_int_equal(access(p->sock, F_OK), -1);
	peer_stop(p, &rx, &tx);
	assert_int_equal(rx, 64);
	assert_int_equal(tx, 64);
}

int main(void)
{
	static const char *const modes[] = { "auto", "small", "big", "mergeable" };
	static char names[sizeof(cells) / sizeof(cells[0])][96];
	struct CMUnitTest tests[sizeof(cells) / sizeof(cells[0]) + 6];
	unsigned n = 0;

	if (!getenv("UVNETD")) {
		fprintf(stderr, "UVNETD must name the uvnetd binary\n");
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	for (unsigned i = 0; i < sizeof(cells) / sizeof(cells[0]); i++) {
		const struct cell *c = &cells[i];

		snprintf(names[i], sizeof(names[i]), "uvnetd_%s_%s_indirect%d_inorder%d_%s",
			 c->ring == UVN_RING_PACKED ? "packed" : "split", modes[c->mode], c->indirect,
			 c->in_order, c->poll ? "poll" : "event");
		tests[n++] = (struct CMUnitTest){ names[i], run_cell, NULL, kill_leftovers, (void *)c };
	}
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_teardown(test_peer_killed, kill_leftovers);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_teardown(test_two_pairs, kill_leftovers);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_teardown(test_server_mode, kill_leftovers);
	return _cmocka_run_group_tests("driver_uvnetd", tests, n, NULL, NULL);
}
