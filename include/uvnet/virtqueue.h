/* SPDX-License-Identifier: MIT */
/**
 * @file virtqueue.h
 * @brief Virtqueues: the split and packed ring layouts, driver and device halves.
 *
 * VIRTIO 1.x only (VERSION_1, little-endian wire format). Wire layouts and
 * feature bits come from the Linux UAPI headers <linux/virtio_ring.h> and
 * <linux/virtio_config.h>.
 *
 * The driver half (struct uvn_vq_drv) makes buffers available and reclaims
 * them; the device half (struct uvn_vq_dev) consumes them. The two halves
 * share nothing but the ring memory, so they can run in different processes
 * that map it at different addresses. Neither half sends notifications: each
 * tells the caller whether one is needed, and the transport (an eventfd, a
 * vhost-user message, a test harness) delivers it.
 *
 * A queue is used by one thread at a time. The device half distrusts the
 * driver completely: every index, flag, address and length read from the
 * ring is validated, each descriptor field is read from shared memory once,
 * and a violation marks the queue broken (every later call fails with the
 * same error) and is counted in the queue's statistics.
 */
#ifndef UVNET_VIRTQUEUE_H
#define UVNET_VIRTQUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Exported from libuvnet.so, which hides everything else (lib/uvnet.map). */
#pragma GCC visibility push(default)

/** Largest queue size of either layout (the spec's limit for split rings). */
#define UVN_VQ_MAX_SIZE 32768u

/**
 * Errors. The functions declared here return 0 or a count on success and
 * the negative value of one of these (-UVN_VQ_E_...) on failure, never a
 * -errno value; the functions of the other public headers (driver.h,
 * device.h, pkt.h) return -errno values only, having mapped any ring error
 * they met (a broken ring to -EPROTO, UVN_VQ_E_NOMEM to -ENOMEM, ...). The
 * two ranges are disjoint: errno values lie in 1..4095, these above
 * UVN_VQ_ERR_BASE, so an int that may hold either (a caller's own error
 * path) still says which it is.
 *
 * Errors raised by the device half on driver input, and by the driver half
 * on device input, mark the queue broken (every later call fails with the
 * same error) and are counted in uvn_vq_stats::err. The caller's errors
 * (INVAL, NOSPC, NOMEM, IOV_FULL) are neither.
 */
#define UVN_VQ_ERR_BASE 4096

/**
 * The longest chain the device half takes, in iovecs (buffers, split where
 * guest memory regions split them), unless the caller's array is longer:
 * QEMU's limit too (VIRTQUEUE_MAX_SIZE). A longer chain is a peer violation
 * (UVN_VQ_E_CHAIN_LONG), so that one pop walks at most this many buffers
 * whatever the guest writes.
 */
#define UVN_VQ_MAX_CHAIN_IOV 1024u

enum uvn_vq_err {
	UVN_VQ_OK = 0,
	/** head index (packed: buffer id) >= queue size */
	UVN_VQ_E_HEAD_RANGE = UVN_VQ_ERR_BASE + 1,
	UVN_VQ_E_NEXT_RANGE,       /**< next index >= queue size (or table size) */
	UVN_VQ_E_LOOP,             /**< chain longer than the ring or table: a loop */
	UVN_VQ_E_INDIRECT_LEN,     /**< indirect table length 0, not a multiple of 16 or too long */
	UVN_VQ_E_INDIRECT_MAP,     /**< indirect table not wholly inside mapped memory */
	UVN_VQ_E_INDIRECT_NESTED,  /**< INDIRECT descriptor inside an indirect table */
	UVN_VQ_E_INDIRECT_NEXT,    /**< INDIRECT together with NEXT */
	UVN_VQ_E_WRITE_ORDER,      /**< device-readable descriptor after a writable one */
	UVN_VQ_E_UNMAPPED,         /**< buffer not wholly inside mapped memory */
	UVN_VQ_E_LEN_OVERFLOW,     /**< chain length overflows 32 bits */
	UVN_VQ_E_ZERO_LEN,         /**< zero-length descriptor */
	UVN_VQ_E_AVAIL_IDX,        /**< avail index moved by more than the queue size */
	UVN_VQ_E_IOV_FULL,         /**< device half: a legal chain needs more iovecs than the
	                                caller's array holds (not counted, queue not broken, the
	                                chain not taken: see uvn_vq_dev_pop()) */
	UVN_VQ_E_INDIRECT_FEATURE, /**< INDIRECT used but VIRTIO_RING_F_INDIRECT_DESC not negotiated */
	UVN_VQ_E_USED_ID,          /**< driver half: device returned an id that is not in flight */
	UVN_VQ_E_USED_LEN,         /**< driver half: used length larger than the writable buffer */
	UVN_VQ_E_USED_IDX,         /**< driver half: used index moved past the buffers in flight */
	UVN_VQ_E_OVERRUN,          /**< device half: more ring slots available than the ring has
	                                (the driver reused slots not yet returned) */
	UVN_VQ_E_BASE,             /**< device half: a packed ring is not at the base the frontend
	                                gave (the backend restarted and the frontend lost it) */
	UVN_VQ_E_CHAIN_LONG,       /**< device half: a chain of more than UVN_VQ_MAX_CHAIN_IOV
	                                buffers (and more than the caller's array) */
	UVN_VQ_E_INVAL,            /**< bad argument from the caller (not counted, queue not broken) */
	UVN_VQ_E_NOSPC,            /**< not enough free descriptors (not counted, queue not broken) */
	UVN_VQ_E_NOMEM,            /**< out of memory (not counted, queue not broken) */
	UVN_VQ_E__END,
	/** Slots these take in uvn_vq_stats::err, slot 0 (UVN_VQ_OK) included. */
	UVN_VQ_E__COUNT = UVN_VQ_E__END - UVN_VQ_ERR_BASE
};

/**
 * The uvn_vq_stats::err slot of error @p e (UVN_VQ_E_..., positive): the
 * slots keep their numbers (HEAD_RANGE is 1, ..., BASE is 19, CHAIN_LONG
 * 20) whatever the base; a new peer violation takes the next slot, before
 * the caller's errors (INVAL, NOSPC, NOMEM), whose slots stay 0.
 */
#define UVN_VQ_ERR_SLOT(e) ((e) - UVN_VQ_ERR_BASE)

/**
 * Slots of uvn_vq_stats::err: fixed, so that adding an error kind does not
 * change the struct (lib/util/version.c checks UVN_VQ_E__COUNT fits).
 */
#define UVN_VQ_ERR_SLOTS 32

/** @return a short static description of @p err, a UVN_VQ_E_ value of either sign. */
const char *uvn_vq_strerror(int err);

/**
 * Per-queue counters. Only the thread using the queue writes them. A
 * device half stores each with a relaxed atomic store, so another thread
 * may read them while it runs with relaxed atomic loads
 * (`__atomic_load_n(&st->bufs, __ATOMIC_RELAXED)`), never plain ones. A
 * driver half's are plain: read them on the thread that uses the queue.
 */
struct uvn_vq_stats {
	uint64_t bufs;              /**< chains made available (driver) or popped (device) */
	uint64_t used;              /**< chains reclaimed (driver) or pushed as used (device) */
	uint64_t indirect;          /**< chains that went through an indirect table */
	uint64_t notify;            /**< notifications the peer asked for (kick or call needed) */
	uint64_t notify_suppressed; /**< notifications the peer's event suppression spared */
	uint64_t err[UVN_VQ_ERR_SLOTS]; /**< peer violations by kind:
	                                     err[UVN_VQ_ERR_SLOT(UVN_VQ_E_...)]; slot 0, the
	                                     slots of the caller's errors and those past
	                                     UVN_VQ_E__COUNT stay 0 */
};

/** One row of a statistics description table: a counter's name and offset. */
struct uvn_stat_desc {
	const char *name;
	size_t offset;
};

/** {name, offsetof} rows for struct uvn_vq_stats, terminated by a NULL name. */
extern const struct uvn_stat_desc uvn_vq_stats_desc[];

/** Where the three parts of a ring live, as offsets from the ring base. */
struct uvn_vq_layout {
	size_t desc;   /**< descriptor table (split) or ring (packed) */
	size_t driver; /**< avail ring (split) or driver event suppression (packed) */
	size_t device; /**< used ring (split) or device event suppression (packed) */
	size_t size;   /**< total bytes, including used_event/avail_event */
};

/**
 * Compute the layout of a ring of @p num entries in one contiguous block.
 * @param packed  true for the packed layout
 * @param num     queue size: a power of two for split, 1..32768 for packed
 * @param out     receives the offsets
 * @return 0, or -UVN_VQ_E_INVAL for a bad size
 */
int uvn_vq_layout(bool packed, unsigned num, struct uvn_vq_layout *out);

/* ------------------------------------------------------------------------ */
/* Driver half                                                              */
/* ------------------------------------------------------------------------ */

/** A buffer segment as the device addresses it. */
struct uvn_sg {
	uint64_t addr; /**< device-visible address */
	uint32_t len;  /**< bytes */
};

/** A reclaimed buffer. */
struct uvn_vq_done {
	void *token;  /**< what the caller passed to uvn_vq_drv_add() */
	uint32_t len; /**< bytes the device wrote (with IN_ORDER batches: the whole writable length) */
};

/**
 * Allocate an indirect table of @p n descriptors (16 bytes each) in memory
 * the device can read. @return the table's address in this process and its
 * device-visible address in @p addr, or NULL (the ring then falls back to
 * direct descriptors).
 */
typedef void *(*uvn_indirect_alloc_fn)(void *ctx, unsigned n, uint64_t *addr);
/** Release a table from uvn_indirect_alloc_fn once the device has used it. */
typedef void (*uvn_indirect_free_fn)(void *ctx, void *table, unsigned n);

/** How to set up a driver half. */
struct uvn_vq_drv_cfg {
	unsigned num;          /**< queue size */
	uint64_t features;     /**< negotiated feature bits (1ULL << VIRTIO_F_...) */
	void *ring;            /**< uvn_vq_layout().size bytes shared with the device, 16-byte aligned */
	uvn_indirect_alloc_fn indirect_alloc; /**< NULL: never use indirect tables */
	uvn_indirect_free_fn indirect_free;
	void *indirect_ctx;
	uint64_t reserved[6]; /**< zero (room for later fields: the size stays 96 bytes) */
};

struct uvn_vq_drv;

/** Flags for uvn_vq_drv_add(). */
#define UVN_VQ_ADD_NO_INDIRECT 1u /**< use direct descriptors even if indirect is possible */

/**
 * Create a driver half; zeroes the ring memory.
 * @return 0 and the queue in @p out, -UVN_VQ_E_INVAL for a bad
 *         configuration, or -UVN_VQ_E_NOMEM
 */
int uvn_vq_drv_create(const struct uvn_vq_drv_cfg *cfg, struct uvn_vq_drv **out);

/** Destroy a driver half. Buffers still in flight are forgotten: detach them first. */
void uvn_vq_drv_destroy(struct uvn_vq_drv *vq);

/**
 * Add a chain: @p nout device-readable segments followed by @p nin writable
 * ones. The chain goes through an indirect table when INDIRECT_DESC was
 * negotiated, an allocator was given, nout + nin > 1 and @p flags allow it.
 * The chain is not visible to the device until uvn_vq_drv_kick_prepare().
 * @param token  non-NULL, returned when the buffer is reclaimed
 * @return 0, -UVN_VQ_E_NOSPC, the broken queue's error, or -UVN_VQ_E_INVAL
 *         for no token, no segments, more segments than the queue size, a
 *         zero-length segment or more than 2^32 - 1 bytes in all
 */
int uvn_vq_drv_add(struct uvn_vq_drv *vq, const struct uvn_sg *sg, unsigned nout, unsigned nin,
		   void *token, unsigned flags);

/**
 * uvn_vq_drv_add() of one segment: device-readable, or writable if
 * @p writable. Same results, without the per-segment loops.
 */
int uvn_vq_drv_add_one(struct uvn_vq_drv *vq, uint64_t addr, uint32_t len, bool writable,
		       void *token);

/**
 * Publish every chain added since the last call (one release store of the
 * avail index, or of the packed head flags) and decide whether the device
 * must be notified (EVENT_IDX through avail_event, or the NO_NOTIFY flag).
 * @return true if the caller must kick the device
 */
bool uvn_vq_drv_kick_prepare(struct uvn_vq_drv *vq);

/**
 * Publish every chain added since the last call, like
 * uvn_vq_drv_kick_prepare(), without reading the device's notification
 * request: no full fence, no read of a line the device writes. For a device
 * that polls and is never kicked; a queue uses one of the two, not both
 * (chains published here are not counted for the next kick decision).
 */
void uvn_vq_drv_publish(struct uvn_vq_drv *vq);

/**
 * Reclaim up to @p max used buffers.
 * @return how many were stored in @p out, or the broken queue's error (when
 *         a bad used entry follows good ones, the good ones are returned
 *         first and the next call reports the error)
 */
int uvn_vq_drv_get_used(struct uvn_vq_drv *vq, struct uvn_vq_done *out, unsigned max);

/**
 * Reclaim up to @p max used buffers when their used lengths do not matter
 * (transmit): their tokens go to @p tokens. Under IN_ORDER on a split ring
 * the used index alone counts the oldest chains done and the entries are
 * not read; otherwise as uvn_vq_drv_get_used() (at most 32 per call).
 * @return how many, or the broken queue's error
 */
int uvn_vq_drv_reclaim(struct uvn_vq_drv *vq, void **tokens, unsigned max);

/** @return true if the device has returned buffers not yet reclaimed. */
bool uvn_vq_drv_has_used(struct uvn_vq_drv *vq);

/** Ask the device not to notify (best effort: it may still). */
void uvn_vq_drv_disable_cb(struct uvn_vq_drv *vq);

/**
 * Ask to be notified of the next used buffer.
 * @return false if used buffers arrived meanwhile: poll again before sleeping
 */
bool uvn_vq_drv_enable_cb(struct uvn_vq_drv *vq);

/**
 * Like uvn_vq_drv_enable_cb(), but with EVENT_IDX ask for the notification only
 * after about 3/4 of the buffers in flight are used (Linux's
 * virtqueue_enable_cb_delayed()).
 */
bool uvn_vq_drv_enable_cb_delayed(struct uvn_vq_drv *vq);

/** @return free descriptors (a chain of n segments needs n, or 1 if indirect). */
unsigned uvn_vq_drv_num_free(const struct uvn_vq_drv *vq);

/**
 * Take back one buffer that was added but not used (teardown after the
 * device stopped). @return its token, or NULL when none is left
 */
void *uvn_vq_drv_detach_unused(struct uvn_vq_drv *vq);

/** @return 0, or the error that broke the queue (negative). */
int uvn_vq_drv_error(const struct uvn_vq_drv *vq);

/** @return the queue's counters. */
const struct uvn_vq_stats *uvn_vq_drv_stats(const struct uvn_vq_drv *vq);

/** Next avail index (split) or ring position | wrap << 15 (packed), for SET_VRING_BASE. */
uint16_t uvn_vq_drv_avail_state(const struct uvn_vq_drv *vq);

/* ------------------------------------------------------------------------ */
/* Device half                                                              */
/* ------------------------------------------------------------------------ */

/**
 * Translate a device-visible address to a pointer in this process.
 * @param ctx  caller context
 * @param addr address to translate
 * @param len  in: bytes wanted; out: bytes contiguous from the returned
 *             pointer (at most the bytes wanted, at least 1)
 * @return the pointer, or NULL if @p addr is not mapped
 */
typedef void *(*uvn_xlate_fn)(void *ctx, uint64_t addr, uint64_t *len);

/** How to set up a device half. */
struct uvn_vq_dev_cfg {
	unsigned num;        /**< queue size */
	uint64_t features;   /**< negotiated feature bits */
	void *desc;          /**< descriptor table / ring, translated, 16-byte aligned */
	void *driver;        /**< avail ring (2-byte aligned) / driver event area (4), translated */
	void *device;        /**< used ring / device event area, translated, 4-byte aligned */
	uvn_xlate_fn xlate;  /**< translates buffer and indirect table addresses */
	void *xlate_ctx;
	uint16_t avail_idx;  /**< next avail index to read (split), ring position (packed) */
	bool avail_wrap;     /**< packed: driver wrap counter at avail_idx */
	uint16_t used_idx;   /**< next used index to write (split), ring position (packed) */
	bool used_wrap;      /**< packed: wrap counter at used_idx */
	uint64_t reserved[4]; /**< zero (room for later fields: the size stays 96 bytes) */
};

/** A popped chain; its iovecs are in the array given to uvn_vq_dev_pop(). */
struct uvn_vq_chain {
	uint16_t id;      /**< head index (split) or buffer id (packed): give back to push */
	uint16_t ndesc;   /**< ring descriptors the chain occupies (packed) */
	uint16_t nout;    /**< device-readable iovecs: iov[0 .. nout) */
	uint16_t nin;     /**< device-writable iovecs: iov[nout .. nout + nin) */
	uint32_t out_len; /**< bytes readable */
	uint32_t in_len;  /**< bytes writable */
};

struct uvn_vq_dev;

/**
 * Create a device half.
 * @return 0 and the queue in @p out, -UVN_VQ_E_INVAL for a bad
 *         configuration, or -UVN_VQ_E_NOMEM
 */
int uvn_vq_dev_create(const struct uvn_vq_dev_cfg *cfg, struct uvn_vq_dev **out);

/** Destroy a device half. */
void uvn_vq_dev_destroy(struct uvn_vq_dev *vq);

/**
 * Point the queue at new ring addresses (after a memory table change) and a
 * new translation context, keeping its indices.
 */
void uvn_vq_dev_set_addrs(struct uvn_vq_dev *vq, void *desc, void *driver, void *device,
			  void *xlate_ctx);

/**
 * @return how many chains are available now (split: reads the avail index
 * once; packed: reads the next head's flags once and says 1 if at least one
 * is), or the broken queue's error.
 */
int uvn_vq_dev_avail(struct uvn_vq_dev *vq);

/**
 * Pop the next available chain, translating its buffers into @p iov
 * (readable first, then writable).
 *
 * A chain that is legal but needs more than @p iov_max iovecs is not
 * taken: the pop returns -UVN_VQ_E_IOV_FULL, the queue is not broken and
 * @p ch says what the chain needs (nout + nin iovecs, saturated at
 * UINT16_MAX; id, ndesc and lengths as a pop would give them). Pop again
 * with a larger array, or drop the chain: pop it with @p iov NULL and
 * @p iov_max 0, which checks and takes a chain without translating its
 * buffers into iovecs (@p ch as above), then push it with length 0. A
 * chain longer than the ring is still a loop (UVN_VQ_E_LOOP), and one of
 * more than UVN_VQ_MAX_CHAIN_IOV iovecs (or @p iov_max, if larger) breaks
 * the queue (UVN_VQ_E_CHAIN_LONG).
 *
 * @return 1 and the chain in @p ch, 0 if none is available,
 *         -UVN_VQ_E_IOV_FULL, or the error that broke the queue
 */
int uvn_vq_dev_pop(struct uvn_vq_dev *vq, struct uvn_vq_chain *ch, struct iovec *iov,
		   unsigned iov_max);

/**
 * Undo the most recent uvn_vq_dev_pop() of @p ch (chains are undone in
 * reverse pop order): the chain will be popped again. For a device that
 * found the chains it took too small, e.g. for a mergeable rx packet.
 */
void uvn_vq_dev_unpop(struct uvn_vq_dev *vq, const struct uvn_vq_chain *ch);

/**
 * Stage a used element for @p ch with @p len bytes written. Staged elements
 * become visible to the driver at uvn_vq_dev_flush(). Ignored once the
 * queue is broken.
 */
void uvn_vq_dev_push(struct uvn_vq_dev *vq, const struct uvn_vq_chain *ch, uint32_t len);

/**
 * With IN_ORDER negotiated, make flush write one used element per batch
 * (lengths are then not reported to the driver: for queues the device only
 * reads). Ignored without IN_ORDER. Switching it off closes a batch in
 * progress: chains pushed afterwards get their own elements after it.
 */
void uvn_vq_dev_set_batch_used(struct uvn_vq_dev *vq, bool on);

/**
 * Publish staged used elements with one index update (release) and decide
 * whether the driver must be notified (EVENT_IDX through used_event, or the
 * NO_INTERRUPT flag). @return true if the caller must notify the driver
 */
bool uvn_vq_dev_flush(struct uvn_vq_dev *vq);

/**
 * Ask the driver for kicks again (publishes avail_event with EVENT_IDX).
 * @return false if chains became available meanwhile: pop before sleeping
 */
bool uvn_vq_dev_enable_notify(struct uvn_vq_dev *vq);

/** Ask the driver not to kick (for polling). */
void uvn_vq_dev_disable_notify(struct uvn_vq_dev *vq);

/** Next avail index (split) or position | wrap << 15 (packed), for GET_VRING_BASE. */
uint16_t uvn_vq_dev_avail_state(const struct uvn_vq_dev *vq);

/** Next used index (split) or position | wrap << 15 (packed). */
uint16_t uvn_vq_dev_used_state(const struct uvn_vq_dev *vq);

/** @return 0, or the error that broke the queue (negative). */
int uvn_vq_dev_error(const struct uvn_vq_dev *vq);

/** @return the queue size. */
unsigned uvn_vq_dev_num(const struct uvn_vq_dev *vq);

/** @return the queue's counters. */
const struct uvn_vq_stats *uvn_vq_dev_stats(const struct uvn_vq_dev *vq);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif
