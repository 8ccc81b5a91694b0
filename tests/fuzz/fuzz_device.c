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
 * Checked after every op that runs the port: the kick fd the port hands
 * to a data-path worker (rx_fd) is open and an eventfd; every fd in an
 * epoll set of this process is open; the loop never failed to remove a
 * handler nor saw a stray event; the guest gets each buffer back at most
 * once, with a used length within it. At the end of the session every fd
 * is closed again. Once the port has dropped the connection the rest of
 * the input is not run (after_hangup()).
 *
 * Every input starts from the same state, so that an input that fails in
 * a run fails alone too. What a session cannot change is made once per
 * process (the port and its loop, the guest's two memfds and the
 * frontend's mappings of them) and reset per input: guest memory zeroed;
 * zero-copy off; the port's message budget, queue-pairs gap and drain
 * timer started afresh, so that no timer fires because the clock happened
 * to pass a deadline (the input fires them: op 9, and a message past the
 * budget ends its window). After the session the port's epoll set is what
 * it was, and no fd, guest mapping or packet is left. FZ_REPEAT=1 runs
 * each input twice and checks that both runs end alike (counters,
 * replies, guest memory); FZ_DIGEST=1 prints a digest of how each input
 * ended, to compare a run alone with one among others.
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
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <unistd.h>

#include <linux/virtio_config.h>
#include <linux/virtio_net.h>
#include <linux/virtio_ring.h>
#include <uvnet/virtqueue.h>

#include "fuzz_mem.h"
#include "fuzz_repeat.h"
#include "fuzz_vu.h"
#include "mem/guard.h"
#include "net/hdr.h"
#include "port/port.h"
#include "port/vhost_port.h"
#include "util/log.h"
#include "util/loop.h"
#include "util/sys.h"
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
#define POOL_BUF 2048u          /* room of a packet port_tx() sends */

struct gq {
	struct uvn_vq_drv *drv;
	unsigned num;
	int kick, call;          /* the frontend's copies, -1 if none */
	uint8_t tok[256];        /* 1: in flight */
};

/*
 * The guest's memory file (mem[0]) and another one (mem[1]), for the whole
 * run, with the frontend's mappings of them: making, faulting in and
 * unmapping them per input was a good part of an input's kernel time.
 * Zeroed per input (mem[1] only after a table named it: nobody else
 * writes it).
 */
static int mem[2] = { -1, -1 };
static uint8_t *mem_map[2];
static bool other_written;

struct fe {
	int sock;
	uint8_t *map;            /* the guest's memory, as the frontend sees it */
	unsigned replies;        /* reads of the port's replies */
	uint64_t replies_seen;   /* the port's count of replies sent, when last read */
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

/* A registration in an epoll set of ours, as fdinfo lists it. */
struct watch {
	int fd;
	uint64_t data;
};

#define MAX_WATCH 32
static struct watch base_set[MAX_WATCH]; /* the sets between inputs */
static unsigned nbase;
static unsigned base_guarded;        /* guarded mappings between inputs */

/* Bumped whenever fds may have been opened or closed: by a message, a timer. */
static unsigned fd_gen = 1;

static void expire_timers(bool oneshot);
static void find_epoll_sets(void);
static unsigned read_sets(struct watch *w, unsigned max);

static void pump(void)
{
	for (int i = 0; i < 64 && uvn_loop_run_once(loop, 0) > 0; i++)
		;
}

/*
 * The port reads the message just sent, as its loop would: the socket is
 * the one thing that became ready (every op ends with the loop idle), so
 * its handler is run here rather than found by a round trip through
 * epoll, then whatever else that made ready. Past its message budget the
 * port does not read; it reads on when the window ends, which a real
 * frontend would see pass.
 */
static void deliver(void)
{
	struct vhost_port *v = (struct vhost_port *)port;

	fd_gen++;
	if (!v->be) {
		pump();
		return;
	}
	if (v->conn_paused) {
		expire_timers(true);
		return;
	}
	v->conn_h.fn(&v->conn_h, EPOLLIN);
	pump();
}

/* Read the port's replies, if it sent any since we last looked. */
static void take_replies(struct fe *f, uint64_t *u64)
{
	struct vhost_port *v = (struct vhost_port *)port;
	uint64_t sent = v->be ? uvn_vu_backend_stats(v->be)->replies : UINT64_MAX;

	if (sent == f->replies_seen)
		return;
	f->replies += fz_vu_drain(f->sock, u64);
	f->replies_seen = sent;
}

static void request(struct fe *f, uint32_t req, const void *p, uint32_t len, const int *fds,
		    unsigned nfds)
{
	fz_vu_request(f->sock, req, p, len, fds, nfds);
	deliver();
	take_replies(f, NULL);
}

static uint64_t request_u64(struct fe *f, uint32_t req)
{
	uint64_t v = 0;

	fz_vu_request(f->sock, req, NULL, 0, NULL, 0);
	deliver();
	take_replies(f, &v);
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
	struct uvn_pkt_pool_cfg pc = { .count = 64, .buf_size = POOL_BUF, .name = "fz-dev" };
	struct uvn_port_env env = { 0 };
	struct uvn_vhost_port_cfg cfg = { .path = sock_path, .queues = 2 };

	(void)argc;
	(void)argv;
	/* Quiet (errors only: the peer's are the point), unless UVN_LOG says:
	 * -1 would mean "as UVN_LOG says", info when unset, a line or more
	 * per input. */
	if (!getenv("UVN_LOG"))
		uvn_log_level = UVN_LOG_ERR;
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
	for (unsigned i = 0; i < 2; i++) {
		mem[i] = memfd_create("fuzz-guest", MFD_CLOEXEC);
		if (mem[i] < 0 || ftruncate(mem[i], MEM_SIZE))
			abort();
		mem_map[i] = mmap(NULL, MEM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, mem[i], 0);
		if (mem_map[i] == MAP_FAILED)
			abort();
	}
	find_epoll_sets();
	nbase = read_sets(base_set, MAX_WATCH);
	base_guarded = uvn_mem_guard_slots_used();
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

/* The open fds of the process that are @what (readlink), at most @max. */
static unsigned fds_of(const char *what, int *out, unsigned max)
{
	struct dirent *e;
	unsigned n = 0;

	rewinddir(fd_dir);
	while ((e = readdir(fd_dir)) && n < max) {
		int fd = atoi(e->d_name);

		if (e->d_name[0] != '.' && fd != dirfd(fd_dir) && fd_is(fd, what))
			out[n++] = fd;
	}
	return n;
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

/* Every registration in the epoll sets: its fd number and its data (the
 * loop's struct uvn_handler pointer), as the kernel lists them. */
static unsigned read_sets(struct watch *w, unsigned max)
{
	static char buf[65536];
	unsigned n = 0;

	for (unsigned i = 0; i < neps; i++) {
		/* one read from offset 0 has it all (a seq_file read
		 * returns the whole record), unless the buffer is full */
		ssize_t r = pread(ep_info[i], buf, sizeof(buf) - 1, 0);

		CHECK(r > 0 && (size_t)r < sizeof(buf) - 1);
		buf[r] = 0;
		/* lines "tfd: %d events: %x data: %llx ...", one per registered
		 * fd, after the file's own (pos, flags...): read by hand, line
		 * by line (sscanf, and strstr, which measures the rest of the
		 * buffer at each call under ASan, were a third of each check) */
		for (char *l = buf, *end = buf + r, *nl; l < end; l = nl + 1) {
			char *e, *d;
			long fd;

			nl = memchr(l, '\n', (size_t)(end - l));
			if (!nl)
				nl = end;
			if (nl - l < 4 || memcmp(l, "tfd:", 4))
				continue;
			fd = strtol(l + 4, &e, 10);
			d = memmem(e, (size_t)(nl - e), "data:", 5);
			CHECK(d && n < max);
			w[n++] = (struct watch){ .fd = (int)fd, .data = strtoull(d + 5, NULL, 16) };
		}
	}
	return n;
}

/* After a session: the sets are as the input found them. */
static void check_sets_as_before(void)
{
	struct watch w[MAX_WATCH];
	unsigned n = read_sets(w, MAX_WATCH);

	CHECK(n == nbase);
	for (unsigned i = 0; i < n; i++)
		CHECK(w[i].fd == base_set[i].fd && w[i].data == base_set[i].data);
}

/*
 * Every epoll_ctl of the process (the port's loop's, through the
 * library's uvn_loop_add/del and timers) comes here, and is counted: the
 * registrations the kernel lists can only grow or change through one, so
 * check() reads them again only after one. Without one, the list read
 * last can only hold more than the set does now (a registration also ends
 * when the last fd of its file is closed), and a number of it found
 * closed has the list read again before it counts. This definition
 * replaces libc's in the whole program (no sanitizer in use intercepts
 * epoll_ctl) and makes the system call itself.
 */
static unsigned ep_ctl_calls = 1;

int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	ep_ctl_calls++;
	return (int)syscall(SYS_epoll_ctl, epfd, op, fd, ev);
}

/*
 * After every op. The type of rx_fd (a path walk in /proc) is read again
 * when the fd or anything that may have closed one (fd_gen) changed since;
 * that it is still open, with every fd in the epoll sets, one poll says.
 * The sets are read again when an epoll_ctl ran since (ep_ctl_calls).
 */
static void check(void)
{
	static int seen[UVN_PORT_MAX_QUEUES];
	static unsigned seen_gen[UVN_PORT_MAX_QUEUES];
	static struct watch w[MAX_WATCH];
	static unsigned n, read_at; /* ep_ctl_calls when w was read */
	struct pollfd p[MAX_WATCH + UVN_PORT_MAX_QUEUES];
	struct uvn_loop_stats st;
	unsigned np, nq = port->ops->nqueues(port);
	bool fresh = false;

	if (read_at != ep_ctl_calls) {
		read_at = ep_ctl_calls;
		n = read_sets(w, MAX_WATCH);
		fresh = true;
	}
again:
	for (np = 0; np < n; np++)
		p[np] = (struct pollfd){ .fd = w[np].fd };
	for (unsigned q = 0; q < nq && q < UVN_PORT_MAX_QUEUES; q++) {
		int fd = port->ops->rx_fd ? port->ops->rx_fd(port, q) : -1;

		if (fd < 0)
			continue;
		if (fd != seen[q] || seen_gen[q] != fd_gen) {
			CHECK(fd_is(fd, "anon_inode:[eventfd]"));
			seen[q] = fd;
			seen_gen[q] = fd_gen;
		}
		p[np++] = (struct pollfd){ .fd = fd };
	}
	CHECK(poll(p, np, 0) >= 0);
	for (unsigned i = 0; i < np; i++) {
		if (!(p[i].revents & POLLNVAL)) /* open */
			continue;
		if (i < n && !fresh) {
			/* maybe a registration that ended with its file */
			read_at = ep_ctl_calls;
			n = read_sets(w, MAX_WATCH);
			fresh = true;
			goto again;
		}
		CHECK(!(p[i].revents & POLLNVAL));
	}
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
	int fds[2] = { mem[0], mem[0] };

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
		fds[0] = mem[1];
		other_written = true;
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
		&mem[0], 1);
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
		/* at most the pool's room: 2054 bytes ran into the next
		 * packet's buffer, which made a frame depend on the order the
		 * pool handed packets out in (on earlier inputs) */
		uint32_t len = 14 + take8(f) * 8u;

		if (len > POOL_BUF)
			len = POOL_BUF;
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

/*
 * Expire the loop's timers now: every one (the port's drain timer), or
 * only the one-shot ones (@oneshot: the end of a message-budget window, a
 * queue-pairs change), which a frontend would see pass in real time. The
 * handlers are run here, in the order the set lists them, as the loop
 * would once the timers fired: setting them to 1 ns and waiting for the
 * kernel to say so cost a sleep each time, and two of them set alike
 * could be seen in one round or in two.
 */
static void expire_timers(bool oneshot)
{
	struct watch w[MAX_WATCH];
	unsigned n = read_sets(w, MAX_WATCH);

	fd_gen++;
	for (unsigned i = 0; i < n; i++) {
		struct uvn_handler *h = (struct uvn_handler *)(uintptr_t)w[i].data;
		struct itimerspec it;

		/* a timer, and still that handler's: one run before may have
		 * stopped it (h->fd is -1 then) */
		if (timerfd_gettime(w[i].fd, &it) || h->fd != w[i].fd ||
		    (oneshot && (it.it_interval.tv_sec || it.it_interval.tv_nsec)))
			continue;
		h->fn(h, EPOLLIN);
	}
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
	deliver();
	take_replies(f, NULL);
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
	case 6: /* guest-side only (no kick): the port has nothing to run */
		guest_rx(f, 2 * (q & 1), 1 + (x >> 3));
		return;
	case 7: port_rx(); break;
	case 8: port_tx(f, 1 + (x & 7)); break;
	case 9: fire_timers(); break;
	case 10:
		f->in--, f->left++; /* x is the first operand */
		poke(f);
		return;
	case 11:
		f->in--, f->left++;
		raw_message(f);
		break;
	case 12: reclaim(f); return;
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

/*
 * The port dropped the connection (a message it refused): what is left of
 * the input cannot reach the session, and ops on the guest's side alone
 * would only test our driver halves. What the port may still see is run
 * once: every kick fd the frontend holds kicked, the timers, a worker's
 * round, a burst out.
 */
static void after_hangup(struct fe *f)
{
	for (unsigned q = 0; q < NQ; q++)
		kick(&f->q[q]);
	for (unsigned i = 0; i < f->nstale; i++)
		kick(&(struct gq){ .kick = f->stale[i] });
	pump();
	fire_timers();
	worker_round();
	port_tx(f, 1);
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

/*
 * What the last input left in the port that a new connection does not
 * reset, set as the first input found it. The port keeps its clocks
 * across connections (a budget window, the last queue-pairs change, the
 * drain period's phase): started now, none of them runs out in the few
 * milliseconds an input takes; the input ends them when it says (op 9,
 * the budget's window past its 64th message). The rest is what a
 * session that ended in any state may leave behind.
 */
static void reset_port(void)
{
	struct vhost_port *v = (struct vhost_port *)port;
	struct itimerspec it;

	CHECK(!v->be);
	uvn_port_vhost_set_zerocopy(port, 0);
	/* as uvn_port_vhost_create() left them */
	v->pairs_on = v->pairs_req = 1;
	uvn_rx_filter_reset(&v->filter);
	atomic_store(&v->rarp_pending, false); /* a SEND_RARP's frame not taken */
	v->ctrl_self_kicks = 0;                /* a self-kick not read */
	v->msg_window = uvn_now_ns();
	v->msg_count = 0;
	v->pairs_at = v->msg_window;
	/* a whole period from now, and no expiry pending */
	CHECK(v->drain_h.fd >= 0 && timerfd_gettime(v->drain_h.fd, &it) == 0);
	it.it_value = it.it_interval;
	CHECK(timerfd_settime(v->drain_h.fd, 0, &it, NULL) == 0);
}

static void teardown(struct fe *f)
{
	struct vhost_port *v = (struct vhost_port *)port;

	close_fd(&f->sock);
	/* The port sees the hangup and drops the session (a paused
	 * connection once its budget window ends). */
	expire_timers(true);
	for (int i = 0; i < 8 && v->be; i++)
		pump();
	for (unsigned q = 0; q < NQ; q++) {
		if (f->q[q].drv)
			uvn_vq_drv_destroy(f->q[q].drv);
		close_fd(&f->q[q].kick);
		close_fd(&f->q[q].call);
	}
	for (unsigned i = 0; i < f->nstale; i++)
		close_fd(&f->stale[i]);
}

/* Every packet of @p returned. */
static void check_pool(const struct uvn_pkt_pool *p)
{
	const struct uvn_pkt_pool_stats *st = p ? uvn_pkt_pool_stats(p) : NULL;

	CHECK(!st || st->alloc == st->freed);
}

/* ------------------------------------------------------- one input */

/* How a session ended, to compare two runs of one input (FZ_REPEAT). */
struct outcome {
	struct uvn_port_stats port;  /* this input's share of the port's counters */
	struct uvn_vu_stats vu;
	unsigned nqueues, replies;
	uint64_t mem_hash;
};

static void outcome(const struct fe *f, const struct uvn_port_stats *st0, struct outcome *o)
{
	struct vhost_port *v = (struct vhost_port *)port;
	const uint64_t *a = (const uint64_t *)st0;
	uint64_t *b = (uint64_t *)&o->port;

	memset(o, 0, sizeof(*o));
	port->ops->stats(port, &o->port);
	for (size_t i = 0; i < sizeof(o->port) / sizeof(uint64_t); i++)
		b[i] -= a[i];
	if (v->be)
		o->vu = *uvn_vu_backend_stats(v->be);
	o->nqueues = port->ops->nqueues(port);
	o->replies = f->replies;
	o->mem_hash = fz_hash(mem_map[1], MEM_SIZE, fz_hash(mem_map[0], MEM_SIZE, FZ_HASH_SEED));
}

static void run_input(const uint8_t *data, size_t size, void *out)
{
	struct outcome *o = out;
	static struct fe f;
	struct uvn_port_stats st0;
	unsigned fds0 = fz_count_fds();

	reset_port();
	memset(mem_map[0], 0, MEM_SIZE);
	if (other_written)
		memset(mem_map[1], 0, MEM_SIZE);
	other_written = false;
	port->ops->stats(port, &st0);
	memset(&f, 0, sizeof(f));
	f.sock = -1;
	f.map = mem_map[0];
	for (unsigned q = 0; q < NQ; q++)
		f.q[q].kick = f.q[q].call = -1;
	if (connect_frontend(&f)) {
		setup(&f, data[0], data[1]);
		f.in = data + 2;
		f.left = size - 2;
		check();
		while (f.left && ((struct vhost_port *)port)->be)
			run_op(&f);
		if (f.left)
			after_hangup(&f);
	}
	if (o)
		outcome(&f, &st0, o);
	if (getenv("FZ_VERBOSE")) { /* to check what a seed reaches */
		struct uvn_port_stats st;

		port->ops->stats(port, &st);
		fprintf(stderr, "queues %u, port rx %llu tx %llu drops %llu errors %llu kicks %llu\n",
			port->ops->nqueues(port), (unsigned long long)st.rx_packets,
			(unsigned long long)st.tx_packets, (unsigned long long)st.drops,
			(unsigned long long)st.errors, (unsigned long long)st.kicks);
	}
	teardown(&f);
	/* The process as the input found it. */
	CHECK(port->ops->nqueues(port) == 0);
	CHECK(((struct vhost_port *)port)->be == NULL);
	CHECK(fz_count_fds() == fds0); /* every fd of the session closed */
	CHECK(uvn_mem_guard_slots_used() == base_guarded); /* every guest mapping gone */
	check_sets_as_before();
	check_pool(pool);
	for (unsigned i = 0; i < ((struct vhost_port *)port)->cfg.queues; i++)
		check_pool(uvn_dev_rx_pool(((struct vhost_port *)port)->dev, i));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct outcome a, b;

	if (size >= 2)
		fz_run_checked(run_input, data, size, &a, &b, sizeof(a));
	return 0;
}
