/* SPDX-License-Identifier: MIT */
/*
 * Shared by the net fuzzers: one guest queue, our driver half and a
 * netdev queue on the device half over the same ring, buffers addressed by
 * their pointers in this process. The ring, the netdev queue and every
 * segment of a guest's buffer each end at a guard page with the rest of
 * their area poisoned (fz_area, kept from one input to the next), so the
 * device reading or writing past or before one is caught by ASan.
 */
#ifndef UVN_FUZZ_GUEST_H
#define UVN_FUZZ_GUEST_H

#include <stdbool.h>
#include <stdint.h>

#include <uvnet/pkt.h>
#include <uvnet/virtqueue.h>

#include "fuzz_mem.h"
#include "net/device/netdev.h"

#define FZ_GUEST_NUM 64u

/* A buffer the guest posted: the token the driver half gives back. */
struct fz_buf {
	uint8_t *p[8];   /* the chain's segments */
	struct fz_area *area[8]; /* where they lie */
	uint32_t len[8];
	unsigned n;
	bool out;        /* device-readable (tx) or writable (rx) */
	bool posted;
};

struct fz_guest_areas;

struct fz_guest {
	struct fz_guest_areas *areas; /* of this guest (by address): kept */
	uint8_t *ring;
	struct uvn_vq_drv *drv;
	struct uvn_vq_dev *dev;
	struct uvn_netdev_q *q; /* large: in its own area */
	uint64_t features;
	uint32_t mtu; /* rx: its queue's MTU (0: none), which every frame without GSO fits */
	struct fz_buf buf[FZ_GUEST_NUM];
};

/* @tx: a queue the device reads. @return false when out of memory. At
 * most two guests (by address) in a process. */
bool fz_guest_init(struct fz_guest *g, uint64_t features, bool tx);
void fz_guest_fini(struct fz_guest *g);
/* Post a chain of @n segments of @len[i] bytes, copying @data (readable)
 * or leaving them zero (writable). @return the buffer, or NULL when full. */
struct fz_buf *fz_guest_post(struct fz_guest *g, const uint8_t *data, const uint32_t *len,
			     unsigned n, bool out);
/* Publish what was posted. */
void fz_guest_kick(struct fz_guest *g);
/* Release a buffer the device returned. */
void fz_guest_release(struct fz_buf *b);

/* A receiving guest's features from one input byte (fuzz_guest.c). */
uint64_t fz_rx_features(uint8_t v);
/* Reclaim @g's used rx buffers as a driver reads them and check them:
 * used lengths within the buffers (@buf_size each), num_buffers, and a
 * header carrying only offloads @g negotiated, with its checksum range
 * inside the frame. */
void fz_guest_check_rx(struct fz_guest *g, uint32_t buf_size);

/* Packet pools shared by every input: every packet must be back in them
 * after each input (fz_pools_check). */
struct uvn_pkt_pool *fz_pool_small(void);
struct uvn_pkt_pool *fz_pool_big(void);
void fz_pools_check(void);

#endif
