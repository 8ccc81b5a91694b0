/* SPDX-License-Identifier: MIT */
/*
 * uvnet-hostile: a vhost-user frontend that misbehaves on purpose, one
 * attack per run, for bench/isolation.sh. The session is brought up with
 * the frontend library (lib/vhost_user/frontend.h) where it sends what we
 * want, and with raw requests (uvn_vu_fe_request) where it would not; the
 * rings are laid out and written by hand, since writing them wrongly is
 * the point.
 */
#ifndef UVN_BENCH_HFE_H
#define UVN_BENCH_HFE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/virtio_ring.h>

#include "util/stats.h"
#include "vhost_user/frontend.h"

#define HFE_F(b) (1ull << (b))
/* virtio-net header with VERSION_1, and the frame every attack sends. */
#define HFE_HDR_LEN 12u
#define HFE_FRAME_LEN (HFE_HDR_LEN + 60u)
/* Receive buffers: a header and a 1518-byte frame (no MRG_RXBUF). */
#define HFE_RXBUF 2048u

/* One ring, as a driver sees it. */
struct hring {
	unsigned idx, num;
	bool packed, on;
	uint8_t *mem;                   /* the ring in the arena */
	struct vring_desc *desc;        /* split */
	struct vring_avail *avail;
	struct vring_used *used;
	struct vring_packed_desc *pdesc; /* packed */
	int kick, call;                 /* our eventfds (-1: NOFD) */
	uint16_t avail_idx;             /* split: next avail index */
};

struct hfe {
	const char *path;
	struct uvn_vu_fe *fe;
	uint64_t offered, features, proto;
	unsigned pairs;                 /* the backend's queue pairs */
	int memfd;
	uint8_t *mem;                   /* guest memory: gpa == uva == our address */
	size_t mem_len, mem_used;
	struct hring rx, tx, ctrl;
	uint8_t *frame;                 /* one TX frame (header + 60 bytes), read-only */
	/* What the attack did, for the summary line. */
	uint64_t ops, nacks, errs;
	const char *note;
};

struct hfe_opts {
	const char *path, *attack;
	double seconds;
	unsigned qsize;                 /* 0: the attack's default */
	bool verbose;
};

extern volatile sig_atomic_t hfe_stop;

/* Seconds since an arbitrary start. */
double hfe_now(void);
/* Keep going: no signal and not past @end. */
bool hfe_running(double end);
void hfe_sleep_ms(unsigned ms);
/* Log a line to stderr (always: the script keeps it as the attacker's log). */
void hfe_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Connect and negotiate: virtio @want (among the offer; VERSION_1 always),
 * protocol features @proto_want; map @mem_len bytes of memfd guest memory
 * and, unless @no_mem, share it as one region.
 */
int hfe_open(struct hfe *h, const char *path, uint64_t want, uint64_t proto_want, size_t mem_len,
	     bool no_mem);
void hfe_close(struct hfe *h);
/* hfe_open() with REPLY_ACK and guest memory shared, then hfe_pair() with
 * rings of @num and @num RX buffers posted: most attacks' set-up. */
int hfe_start(struct hfe *h, const char *path, uint64_t want, size_t mem_len, unsigned num);
/* Carve @size bytes (aligned) from the guest memory; NULL when out. */
void *hfe_alloc(struct hfe *h, size_t size, size_t align);
/* Describe @r (index @idx, @num entries) to the backend and start it (kick
 * fd, or NOFD without @fds); not enabled yet. */
int hfe_ring(struct hfe *h, struct hring *r, unsigned idx, unsigned num, bool fds);
/* Send the ring's description again (after a memory table change). */
int hfe_ring_describe(struct hfe *h, struct hring *r, unsigned base);
int hfe_enable(struct hfe *h, struct hring *r, bool on);
/* The usual bring-up: rx ring 0 and tx ring 1 of @num, enabled; @rx_bufs posted. */
int hfe_pair(struct hfe *h, unsigned num, unsigned rx_bufs, bool fds);
/* split: post one descriptor chain of one buffer; publish the index. */
void hfe_split_post(struct hring *r, uint16_t id, uint64_t addr, uint32_t len, bool write);
void hfe_kick(const struct hring *r);
/* A request by hand (raw payload): u64 or vring state. -EIO is a NACK. */
int hfe_raw_state(struct hfe *h, uint32_t request, unsigned idx, unsigned num);
int hfe_raw_fd(struct hfe *h, uint32_t request, unsigned idx, int fd);
/* Count a request's outcome: NACK or a dead connection. @return @r */
int hfe_count(struct hfe *h, int r);
/* Is the connection still up? (the backend may close it: a verdict). */
bool hfe_alive(struct hfe *h);

typedef int (*hfe_attack_fn)(struct hfe *h, const struct hfe_opts *o, double end);

int attack_packed_batch(struct hfe *h, const struct hfe_opts *o, double end);
int attack_stale_ring(struct hfe *h, const struct hfe_opts *o, double end);
int attack_blocking_fd(struct hfe *h, const struct hfe_opts *o, double end);
int attack_kick_fd_swap(struct hfe *h, const struct hfe_opts *o, double end);
int attack_full_tx(struct hfe *h, const struct hfe_opts *o, double end);
int attack_memfd_shrink(struct hfe *h, const struct hfe_opts *o, double end);
int attack_kick_storm(struct hfe *h, const struct hfe_opts *o, double end);
int attack_rx_hoard(struct hfe *h, const struct hfe_opts *o, double end);
int attack_sparse_mem(struct hfe *h, const struct hfe_opts *o, double end);
int attack_msg_flood(struct hfe *h, const struct hfe_opts *o, double end);
int attack_idle_spin(struct hfe *h, const struct hfe_opts *o, double end);
int attack_accept_flood(struct hfe *h, const struct hfe_opts *o, double end);
int attack_reconnect_flood(struct hfe *h, const struct hfe_opts *o, double end);

#endif
