/* SPDX-License-Identifier: MIT */
/*
 * The driver side of a test when the driver is ours: a process forked by
 * uvnet-perf, pinned to the driver CPU, running one traffic loop (stream
 * or pps send / receive, rr, or a pair of drivers through uvnetd's switch)
 * until told to stop. It talks to uvnet-perf through one shared-memory
 * block: commands and snapshot requests in, counters, latency histogram
 * and errors out. The loops only read a command word every few dozen
 * bursts, so watching them costs nothing measurable.
 *
 * The loops are independent of uvnet-perf's orchestration: wk_main() needs
 * only the block. uvnet-perf is their only user (bench/drvbench.c has loops
 * of its own).
 */
#ifndef UVN_PERF_WORKER_H
#define UVN_PERF_WORKER_H

#include <stdatomic.h>
#include <stdint.h>

#include "hist.h"
#include "perf.h"

enum wk_cmd { WK_RUN, WK_STOP };
enum wk_state { WK_STARTING, WK_READY, WK_DONE, WK_FAILED };

/* Cumulative counters of the worker's drivers at one moment. */
struct wk_counts {
	uint64_t t_ns;
	uint64_t tx_pkts, tx_bytes, tx_drops;     /* the sending driver (A) */
	uint64_t rx_pkts, rx_bytes, rx_drops;     /* the receiving driver (A, or B in a pair) */
	uint64_t kicks;                           /* kicks we sent, all rings */
	uint64_t calls;                           /* call-eventfd wake-ups we took */
	uint64_t trans, timeouts;                 /* rr: transactions done, requests given up */
};

struct wk_shm {
	struct pt_cfg cfg;
	char sock[2][108];              /* A's and (pair) B's vhost-user socket */
	_Atomic int cmd;                /* enum wk_cmd, from uvnet-perf */
	_Atomic int state;              /* enum wk_state, from the worker */
	_Atomic unsigned snap_req;      /* uvnet-perf bumps it ... */
	_Atomic unsigned snap_done;     /* ... the worker copies its counters and echoes it */
	_Atomic int measure;            /* rr: record latencies while set */
	struct wk_counts snap;          /* valid once snap_done == snap_req */
	struct wk_counts final;         /* valid in WK_DONE: after the drain */
	int err;                        /* WK_FAILED: -errno */
	char msg[256];
	uint64_t features;              /* negotiated (A) */
	int rx_mode;                    /* enum uvn_rx_mode in use (receiver) */
	unsigned mrg_buf_len;
	char offload[12];               /* "none", "tso", "jumbo", "segmented" */
	struct pt_hist hist;            /* rr latency, ns */
};

/* A zeroed block in memory shared with children forked after it. NULL on failure. */
struct wk_shm *wk_shm_create(const struct pt_cfg *c, const char *sock_a, const char *sock_b);
void wk_shm_destroy(struct wk_shm *sh);

/* The worker process's main (pt_fork()). @return its exit status */
int wk_main(void *shm);

/* uvnet-perf's side: fresh counters (waits up to @secs). @return 0 or -ETIMEDOUT */
int wk_snapshot(struct wk_shm *sh, struct wk_counts *out, double secs);

/* Worker-internal: the loops (worker_loops.c) and their support. */
struct wk_frames;
struct wk {
	struct wk_shm *sh;
	const struct pt_cfg *c;
	struct uvn_drv *a, *b;          /* b: the receiving driver of a pair */
	struct wk_frames *fa, *fb;      /* frames A sends (and B's hello) */
	uint64_t trans, timeouts, calls;
	uint64_t sink;                  /* what --dirty reads, kept so it is not optimized away */
	unsigned iter;
	uint64_t pace_t0, pace_sent;    /* --rate: start of pacing, frames sent since */
	unsigned pace_quantum;          /* --rate: frames released at a time (0: the burst) */
	/* A paced pair's window (worker_loops.c): A sends only what B's free rx
	 * buffers hold, counting what is on its way. */
	bool windowed;
	uint64_t win_out;               /* A's frames on their way: sent, not yet at B */
	unsigned win_buf_min;           /* smallest mergeable buffer B posted (bytes) */
	uint64_t win_moved_ns;          /* when a frame last went out or came in */
};

/* Answer a snapshot request if there is one. @return true once told to stop */
bool wk_service(struct wk *w);
/* Fill @out from the drivers' statistics. */
void wk_count(struct wk *w, struct wk_counts *out);
/* Sleep until a receive ring of @d (or @d2) may have frames, or @ns pass. */
int wk_sleep_rx(struct wk *w, struct uvn_drv *d, struct uvn_drv *d2, uint64_t ns);

int wk_loop_tx(struct wk *w);
int wk_loop_rx(struct wk *w);
int wk_loop_rr(struct wk *w);
int wk_loop_pair(struct wk *w);

/* Read every byte of a received frame (--dirty) into w->sink. */
void wk_read_all(struct wk *w, const struct uvn_pkt *p);

#endif
