/* SPDX-License-Identifier: MIT */
/* The worker process: open the drivers, run a loop, report; and uvnet-perf's view of it. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "frames.h"
#include "proc.h"
#include "worker.h"

static const uint8_t mac_a[6] = { 0x02, 0x75, 0x70, 0x00, 0x00, 0x01 };
static const uint8_t mac_b[6] = { 0x02, 0x75, 0x70, 0x00, 0x00, 0x02 };
/* Single-driver tests: whatever the device does with it (sink, loopback swaps MACs). */
static const uint8_t mac_dev[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x02 };
static const uint8_t mac_bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

struct wk_shm *wk_shm_create(const struct pt_cfg *c, const char *sock_a, const char *sock_b)
{
	struct wk_shm *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (sh == MAP_FAILED)
		return NULL;
	memset(sh, 0, sizeof(*sh));
	sh->cfg = *c;
	sh->cfg.connect = NULL; /* pointers mean nothing across the fork's copy-on-write anyway */
	snprintf(sh->sock[0], sizeof(sh->sock[0]), "%s", sock_a);
	if (sock_b)
		snprintf(sh->sock[1], sizeof(sh->sock[1]), "%s", sock_b);
	return sh;
}

void wk_shm_destroy(struct wk_shm *sh)
{
	if (sh)
		munmap(sh, sizeof(*sh));
}

int wk_snapshot(struct wk_shm *sh, struct wk_counts *out, double secs)
{
	unsigned req = atomic_fetch_add(&sh->snap_req, 1) + 1;
	uint64_t end = pt_now_ns() + (uint64_t)(secs * 1e9);

	while (atomic_load_explicit(&sh->snap_done, memory_order_acquire) != req) {
		int st = atomic_load(&sh->state);

		if (st == WK_DONE || st == WK_FAILED || pt_now_ns() > end)
			return -ETIMEDOUT;
		pt_pump(1);
	}
	*out = sh->snap;
	return 0;
}

bool wk_service(struct wk *w)
{
	struct wk_shm *sh = w->sh;
	unsigned req = atomic_load_explicit(&sh->snap_req, memory_order_acquire);

	if (req != atomic_load_explicit(&sh->snap_done, memory_order_relaxed)) {
		wk_count(w, &sh->snap);
		/* The counters must be visible before the echo that says they are there. */
		atomic_store_explicit(&sh->snap_done, req, memory_order_release);
	}
	return atomic_load_explicit(&sh->cmd, memory_order_relaxed) == WK_STOP;
}

static void add_tx(struct uvn_drv *d, struct wk_counts *o, bool traffic)
{
	for (unsigned q = 0; d && q < uvn_drv_queue_pairs(d); q++) {
		struct uvn_drv_txq_stats s;

		if (uvn_drv_txq_stats(d, q, &s))
			continue;
		if (traffic) {
			o->tx_pkts += s.packets;
			o->tx_bytes += s.bytes;
			o->tx_drops += s.drops;
		}
		o->kicks += s.kicks;
		o->calls += s.interrupts;
	}
}

static void add_rx(struct uvn_drv *d, struct wk_counts *o, bool traffic)
{
	for (unsigned q = 0; d && q < uvn_drv_queue_pairs(d); q++) {
		struct uvn_drv_rxq_stats s;

		if (uvn_drv_rxq_stats(d, q, &s))
			continue;
		if (traffic) {
			o->rx_pkts += s.packets;
			o->rx_bytes += s.bytes;
			o->rx_drops += s.drops;
		}
		o->kicks += s.kicks;
		o->calls += s.interrupts;
	}
}

void wk_count(struct wk *w, struct wk_counts *o)
{
	/* A pair's traffic is A's transmit and B's receive (for rr: A's both
	 * ways); every ring's notifications count. */
	bool b_rx = w->b && w->c->test != PT_RR;

	memset(o, 0, sizeof(*o));
	o->t_ns = pt_now_ns();
	add_tx(w->a, o, true);
	add_rx(w->a, o, !b_rx);
	add_tx(w->b, o, false);
	add_rx(w->b, o, b_rx);
	o->calls += w->calls;
	o->trans = w->trans;
	o->timeouts = w->timeouts;
}

/* Arm the receive rings of @d; false if one has frames already. */
static bool arm_all(struct uvn_drv *d, struct pollfd *p, unsigned *n)
{
	for (unsigned q = 0; q < uvn_drv_queue_pairs(d); q++) {
		int fd = uvn_rx_fd(d, q);

		if (fd < 0)
			continue;
		if (!uvn_rx_arm(d, q))
			return false;
		p[(*n)++] = (struct pollfd){ .fd = fd, .events = POLLIN };
	}
	p[(*n)++] = (struct pollfd){ .fd = uvn_drv_sock_fd(d), .events = POLLIN };
	return true;
}

static void disarm_all(struct uvn_drv *d)
{
	for (unsigned q = 0; d && q < uvn_drv_queue_pairs(d); q++)
		uvn_rx_disarm(d, q);
}

int wk_sleep_rx(struct wk *w, struct uvn_drv *d, struct uvn_drv *d2, uint64_t ns)
{
	struct pollfd p[2 * UVN_DRV_MAX_QUEUE_PAIRS + 2];
	/* ppoll: a paced sender's next burst may be due in less than a millisecond. */
	struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
	unsigned n = 0;
	int r = 0;

	if (arm_all(d, p, &n) && (!d2 || arm_all(d2, p, &n)))
		r = ppoll(p, n, &ts, NULL);
	disarm_all(d);
	disarm_all(d2);
	for (unsigned i = 0; r > 0 && i < n; i++) {
		uint64_t v;

		if (!(p[i].revents & POLLIN))
			continue;
		if (p[i].fd == uvn_drv_sock_fd(d) || (d2 && p[i].fd == uvn_drv_sock_fd(d2)))
			continue; /* the next burst looks at the connection */
		if (read(p[i].fd, &v, sizeof(v)) == sizeof(v))
			w->calls++;
	}
	return r < 0 && errno != EINTR ? -errno : 0;
}

void wk_read_all(struct wk *w, const struct uvn_pkt *p)
{
	uint64_t s = 0;

	/* Eight bytes at a time: a byte loop runs at about a byte a cycle and
	 * would cap the rows that read the payload. Every byte is still loaded. */
	for (unsigned i = 0; i < p->nseg; i++) {
		const uint8_t *b = p->seg[i].iov_base;
		size_t n = p->seg[i].iov_len, k = 0;
		uint64_t v;

		for (; k + 8 <= n; k += 8) {
			memcpy(&v, b + k, 8);
			s += v;
		}
		for (; k < n; k++)
			s += b[k];
	}
	w->sink += s;
}

static void drv_cfg(const struct wk_shm *sh, unsigned which, struct uvn_drv_cfg *dc)
{
	const struct pt_cfg *c = &sh->cfg;

	uvn_drv_cfg_init(dc);
	dc->path = sh->sock[which];
	dc->queue_pairs = c->queues;
	dc->queue_size = c->queue_size;
	dc->ring = c->ring;
	dc->rx_mode = c->rx_mode;
	dc->poll = c->poll;
	dc->deferred_alloc = c->deferred_alloc;
	dc->mrg_sizing = c->merge;
	dc->desc_cache = c->desc_cache;
	dc->desc_cache_thr = c->desc_cache_thr;
	/* --listen: the backend connects when it is ready (OVS retries every second) */
	dc->server = c->listen;
	if (c->listen)
		dc->timeout_ms = 60000;
	/* TSO both ways when the backend offers it: frames above the MTU go
	 * as GSO frames, the way a Linux guest sends them. Receiving GSO
	 * frames needs big or mergeable buffers. */
	dc->features_extra |= 1ull << VIRTIO_NET_F_HOST_TSO4 | 1ull << VIRTIO_NET_F_HOST_TSO6;
	if (c->rx_mode != UVN_RX_SMALL)
		dc->features_extra |= 1ull << VIRTIO_NET_F_GUEST_TSO4 | 1ull << VIRTIO_NET_F_GUEST_TSO6;
	if (wkf_app_mem(c->size) > dc->app_mem_bytes)
		dc->app_mem_bytes = wkf_app_mem(c->size);
	memcpy(dc->mac, which ? mac_b : mac_a, 6);
	dc->mac_set = true;
}

static int open_one(struct wk_shm *sh, unsigned which, struct uvn_drv **out)
{
	struct uvn_drv_cfg dc;
	int r;

	drv_cfg(sh, which, &dc);
	r = uvn_drv_open(&dc, out);
	if (r)
		snprintf(sh->msg, sizeof(sh->msg), "driver %s: cannot open %s: %s",
			 which ? "B" : "A", sh->sock[which], strerror(-r));
	return r;
}

/* B says hello so the switch learns where B is (A's frames then go only there). */
static void hello(struct wk *w)
{
	struct uvn_pkt *p;

	if (wkf_get(w->fb, 0, &p, 1, true, false, 0) == 1 && uvn_tx_burst(w->b, 0, &p, 1) != 1)
		uvn_pkt_free(p);
}

/* What frames above the MTU travel as: the sender's choice, or for a
 * receiver what it negotiated (a device segments TSO frames for a driver
 * without GUEST_TSO4). */
static const char *offload(const struct wk *w, const struct wk_frames *fa)
{
	const struct pt_cfg *c = w->c;
	uint64_t f = uvn_drv_features(w->a);

	if (c->test == PT_RR || c->pair || c->dir == PT_TX)
		return wkf_offload(fa);
	/* uvnetd's txonly, like our sender, makes TSO frames above 1518 B. */
	if (c->size <= PT_PLAIN_MAX)
		return "none";
	return f & (1ull << VIRTIO_NET_F_GUEST_TSO4) ? "tso" : "segmented";
}

static int setup(struct wk *w, struct wk_frames *fa, struct wk_frames *fb)
{
	struct wk_shm *sh = w->sh;
	int r = open_one(sh, 0, &w->a);

	if (!r && w->c->pair)
		r = open_one(sh, 1, &w->b);
	if (r)
		return r;
	r = wkf_init(fa, w->a, w->c, w->c->size, w->c->pair ? mac_b : mac_dev, mac_a);
	w->fa = fa;
	if (!r && w->b) {
		r = wkf_init(fb, w->b, w->c, 64, mac_bcast, mac_b);
		w->fb = fb;
		if (!r)
			hello(w);
	}
	if (r) {
		snprintf(sh->msg, sizeof(sh->msg), "cannot set up %u-byte frames: %s", w->c->size,
			 strerror(-r));
		return r;
	}
	sh->features = uvn_drv_features(w->a);
	sh->rx_mode = (int)uvn_drv_rx_mode(w->b ? w->b : w->a);
	sh->mrg_buf_len = uvn_drv_mrg_buf_len(w->b ? w->b : w->a, 0);
	snprintf(sh->offload, sizeof(sh->offload), "%s", offload(w, fa));
	return 0;
}

static int run_loop(struct wk *w)
{
	const struct pt_cfg *c = w->c;

	if (c->test == PT_RR)
		return wk_loop_rr(w);
	if (c->pair)
		return wk_loop_pair(w);
	return c->dir == PT_TX ? wk_loop_tx(w) : wk_loop_rx(w);
}

int wk_main(void *arg)
{
	struct wk_shm *sh = arg;
	struct wk_frames fa, fb;
	struct wk w = { .sh = sh, .c = &sh->cfg };
	int r;

	memset(&fa, 0, sizeof(fa));
	memset(&fb, 0, sizeof(fb));
	r = setup(&w, &fa, &fb);
	if (!r) {
		atomic_store(&sh->state, WK_READY);
		r = run_loop(&w);
		wk_count(&w, &sh->final);
		if (r && r != -ENOTCONN && !sh->msg[0])
			snprintf(sh->msg, sizeof(sh->msg), "driver: %s%s", strerror(-r),
				 r == -EPROTO ? " (the backend broke a ring)" : "");
	}
	wkf_fini(&fa);
	wkf_fini(&fb);
	if (w.b)
		uvn_drv_close(w.b);
	if (w.a)
		uvn_drv_close(w.a);
	sh->err = r;
	/* Counters and message before the state that says they are final. */
	atomic_store_explicit(&sh->state, r && r != -ENOTCONN ? WK_FAILED : WK_DONE,
			      memory_order_release);
	return r && r != -ENOTCONN ? 1 : 0;
}
