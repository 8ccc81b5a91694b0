/* SPDX-License-Identifier: MIT */
/*
 * The worker's traffic loops. Poll mode spins on the bursts; event mode
 * sleeps on the call eventfds when a ring is full (send) or empty
 * (receive), with a short timeout so commands are still seen. Every loop
 * looks at its command word every CHECK_EVERY rounds, and ends with a
 * drain so the totals on both sides can be compared exactly.
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <string.h>
#include <time.h>

#include "frames.h"
#include "proc.h"
#include "worker.h"

#define CHECK_EVERY 64u
#define WAIT_MS 10
#define WAIT_NS (WAIT_MS * 1000000ull)
#define DRAIN_IDLE_NS 300000000ull   /* receive until nothing came for this long */
#define DRAIN_MAX_NS 3000000000ull
#define RR_TIMEOUT_NS 1000000000ull
#define PACE_BUCKET_BURSTS 4u        /* --rate: credit kept after a stall, in bursts, */
#define PACE_BUCKET_NS 2000000ull    /* or in time at the rate if that is more */
#define PACE_SLEEP_MAX_NS 1000000ull /* --rate: longest sleep before looking again */
/* A windowed pair gives up frames as lost (the switch dropped them) when A's
 * ring is empty and nothing reached B for this long. */
#define WIN_LOSS_NS 100000000ull

/* Give back what the backend used until nothing is in flight (or time runs out). */
static int drain_tx(struct wk *w, struct uvn_drv *d)
{
	uint64_t end = pt_now_ns() + DRAIN_MAX_NS;

	while (pt_now_ns() < end) {
		unsigned busy = 0;

		for (unsigned q = 0; q < uvn_drv_queue_pairs(d); q++) {
			struct uvn_drv_mem_info mi;
			int r = uvn_tx_reclaim(d, q);

			if (r < 0)
				return r;
			if (!uvn_drv_mem_info(d, q, &mi) && mi.tx_in_flight) {
				busy++;
				if (!w->c->poll)
					uvn_tx_wait(d, q, WAIT_MS);
			}
		}
		if (!busy)
			return 0;
		sched_yield();
	}
	return 0;
}

/* --rate: frames released at a time (a burst, or less: a paced pair's window). */
static unsigned pace_quantum(const struct wk *w)
{
	return w->pace_quantum ? w->pace_quantum : w->c->burst;
}

/*
 * --rate: how many frames the sender may put out now, released a quantum
 * at a time from a token bucket of a few bursts or 2 ms (a stall is not
 * made up by a flood). UINT_MAX: not paced.
 */
static unsigned pace_credit(struct wk *w)
{
	const struct pt_cfg *c = w->c;
	uint64_t now, due, bucket = (uint64_t)c->burst * PACE_BUCKET_BURSTS, t;

	if (!(c->rate_gbps > 0))
		return UINT_MAX;
	/* A sleeper on a busy machine wakes late: a few bursts of small
	 * frames are less than a scheduler's time slice. */
	t = (uint64_t)(PACE_BUCKET_NS * c->rate_gbps / 8.0 / c->size);
	if (t > bucket)
		bucket = t;
	now = pt_now_ns();
	if (!w->pace_t0)
		w->pace_t0 = now;
	/* Gb/s is bits per ns; a frame is c->size bytes. */
	due = (uint64_t)((double)(now - w->pace_t0) * c->rate_gbps / 8.0 / c->size);
	if (due > w->pace_sent + bucket)
		w->pace_sent = due - bucket;
	/* Whole quanta, as a sender with a full socket buffer would send. */
	return due >= w->pace_sent + pace_quantum(w) ? (unsigned)(due - w->pace_sent) : 0;
}

/* --rate: ns until the next quantum is due (at most PACE_SLEEP_MAX_NS). */
static uint64_t pace_due_ns(const struct wk *w)
{
	const struct pt_cfg *c = w->c;
	double at = (double)(w->pace_sent + pace_quantum(w)) * c->size * 8.0 / c->rate_gbps;
	double ns = at - (double)(pt_now_ns() - w->pace_t0);

	if (ns <= 0)
		return 0;
	return ns < PACE_SLEEP_MAX_NS ? (uint64_t)ns : PACE_SLEEP_MAX_NS;
}

/* Paced and ahead of time: sleep until the next quantum is due. */
static void pace_wait(struct wk *w)
{
	uint64_t ns = pace_due_ns(w);
	struct timespec ts = { 0, (long)ns };

	if (!w->c->poll && ns)
		nanosleep(&ts, NULL);
}

/*
 * One burst on each queue, at most @limit frames in all. @return frames
 * sent, or an error; *full: a ring filled up.
 */
static int send_round(struct wk *w, struct uvn_drv *d, struct wk_frames *f, unsigned limit,
		      int *full)
{
	const struct pt_cfg *c = w->c;
	struct uvn_pkt *pkts[256];
	unsigned credit = pace_credit(w);
	int total = 0;

	if (credit > limit)
		credit = limit;
	*full = -1;
	for (unsigned q = 0; q < uvn_drv_queue_pairs(d) && credit; q++) {
		unsigned want = c->burst < credit ? c->burst : credit;
		unsigned k = wkf_get(f, q, pkts, want, c->test == PT_STREAM, c->dirty,
				     (uint8_t)w->iter);
		int n;

		if (!k) {
			/* Every frame is in flight: take back the used ones. */
			n = uvn_tx_reclaim(d, q);
			if (n < 0)
				return n;
			if (!n)
				*full = (int)q;
			continue;
		}
		n = uvn_tx_burst(d, q, pkts, k);
		if (n < 0) {
			uvn_pkt_free_bulk(pkts, k);
			return n;
		}
		if ((unsigned)n < k) {
			uvn_pkt_free_bulk(pkts + n, k - (unsigned)n);
			*full = (int)q;
		}
		total += n;
		credit -= (unsigned)n;
	}
	w->pace_sent += (uint64_t)total;
	return total;
}

/* Frames received: a stream reader looks at each header, --dirty reads every byte. */
static void consume(struct wk *w, struct uvn_pkt **pkts, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		if (w->c->dirty)
			wk_read_all(w, pkts[i]);
		else if (w->c->test == PT_STREAM)
			w->sink += *(const volatile uint8_t *)pkts[i]->seg[0].iov_base;
	}
	uvn_pkt_free_bulk(pkts, n);
}

static int recv_round(struct wk *w, struct uvn_drv *d)
{
	struct uvn_pkt *pkts[256];
	int total = 0;

	for (unsigned q = 0; q < uvn_drv_queue_pairs(d); q++) {
		int n = uvn_rx_burst(d, q, pkts, w->c->burst);

		if (n < 0)
			return n;
		consume(w, pkts, (unsigned)n);
		total += n;
	}
	return total;
}

int wk_loop_tx(struct wk *w)
{
	for (;;) {
		int full, n;

		if (++w->iter % CHECK_EVERY == 0 && wk_service(w))
			return drain_tx(w, w->a);
		n = send_round(w, w->a, w->fa, UINT_MAX, &full);
		if (n < 0)
			return n;
		if (!n && full < 0 && w->c->rate_gbps > 0) {
			pace_wait(w);
			continue;
		}
		if (full >= 0 && !w->c->poll) {
			n = uvn_tx_wait(w->a, (unsigned)full, WAIT_MS);
			if (n < 0)
				return n;
		}
	}
}

/*
 * Receive until told to stop, then until the device has gone (uvnet-perf
 * stops the device first) or nothing came for a while: every frame the
 * device counted as delivered is then counted here too.
 */
static int rx_until_drained(struct wk *w, struct uvn_drv *d, struct uvn_drv *sender)
{
	uint64_t idle_since = 0;
	bool stopping = false;

	for (;;) {
		int n;

		if (!stopping && ++w->iter % CHECK_EVERY == 0 && wk_service(w))
			stopping = true;
		if (stopping && sender) {
			n = uvn_tx_reclaim(sender, 0);
			if (n < 0)
				return n;
		}
		n = recv_round(w, d);
		if (n < 0)
			return n;
		if (n) {
			idle_since = 0;
			continue;
		}
		if (stopping) {
			uint64_t now = pt_now_ns();

			if (!idle_since)
				idle_since = now;
			else if (now - idle_since > DRAIN_IDLE_NS)
				return 0;
		}
		if (!w->c->poll) {
			n = wk_sleep_rx(w, d, NULL, WAIT_NS);
			if (n < 0)
				return n;
		}
	}
}

int wk_loop_rx(struct wk *w)
{
	return rx_until_drained(w, w->a, NULL);
}

/*
 * --pair with --rate: a window, as TCP's receive window. The switch copies
 * what A sent into B's rx ring as it comes, and drops what does not fit
 * (a frame of 16 KB takes 11 mergeable buffers of 1536 B: a burst of 32
 * is more than a 256-entry ring). So A sends only what B's free buffers
 * hold, counting the frames on their way: sent by A and not yet received
 * by B (in A's ring, in the switch, or in B's ring unread). B's posted
 * buffers are read after B took every frame waiting, so the ones the
 * switch filled since are the frames on their way, counted once. A frame
 * the switch drops anyway (counted there) would keep the window shut: when
 * nothing moved for WIN_LOSS_NS and A's ring is empty, what B does not have
 * after one more look is lost (the switch gives A's borrowed frame back
 * only after it put it in B's ring; a frame it copied out of A's ring
 * would have to stay inside it for all that time to be missed). Unpaced, A does not wait (win_room() is UINT_MAX): a
 * sender faster than B loses what the switch has no room for, as a guest
 * sending UDP would.
 */

/* B's rx buffers one of A's frames takes. */
static unsigned win_bufs_per_frame(struct wk *w)
{
	unsigned len;

	if (uvn_drv_rx_mode(w->b) != UVN_RX_MERGEABLE)
		return 1; /* big: one chain; small: frames up to 1518 B (pt_cfg_check) */
	/* The adaptive size changes at each refill: the smallest buffer seen. */
	for (unsigned q = 0; q < uvn_drv_queue_pairs(w->b); q++) {
		len = uvn_drv_mrg_buf_len(w->b, q);
		if (len && (!w->win_buf_min || len < w->win_buf_min))
			w->win_buf_min = len;
	}
	len = w->win_buf_min ? w->win_buf_min : 1;
	return (unsigned)((w->c->size + sizeof(struct virtio_net_hdr_v1) + len - 1) / len);
}

/* Nothing of A's is left in its rings: the switch took every frame. */
static bool win_a_idle(struct wk *w)
{
	for (unsigned q = 0; q < uvn_drv_queue_pairs(w->a); q++) {
		struct uvn_drv_mem_info mi;

		if (uvn_tx_reclaim(w->a, q) < 0 || uvn_drv_mem_info(w->a, q, &mi) ||
		    mi.tx_in_flight)
			return false;
	}
	return true;
}

/* B received @n frames: no longer on their way (some may have been given up already). */
static void win_got(struct wk *w, unsigned n)
{
	w->win_out = w->win_out > n ? w->win_out - n : 0;
	if (n)
		w->win_moved_ns = pt_now_ns();
}

/* Receive on B: all that is waiting when windowed (B's posted buffers are then its free room). */
static int pair_recv(struct wk *w)
{
	int total = 0, n;

	do {
		n = recv_round(w, w->b);
		if (n < 0)
			return n;
		total += n;
	} while (n && w->windowed);
	return total;
}

/* Frames A may send now without overrunning B's ring (UINT_MAX: no window). */
static unsigned win_room(struct wk *w)
{
	unsigned posted = UINT_MAX, cap;
	uint64_t out;

	if (!w->windowed)
		return UINT_MAX;
	/* Any of B's queues may get them all: the emptiest one counts. */
	for (unsigned q = 0; q < uvn_drv_queue_pairs(w->b); q++) {
		struct uvn_drv_mem_info mi;

		if (!uvn_drv_mem_info(w->b, q, &mi) && mi.rx_posted < posted)
			posted = mi.rx_posted;
	}
	cap = posted == UINT_MAX ? 0 : posted / win_bufs_per_frame(w);
	if (w->win_out && pt_now_ns() - w->win_moved_ns > WIN_LOSS_NS && win_a_idle(w)) {
		/* The switch gives A's frame back after it put it in B's ring
		 * (or dropped it): what B does not have now is lost. */
		int n = pair_recv(w);

		if (n < 0)
			return 0; /* the next round's receive says so */
		win_got(w, (unsigned)n);
		if (!n)
			w->win_out = 0;
	}
	out = w->win_out;
	if (!cap && !out)
		return 1; /* B has not even one frame's room: let the switch decide */
	return cap > out ? (unsigned)(cap - out) : 0;
}

static void win_init(struct wk *w)
{
	unsigned room;

	w->windowed = w->c->rate_gbps > 0;
	if (!w->windowed)
		return;
	w->win_moved_ns = pt_now_ns();
	/* Release no more at a time than the window can ever take, or the
	 * pacing would wait for a whole burst the window then cuts. */
	room = win_room(w);
	if (room < w->c->burst)
		w->pace_quantum = room;
}

/* A sends to B through the switch; one thread drives both, like netperf and netserver on one CPU. */
int wk_loop_pair(struct wk *w)
{
	win_init(w);
	for (;;) {
		int full, sent, got;
		uint64_t ns;

		if (++w->iter % CHECK_EVERY == 0 && wk_service(w))
			break;
		got = pair_recv(w);
		if (got < 0)
			return got;
		/* What B got counts before the window is worked out from it. */
		if (w->windowed)
			win_got(w, (unsigned)got);
		sent = send_round(w, w->a, w->fa, win_room(w), &full);
		if (sent < 0)
			return sent;
		if (w->windowed && sent) {
			w->win_out += (unsigned)sent;
			w->win_moved_ns = pt_now_ns();
		}
		if (got || sent || w->c->poll)
			continue;
		/* B's frames arrive as the switch takes A's: one fd to sleep on,
		 * until B gets frames (A's ring full, the window shut) or, paced
		 * and ahead of time, until the next quantum is due. */
		if (full >= 0)
			ns = WAIT_NS;
		else if (!(w->c->rate_gbps > 0))
			continue; /* A took back used buffers: send again */
		else if (!pace_credit(w))
			ns = pace_due_ns(w);
		else
			ns = WAIT_NS; /* due, and the window is shut */
		if (ns && (got = wk_sleep_rx(w, w->b, NULL, ns)) < 0)
			return got;
	}
	/* The switch has nothing queued: A's used frames are all at B or dropped. */
	{
		int r = drain_tx(w, w->a);

		return r ? r : rx_until_drained(w, w->b, w->a);
	}
}

/* B answers every request with the same frame, addresses swapped. */
static int echo(struct wk *w)
{
	struct uvn_pkt *pkts[32];
	int n = uvn_rx_burst(w->b, 0, pkts, 32), k;

	if (n <= 0)
		return n;
	for (int i = 0; i < n; i++) {
		if (w->c->dirty)
			wk_read_all(w, pkts[i]);
		wkf_swap_macs(pkts[i]);
	}
	k = uvn_tx_burst(w->b, 0, pkts, (unsigned)n);
	if (k < 0)
		k = 0;
	uvn_pkt_free_bulk(pkts + k, (unsigned)(n - k));
	return n;
}

enum { RR_TIMEOUT, RR_ANSWERED, RR_STOP };

/* Wait for the response carrying @seq. @return RR_*, or an error */
static int await_response(struct wk *w, uint64_t seq, uint64_t t0)
{
	struct uvn_pkt *pkts[32];

	for (unsigned spins = 1;; spins++) {
		bool match = false;
		int n = uvn_rx_burst(w->a, 0, pkts, 32);

		if (n < 0)
			return n;
		for (int i = 0; i < n; i++) {
			uint64_t got = 0;

			if (w->c->dirty)
				wk_read_all(w, pkts[i]);
			uvn_pkt_read(pkts[i], WK_SEQ_OFF, &got, sizeof(got));
			match |= got == seq; /* anything else is a late answer to an old request */
		}
		uvn_pkt_free_bulk(pkts, (unsigned)(n > 0 ? n : 0));
		if (match)
			return RR_ANSWERED;
		if (w->b && (n = echo(w)) < 0)
			return n;
		if (!w->c->poll) {
			n = wk_sleep_rx(w, w->a, w->b, WAIT_NS);
			if (n < 0)
				return n;
		}
		if (!w->c->poll || spins % 1024 == 0) {
			if (wk_service(w))
				return RR_STOP;
			if (pt_now_ns() - t0 > RR_TIMEOUT_NS)
				return RR_TIMEOUT;
		}
	}
}

/* Keep the histogram to the measured window: uvnet-perf flips sh->measure. */
static void follow_measure(struct wk *w, bool *on)
{
	bool want = atomic_load_explicit(&w->sh->measure, memory_order_relaxed);

	if (want && !*on)
		pt_hist_reset(&w->sh->hist);
	*on = want;
}

int wk_loop_rr(struct wk *w)
{
	bool measuring = false;
	uint64_t seq = 0;

	while (!wk_service(w)) {
		struct uvn_pkt *p;
		uint64_t t0;
		int r;

		follow_measure(w, &measuring);
		if (wkf_get(w->fa, 0, &p, 1, true, w->c->dirty, (uint8_t)seq) != 1) {
			r = uvn_tx_reclaim(w->a, 0);
			if (r < 0)
				return r;
			continue;
		}
		seq++;
		memcpy((uint8_t *)p->seg[0].iov_base + WK_SEQ_OFF, &seq, sizeof(seq));
		t0 = pt_now_ns();
		r = uvn_tx_burst(w->a, 0, &p, 1);
		if (r != 1) {
			uvn_pkt_free(p);
			if (r < 0)
				return r;
			continue;
		}
		r = await_response(w, seq, t0);
		if (r < 0)
			return r;
		if (r == RR_STOP)
			break;
		if (r == RR_TIMEOUT) {
			w->timeouts++;
			continue;
		}
		if (measuring)
			pt_hist_add(&w->sh->hist, pt_now_ns() - t0);
		w->trans++;
	}
	return 0;
}
