/* SPDX-License-Identifier: MIT */
/*
 * uvnet-ringbench: the virtqueue core alone, driver and device halves in two
 * processes pinned to two CPUs, passing 64-byte buffers in poll mode.
 */
#ifndef UVN_RINGBENCH_H
#define UVN_RINGBENCH_H

#include <stdbool.h>
#include <stdint.h>

#define RB_BUF_SIZE 64u

/* One configuration, one run. */
struct rb_cfg {
	bool packed, event_idx, in_order;
	unsigned qsize, batch;
	double seconds;   /* measured time (after a short warm-up) */
	int cpus[2];      /* driver, device; -1: not pinned */
};

struct rb_result {
	uint64_t bufs;    /* buffers reclaimed by the driver in the measured window */
	double secs;
	double mbufs_per_s;
	uint64_t kicks, calls; /* notifications the rings asked for (poll mode sends none) */
};

/* Run one configuration. @return 0, or -1 with a message on stderr. */
int rb_run(const struct rb_cfg *cfg, struct rb_result *out);

/* Cross-CPU cache-line round trip, measured in @windows windows. */
struct rb_rtt {
	double median_ns, min_ns, max_ns;
	unsigned windows;
};

int rb_rtt_measure(const int cpus[2], unsigned windows, double window_s, struct rb_rtt *out);

/* Shared by both: pin the calling process (no-op for cpu < 0). */
void rb_pin(int cpu);
/* Fork a child that dies with us; @return its pid in the parent, 0 in the child. */
int rb_fork(void);
double rb_now(void);

#endif
