/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: a stateful virtio-net device. One vhost-user session
 * with the real vhost-user port of uvnetd (lib/port/vhost.c: backend,
 * netdev queues, control queue, discard of disabled rings) on its control
 * loop, a frontend on the other end of the socket with real memfd guest
 * memory and eventfds, and our driver halves as the guest's rings in that
 * memory. The input interleaves vhost-user messages (memory tables that
 * drop or move the rings, ADD/REM_MEM_REG, ring enable/disable, kick fd
 * swaps and NOFD, GET_VRING_BASE, raw messages), guest-side ring writes
 * (through our driver halves, and raw bytes anywhere in guest memory) and
 * data-path bursts both ways (the port's rx: guest TX chains become
 * packets; its tx: packets into the guest's RX buffers), with the drain
 * timer fired on demand.
 *
 * Checked after every op: the kick fd the port hands to a data-path worker
 * (rx_fd) is open and an eventfd; every fd in an epoll set of this process
 * is open; the loop never failed to remove a handler nor saw a stray
 * event; the guest gets each buffer back at most once, with a used length
 * within it. At the end of the session every fd is closed again.
 *
 * Input: [0] features mask, [1] protocol features on (bit 0), ring size
 * 1 << (v >> 1) % 9 ... (see setup()), then ops: op = b & 15, operands
 * follow (see run_op()).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <unistd.h>

#include <linux/virtio_config.h>
#include <linux/virtio_net.h>
#include <linux/virtio_ring.h>
#include <uvnet/virtqueue.h>

#include "fuzz_mem.h"
#include "fuzz_vu.h"
#include "net/hdr.h"
#include "port/port.h"
#include "util/log.h"
#include "util/loop.h"
#include "vhost_user/proto.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NQ 5                    /* rx0, tx0, rx1, tx1, control */
#define MEM_SIZE (256u << 10)
#define RING_SPAN 0x2000u       /* one ring of up to 256 entries per 8 KB */
#define BUF_BASE 0x10000u
#define BUF_LEN 2048u
#define NBUF ((MEM_SIZE - BUF_BASE) / BUF_LEN)
#define UA_BASE 0x7f0000000000ull  /* the frontend's addresses of its memory */
#define UA_MOVED 0x7e0000000000ull
#define MAX_STALE 8

struct gq {
	struct uvn_vq_drv *drv;
	unsigned num;
	int kick, call;          /* the frontend's copies, -1 if none */
	uint8_t tok[256];        /* 1: in flight */
};

struct fe {
	int sock;
	int mem[2];              /* memfds: the guest's, and another */
	uint8_t *map;            /* the guest's memory, as the frontend sees it */
	uint64_t features;
	bool packed, protocol;
	unsigned num;
	struct gq q[NQ];
	int stale[MAX_STALE];    /* kick fds the frontend swapped out, kept open */
	unsigned nstale;
	unsigned next_buf;
	bool rem;                /* region 0 removed with REM_MEM_REG */
	const uint8_t *in;
	size_t left;
};

static struct uvn_loop *loop;
static struct uvn_port *port;
static char sock_path[108];
static struct uvn_pkt_pool *pool;
/*
 * /proc/self/fd, open for the whole run (made in LLVMFuzzerInitialize, so
 * every fd count sees it alike) and rewound per scan: opening it, and
 * readlink walking the whole /proc path for each fd, were most of what the
 * checks cost.
 */
static DIR *fd_dir;

static uint8_t take8(struct fe *f)
{
	if (!f->left)
		return 0;
	f->left--;
	return *f->in++;
}

static void expire_timers(bool oneshot);
static void find_epoll_sets(void);

static void pump(void)
{
	for (int i = 0; i < 64 && uvn_loop_run_once(loop, 0) > 0; i++)
		;
}

/* Bytes we sent that the port has not read yet. */
static bool unread(const struct fe *f)
{
	int n = 0;

	return ioctl(f->sock, SIOCOUTQ, &n) == 0 && n > 0;
}

static void request(struct fe *f, uint32_t req, const void *p, uint32_t len, const int *fds,
		    unsigned nfds)
{
	fz_vu_request(f->sock, req, p, len, fds, nfds);
	pump();
	/* Left unread: past its message budget the port reads on when the
	 * window ends, which a real frontend would see pass. */
	if (unread(f))
		expire_timers(true);
	(void)fz_vu_drain(f->sock, NULL);
}

static uint64_t request_u64(struct fe *f, uint32_t req)
{
	uint64_t v = 0;

	fz_vu_request(f->sock, req, NULL, 0, NULL, 0);
	pump();
	(void)fz_vu_drain(f->sock, &v);
	return v;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void unlink_socket(void)
{
	unlink(sock_path);
}

/* libFuzzer ends a run without exit handlers (a crash, a timeout, -runs):
 * remove the sockets earlier runs left, those whose process is gone. */
static void unlink_stale_sockets(void)
{
	DIR *d = opendir("/tmp");
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char p[300];
		int pid;

		if (sscanf(e->d_name, "uvn-fuzz-device-%d.sock", &pid) != 1 || pid <= 0 ||
		    !kill(pid, 0) || errno != ESRCH)
			continue;
		snprintf(p, sizeof(p), "/tmp/%s", e->d_name);
		unlink(p);
	}
	closedir(d);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct uvn_pkt_pool_cfg pc = { .count = 64, .buf_size = 2048, .name = "fz-dev" };
	struct uvn_port_env env = { 0 };
	struct uvn_vhost_port_cfg cfg = { .path = sock_path, .queues = 2 };

	(void)argc;
	(void)argv;
	uvn_log_level = UVN_LOG_ERR - 1; /* quiet: the peer errors are the point */
	unlink_stale_sockets();
	snprintf(sock_path, sizeof(sock_path), "/tmp/uvn-fuzz-device-%d.sock", (int)getpid());
	unlink(sock_path);
	fd_dir = opendir("/proc/self/fd");
	if (!fd_dir || uvn_loop_create(&loop) || uvn_pkt_pool_create(&pc, &pool))
		abort();
	env.loop = loop;
	env.small = pool;
	env.big = pool;
	if (uvn_port_vhost_create(&cfg, &env, &port))
		abort();
	find_epoll_sets();
	atexit(unlink_socket);
	return 0;
}

/* ---------------------------------------------------------------- checks */

static bool fd_is(int fd, const char *what)
{
	char p[16], l[64];
	ssize_t n;

	snprintf(p, sizeof(p), "%d", fd);
	n = readlinkat(dirfd(fd_dir), p, l, sizeof(l) - 1);
	if (n < 0)
		return false;
	l[n] = 0;
	return !strcmp(l, what);
}

/* The open fds of the process for which @is(fd, @what), at most @max. */
static unsigned fds_where(bool (*is)(int fd, const char *what), const char *what, int *out,
			  unsigned max)
{
	struct dirent *e;
	unsigned n = 0;

	rewinddir(fd_dir);
	while ((e = readdir(fd_dir)) && n < max) {
		int fd = atoi(e->d_name);

		if (e->d_name[0] != '.' && fd != dirfd(fd_dir) && is(fd, what))
			out[n++] = fd;
	}
	return n;
}

/* The open fds of the process that are @what (readlink), at most @max. */
static unsigned fds_of(const char *what, int *out, unsigned max)
{
	return fds_where(fd_is, what, out, max);
}

/* A timerfd: the one kind of fd timerfd_gettime accepts (one syscall,
 * where readlink is a path walk). */
static bool is_timerfd(int fd, const char *what)
{
	struct itimerspec it;

	(void)what;
	return !timerfd_gettime(fd, &it);
}

/* The epoll fds of the process (the control loop's): found once, after
 * the port was made (LLVMFuzzerInitialize); nothing creates others. Their
 * /proc/self/fdinfo files stay open too and are read again from offset 0
 * each time, which lists the set as it is then (fopen and stdio per check
 * were a quarter of an input's time). */
static int eps[8], ep_info[8];
static unsigned neps;

static void find_epoll_sets(void)
{
	neps = fds_of("anon_inode:[eventpoll]", eps, 8);
	for (unsigned i = 0; i < neps; i++) {
		char p[64];

		snprintf(p, sizeof(p), "/proc/self/fdinfo/%d", eps[i]);
		ep_info[i] = open(p, O_RDONLY | O_CLOEXEC);
		CHECK(ep_info[i] >= 0);
	}
}

/* Every fd registered in an epoll set of ours is open. */
static void check_epoll_sets(void)
{
	static char buf[65536];

	for (unsigned i = 0; i < neps; i++) {
		size_t len = 0;
		ssize_t r;

		CHECK(lseek(ep_info[i], 0, SEEK_SET) == 0);
		while ((r = read(ep_info[i], buf + len, sizeof(buf) - 1 - len)) > 0)
			len += (size_t)r;
		CHECK(r == 0); /* all of it: the buffer is not full */
		buf[len] = 0;
		/* lines "tfd: %d events: ...", one per registered fd */
		for (char *l = buf; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
			if (!strncmp(l, "tfd:", 4))
				CHECK(fcntl(atoi(l + 4), F_GETFD) >= 0);
		}
	}
}

static void check(void)
{
	struct uvn_loop_stats st;
	unsigned n = port->ops->nqueues(port);

	for (unsigned q = 0; q < n; q++) {
		int fd = port->ops->rx_fd ? port->ops->rx_fd(port, q) : -1;

		CHECK(fd < 0 || fd_is(fd, "anon_inode:[eventfd]"));
	}
	check_epoll_sets();
	uvn_loop_stats(loop, &st);
	CHECK(st.del_failed == 0 && st.stray == 0);
}

/* ------------------------------------------------------------ the guest */

static uint64_t ring_gpa(unsigned q)
{
	return (uint64_t)q * RING_SPAN;
}

static void mem_table(struct fe *f, unsigned variant)
{
	struct uvn_vu_memory m = { .nregions = 1 };
	int fds[2] = { f->mem[0], f->mem[0] };

	m.regions[0] = (struct uvn_vu_region){ 0, MEM_SIZE, UA_BASE, 0 };
	switch (variant) {
	case 1: /* the rings are no longer in memory */
		m.regions[0] = (struct uvn_vu_region){ BUF_BASE, MEM_SIZE - BUF_BASE,
						       UA_BASE + BUF_BASE, BUF_BASE };
		break;
	case 2: /* the same guest memory at other frontend addresses */
		m.regions[0].userspace_addr = UA_MOVED;
		break;
	case 3: /* rings and buffers in two regions */
		m.nregions = 2;
		m.regions[0].memory_size = BUF_BASE;
		m.regions[1] = (struct uvn_vu_region){ BUF_BASE, MEM_SIZE - BUF_BASE,
						       UA_BASE + BUF_BASE, BUF_BASE };
		break;
	case 4: /* another file: the rings read as zeroes */
		fds[0] = f->mem[1];
		break;
	default:
		break;
	}
	request(f, VHOST_USER_SET_MEM_TABLE, &m,
		(uint32_t)(UVN_VU_MEMORY_HDR_SIZE + m.nregions * sizeof(m.regions[0])), fds,
		m.nregions);
	f->rem = false;
}

/* REM_MEM_REG of the whole memory, or ADD_MEM_REG of it back. */
static void mem_reg(struct fe *f, bool add)
{
	struct uvn_vu_mem_reg r = { .region = { 0, MEM_SIZE, UA_BASE, 0 } };

	request(f, add ? VHOST_USER_ADD_MEM_REG : VHOST_USER_REM_MEM_REG, &r, sizeof(r),
		&f->mem[0], 1);
	f->rem = !add;
}

static void set_state(struct fe *f, uint32_t req, unsigned q, uint32_t num)
{
	struct vhost_vring_state s = { .index = q, .num = num };

	request(f, req, &s, sizeof(s), NULL, 0);
}

static void set_fd(struct fe *f, uint32_t req, unsigned q, int fd)
{
	uint64_t v = q | (fd < 0 ? VHOST_USER_VRING_NOFD_MASK : 0);

	request(f, req, &v, sizeof(v), &fd, fd < 0 ? 0 : 1);
}

/* A new kick fd for @q (or none), the old copy kept like a frontend may. */
static void swap_kick(struct fe *f, unsigned q, bool nofd)
{
	struct gq *g = &f->q[q];
	int fd = nofd ? -1 : eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);

	set_fd(f, VHOST_USER_SET_VRING_KICK, q, fd);
	if (g->kick >= 0) {
		if (f->nstale == MAX_STALE)
			close_fd(&f->stale[--f->nstale]);
		f->stale[f->nstale++] = g->kick;
	}
	g->kick = fd;
}

/* The whole bring-up of ring @q, our driver half fresh on it. */
static void setup_queue(struct fe *f, unsigned q)
{
	struct gq *g = &f->q[q];
	struct uvn_vq_layout l;
	struct uvn_vq_drv_cfg dc = { .num = f->num, .features = f->features,
				     .ring = f->map + ring_gpa(q) };
	struct vhost_vring_addr a = { .index = q };
	uint16_t st;

	if (g->drv)
		uvn_vq_drv_destroy(g->drv);
	memset(g->tok, 0, sizeof(g->tok));
	CHECK(uvn_vq_layout(f->packed, f->num, &l) == 0 && l.size <= RING_SPAN);
	CHECK(uvn_vq_drv_create(&dc, &g->drv) == 0);
	g->num = f->num;
	a.desc_user_addr = UA_BASE + ring_gpa(q) + l.desc;
	a.avail_user_addr = UA_BASE + ring_gpa(q) + l.driver;
	a.used_user_addr = UA_BASE + ring_gpa(q) + l.device;
	st = uvn_vq_drv_avail_state(g->drv);
	set_state(f, VHOST_USER_SET_VRING_NUM, q, f->num);
	request(f, VHOST_USER_SET_VRING_ADDR, &a, sizeof(a), NULL, 0);
	set_state(f, VHOST_USER_SET_VRING_BASE, q, f->packed ? (uint32_t)st | (uint32_t)st << 16 : 0);
	if (g->call < 0)
		g->call = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	set_fd(f, VHOST_USER_SET_VRING_CALL, q, g->call);
	swap_kick(f, q, false);
	if (f->protocol)
		set_state(f, VHOST_USER_SET_VRING_ENABLE, q, 1);
}

static void kick(struct gq *g)
{
	uint64_t one = 1;

	if (g->kick >= 0)
		(void)!write(g->kick, &one, sizeof(one));
}

/* A token of @g not in flight. */
static int free_tok(struct gq *g)
{
	for (unsigned i = 0; i < 256; i++)
		if (!g->tok[i])
			return (int)i;
	return -1;
}

static unsigned take_buf(struct fe *f)
{
	return BUF_BASE + (f->next_buf++ % NBUF) * BUF_LEN;
}

/* Guest TX: frames from the input on tx0/tx1, a command on the control queue. */
static void guest_tx(struct fe *f, unsigned q, unsigned n)
{
	struct gq *g = &f->q[q];

	if (!g->drv)
		return;
	for (unsigned i = 0; i < n; i++) {
		uint32_t off = take_buf(f), len = 14 + take8(f) * 4u;
		struct uvn_sg sg[2];
		int id = free_tok(g), r;

		if (id < 0)
			break;
		memset(f->map + off, 0, 12);
		for (uint32_t k = 12; k < 12 + len && k < 12 + 64; k++)
			f->map[off + k] = take8(f);
		if (q == 4) {
			/* VIRTIO_NET_CTRL_MQ / VQ_PAIRS_SET, pairs from the input, then the ack */
			f->map[off] = VIRTIO_NET_CTRL_MQ;
			f->map[off + 1] = VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET;
			f->map[off + 2] = f->map[off + 12] & 3;
			sg[0] = (struct uvn_sg){ off, 4 };
			sg[1] = (struct uvn_sg){ off + 64, 1 };
			r = uvn_vq_drv_add(g->drv, sg, 1, 1, &g->tok[id], 0);
		} else {
			r = uvn_vq_drv_add_one(g->drv, off, 12 + len, false, &g->tok[id]);
		}
		if (r)
			break;
		g->tok[id] = 1;
	}
	if (uvn_vq_drv_kick_prepare(g->drv))
		kick(g);
}

static void guest_rx(struct fe *f, unsigned q, unsigned n)
{
	struct gq *g = &f->q[q];

	if (!g->drv)
		return;
	for (unsigned i = 0; i < n; i++) {
		int id = free_tok(g);

		if (id < 0 || uvn_vq_drv_add_one(g->drv, take_buf(f), BUF_LEN, true, &g->tok[id]))
			break;
		g->tok[id] = 1;
	}
	(void)uvn_vq_drv_kick_prepare(g->drv);
}

static void reclaim(struct fe *f)
{
	for (unsigned q = 0; q < NQ; q++) {
		struct gq *g = &f->q[q];
		struct uvn_vq_done done[32];
		int n;

		if (!g->drv)
			continue;
		while ((n = uvn_vq_drv_get_used(g->drv, done, 32)) > 0) {
			for (int i = 0; i < n; i++) {
				uint8_t *t = done[i].token;

				CHECK(t >= g->tok && t < g->tok + 256 && *t == 1);
				*t = 0;
				CHECK(done[i].len <= BUF_LEN);
			}
		}
	}
}

/* ------------------------------------------------------------ data path */

static void port_rx(void)
{
	struct uvn_pkt *pkts[32];
	unsigned nq = port->ops->nqueues(port);

	for (unsigned q = 0; q < nq; q++) {
		unsigned n = port->ops->rx(port, q, pkts, 32);

		if (n)
			(void)port->ops->tx(port, q, pkts, n); /* back into the guest */
		uvn_pkt_free_bulk(pkts, n);
		if (port->ops->complete)
			port->ops->complete(port, q);
	}
}

static void port_tx(struct fe *f, unsigned n)
{
	struct uvn_pkt *pkts[8];
	unsigned got = 0;

	for (; got < n && got < 8; got++) {
		struct uvn_pkt *p = uvn_pkt_alloc(pool);
		uint32_t len = 14 + take8(f) * 8u;

		if (!p)
			break;
		memset(p->buf, 0, len);
		for (uint32_t k = 0; k < 14; k++)
			((uint8_t *)p->buf)[k] = take8(f);
		uvn_pkt_set_buf(p, len);
		pkts[got] = p;
	}
	(void)port->ops->tx(port, 0, pkts, got);
	uvn_pkt_free_bulk(pkts, got);
}

/* Expire the process's timers now: every one (the port's drain timer), or
 * only the one-shot ones (@oneshot: the end of a message-budget window, a
 * queue-pairs change), which a frontend would see pass in real time. */
static void expire_timers(bool oneshot)
{
	int t[8];
	unsigned n = fds_where(is_timerfd, NULL, t, 8);

	for (unsigned i = 0; i < n; i++) {
		struct itimerspec it;

		if (timerfd_gettime(t[i], &it) || (oneshot && (it.it_interval.tv_sec ||
							       it.it_interval.tv_nsec)))
			continue;
		it.it_value = (struct timespec){ 0, 1 };
		(void)timerfd_settime(t[i], 0, &it, NULL);
	}
	/* A 1 ns timer has expired by the time the loop waits (at most 1 ms). */
	(void)uvn_loop_run_once(loop, 1);
	pump();
}

static void fire_timers(void)
{
	expire_timers(false);
}

/* A worker's view: a kick on a guest TX ring's fd, then its burst. */
static void worker_round(void)
{
	unsigned nq = port->ops->nqueues(port);

	for (unsigned q = 0; q < nq; q++) {
		struct pollfd p = { .fd = port->ops->rx_fd ? port->ops->rx_fd(port, q) : -1,
				    .events = POLLIN };

		if (p.fd >= 0 && port->ops->rx_event && poll(&p, 1, 0) == 1)
			port->ops->rx_event(port, q);
		if (port->ops->arm)
			(void)port->ops->arm(port, q);
	}
	port_rx();
}

/* ----------------------------------------------------------------- ops */

static void raw_message(struct fe *f)
{
	uint8_t hdr[12] = { 0 }, payload[64];
	uint32_t flags = 1, len = take8(f) % 65;
	int fd = -1;

	hdr[0] = take8(f);
	memcpy(hdr + 4, &flags, 4);
	memcpy(hdr + 8, &len, 4);
	for (uint32_t k = 0; k < len; k++)
		payload[k] = take8(f);
	if (hdr[0] & 0x80) {
		hdr[0] &= 0x7f;
		fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	}
	fz_vu_send(f->sock, hdr, payload, len, &fd, fd >= 0);
	close_fd(&fd);
	pump();
	(void)fz_vu_drain(f->sock, NULL);
}

static void poke(struct fe *f)
{
	uint32_t off = (uint32_t)(take8(f) | take8(f) << 8) * 4u % MEM_SIZE;
	unsigned n = take8(f) % 16;

	for (unsigned k = 0; k < n && off + k < MEM_SIZE; k++)
		f->map[off + k] = take8(f);
}

static void run_op(struct fe *f)
{
	uint8_t b = take8(f), x = take8(f);
	unsigned q = x % NQ;

	switch (b & 15) {
	case 0: setup_queue(f, q); break;
	case 1:
		if (f->protocol)
			set_state(f, VHOST_USER_SET_VRING_ENABLE, q, !!(x & 8));
		break;
	case 2: swap_kick(f, q, x & 8); break;
	case 3: set_state(f, VHOST_USER_GET_VRING_BASE, q, 0); break;
	case 4:
		if ((x & 7) == 5)
			mem_reg(f, f->rem);
		else
			mem_table(f, x & 7);
		break;
	case 5: guest_tx(f, q == 4 ? 4 : 1 + 2 * (q & 1), 1 + (x >> 4)); break;
	case 6: guest_rx(f, 2 * (q & 1), 1 + (x >> 3)); break;
	case 7: port_rx(); break;
	case 8: port_tx(f, 1 + (x & 7)); break;
	case 9: fire_timers(); break;
	case 10:
		f->in--, f->left++; /* x is the first operand */
		poke(f);
		break;
	case 11:
		f->in--, f->left++;
		raw_message(f);
		break;
	case 12: reclaim(f); break;
	case 13:
		if (f->nstale)
			kick(&(struct gq){ .kick = f->stale[x % f->nstale] });
		else
			kick(&f->q[q]);
		pump();
		worker_round();
		break;
	case 14: worker_round(); break;
	default: uvn_port_vhost_set_zerocopy(port, x % 3); break;
	}
	pump();
	check();
}

/* Features, protocol features, memory: the frontend's first messages. */
static void setup(struct fe *f, uint8_t fm, uint8_t pm)
{
	uint64_t offered = request_u64(f, VHOST_USER_GET_FEATURES), want = offered;

	request(f, VHOST_USER_SET_OWNER, NULL, 0, NULL, 0);
	/* Bits of the input switch off offloads and ring features. */
	if (fm & 1)
		want &= ~(1ull << VIRTIO_F_RING_PACKED);
	if (fm & 2)
		want &= ~(1ull << VIRTIO_F_IN_ORDER);
	if (fm & 4)
		want &= ~(1ull << VIRTIO_NET_F_MRG_RXBUF);
	if (fm & 8)
		want &= ~(1ull << VIRTIO_RING_F_EVENT_IDX);
	if (fm & 16)
		want &= ~(1ull << VIRTIO_NET_F_GUEST_CSUM | 1ull << VIRTIO_NET_F_GUEST_TSO4 |
			  1ull << VIRTIO_NET_F_GUEST_TSO6 | 1ull << VIRTIO_NET_F_GUEST_ECN |
			  1ull << VIRTIO_NET_F_GUEST_USO4 | 1ull << VIRTIO_NET_F_GUEST_USO6);
	if (fm & 32)
		want &= ~(1ull << VIRTIO_RING_F_INDIRECT_DESC);
	if (fm & 64)
		want &= ~(1ull << VIRTIO_NET_F_MQ | 1ull << VIRTIO_NET_F_CTRL_VQ);
	f->protocol = !(pm & 1) && (want & (1ull << VHOST_USER_F_PROTOCOL_FEATURES));
	if (!f->protocol)
		want &= ~(1ull << VHOST_USER_F_PROTOCOL_FEATURES);
	request(f, VHOST_USER_SET_FEATURES, &want, sizeof(want), NULL, 0);
	if (f->protocol) {
		uint64_t pf = request_u64(f, VHOST_USER_GET_PROTOCOL_FEATURES);

		pf &= 1ull << VHOST_USER_PROTOCOL_F_MQ |
		      1ull << VHOST_USER_PROTOCOL_F_CONFIGURE_MEM_SLOTS;
		request(f, VHOST_USER_SET_PROTOCOL_FEATURES, &pf, sizeof(pf), NULL, 0);
	}
	f->features = want & ~(1ull << VHOST_USER_F_PROTOCOL_FEATURES);
	f->packed = f->features & (1ull << VIRTIO_F_RING_PACKED);
	f->num = 1u << ((pm >> 1) % 9);
	mem_table(f, 0);
}

static bool connect_frontend(struct fe *f)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	memcpy(sa.sun_path, sock_path, sizeof(sock_path));
	f->sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (f->sock < 0 || connect(f->sock, (struct sockaddr *)&sa, sizeof(sa)))
		return false;
	pump(); /* accepted */
	return true;
}

static bool make_memory(struct fe *f)
{
	for (unsigned i = 0; i < 2; i++) {
		f->mem[i] = memfd_create("fuzz-guest", MFD_CLOEXEC);
		if (f->mem[i] < 0 || ftruncate(f->mem[i], MEM_SIZE))
			return false;
	}
	f->map = mmap(NULL, MEM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, f->mem[0], 0);
	return f->map != MAP_FAILED;
}

static void teardown(struct fe *f)
{
	close_fd(&f->sock);
	/* The port sees the hangup and drops the session. */
	expire_timers(true);
	for (int i = 0; i < 8; i++)
		pump();
	for (unsigned q = 0; q < NQ; q++) {
		if (f->q[q].drv)
			uvn_vq_drv_destroy(f->q[q].drv);
		close_fd(&f->q[q].kick);
		close_fd(&f->q[q].call);
	}
	for (unsigned i = 0; i < f->nstale; i++)
		close_fd(&f->stale[i]);
	if (f->map && f->map != MAP_FAILED)
		munmap(f->map, MEM_SIZE);
	close_fd(&f->mem[0]);
	close_fd(&f->mem[1]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fe f;
	unsigned fds0;

	if (size < 2)
		return 0;
	fds0 = fz_count_fds();
	memset(&f, 0, sizeof(f));
	f.sock = f.mem[0] = f.mem[1] = -1;
	for (unsigned q = 0; q < NQ; q++)
		f.q[q].kick = f.q[q].call = -1;
	if (make_memory(&f) && connect_frontend(&f)) {
		setup(&f, data[0], data[1]);
		f.in = data + 2;
		f.left = size - 2;
		check();
		while (f.left)
			run_op(&f);
	}
	if (getenv("FZ_VERBOSE")) { /* to check what a seed reaches */
		struct uvn_port_stats st;

		port->ops->stats(port, &st);
		fprintf(stderr, "queues %u, port rx %llu tx %llu drops %llu errors %llu kicks %llu\n",
			port->ops->nqueues(port), (unsigned long long)st.rx_packets,
			(unsigned long long)st.tx_packets, (unsigned long long)st.drops,
			(unsigned long long)st.errors, (unsigned long long)st.kicks);
	}
	teardown(&f);
	CHECK(port->ops->nqueues(port) == 0);
	CHECK(fz_count_fds() == fds0); /* every fd of the session closed */
	return 0;
}
