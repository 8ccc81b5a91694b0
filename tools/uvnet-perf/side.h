/* SPDX-License-Identifier: MIT */
/*
 * The two ends of a test, each behind the same few calls: uvnetd (its
 * --json interval lines), DPDK testpmd as net_vhost or virtio-user (its
 * --stats-period blocks and final forward statistics), our driver worker
 * (shared memory), or an external backend (nothing but maybe a PID).
 *
 * Counters are cumulative and seen from the side itself: rx = frames it
 * received, tx = frames it sent.
 */
#ifndef UVN_PERF_SIDE_H
#define UVN_PERF_SIDE_H

#include "perf.h"
#include "proc.h"
#include "worker.h"

struct pt_counts {
	bool valid;
	uint64_t t_ns;              /* when: the side's own clock (only differences matter) */
	uint64_t tx_pkts, tx_bytes, rx_pkts, rx_bytes;
	bool have_bytes;            /* the byte counters are real (uvnetd's JSON has none) */
	uint64_t drops;             /* frames this side took but lost (as receiver) */
	uint64_t tx_full;           /* frames a generator could not place: ring full */
	bool have_notif;
	uint64_t kicks, calls;      /* device: kicks received, calls sent; driver: the reverse */
	uint64_t trans, timeouts;   /* rr */
	unsigned updates;           /* periodic sides: blocks/lines seen so far */
};

struct pt_side;

struct pt_side_ops {
	/* Start the process. @return 0, or -errno with s->why set */
	int (*start)(struct pt_side *s);
	/* Up: a device listens, a driver moves traffic. */
	bool (*ready)(struct pt_side *s);
	/* Counters newer than @after_ns (waits for the next periodic report). */
	int (*snap)(struct pt_side *s, uint64_t after_ns, struct pt_counts *out);
	/* Stop it and collect the final totals into s->final. */
	void (*stop)(struct pt_side *s);
};

struct pt_side {
	const struct pt_side_ops *ops;
	const char *what;           /* for messages */
	const struct pt_opts *o;
	const struct pt_cfg *c;
	bool is_device;
	char sock[2][108];          /* vhost-user sockets (B: pair) */
	struct pt_child child;
	pid_t pid;                  /* for /proc/PID/stat (0: unknown) */
	struct pt_counts last;      /* latest periodic report */
	struct pt_counts pending;   /* testpmd: the block being read */
	struct pt_counts final;
	bool in_block, in_final;
	bool stopped;
	char why[320];
	struct wk_shm *shm;         /* our worker */
	unsigned n;                 /* unique id for DPDK file prefixes */
};

/* Pick the ops for the configured device / driver. */
void pt_side_device(struct pt_side *s, const struct pt_opts *o, const struct pt_cfg *c);
void pt_side_driver(struct pt_side *s, const struct pt_opts *o, const struct pt_cfg *c);

/* The tools behind the sides (resolved once; uvnetd next to us by default). */
const char *pt_uvnetd_path(const struct pt_opts *o);
const char *pt_testpmd_path(const struct pt_opts *o);
/* uvnetd --help, to learn what this build of it supports. */
const char *pt_uvnetd_help(const struct pt_opts *o);
/* Largest --txonly-size the uvnetd at hand accepts (0 if unknown). */
unsigned pt_uvnetd_txonly_max(const struct pt_opts *o);
bool pt_uvnetd_has(const struct pt_opts *o, const char *option);
/* Does this uvnetd's --forward sink read every byte (else it drops frames unread)? */
bool pt_uvnetd_sink_reads(const struct pt_opts *o);

/* Is a socket file there yet? */
bool pt_sock_exists(const char *path);

extern const struct pt_side_ops pt_uvnetd_ops, pt_testpmd_ops, pt_worker_ops, pt_external_ops;

#endif
