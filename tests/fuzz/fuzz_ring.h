/* SPDX-License-Identifier: MIT */
/*
 * Input format of the chain-walker fuzzers (fuzz_split_chain,
 * fuzz_packed_chain), shared with the seed corpus generator.
 *
 *   header      FZ_HDR_SIZE bytes, little-endian fields in the order of
 *               struct fz_hdr
 *   pieces      npieces x { le16 len, u8 kind }: consecutive guest-physical
 *               ranges from FZ_GPA_BASE, each a hole or mapped in its own fenced
 *               area (so a read past a piece is caught; fuzz_mem.h)
 *   ring        ring_len bytes copied over the ring (split: descriptor
 *               table, avail ring, used ring; packed: descriptor ring and
 *               event areas), the rest zero
 *   memory      mem_len bytes copied over the guest-physical range of the
 *               pieces, in order (bytes over holes are dropped)
 *   script      the rest: with FZ_F_TOCTOU, each translation rewrites one
 *               byte of the ring or of guest memory { le16 where, u8 value };
 *               each later round first reads one { u8 avail delta } (split)
 */
#ifndef UVN_FUZZ_RING_H
#define UVN_FUZZ_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FZ_HDR_SIZE 20
#define FZ_GPA_BASE 0x10000ull
#define FZ_MAX_PIECES 16
#define FZ_MAX_PIECE_LEN 16384u

enum {
	FZ_F_INDIRECT = 1 << 0,  /* VIRTIO_RING_F_INDIRECT_DESC */
	FZ_F_IN_ORDER = 1 << 1,  /* VIRTIO_F_IN_ORDER */
	FZ_F_EVENT_IDX = 1 << 2, /* VIRTIO_RING_F_EVENT_IDX */
	FZ_F_BATCH = 1 << 3,     /* uvn_vq_dev_set_batch_used(true) */
	FZ_F_TOCTOU = 1 << 4,    /* translations rewrite shared memory */
	FZ_F_EDGES = 1 << 5,     /* also map the first and last page of the address space */
	FZ_F_UNPOP = 1 << 6,     /* pop, unpop and pop again must agree */
};

enum { FZ_PIECE_MAPPED = 1 };

struct fz_hdr {
	uint8_t flags;
	uint8_t iov_max;
	uint16_t qsize;       /* split: 1 << (qsize & 15); packed: (qsize & 0x7fff) + 1 */
	uint16_t avail_start; /* the device's first avail index / position (mod num) */
	uint16_t used_start;  /* the device's first used index / position (mod num) */
	uint16_t avail_idx;   /* split: avail->idx; packed: bit 0 avail wrap, bit 1 used wrap */
	uint16_t drv_flags;   /* split: avail->flags; packed: driver event flags */
	uint16_t drv_event;   /* split: used_event; packed: driver event off_wrap */
	uint8_t rounds;       /* pop/push/flush rounds (1..8) */
	uint8_t npieces;
	uint16_t ring_len;
	uint16_t mem_len;
};

/* Serialize a header (the generator) / parse one (the fuzzers). */
void fz_hdr_put(const struct fz_hdr *h, uint8_t out[FZ_HDR_SIZE]);
void fz_hdr_get(struct fz_hdr *h, const uint8_t in[FZ_HDR_SIZE]);

/* Run one input against the split or packed device half. */
int fz_run(const uint8_t *data, size_t size, bool packed);

#endif
