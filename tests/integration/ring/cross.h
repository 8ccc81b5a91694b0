/* SPDX-License-Identifier: MIT */
/*
 * Cross-process ring test: the driver half and the device half of one
 * virtqueue run in two forked processes pinned to two CPUs and share one
 * memfd, mapped whole at one address in the driver and in scattered pieces
 * (with guard pages between them) in the device, so every buffer and table
 * address really goes through the device's translate callback.
 *
 * Both sides derive each chain's shape and contents from (seed, sequence
 * number), so each can check what the other did without a side channel:
 * the device knows the sequence number of the chain it pops (chains arrive
 * in the order they were added), the driver knows it from the token.
 */
#ifndef UVN_TEST_CROSS_H
#define UVN_TEST_CROSS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <uvnet/virtqueue.h>

#define CROSS_MAX_SEGS 16
#define CROSS_SLOT_CAP 4096u
/* Neither stride is a multiple of the page size, so slots and tables
 * straddle the device's mapping pieces at ever different offsets. */
#define CROSS_SLOT_STRIDE 4160u
#define CROSS_TABLE_STRIDE (16u * (CROSS_MAX_SEGS + 1))
#define CROSS_IOV_MAX 64
#define CROSS_PAGE 4096u

enum cross_mode { MODE_POLL, MODE_EVENT };
enum cross_order { ORDER_ANY, ORDER_IN, ORDER_IN_BATCH };
enum cross_fault { FAULT_NONE, FAULT_DROP_KICK, FAULT_DROP_CALL };

struct cross_cfg {
	bool packed, event_idx, indirect;
	enum cross_order order;
	enum cross_mode mode;
	enum cross_fault fault;
	unsigned num;          /* queue size */
	unsigned max_segs;     /* segments per chain, <= num */
	uint64_t ops;          /* chains to pass */
	uint64_t seed;
	unsigned wake_bound_ms;/* a sleeper checks for a lost wake-up after this long */
	unsigned hang_s;       /* supervisor: no progress at all for this long is a hang */
	unsigned cap_ms;       /* driver: stop adding after this long (0: never), see ops_final */
};

/* A run stopped by cap_ms still passes at least this many chains. */
#define CROSS_MIN_OPS 20000u

enum cross_side_id { DRV = 0, DEV = 1 };

/* What a side is doing, as the other side and the supervisor see it. */
enum cross_state { ST_RUNNING, ST_ARMING, ST_SLEEPING, ST_FROZEN, ST_DONE };

enum cross_fail_kind {
	FAIL_NONE,
	FAIL_CHECK,       /* wrong contents, length, order, count */
	FAIL_RING,        /* the ring returned an error */
	FAIL_LOST_WAKEUP, /* work visible to a sleeper whose peer sleeps, and no notification */
	FAIL_STALL,       /* both asleep with buffers in flight that nobody can see */
	FAIL_HANG,        /* supervisor: no progress */
	FAIL_CRASH,       /* a child died or exited without reporting */
	FAIL_SETUP,
};

/* Per side, in shared memory. */
struct cross_side {
	/* enum cross_state | (peer's `notified` seen before draining) << 8 */
	_Alignas(64) _Atomic uint64_t state;
	/* eventfd writes made to the peer, counted after each write */
	_Atomic uint64_t notified;
	_Atomic uint64_t progress;
	_Atomic uint64_t sleeps;    /* bumped at each attempt to sleep: a sleep's generation */
	uint64_t wake_timeouts, indirect_allocs, indirect_frees, restarts;
	/* filled at a clean exit */
	struct uvn_vq_stats stats;
	uint16_t avail_state;
};

/* Page 0 of the memfd. */
struct cross_ctl {
	struct cross_cfg cfg;
	uint64_t drv_base;     /* the driver's address of the memfd: device-visible addresses */
	size_t size;
	size_t ring_off, ring_size, table_off, pool_off;
	_Atomic int ready;      /* the driver initialised the ring */
	/* chains the run passes: cfg.ops, or fewer once the driver hit cap_ms */
	_Alignas(64) _Atomic uint64_t ops_final;
	_Atomic int fail_kind;
	_Atomic int fault_injected;
	char fail_msg[768];
	struct cross_side side[2];
};
_Static_assert(sizeof(struct cross_ctl) <= CROSS_PAGE, "control block fits page 0");

/* One process's view of the harness. */
struct cross_proc {
	struct cross_ctl *ctl;
	const struct cross_cfg *cfg;
	enum cross_side_id side;
	int my_fd, peer_fd;    /* eventfds: we sleep on mine, notify the peer on theirs */
	uint64_t notified;     /* local copy of side[side].notified */
	uint64_t fault_after;  /* notifications to send before injecting the fault */
	bool frozen;           /* fault injected: produce nothing more */
	uint64_t rng;
	/* The layout's work test for the stall check, and its argument. */
	bool (*visible)(void *arg);
	uint64_t (*outstanding)(void *arg);
	void *arg;
	uint8_t *ring;         /* this process's view of the ring, for dumps */
};

/* ---- workload (cross_shape.c) ---- */
struct cross_shape {
	unsigned nout, nin;
	uint32_t len[CROSS_MAX_SEGS];
	uint32_t out_len, in_len;
	uint32_t used_len;     /* what the device writes and reports */
};

uint64_t cross_mix(uint64_t a, uint64_t b);
uint64_t cross_rand(uint64_t *state);
/* Uniform-ish in [0, n). */
unsigned cross_below(uint64_t *state, unsigned n);
void cross_shape(const struct cross_cfg *cfg, uint64_t seq, struct cross_shape *s);
/* Pattern keys: what the driver writes, what the device writes, the canary. */
uint64_t cross_key(const struct cross_cfg *cfg, uint64_t seq, unsigned who);
void cross_fill(uint8_t *p, uint32_t len, uint64_t key, uint32_t from);
/* @return -1 if bytes [from, from+len) of the pattern match p, else the first bad offset. */
long cross_check(const uint8_t *p, uint32_t len, uint64_t key, uint32_t from);
/* The same over iovecs: @skip bytes in, @len bytes. */
void cross_iov_fill(const struct iovec *iov, unsigned n, uint32_t skip, uint32_t len,
		    uint64_t key);
long cross_iov_check(const struct iovec *iov, unsigned n, uint32_t skip, uint32_t len,
		     uint64_t key);

/* ---- shared memory (cross_shm.c) ---- */
int cross_shm_create(const struct cross_cfg *cfg, struct cross_ctl **ctl, int *fd);
/* Device: remap the memfd in scattered pieces, hide the driver's mapping. */
struct cross_devmap;
struct cross_devmap *cross_devmap_create(int memfd, struct cross_ctl *inherited);
void cross_devmap_destroy(struct cross_devmap *m);
void *cross_devmap_ptr(struct cross_devmap *m, size_t off);
struct cross_ctl *cross_devmap_ctl(struct cross_devmap *m);
void *cross_xlate(void *ctx, uint64_t addr, uint64_t *len);
/* Driver: indirect tables from the shared memfd. */
struct cross_tables;
struct cross_tables *cross_tables_create(struct cross_proc *p);
void cross_tables_destroy(struct cross_tables *t);
void *cross_table_alloc(void *ctx, unsigned n, uint64_t *addr);
void cross_table_free(void *ctx, void *table, unsigned n);
unsigned cross_tables_busy(const struct cross_tables *t);

/* The ring's shared indices and event fields as they are now, for reports. */
void cross_ring_dump(const struct cross_cfg *cfg, const uint8_t *ring, char *buf, size_t n);

/* ---- sleeping, waking, failing (cross_sync.c) ---- */
void cross_proc_init(struct cross_proc *p, struct cross_ctl *ctl, enum cross_side_id side,
		     int kick_fd, int call_fd);
void cross_set_state(struct cross_proc *p, enum cross_state st, uint64_t seen);
/* Record the first failure (later ones are dropped) and leave the process. */
_Noreturn void cross_fail(struct cross_proc *p, enum cross_fail_kind kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Leave quietly if the peer or the supervisor reported a failure. */
void cross_check_abort(struct cross_proc *p);
/* The ring said the peer must be notified. */
void cross_notify(struct cross_proc *p);
/* Wake the peer for the harness's own reasons (not a ring notification). */
void cross_wake(struct cross_proc *p);
/*
 * Sleep until the peer notifies us. @arm re-enables notifications and
 * returns false if work arrived meanwhile (then we do not sleep).
 * @return true if we slept
 */
bool cross_sleep(struct cross_proc *p, bool (*arm)(void *), void (*disarm)(void *), void *arg);
/* After a fault was injected: stay asleep, produce nothing, until killed. */
_Noreturn void cross_freeze(struct cross_proc *p);

/* ---- the two halves (cross_drv.c, cross_dev.c) ---- */
_Noreturn void cross_driver_main(struct cross_ctl *ctl, int memfd, int kick_fd, int call_fd);
_Noreturn void cross_device_main(struct cross_ctl *ctl, int memfd, int kick_fd, int call_fd);

/* ---- the supervisor (cross_run.c) ---- */
/* Feature bits of a configuration. */
uint64_t cross_features(const struct cross_cfg *cfg);
/* Kill and reap the children when the supervisor is told to stop. */
void cross_install_signals(void);
/* The first two CPUs we may run on. @return how many were found (0..2). */
int cross_pick_cpus(int cpus[2]);
/* Run one configuration and print its outcome. @return true if as expected. */
bool cross_run_one(const struct cross_cfg *cfg, int idx, const int cpus[2]);

#endif
