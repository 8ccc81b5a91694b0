/* SPDX-License-Identifier: MIT */
/*
 * Shared by every ring file: typed little-endian accessors for the wire
 * fields, the memory-ordering helpers named after what the spec requires,
 * and the event index rule. Wire layouts are the UAPI ones.
 */
#ifndef UVN_RING_H
#define UVN_RING_H

#include <endian.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <linux/virtio_config.h>
#include <linux/virtio_ring.h>

#include "util/bits.h"

_Static_assert(sizeof(struct vring_desc) == 16, "split descriptor is 16 bytes");
_Static_assert(sizeof(struct vring_packed_desc) == 16, "packed descriptor is 16 bytes");
_Static_assert(sizeof(struct vring_used_elem) == 8, "used element is 8 bytes");
_Static_assert(sizeof(struct vring_avail) == 4, "avail header is 4 bytes");
_Static_assert(sizeof(struct vring_used) == 4, "used header is 4 bytes");
_Static_assert(sizeof(struct vring_packed_desc_event) == 4, "event suppression is 4 bytes");

#define UVN_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define UVN_LIKELY(x) __builtin_expect(!!(x), 1)

/*
 * Plain accesses to fields the peer does not write concurrently (or where a
 * torn value cannot matter) go through these so every wire access is typed
 * and converted in one place.
 */
static inline uint16_t uvn_rd16(const void *p)
{
	return le16toh(*(const volatile uint16_t *)p);
}

static inline void uvn_wr16(void *p, uint16_t v)
{
	*(volatile uint16_t *)p = htole16(v);
}

static inline void uvn_wr32(void *p, uint32_t v)
{
	*(volatile uint32_t *)p = htole32(v);
}

static inline void uvn_wr64(void *p, uint64_t v)
{
	*(volatile uint64_t *)p = htole64(v);
}

/*
 * Publish: everything written before becomes visible no later than this
 * 16-bit store (the avail or used index, a packed descriptor's flags).
 */
static inline void uvn_store_release16(void *p, uint16_t v)
{
	atomic_store_explicit((_Atomic uint16_t *)p, htole16(v), memory_order_release);
}

/*
 * Consume: nothing after this load is read before it (the other side's
 * index, or a packed descriptor's flags, guards the data behind it).
 */
static inline uint16_t uvn_load_acquire16(const void *p)
{
	return le16toh(atomic_load_explicit((_Atomic const uint16_t *)p, memory_order_acquire));
}

/*
 * Make the releasing stores of a batch ordered after everything before
 * this point (packed rings publish several heads after one fence).
 */
static inline void uvn_fence_release(void)
{
	atomic_thread_fence(memory_order_release);
}

/*
 * Full fence: a store of ours (index published, notifications re-enabled)
 * must be visible before we read the other side's event index or flags,
 * otherwise both sides can decide not to notify.
 */
static inline void uvn_fence_full(void)
{
	atomic_thread_fence(memory_order_seq_cst);
}

/*
 * True if the peer asked to be notified when the index moved from @old to
 * @new_idx past @event. All arithmetic in u16: indices are free running.
 */
static inline bool uvn_need_event(uint16_t event, uint16_t new_idx, uint16_t old)
{
	return (uint16_t)(new_idx - event - 1) < (uint16_t)(new_idx - old);
}

/*
 * The packed ring's form (either half): did the position move past the
 * event @off_wrap, having moved by @added (1..@num) descriptors to @new_pos
 * on wrap counter @wrap? Positions are unwrapped onto one u16 line: an
 * event on the other lap is one ring length behind.
 */
static inline bool uvn_packed_need_event(uint16_t off_wrap, uint16_t new_pos, uint16_t added,
					 bool wrap, uint16_t num)
{
	uint16_t event = off_wrap & (uint16_t)~(1u << VRING_PACKED_EVENT_F_WRAP_CTR);

	if (!!(off_wrap & (1u << VRING_PACKED_EVENT_F_WRAP_CTR)) != wrap)
		event = (uint16_t)(event - num);
	return uvn_need_event(event, new_pos, (uint16_t)(new_pos - added));
}

/* A descriptor as read once from shared memory. */
struct uvn_desc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags;
	uint16_t next; /* split: next index; packed: buffer id */
};

/*
 * Fetch the 16 bytes of a descriptor once, as two little-endian words: the
 * driver may be rewriting it, so every field is decoded from this one copy.
 * Ring descriptors are 16-byte aligned; an indirect table may sit at any
 * address, and is then read bytewise (still each byte once) rather than
 * through misaligned 64-bit loads.
 */
static inline void uvn_desc_fetch(const void *p, uint64_t *w0, uint64_t *w1)
{
	if (UVN_LIKELY(((uintptr_t)p & 7) == 0)) {
		const volatile uint64_t *q = p;

		*w0 = le64toh(q[0]);
		*w1 = le64toh(q[1]);
	} else {
		const volatile uint8_t *b = p;
		uint8_t tmp[16];

		for (unsigned i = 0; i < 16; i++)
			tmp[i] = b[i];
		memcpy(w0, tmp, 8);
		memcpy(w1, tmp + 8, 8);
		*w0 = le64toh(*w0);
		*w1 = le64toh(*w1);
	}
}

/* A split descriptor (or split indirect entry): addr | len, flags, next. */
static inline void uvn_desc_read_split(const void *d, struct uvn_desc *out)
{
	uint64_t a, w;

	uvn_desc_fetch(d, &a, &w);
	out->addr = a;
	out->len = (uint32_t)w;
	out->flags = (uint16_t)(w >> 32);
	out->next = (uint16_t)(w >> 48);
}

/* A packed indirect entry: addr | len, id (reserved), flags. */
static inline void uvn_desc_read_packed(const void *d, struct uvn_desc *out)
{
	uint64_t a, w;

	uvn_desc_fetch(d, &a, &w);
	out->addr = a;
	out->len = (uint32_t)w;
	out->next = (uint16_t)(w >> 32);
	out->flags = (uint16_t)(w >> 48);
}

/* Advance a ring position that wraps at @num (not a power of two for
 * packed rings), toggling @wrap when it passes the end. */
static inline void uvn_ring_advance(uint16_t *pos, bool *wrap, uint16_t num)
{
	if (++*pos == num) {
		*pos = 0;
		*wrap = !*wrap;
	}
}

/* The 2-bit event flags field of a packed event suppression structure;
 * the other 14 bits are reserved. */
#define UVN_EVENT_FLAGS_MASK 0x3u

/*
 * @n writable buffers of @len bytes each, one descriptor each (a receive
 * refill), for libuvnet's own driver: buffer i at @addr[i] with token
 * @tokens[i] (non-NULL). @return buffers added (fewer than @n when the ring
 * fills), the broken queue's error, or -UVN_VQ_E_INVAL for a zero @len or
 * a NULL token
 */
struct uvn_vq_drv;
int uvn_vq_drv_add_in_n(struct uvn_vq_drv *vq, const uint64_t *addr, void *const *tokens,
			uint32_t len, unsigned n);

#endif
