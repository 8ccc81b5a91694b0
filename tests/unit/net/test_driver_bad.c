/* SPDX-License-Identifier: MIT */
/*
 * The driver against backends that misbehave or go away:
 *  - a scripted vhost-user backend (a thread on the other end of the
 *    socket) whose replies are wrong in one way each: flags, version,
 *    request id, size, fds, silence, a closed socket, a NACK, a feature
 *    set without VERSION_1. uvn_drv_open() must fail with the right error,
 *    within the timeout, leaking no fd;
 *  - the project's backend (test_driver_be.c) dying mid-traffic, writing
 *    a bogus used element, talking unasked, or stalling: the bursts and
 *    waits return an error instead of hanging, and stop still returns
 *    every buffer.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <uvnet/driver.h>

#include "test_driver_be.h"
#include "vhost_user/backend.h"
#include "vhost_user/msg.h"

#define F(b) (1ull << (b))

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static unsigned count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	unsigned n = 0;

	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	return n;
}

/* ------------------------------------------------- scripted backend */

enum fault {
	FAULT_NONE,
	FAULT_FLAGS_NEED_REPLY, /* REPLY | version | NEED_REPLY */
	FAULT_FLAGS_NO_REPLY,   /* version only */
	FAULT_VERSION,          /* REPLY | version 2 */
	FAULT_ID,               /* the answer to another request */
	FAULT_SIZE,             /* 4 bytes where 8 are due */
	FAULT_FD,               /* an fd with the reply */
	FAULT_SILENT,           /* no reply at all */
	FAULT_CLOSE,            /* close the socket instead */
	FAULT_NACK,             /* REPLY_ACK status 1 */
	FAULT_HUGE,             /* a header announcing more than any payload */
	FAULT_QUEUES0,          /* GET_QUEUE_NUM: 0 */
};

struct script {
	char dir[64], path[108];
	int lfd;
	pthread_t th;
	uint64_t features;
	uint32_t fault_req;
	enum fault fault;
	unsigned handled;
};

static int reply(int fd, const struct uvn_vu_msg *req, uint64_t val, const struct script *s)
{
	struct uvn_vu_msg r;
	int extra = -1, ret;

	uvn_vu_msg_init_reply(&r, req, sizeof(uint64_t));
	r.p.u64 = val;
	if (req->hdr.request == VHOST_USER_GET_VRING_BASE) {
		r.hdr.size = sizeof(struct vhost_vring_state);
		r.p.state = req->p.state;
	}
	if (req->hdr.request == s->fault_req) {
		switch (s->fault) {
		case FAULT_FLAGS_NEED_REPLY: r.hdr.flags |= VHOST_USER_NEED_REPLY_MASK; break;
		case FAULT_FLAGS_NO_REPLY: r.hdr.flags = VHOST_USER_VERSION; break;
		case FAULT_VERSION: r.hdr.flags = VHOST_USER_REPLY_MASK | 2; break;
		case FAULT_ID: r.hdr.request = VHOST_USER_GET_QUEUE_NUM; break;
		case FAULT_SIZE: r.hdr.size = 4; break;
		case FAULT_FD:
			extra = dup(0);
			r.fds[0] = extra;
			r.nfds = 1;
			break;
		case FAULT_SILENT: return 0;
		case FAULT_CLOSE: return -1;
		case FAULT_NACK: r.p.u64 = 1; break;
		case FAULT_HUGE:
			/* The codec refuses to send it: write the header by hand. */
			r.hdr.size = sizeof(r.p) + 8;
			ret = (int)send(fd, &r.hdr, sizeof(r.hdr), MSG_NOSIGNAL);
			return ret < 0 ? -1 : 0;
		case FAULT_QUEUES0: r.p.u64 = 0; break;
		default: break;
		}
	}
	ret = uvn_vu_msg_send(fd, &r);
	if (extra >= 0)
		close(extra);
	return ret;
}

static void *script_main(void *arg)
{
	struct script *s = arg;
	struct uvn_vu_rx rx;
	struct pollfd p = { .fd = s->lfd, .events = POLLIN };
	uint64_t proto = 0, status = 0;
	int fd;

	if (poll(&p, 1, 5000) != 1)
		return NULL;
	fd = uvn_vu_accept(s->lfd);
	if (fd < 0)
		return NULL;
	uvn_vu_rx_init(&rx);
	for (;;) {
		const struct uvn_vu_msg *m = &rx.msg;
		uint64_t val = 0;
		bool answer;
		int r = uvn_vu_msg_recv(fd, &rx);

		if (r != 1)
			break;
		s->handled++;
		switch (m->hdr.request) {
		case VHOST_USER_GET_FEATURES: val = s->features; answer = true; break;
		case VHOST_USER_GET_PROTOCOL_FEATURES:
			val = F(VHOST_USER_PROTOCOL_F_MQ) | F(VHOST_USER_PROTOCOL_F_REPLY_ACK) |
			      F(VHOST_USER_PROTOCOL_F_STATUS);
			answer = true;
			break;
		case VHOST_USER_SET_PROTOCOL_FEATURES: proto = m->p.u64; answer = false; break;
		case VHOST_USER_GET_QUEUE_NUM: val = 1; answer = true; break;
		case VHOST_USER_GET_STATUS: val = status; answer = true; break;
		case VHOST_USER_SET_STATUS: status = m->p.u64; answer = false; break;
		case VHOST_USER_GET_VRING_BASE: answer = true; break;
		default: answer = false; break;
		}
		/* Acks for whatever asked for one (REPLY_ACK negotiated). */
		if (!answer && (m->hdr.flags & VHOST_USER_NEED_REPLY_MASK) &&
		    (proto & F(VHOST_USER_PROTOCOL_F_REPLY_ACK)))
			answer = true;
		if (answer && reply(fd, m, val, s) < 0) {
			uvn_vu_rx_reset(&rx);
			break;
		}
		uvn_vu_rx_reset(&rx);
	}
	close(fd);
	return NULL;
}

static struct script *script_start(uint32_t fault_req, enum fault fault, uint64_t features)
{
	struct script *s = calloc(1, sizeof(*s));

	snprintf(s->dir, sizeof(s->dir), "/tmp/uvn-drvbad-XXXXXX");
	assert_non_null(mkdtemp(s->dir));
	snprintf(s->path, sizeof(s->path), "%s/vu.sock", s->dir);
	s->lfd = uvn_vu_listen(s->path);
	assert_true(s->lfd >= 0);
	s->fault_req = fault_req;
	s->fault = fault;
	s->features = features ? features : F(VIRTIO_F_VERSION_1) | F(VIRTIO_NET_F_MRG_RXBUF) |
		      F(VHOST_USER_F_PROTOCOL_FEATURES);
	assert_int_equal(pthread_create(&s->th, NULL, script_main, s), 0);
	return s;
}

static void script_stop(struct script *s)
{
	pthread_join(s->th, NULL);
	close(s->lfd);
	unlink(s->path);
	rmdir(s->dir);
	free(s);
}

struct bad_case {
	const char *name;
	uint32_t req;
	enum fault fault;
	uint64_t features;
	int want;
	enum uvn_rx_mode rx_mode;    /* asked for, unless UVN_RX_AUTO */
	enum uvn_ring_layout ring;   /* asked for, unless UVN_RING_SPLIT */
};

static const struct bad_case bad_cases[] = {
	{ "features_reply_need_reply_flag", VHOST_USER_GET_FEATURES, FAULT_FLAGS_NEED_REPLY, 0, -EPROTO },
	{ "features_reply_without_reply_flag", VHOST_USER_GET_FEATURES, FAULT_FLAGS_NO_REPLY, 0, -EPROTO },
	{ "features_reply_version_2", VHOST_USER_GET_FEATURES, FAULT_VERSION, 0, -EPROTO },
	{ "protocol_reply_other_request", VHOST_USER_GET_PROTOCOL_FEATURES, FAULT_ID, 0, -EPROTO },
	{ "features_reply_short", VHOST_USER_GET_FEATURES, FAULT_SIZE, 0, -EPROTO },
	{ "status_reply_with_fd", VHOST_USER_GET_STATUS, FAULT_FD, 0, -EPROTO },
	{ "features_reply_oversized", VHOST_USER_GET_FEATURES, FAULT_HUGE, 0, -EPROTO },
	{ "queue_num_zero", VHOST_USER_GET_QUEUE_NUM, FAULT_QUEUES0, 0, -EPROTO },
	{ "silent_on_features", VHOST_USER_GET_FEATURES, FAULT_SILENT, 0, -ETIMEDOUT },
	{ "silent_on_mem_table_ack", VHOST_USER_SET_MEM_TABLE, FAULT_SILENT, 0, -ETIMEDOUT },
	{ "closes_on_vring_addr", VHOST_USER_SET_VRING_ADDR, FAULT_CLOSE, 0, -ENOTCONN },
	{ "closes_on_protocol_features", VHOST_USER_GET_PROTOCOL_FEATURES, FAULT_CLOSE, 0, -ENOTCONN },
	{ "nacks_mem_table", VHOST_USER_SET_MEM_TABLE, FAULT_NACK, 0, -EIO },
	{ "no_version_1", 0, FAULT_NONE, F(VIRTIO_NET_F_MRG_RXBUF) | F(VHOST_USER_F_PROTOCOL_FEATURES),
	  -ENOTSUP },
	{ "mergeable_not_offered", 0, FAULT_NONE, F(VIRTIO_F_VERSION_1) | F(VHOST_USER_F_PROTOCOL_FEATURES),
	  -ENOTSUP, .rx_mode = UVN_RX_MERGEABLE },
	{ "packed_not_offered", 0, FAULT_NONE,
	  F(VIRTIO_F_VERSION_1) | F(VIRTIO_NET_F_MRG_RXBUF) | F(VHOST_USER_F_PROTOCOL_FEATURES), -ENOTSUP,
	  .ring = UVN_RING_PACKED },
};

static void run_bad(void **state)
{
	const struct bad_case *bc = *state;
	unsigned fds = count_fds();
	struct uvn_drv_cfg cfg;
	struct uvn_drv *d = NULL;
	struct script *s = script_start(bc->req, bc->fault, bc->features);
	uint64_t t0 = now_ms();

	uvn_drv_cfg_init(&cfg);
	cfg.path = s->path;
	cfg.timeout_ms = 300;
	cfg.poll = true;
	if (bc->rx_mode != UVN_RX_AUTO)
		cfg.rx_mode = bc->rx_mode;
	if (bc->ring != UVN_RING_SPLIT)
		cfg.ring = bc->ring;
	assert_int_equal(uvn_drv_open(&cfg, &d), bc->want);
	assert_null(d);
	/* Never longer than the timeout (plus the connection): no hang. */
	assert_true(now_ms() - t0 < 5000);
	script_stop(s);
	assert_int_equal(count_fds(), fds);
}

/* Without any fault the script completes a negotiation: the cases above
 * fail for their fault, not for the script. */
static void test_script_ok(void **state)
{
	struct uvn_drv_cfg cfg;
	struct uvn_drv *d = NULL;
	struct script *s = script_start(0, FAULT_NONE, 0);

	(void)state;
	uvn_drv_cfg_init(&cfg);
	cfg.path = s->path;
	cfg.timeout_ms = 300;
	cfg.poll = true;
	assert_int_equal(uvn_drv_open(&cfg, &d), 0);
	assert_true(uvn_drv_protocol_features(d) & F(VHOST_USER_PROTOCOL_F_REPLY_ACK));
	uvn_drv_close(d);
	script_stop(s);
}

static void test_no_backend(void **state)
{
	char path[64];
	struct uvn_drv_cfg cfg;
	struct uvn_drv *d = NULL;
	uint64_t t0 = now_ms();

	(void)state;
	uvn_drv_cfg_init(&cfg);
	cfg.path = "/tmp/uvn-drvbad-nonexistent/vu.sock";
	cfg.timeout_ms = 200;
	assert_int_equal(uvn_drv_open(&cfg, &d), -ENOENT);
	assert_true(now_ms() - t0 < 5000);
	/* Server mode: nobody connects in time. */
	snprintf(path, sizeof(path), "/tmp/uvn-drvbad-server-%d.sock", (int)getpid());
	cfg.path = path;
	cfg.server = true;
	assert_int_equal(uvn_drv_open(&cfg, &d), -ETIMEDOUT);
	assert_int_equal(access(cfg.path, F_OK), -1); /* the socket file is removed */
}

/* Server mode on a path someone else holds (a live socket, a file): the
 * open fails and leaves that path as it was. */
static void test_server_path_not_ours(void **state)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct uvn_drv_cfg cfg;
	struct uvn_drv *d = NULL;
	char path[64];
	int lfd, fd;

	(void)state;
	snprintf(path, sizeof(path), "/tmp/uvn-drvbad-taken-%d.sock", (int)getpid());
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	unlink(path);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(lfd, 4), 0);
	uvn_drv_cfg_init(&cfg);
	cfg.path = path;
	cfg.server = true;
	cfg.timeout_ms = 200;
	assert_int_equal(uvn_drv_open(&cfg, &d), -EADDRINUSE);
	assert_int_equal(access(path, F_OK), 0); /* the live socket is still there */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd);
	close(lfd);
	unlink(path);

	fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(uvn_drv_open(&cfg, &d), -EEXIST);
	assert_int_equal(access(path, F_OK), 0); /* the file is still there */
	unlink(path);
}

/* ------------------------------------------- the real backend going bad */

struct live {
	struct tbe *be;
	const char *path;
	struct uvn_drv *d;
};

static void live_open(struct live *l, const struct tbe_cfg *bc, bool poll)
{
	struct uvn_drv_cfg cfg;

	l->be = tbe_start(bc, &l->path);
	assert_non_null(l->be);
	uvn_drv_cfg_init(&cfg);
	cfg.path = l->path;
	cfg.poll = poll;
	cfg.timeout_ms = 1000;
	assert_int_equal(uvn_drv_open(&cfg, &l->d), 0);
}

/* Echo frames until @n came back. */
static void traffic(struct live *l, unsigned n)
{
	unsigned got = 0;

	for (unsigned i = 0; i < n; i++) {
		struct uvn_pkt *p;

		assert_int_equal(uvn_drv_tx_alloc(l->d, 0, &p, 1, 100), 1);
		memset(p->seg[0].iov_base, 0x5a, 100);
		assert_int_equal(uvn_tx_burst(l->d, 0, &p, 1), 1);
	}
	while (got < n) {
		uint64_t seen = tbe_events(l->be);
		struct uvn_pkt *pkts[32];
		int k = uvn_rx_burst(l->d, 0, pkts, 32);

		assert_true(k >= 0);
		got += (unsigned)k;
		uvn_pkt_free_bulk(pkts, (unsigned)k);
		if (!k)
			assert_true(tbe_wait(l->be, seen));
	}
}

static void check_all_back(struct uvn_drv *d)
{
	struct uvn_drv_mem_info mi;

	assert_int_equal(uvn_drv_mem_info(d, 0, &mi), 0);
	assert_int_equal(mi.rx_frags_out, 0);
	assert_int_equal(mi.rx_pkts_free, mi.rx_pkts_total);
	assert_int_equal(mi.tx_pkts_free, mi.tx_pkts_total);
	assert_int_equal(mi.tx_in_flight, 0);
}

/* Stop the driver, check every buffer came back, close both ends. */
static void live_close(struct live *l)
{
	uvn_drv_stop(l->d);
	check_all_back(l->d);
	uvn_drv_close(l->d);
	tbe_stop(l->be);
}

/* Poll both directions until an error comes; bounded, never a hang. */
static int until_error(struct uvn_drv *d)
{
	uint64_t end = now_ms() + 10000;

	for (;;) {
		struct uvn_pkt *pkts[32];
		int r = uvn_rx_burst(d, 0, pkts, 32);

		if (r > 0)
			uvn_pkt_free_bulk(pkts, (unsigned)r);
		if (r < 0)
			return r;
		if (uvn_drv_tx_alloc(d, 0, pkts, 1, 64)) {
			r = uvn_tx_burst(d, 0, pkts, 1);
			if (r <= 0)
				uvn_pkt_free(pkts[0]);
			if (r < 0)
				return r;
		}
		assert_true(now_ms() < end);
	}
}

static void test_backend_dies(void **state)
{
	struct tbe_cfg bc = { .mode = TBE_LOOP };
	struct uvn_pkt *p;
	struct live l;

	(void)state;
	live_open(&l, &bc, true);
	traffic(&l, 50);
	tbe_kill(l.be);
	assert_int_equal(until_error(l.d), -ENOTCONN);
	/* From now on every call says so at once. */
	assert_int_equal(uvn_rx_burst(l.d, 0, &p, 1), -ENOTCONN);
	assert_int_equal(uvn_drv_error(l.d), -ENOTCONN);
	assert_int_equal(uvn_drv_check(l.d), -ENOTCONN);
	live_close(&l);
}

struct killer {
	struct tbe *be;
	pid_t waiter; /* the thread in uvn_rx_wait() */
};

/* Is thread @tid inside poll() or ppoll() (/proc/<tid>/syscall names the
 * system call a blocked thread is in; "running" when it is not in one)? */
static bool in_poll(pid_t tid)
{
	char path[64], buf[128];
	long nr = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	f = fopen(path, "r");
	assert_non_null(f);
	if (fgets(buf, sizeof(buf), f))
		nr = strtol(buf, NULL, 10);
	fclose(f);
#ifdef SYS_poll
	if (nr == SYS_poll)
		return true;
#endif
	return nr == SYS_ppoll;
}

/* The kill comes once the waiter sleeps in the kernel: no time guessed. */
static void *killer(void *arg)
{
	struct killer *k = arg;

	while (!in_poll(k->waiter))
		sched_yield();
	tbe_kill(k->be);
	return NULL;
}

/* A thread asleep in uvn_rx_wait() forever wakes up when the backend goes. */
static void test_backend_dies_while_waiting(void **state)
{
	struct tbe_cfg bc = { .mode = TBE_LOOP };
	struct killer k;
	pthread_t th;
	struct live l;

	(void)state;
	live_open(&l, &bc, false);
	traffic(&l, 10);
	k.be = l.be;
	k.waiter = (pid_t)syscall(SYS_gettid);
	assert_int_equal(pthread_create(&th, NULL, killer, &k), 0);
	assert_int_equal(uvn_rx_wait(l.d, 0, -1), -ENOTCONN);
	pthread_join(th, NULL);
	live_close(&l);
}

static void test_backend_corrupts_ring(void **state)
{
	struct tbe_cfg bc = { .mode = TBE_LOOP };
	struct uvn_pkt *pkts[32];
	struct live l;
	uint64_t end = now_ms() + 10000;
	int r;

	(void)state;
	live_open(&l, &bc, true);
	traffic(&l, 20);
	tbe_corrupt(l.be);
	while ((r = uvn_rx_burst(l.d, 0, pkts, 32)) == 0)
		assert_true(now_ms() < end);
	assert_int_equal(r, -EPROTO);
	assert_int_equal(uvn_tx_burst(l.d, 0, pkts, 0), -EPROTO);
	assert_int_equal(uvn_drv_vq_stats(l.d, 0)->err[UVN_VQ_ERR_SLOT(UVN_VQ_E_USED_ID)], 1);
	live_close(&l);
}

static void test_backend_babbles(void **state)
{
	struct tbe_cfg bc = { .mode = TBE_LOOP };
	struct live l;

	(void)state;
	live_open(&l, &bc, true);
	traffic(&l, 5);
	tbe_babble(l.be);
	assert_int_equal(until_error(l.d), -EPROTO);
	live_close(&l);
}

/* A backend that stops consuming: tx fills the ring and returns 0, never
 * blocks; stop gives every untransmitted packet back. */
static void test_backend_stalls(void **state)
{
	struct tbe_cfg bc = { .mode = TBE_LOOP, .stall = true };
	struct uvn_drv_txq_stats ts;
	struct uvn_pkt *pkts[32];
	unsigned sent = 0;
	struct live l;

	(void)state;
	live_open(&l, &bc, true);
	for (int i = 0; i < 100; i++) {
		unsigned k = uvn_drv_tx_alloc(l.d, 0, pkts, 32, 64);
		int r;

		assert_int_equal(k, 32);
		r = uvn_tx_burst(l.d, 0, pkts, k);
		assert_true(r >= 0);
		sent += (unsigned)r;
		uvn_pkt_free_bulk(pkts + r, k - (unsigned)r);
	}
	assert_int_equal(sent, 256); /* the ring, no more */
	uvn_drv_txq_stats(l.d, 0, &ts);
	assert_true(ts.full > 0);
	live_close(&l);
}

int main(void)
{
	struct CMUnitTest tests[sizeof(bad_cases) / sizeof(bad_cases[0]) + 10];
	unsigned n = 0;

	for (unsigned i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++)
		tests[n++] = (struct CMUnitTest){ bad_cases[i].name, run_bad, NULL, NULL,
						  (void *)&bad_cases[i] };
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_script_ok);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_no_backend);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_server_path_not_ours);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_backend_dies);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_backend_dies_while_waiting);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_backend_corrupts_ring);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_backend_babbles);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_backend_stalls);
	return _cmocka_run_group_tests("driver_bad", tests, n, NULL, NULL);
}
