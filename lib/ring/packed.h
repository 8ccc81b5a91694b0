/* SPDX-License-Identifier: MIT */
/*
 * What the packed ring's driver half (packed_drv.c) shares with its
 * reconnect half (packed_keep.c): descriptor flags and writes, and the
 * kept copies of every chain. Internal to lib/ring.
 */
#ifndef UVN_RING_PACKED_H
#define UVN_RING_PACKED_H

#include "vq.h"

#define UVN_PK_AVAIL (1u << VRING_PACKED_DESC_F_AVAIL)
#define UVN_PK_USED (1u << VRING_PACKED_DESC_F_USED)
#define UVN_PK_WRAP (1u << VRING_PACKED_EVENT_F_WRAP_CTR)

/* AVAIL matches the driver's wrap counter, USED its inverse. */
static inline uint16_t uvn_pk_avail_flags(bool wrap)
{
	return (uint16_t)(wrap ? UVN_PK_AVAIL : UVN_PK_USED);
}

/* A used element, seen by the driver on wrap counter @wrap. */
static inline bool uvn_pk_is_used(uint16_t flags, bool wrap)
{
	return !!(flags & UVN_PK_AVAIL) == wrap && !!(flags & UVN_PK_USED) == wrap;
}

static inline void uvn_pk_write_body(struct vring_packed_desc *d, uint64_t addr, uint32_t len,
				     uint16_t id)
{
	uvn_wr64(&d->addr, addr);
	uvn_wr32(&d->len, len);
	uvn_wr16(&d->id, id);
}

/* packed_keep.c: chains kept for a resubmission. */
size_t uvn_pk_keep_bytes(unsigned num); /* pend_pos[num] with the keep block behind it */
void uvn_pk_keep_init(struct uvn_vq_drv *vq);
bool uvn_pk_keeping(const struct uvn_vq_drv *vq);
void uvn_pk_keep_chain(struct uvn_vq_drv *vq, const struct uvn_sg *sg, unsigned nout,
		       unsigned total, uint64_t taddr, uint16_t id);
void uvn_pk_keep_release(struct uvn_vq_drv *vq, const struct uvn_drv_state *s);

#endif
