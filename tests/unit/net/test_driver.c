/* SPDX-License-Identifier: MIT */
/*
 * The virtio-net driver against the project's own device half (a vhost-user
 * backend in a thread of this process, test_driver_be.c): frames both ways
 * for every rx mode x ring layout x indirect x IN_ORDER, exact counts and
 * contents; every buffer back in its pool after stop; the seed switches
 * (deferred allocation, mergeable sizing, descriptor cache) doing what they
 * say; offloads, control queue, multiqueue, interrupt-style waiting.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <cmocka.h>
#include <uvnet/driver.h>

#include "net/csum.h"
#include "test_driver_be.h"
#include "vhost_user/proto.h"

#define F(b) (1ull << (b))
#define MAXF 65535u

/* A frame that says which one it is in every byte. */
static void make_frame(uint8_t *b, unsigned len, unsigned seq)
{
	static const uint8_t hdr[14] = { 2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x88, 0xb5 };

	memcpy(b, hdr, 14);
	for (unsigned i = 14; i < len; i++)
		b[i] = (uint8_t)(seq * 7 + i * 13 + (i >> 8));
	b[14] = (uint8_t)seq;
	b[15] = (uint8_t)(seq >> 8);
}

struct ctx {
	struct tbe *be;
	const char *path;
	struct uvn_drv *d;
	struct uvn_pkt_pool *ext;   /* descriptor-only packets for frames in app memory */
	uint8_t *big;               /* shared memory for frames over 2 KB */
	size_t big_len;
	uint64_t sent;              /* frames taken by the driver */
	unsigned nbig;              /* frames built in shared memory */
};

static void start_be(struct ctx *c, const struct tbe_cfg *bc)
{
	struct uvn_pkt_pool_cfg pc = { .count = 64, .name = "ext" };

	memset(c, 0, sizeof(*c));
	c->be = tbe_start(bc, &c->path);
	assert_non_null(c->be);
	assert_int_equal(uvn_pkt_pool_create(&pc, &c->ext), 0);
}

static void open_drv(struct ctx *c, struct uvn_drv_cfg *cfg)
{
	cfg->path = c->path;
	assert_int_equal(uvn_drv_open(cfg, &c->d), 0);
}

static void finish(struct ctx *c)
{
	if (c->big)
		uvn_drv_mem_free(c->d, c->big, c->big_len);
	uvn_drv_close(c->d);
	tbe_stop(c->be);
	assert_int_equal(uvn_pkt_pool_avail(c->ext), 64);
	uvn_pkt_pool_destroy(c->ext);
}

/* Send one frame: from the tx pool, or (large or @segs > 1) laid out in
 * shared memory in @segs segments. @return 1 if taken */
static int send_frame(struct ctx *c, unsigned q, unsigned len, unsigned seq, unsigned segs)
{
	struct uvn_pkt *p;
	int n;

	if (len <= 2048 - UVN_DRV_HEADROOM && segs == 1) {
		if (!uvn_drv_tx_alloc(c->d, q, &p, 1, len))
			assert_true(uvn_tx_reclaim(c->d, q) >= 0);
		else
			uvn_pkt_free(p);
		assert_int_equal(uvn_drv_tx_alloc(c->d, q, &p, 1, len), 1);
		make_frame(p->seg[0].iov_base, len, seq);
	} else {
		unsigned per = len / segs, off = 0;
		uint8_t *b;

		if (!c->big) {
			c->big_len = 2 * (MAXF + 64);
			c->big = uvn_drv_mem_alloc(c->d, c->big_len);
			assert_non_null(c->big);
		}
		/* Two frames' room: one may still be in flight while the next is built. */
		b = c->big + (c->nbig++ & 1) * (MAXF + 64);
		make_frame(b, len, seq);
		p = uvn_pkt_alloc(c->ext);
		if (!p) {
			/* All out with the driver: take back what it sent. */
			assert_true(uvn_tx_reclaim(c->d, q) >= 0);
			p = uvn_pkt_alloc(c->ext);
		}
		assert_non_null(p);
		for (unsigned i = 0; i < segs; i++) {
			unsigned l = i + 1 == segs ? len - off : per;

			p->seg[i].iov_base = b + off;
			p->seg[i].iov_len = l;
			off += l;
		}
		p->nseg = (uint16_t)segs;
		p->len = len;
	}
	n = uvn_tx_burst(c->d, q, &p, 1);
	assert_true(n >= 0);
	if (n == 0)
		uvn_pkt_free(p);
	return n;
}

/* Send until taken: a full ring waits for the device to take frames. */
static void send_one(struct ctx *c, unsigned q, unsigned len, unsigned seq, unsigned segs)
{
	for (;;) {
		uint64_t seen = tbe_events(c->be);

		if (send_frame(c, q, len, seq, segs))
			break;
		if (uvn_tx_reclaim(c->d, q) <= 0)
			assert_true(tbe_wait(c->be, seen));
	}
	c->sent++;
	/* Frames in shared memory alternate between two buffers: the next one
	 * is built once the device took every frame but this one. */
	if (len > 2048 - UVN_DRV_HEADROOM || segs > 1)
		assert_true(tbe_wait_tx_frames(c->be, c->sent - 1));
}

static void check_frame(const struct uvn_pkt *p, unsigned len, unsigned seq)
{
	static uint8_t want[MAXF + 64], got[MAXF + 64];

	assert_int_equal(p->len, len);
	make_frame(want, len, seq);
	assert_int_equal(uvn_pkt_read(p, 0, got, len), len);
	assert_memory_equal(got, want, len);
}

/* Receive @n frames on @q, expecting sizes[i % nsizes] and seq first + i. */
static void recv_frames(struct ctx *c, unsigned q, const unsigned *sizes, unsigned nsizes,
			unsigned first, unsigned n)
{
	unsigned got = 0;

	while (got < n) {
		uint64_t seen = tbe_events(c->be);
		struct uvn_pkt *pkts[32];
		int k = uvn_rx_burst(c->d, q, pkts, 32);

		assert_true(k >= 0);
		for (int i = 0; i < k; i++) {
			assert_true(got < n);
			check_frame(pkts[i], sizes[(first + got) % nsizes], first + got);
			assert_int_equal(pkts[i]->queue, q);
			got++;
			uvn_pkt_free(pkts[i]);
		}
		if (!k)
			assert_true(tbe_wait(c->be, seen));
	}
}

/* Send @n frames of @len bytes in @segs pieces on @q, seq @first on, each
 * received back (the loop backend) before the next goes out. */
static void echo_each(struct ctx *c, unsigned q, unsigned len, unsigned segs, unsigned first,
		      unsigned n)
{
	for (unsigned i = first; i < first + n; i++) {
		send_one(c, q, len, i, segs);
		recv_frames(c, q, &len, 1, i, 1);
	}
}

/* Everything back: no fragment out, every packet object free, no table left. */
static void check_returned(struct ctx *c, size_t arena_start)
{
	struct uvn_drv_mem_info mi;

	for (unsigned q = 0; q < uvn_drv_queue_pairs(c->d); q++) {
		assert_int_equal(uvn_drv_mem_info(c->d, q, &mi), 0);
		assert_int_equal(mi.rx_frags_out, 0);
		assert_int_equal(mi.rx_frag_pages, 0);
		assert_int_equal(mi.rx_pkts_free, mi.rx_pkts_total);
		assert_int_equal(mi.rx_posted, 0);
		assert_int_equal(mi.tx_pkts_free, mi.tx_pkts_total);
		assert_int_equal(mi.tx_in_flight, 0);
	}
	if (arena_start)
		assert_int_equal(mi.arena_in_use, arena_start);
}

/* Stop the driver, check every buffer came back, close both ends. */
static void stop_and_finish(struct ctx *c)
{
	uvn_drv_stop(c->d);
	check_returned(c, 0);
	finish(c);
}

/* ------------------------------------------------------------ matrix */

struct cell {
	enum uvn_ring_layout ring;
	enum uvn_rx_mode mode;
	bool indirect, in_order, poll, deferred;
	unsigned mtu;
};

static const unsigned small_sizes[] = { 60, 64, 100, 333, 1000, 1514, 1518 };
static const unsigned big_sizes[] = { 60, 64, 1514, 4000, 9014, 20000, 64000, 65535 };
static const unsigned mrg_sizes[] = { 60, 64, 1514, 1530, 4000, 9014, 30000, 65535 };

static void run_cell(void **state)
{
	const struct cell *cell = *state;
	struct tbe_cfg bc = { .mode = TBE_LOOP };
	const unsigned *sizes = cell->mode == UVN_RX_SMALL ? small_sizes
				: cell->mode == UVN_RX_BIG ? big_sizes : mrg_sizes;
	unsigned nsizes = cell->mode == UVN_RX_SMALL ? 7 : 8, n = 3 * nsizes + 40;
	struct uvn_drv_cfg cfg;
	struct uvn_drv_mem_info mi0;
	struct ctx c;
	uint64_t f;

	start_be(&c, &bc);
	uvn_drv_cfg_init(&cfg);
	cfg.ring = cell->ring;
	cfg.rx_mode = cell->mode;
	cfg.poll = cell->poll;
	cfg.mtu = cell->mtu;
	cfg.queue_size = 128;
	cfg.deferred_alloc = cell->deferred;
	cfg.app_mem_bytes = 2 * (MAXF + 64);
	if (!cell->indirect)
		cfg.features_off |= F(VIRTIO_RING_F_INDIRECT_DESC);
	if (!cell->in_order)
		cfg.features_off |= F(VIRTIO_F_IN_ORDER);
	open_drv(&c, &cfg);
	f = uvn_drv_features(c.d);
	assert_int_equal(!!(f & F(VIRTIO_F_RING_PACKED)), cell->ring == UVN_RING_PACKED);
	assert_int_equal(!!(f & F(VIRTIO_NET_F_MRG_RXBUF)), cell->mode == UVN_RX_MERGEABLE);
	assert_int_equal(!!(f & F(VIRTIO_RING_F_INDIRECT_DESC)), cell->indirect);
	assert_int_equal(!!(f & F(VIRTIO_F_IN_ORDER)), cell->in_order);
	assert_int_equal(uvn_drv_rx_mode(c.d), cell->mode);
	assert_int_equal(uvn_drv_mem_info(c.d, 0, &mi0), 0);
	/* Deferred allocation: no packet object sits in the ring. */
	if (cell->deferred)
		assert_int_equal(mi0.rx_pkts_free, mi0.rx_pkts_total);
	else
		assert_int_equal(mi0.rx_pkts_free, mi0.rx_pkts_total - mi0.rx_posted);
	assert_true(mi0.rx_posted > 0);
	/* Driver -> device -> driver, in order, every byte compared. Frames go
	 * one window at a time so none is dropped for lack of buffers. */
	for (unsigned i = 0; i < n; i += 8) {
		unsigned k = n - i < 8 ? n - i : 8;

		for (unsigned j = 0; j < k; j++)
			send_one(&c, 0, sizes[(i + j) % nsizes], i + j, 1 + (i + j) % 3);
		recv_frames(&c, 0, sizes, nsizes, i, k);
	}
	assert_int_equal(tbe_tx_frames(c.be), n);
	assert_int_equal(tbe_rx_frames(c.be), n);
	assert_int_equal(tbe_drops(c.be), 0);
	{
		struct uvn_drv_rxq_stats rs;
		struct uvn_drv_txq_stats ts;

		assert_int_equal(uvn_drv_rxq_stats(c.d, 0, &rs), 0);
		assert_int_equal(uvn_drv_txq_stats(c.d, 0, &ts), 0);
		assert_int_equal(rs.packets, n);
		assert_int_equal(ts.packets, n);
		assert_int_equal(rs.drops, 0);
		assert_int_equal(ts.drops, 0);
		if (cell->mode == UVN_RX_MERGEABLE)
			assert_true(rs.mrg_multi > 0);
		/* A frame of any legal number of buffers (65535 bytes: 43 of
		 * 1536) is one packet, never copied. */
		if (cell->mode == UVN_RX_MERGEABLE)
			assert_int_equal(rs.copies, 0);
		if (cell->mode == UVN_RX_SMALL && cell->deferred)
			assert_int_equal(rs.copies, n);
		if (cell->indirect)
			assert_true(ts.indirect > 0);
		else
			assert_int_equal(ts.indirect, 0);
	}
	stop_and_finish(&c);
}

#define CELL(r, m, ind, ino, mtu) \
	{ r, m, ind, ino, false, true, mtu }
static const struct cell cells[] = {
	CELL(UVN_RING_SPLIT, UVN_RX_SMALL, false, false, 1500),
	CELL(UVN_RING_SPLIT, UVN_RX_SMALL, true, true, 1500),
	CELL(UVN_RING_SPLIT, UVN_RX_BIG, false, false, 9000),
	CELL(UVN_RING_SPLIT, UVN_RX_BIG, true, true, 9000),
	CELL(UVN_RING_SPLIT, UVN_RX_MERGEABLE, false, false, 9000),
	CELL(UVN_RING_SPLIT, UVN_RX_MERGEABLE, true, true, 1500),
	CELL(UVN_RING_SPLIT, UVN_RX_MERGEABLE, true, false, 9000),
	CELL(UVN_RING_SPLIT, UVN_RX_MERGEABLE, false, true, 1500),
	CELL(UVN_RING_PACKED, UVN_RX_SMALL, false, false, 1500),
	CELL(UVN_RING_PACKED, UVN_RX_SMALL, true, true, 1500),
	CELL(UVN_RING_PACKED, UVN_RX_BIG, false, true, 9000),
	CELL(UVN_RING_PACKED, UVN_RX_BIG, true, false, 9000),
	CELL(UVN_RING_PACKED, UVN_RX_MERGEABLE, false, false, 1500),
	CELL(UVN_RING_PACKED, UVN_RX_MERGEABLE, true, true, 9000),
	CELL(UVN_RING_PACKED, UVN_RX_MERGEABLE, true, false, 1500),
	CELL(UVN_RING_PACKED, UVN_RX_MERGEABLE, false, true, 9000),
	/* deferred_alloc off, as before Linux deferred it: packet objects
	 * posted with the buffers */
	{ UVN_RING_SPLIT, UVN_RX_SMALL, true, true, true, false, 1500 },
	{ UVN_RING_SPLIT, UVN_RX_BIG, true, true, true, false, 9000 },
	{ UVN_RING_SPLIT, UVN_RX_MERGEABLE, true, true, true, false, 1500 },
	{ UVN_RING_PACKED, UVN_RX_MERGEABLE, false, false, true, false, 9000 },
	{ UVN_RING_PACKED, UVN_RX_BIG, false, true, false, false, 9000 },
};

/* ---------------------------- optimization switches (docs/seeds.md) */

/* Mergeable sizing (003): an MTU frame takes one buffer with header-inclusive
 * sizing, two with MTU-only sizing; EWMA follows the frame sizes. */
static void test_mrg_sizing(void **state)
{
	static const unsigned one[] = { 1514 };
	struct tbe_cfg bc = { .mode = TBE_LOOP };
	struct uvn_drv_rxq_stats rs0, rs1, rs2;
	struct uvn_drv_cfg cfg;
	struct ctx c;

	(void)state;
	start_be(&c, &bc);
	uvn_drv_cfg_init(&cfg);
	cfg.poll = true;
	open_drv(&c, &cfg);
	assert_int_equal(uvn_drv_mrg_buf_len(c.d, 0), 1536); /* 12 + 1518 -> 64-byte lines */
	for (unsigned i = 0; i < 20; i++)
		send_one(&c, 0, 1514, i, 1);
	recv_frames(&c, 0, one, 1, 0, 20);
	uvn_drv_rxq_stats(c.d, 0, &rs0);
	assert_int_equal(rs0.mrg_multi, 0);
	assert_int_equal(rs0.bufs_used, 20);

	/* Before the seed: buffers hold 1518 bytes, the header does not fit too. */
	assert_int_equal(uvn_drv_set_opt(c.d, UVN_OPT_MRG_SIZING, UVN_MRG_MTU_ONLY), 0);
	/* Buffers already posted keep their size: cycle the ring once. */
	echo_each(&c, 0, 60, 1, 20, 256);
	assert_int_equal(uvn_drv_mrg_buf_len(c.d, 0), 1518);
	uvn_drv_rxq_stats(c.d, 0, &rs1);
	for (unsigned i = 0; i < 20; i++)
		send_one(&c, 0, 1514, 1000 + i, 1);
	recv_frames(&c, 0, one, 1, 1000, 20);
	uvn_drv_rxq_stats(c.d, 0, &rs2);
	assert_int_equal(rs2.mrg_multi - rs1.mrg_multi, 20);
	assert_int_equal(rs2.bufs_used - rs1.bufs_used, 40);

	/* EWMA: large frames grow the buffers, up to a page. */
	assert_int_equal(uvn_drv_set_opt(c.d, UVN_OPT_MRG_SIZING, UVN_MRG_EWMA), 0);
	assert_int_equal(uvn_drv_mrg_buf_len(c.d, 0), 1536);
	echo_each(&c, 0, 3800, 1, 2000, 400);
	assert_true(uvn_drv_mrg_buf_len(c.d, 0) > 3000);
	assert_true(uvn_drv_mrg_buf_len(c.d, 0) <= 4096);
	stop_and_finish(&c);
}

/* Deferred allocation (000): the ring holds raw buffers; switching at run time
 * mixes both kinds in the ring, and teardown still returns everything. */
static void test_deferred_switch(void **state)
{
	static const unsigned sz[] = { 64, 1514, 200 };
	struct tbe_cfg bc = { .mode = TBE_LOOP };
	struct uvn_drv_mem_info mi;
	struct uvn_drv_cfg cfg;
	struct ctx c;

	(void)state;
	for (int mode = UVN_RX_SMALL; mode <= UVN_RX_MERGEABLE; mode++) {
		start_be(&c, &bc);
		uvn_drv_cfg_init(&cfg);
		cfg.poll = true;
		cfg.rx_mode = (enum uvn_rx_mode)mode;
		cfg.queue_size = 64;
		cfg.deferred_alloc = false;
		open_drv(&c, &cfg);
		uvn_drv_mem_info(c.d, 0, &mi);
		assert_int_equal(mi.rx_pkts_free, mi.rx_pkts_total - mi.rx_posted);
		for (unsigned i = 0; i < 30; i++)
			send_one(&c, 0, sz[i % 3], i, 1);
		recv_frames(&c, 0, sz, 3, 0, 30);
		assert_int_equal(uvn_drv_set_opt(c.d, UVN_OPT_DEFERRED_ALLOC, 1), 0);
		for (unsigned i = 30; i < 60; i++)
			send_one(&c, 0, sz[i % 3], i, 1);
		recv_frames(&c, 0, sz, 3, 30, 30);
		uvn_drv_mem_info(c.d, 0, &mi);
		/* Refills since the switch posted raw buffers only. */
		assert_true(mi.rx_pkts_free > mi.rx_pkts_total - mi.rx_posted);
		stop_and_finish(&c);
	}
}

/* Descriptor cache (002): multi-segment tx takes its indirect tables from
 * the cache, or from the arena per packet when the cache is off or the
 * table too big. */
static void test_desc_cache(void **state)
{
	struct tbe_cfg bc = { .mode = TBE_LOOP };
	struct uvn_drv_txq_stats t0, t1, t1b, t2, t3;
	struct uvn_drv_mem_info mi0, mi;
	struct uvn_drv_cfg cfg;
	struct ctx c;

	(void)state;
	start_be(&c, &bc);
	uvn_drv_cfg_init(&cfg);
	cfg.poll = true;
	cfg.app_mem_bytes = 2 * (MAXF + 64);
	open_drv(&c, &cfg);
	assert_true(uvn_drv_features(c.d) & F(VIRTIO_RING_F_INDIRECT_DESC));
	uvn_drv_txq_stats(c.d, 0, &t0);
	echo_each(&c, 0, 300, 3, 0, 10);
	uvn_drv_mem_info(c.d, 0, &mi0);
	uvn_drv_txq_stats(c.d, 0, &t1);
	assert_int_equal(t1.desc_cache_hit - t0.desc_cache_hit, 10);
	assert_int_equal(t1.desc_cache_miss - t0.desc_cache_miss, 0);
	assert_int_equal(t1.indirect - t0.indirect, 10);
	/* A one-segment frame in application memory takes a header slot and
	 * its segment: a two-entry table, from the cache's small class. */
	echo_each(&c, 0, 3000, 1, 100, 10);
	uvn_drv_txq_stats(c.d, 0, &t1b);
	assert_int_equal(t1b.desc_cache_hit - t1.desc_cache_hit, 10);
	assert_int_equal(t1b.desc_cache_miss - t1.desc_cache_miss, 0);
	assert_int_equal(t1b.indirect - t1.indirect, 10);
	t1 = t1b;

	assert_int_equal(uvn_drv_set_opt(c.d, UVN_OPT_DESC_CACHE, 0), 0);
	echo_each(&c, 0, 300, 3, 10, 10);
	uvn_drv_txq_stats(c.d, 0, &t2);
	assert_int_equal(t2.desc_cache_hit - t1.desc_cache_hit, 0);
	assert_int_equal(t2.desc_cache_miss - t1.desc_cache_miss, 10);

	/* Cache on, but tables of 3 above a threshold of 2 are not cached. */
	assert_int_equal(uvn_drv_set_opt(c.d, UVN_OPT_DESC_CACHE, 1), 0);
	assert_int_equal(uvn_drv_set_opt(c.d, UVN_OPT_DESC_CACHE_THR, 2), 0);
	assert_int_equal(uvn_drv_set_opt(c.d, UVN_OPT_DESC_CACHE_THR, 0), -EINVAL);
	assert_int_equal(uvn_drv_set_opt(c.d, UVN_OPT_DESC_CACHE_THR, UVN_DRV_DESC_CACHE_MAX + 1),
			 -EINVAL);
	echo_each(&c, 0, 300, 3, 20, 10);
	uvn_drv_txq_stats(c.d, 0, &t3);
	assert_int_equal(t3.desc_cache_miss - t2.desc_cache_miss, 10);
	/* Every arena table went back: the arena holds what it held before. */
	uvn_tx_reclaim(c.d, 0);
	uvn_drv_mem_info(c.d, 0, &mi);
	assert_int_equal(mi.arena_in_use, mi0.arena_in_use);
	stop_and_finish(&c);
}

/* ------------------------------------------------------------ offloads */

static void test_tx_offloads(void **state)
{
	struct tbe_cfg bc = { .mode = TBE_SINK };
	struct uvn_drv_txq_stats ts;
	uint8_t frame[128], flags, gso;
	struct uvn_drv_cfg cfg;
	struct uvn_pkt *p;
	struct ctx c;

	(void)state;
	for (int with_csum = 0; with_csum < 2; with_csum++) {
		start_be(&c, &bc);
		uvn_drv_cfg_init(&cfg);
		cfg.poll = true;
		if (!with_csum)
			cfg.features_off |= F(VIRTIO_NET_F_CSUM);
		open_drv(&c, &cfg);
		/* A UDP/IPv4 frame asking for its checksum to be completed. */
		assert_int_equal(uvn_drv_tx_alloc(c.d, 0, &p, 1, 100), 1);
		{
			uint8_t *b = p->seg[0].iov_base;
			uint16_t pseudo;
			uint8_t ph[12] = { 198, 18, 0, 1, 198, 18, 0, 2, 0, 17, 0, 66 };

			make_frame(b, 100, 7);
			b[12] = 0x08;
			b[13] = 0x00;
			b[14] = 0x45;
			memcpy(b + 26, ph, 8);
			b[34] = 0; b[35] = 9; b[36] = 0; b[37] = 9; b[38] = 0; b[39] = 66;
			pseudo = uvn_csum_buf(ph, sizeof(ph)); /* folded sum, not inverted */
			b[40] = (uint8_t)(pseudo >> 8);
			b[41] = (uint8_t)pseudo;
			p->vnet.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
			p->vnet.csum_start = htole16(34);
			p->vnet.csum_offset = htole16(6);
		}
		assert_int_equal(uvn_tx_burst(c.d, 0, &p, 1), 1);
		/* A TSO frame the backend never agreed to segment: dropped, counted. */
		assert_int_equal(uvn_drv_tx_alloc(c.d, 0, &p, 1, 100), 1);
		make_frame(p->seg[0].iov_base, 100, 8);
		p->vnet.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
		p->vnet.csum_start = htole16(34);
		p->vnet.csum_offset = htole16(16);
		p->vnet.gso_type = VIRTIO_NET_HDR_GSO_TCPV4;
		p->vnet.gso_size = htole16(1000);
		assert_int_equal(uvn_tx_burst(c.d, 0, &p, 1), 1);
		/* csum range beyond the frame: dropped. */
		assert_int_equal(uvn_drv_tx_alloc(c.d, 0, &p, 1, 100), 1);
		make_frame(p->seg[0].iov_base, 100, 9);
		p->vnet.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
		p->vnet.csum_start = htole16(90);
		p->vnet.csum_offset = htole16(16);
		assert_int_equal(uvn_tx_burst(c.d, 0, &p, 1), 1);
		/* A plain frame last: the device takes frames in ring order, so
		 * when it has this one, it has all it will ever get of the three. */
		assert_int_equal(uvn_drv_tx_alloc(c.d, 0, &p, 1, 100), 1);
		make_frame(p->seg[0].iov_base, 100, 10);
		assert_int_equal(uvn_tx_burst(c.d, 0, &p, 1), 1);
		assert_true(tbe_wait_tx_frames(c.be, 2));
		assert_int_equal(tbe_tx_frames(c.be), 2);
		assert_int_equal(tbe_frame(c.be, 1, frame, sizeof(frame)), 100);
		assert_int_equal(frame[14], 10);
		assert_int_equal(tbe_frame(c.be, 0, frame, sizeof(frame)), 100);
		assert_int_equal(tbe_frame_hdr(c.be, 0, &flags, &gso), 0);
		uvn_drv_txq_stats(c.d, 0, &ts);
		assert_int_equal(ts.drops, 2);
		assert_int_equal(ts.err_offload, 2);
		if (with_csum) {
			assert_int_equal(flags, VIRTIO_NET_HDR_F_NEEDS_CSUM);
			assert_int_equal(ts.csum_sw, 0);
		} else {
			/* Completed by the driver: the UDP checksum now verifies. */
			uint8_t ph[12] = { 198, 18, 0, 1, 198, 18, 0, 2, 0, 17, 0, 66 };
			uint32_t sum = (uint32_t)uvn_csum_buf(ph, 12) + uvn_csum_buf(frame + 34, 66);

			sum = (sum & 0xffff) + (sum >> 16);
			assert_int_equal(flags, 0);
			assert_int_equal(ts.csum_sw, 1);
			assert_int_equal((uint16_t)sum, 0xffff);
		}
		(void)gso;
		stop_and_finish(&c);
	}
}

/* A frame of more segments than a small ring holds in one chain is
 * dropped and counted; the instance goes on (it used to fail it). */
static void test_segs_over_ring(void **state)
{
	static const unsigned sz[] = { 200 };
	struct tbe_cfg bc = { .mode = TBE_LOOP };
	struct uvn_drv_txq_stats ts;
	struct uvn_drv_cfg cfg;
	struct uvn_pkt *p;
	uint8_t *f;
	struct ctx c;

	(void)state;
	start_be(&c, &bc);
	uvn_drv_cfg_init(&cfg);
	cfg.poll = true;
	cfg.queue_size = 32;
	open_drv(&c, &cfg);
	assert_int_equal(uvn_drv_tx_alloc(c.d, 0, &p, 1, 40 * 16), 1);
	f = p->seg[0].iov_base;
	make_frame(f, 40 * 16, 3);
	for (unsigned i = 0; i < 40; i++)
		p->seg[i] = (struct iovec){ f + 16 * i, 16 };
	p->nseg = 40;
	assert_int_equal(uvn_tx_burst(c.d, 0, &p, 1), 1);
	uvn_drv_txq_stats(c.d, 0, &ts);
	assert_int_equal(ts.err_segs, 1);
	assert_int_equal(ts.drops, 1);
	assert_int_equal(uvn_drv_error(c.d), 0);
	/* and the ring still carries frames */
	assert_int_equal(uvn_drv_tx_alloc(c.d, 0, &p, 1, 200), 1);
	make_frame(p->seg[0].iov_base, 200, 4);
	assert_int_equal(uvn_tx_burst(c.d, 0, &p, 1), 1);
	recv_frames(&c, 0, sz, 1, 4, 1);
	stop_and_finish(&c);
}

/* Frames outside shared memory are copied into a bounce buffer. */
static void test_bounce(void **state)
{
	static const unsigned sz[] = { 500 };
	struct tbe_cfg bc = { .mode = TBE_LOOP };
	struct uvn_drv_txq_stats ts;
	struct uvn_drv_cfg cfg;
	static uint8_t private_buf[4096];
	struct uvn_pkt *p;
	struct ctx c;

	(void)state;
	start_be(&c, &bc);
	uvn_drv_cfg_init(&cfg);
	cfg.poll = true;
	open_drv(&c, &cfg);
	make_frame(private_buf, 500, 5);
	p = uvn_pkt_alloc(c.ext);
	p->seg[0].iov_base = private_buf;
	p->seg[0].iov_len = 500;
	p->nseg = 1;
	p->len = 500;
	assert_int_equal(uvn_tx_burst(c.d, 0, &p, 1), 1);
	/* The frame was copied: our buffer is free to change at once. */
	memset(private_buf, 0, sizeof(private_buf));
	recv_frames(&c, 0, sz, 1, 5, 1);
	/* Too big to bounce: dropped and counted. */
	p = uvn_pkt_alloc(c.ext);
	p->seg[0].iov_base = private_buf;
	p->seg[0].iov_len = 4000;
	p->nseg = 1;
	p->len = 4000;
	assert_int_equal(uvn_tx_burst(c.d, 0, &p, 1), 1);
	uvn_drv_txq_stats(c.d, 0, &ts);
	assert_int_equal(ts.bounced, 1);
	assert_int_equal(ts.err_unmapped, 1);
	assert_int_equal(ts.drops, 1);
	stop_and_finish(&c);
}

/* ----------------------------------------------- control, multiqueue */

static void test_ctrl_mq(void **state)
{
	static const unsigned sz[] = { 64, 700 };
	struct tbe_cfg bc = { .mode = TBE_LOOP, .pairs = 2 };
	const uint8_t mac[6] = { 2, 0, 0, 0, 0, 9 };
	struct uvn_drv_cfg cfg;
	struct ctx c;
	unsigned cmds;

	(void)state;
	start_be(&c, &bc);
	uvn_drv_cfg_init(&cfg);
	cfg.poll = true;
	cfg.queue_pairs = 2;
	memcpy(cfg.mac, mac, 6);
	cfg.mac_set = true;
	open_drv(&c, &cfg);
	assert_true(uvn_drv_has_ctrl(c.d));
	assert_true(uvn_drv_features(c.d) & F(VIRTIO_NET_F_MQ));
	/* Every protocol feature we want was offered, so all are in use:
	 * the memory went over with ADD_MEM_REG (CONFIGURE_MEM_SLOTS). */
	assert_int_equal(uvn_drv_protocol_features(c.d),
			 F(VHOST_USER_PROTOCOL_F_MQ) | F(VHOST_USER_PROTOCOL_F_REPLY_ACK) |
			 F(VHOST_USER_PROTOCOL_F_STATUS) | F(VHOST_USER_PROTOCOL_F_CONFIGURE_MEM_SLOTS));
	assert_int_equal(uvn_drv_queue_pairs(c.d), 2);
	/* open: MQ pairs and the MAC */
	assert_int_equal(tbe_pairs_set(c.be), 2);
	cmds = tbe_ctrl_cmds(c.be);
	assert_int_equal(cmds, 2);
	assert_int_equal(uvn_drv_set_promisc(c.d, true), 0);
	assert_int_equal(uvn_drv_set_promisc(c.d, false), 0);
	assert_int_equal(uvn_drv_set_mac(c.d, mac), 0);
	assert_int_equal(uvn_drv_set_queue_pairs(c.d, 1), 0);
	assert_int_equal(tbe_pairs_set(c.be), 1);
	assert_int_equal(uvn_drv_set_queue_pairs(c.d, 2), 0);
	assert_int_equal(uvn_drv_set_queue_pairs(c.d, 3), -EINVAL);
	assert_int_equal(tbe_ctrl_cmds(c.be), cmds + 5);
	/* Each pair carries its own frames. */
	for (unsigned i = 0; i < 20; i++) {
		send_one(&c, 0, sz[i % 2], i, 1);
		send_one(&c, 1, sz[(i + 1) % 2], 100 + i, 1);
	}
	recv_frames(&c, 0, sz, 2, 0, 20);
	{
		/* pair 1 was sent sizes shifted by one: frame 100+i has sz[(i+1)%2] */
		static const unsigned sz1[] = { 700, 64 };

		recv_frames(&c, 1, sz1, 2, 100, 20);
	}
	stop_and_finish(&c);
}

static void test_no_ctrl(void **state)
{
	struct tbe_cfg bc = { .mode = TBE_LOOP };
	struct uvn_drv_cfg cfg;
	struct ctx c;
	const uint8_t mac[6] = { 2, 0, 0, 0, 0, 9 };

	(void)state;
	start_be(&c, &bc);
	uvn_drv_cfg_init(&cfg);
	cfg.poll = true;
	open_drv(&c, &cfg);
	assert_false(uvn_drv_has_ctrl(c.d));
	assert_int_equal(uvn_drv_set_promisc(c.d, true), -ENOTSUP);
	assert_int_equal(uvn_drv_set_mac(c.d, mac), -ENOTSUP);
	assert_int_equal(uvn_drv_set_queue_pairs(c.d, 2), -ENOTSUP);
	uvn_drv_close(c.d);
	tbe_stop(c.be);
	uvn_pkt_pool_destroy(c.ext);
	/* Two pairs from a backend without MQ: refused at open. */
	start_be(&c, &bc);
	uvn_drv_cfg_init(&cfg);
	cfg.queue_pairs = 2;
	cfg.path = c.path;
	assert_int_equal(uvn_drv_open(&cfg, &c.d), -ENOTSUP);
	tbe_stop(c.be);
	uvn_pkt_pool_destroy(c.ext);
}

/* --------------------------------------------------- interrupt waiting */

static void test_interrupts(void **state)
{
	static const unsigned sz[] = { 128 };
	struct tbe_cfg bc = { .mode = TBE_LOOP };
	struct uvn_drv_rxq_stats rs;
	struct uvn_drv_cfg cfg;
	uint8_t frame[128];
	struct ctx c;

	(void)state;
	for (int ring = 0; ring < 2; ring++) {
		for (int event_idx = 0; event_idx < 2; event_idx++) {
			start_be(&c, &bc);
			uvn_drv_cfg_init(&cfg);
			cfg.ring = (enum uvn_ring_layout)ring;
			if (!event_idx)
				cfg.features_off |= F(VIRTIO_RING_F_EVENT_IDX);
			open_drv(&c, &cfg);
			assert_true(uvn_rx_fd(c.d, 0) >= 0);
			/* Nothing comes: the wait times out. */
			assert_int_equal(uvn_rx_wait(c.d, 0, 50), 0);
			for (unsigned i = 0; i < 10; i++) {
				make_frame(frame, 128, i);
				tbe_inject(c.be, 0, frame, 128);
				assert_int_equal(uvn_rx_wait(c.d, 0, 10000), 1);
				recv_frames(&c, 0, sz, 1, i, 1);
			}
			uvn_drv_rxq_stats(c.d, 0, &rs);
			assert_true(rs.interrupts > 0);
			assert_true(rs.waits > 0);
			stop_and_finish(&c);
		}
	}
}

/* Small mode: a frame larger than the buffers is the device's drop, not ours. */
static void test_small_too_big(void **state)
{
	static const unsigned sz[] = { 200 };
	struct tbe_cfg bc = { .mode = TBE_LOOP };
	struct uvn_drv_cfg cfg;
	uint8_t frame[3000];
	struct ctx c;

	(void)state;
	start_be(&c, &bc);
	uvn_drv_cfg_init(&cfg);
	cfg.poll = true;
	cfg.rx_mode = UVN_RX_SMALL;
	open_drv(&c, &cfg);
	make_frame(frame, 3000, 1);
	tbe_inject(c.be, 0, frame, 3000);
	make_frame(frame, 200, 2);
	tbe_inject(c.be, 0, frame, 200);
	recv_frames(&c, 0, sz, 1, 2, 1);
	assert_int_equal(tbe_drops(c.be), 1);
	stop_and_finish(&c);
}

/* Configuration strings for tools. */
static void test_cfg_parse(void **state)
{
	struct uvn_drv_cfg cfg;
	char spec[] = "path=/x,ring=packed,rx_mode=big,indirect=off,queues=2,deferred_alloc=off,"
		      "mrg_sizing=mtu_only,desc_cache=0,desc_cache_thr=7,mac=02:00:00:00:00:0a,poll=1";
	char bad[] = "ring=round";
	char bad2[] = "desc_cache_thr=99";
	const char *err = NULL;

	(void)state;
	uvn_drv_cfg_init(&cfg);
	assert_int_equal(uvn_drv_cfg_parse(&cfg, spec, &err), 0);
	assert_string_equal(cfg.path, "/x");
	assert_int_equal(cfg.ring, UVN_RING_PACKED);
	assert_int_equal(cfg.rx_mode, UVN_RX_BIG);
	assert_true(cfg.features_off & F(VIRTIO_RING_F_INDIRECT_DESC));
	assert_int_equal(cfg.queue_pairs, 2);
	assert_false(cfg.deferred_alloc);
	assert_int_equal(cfg.mrg_sizing, UVN_MRG_MTU_ONLY);
	assert_false(cfg.desc_cache);
	assert_int_equal(cfg.desc_cache_thr, 7);
	assert_true(cfg.mac_set);
	assert_int_equal(cfg.mac[5], 10);
	assert_true(cfg.poll);
	assert_int_equal(uvn_drv_cfg_parse(&cfg, bad, &err), -EINVAL);
	assert_string_equal(err, "ring=round");
	assert_int_equal(uvn_drv_cfg_parse(&cfg, bad2, &err), -EINVAL);
	/* Bad configurations are refused before connecting. */
	uvn_drv_cfg_init(&cfg);
	cfg.path = "/nonexistent/sock";
	cfg.queue_size = 100; /* split rings need a power of two */
	assert_int_equal(uvn_drv_open(&cfg, &(struct uvn_drv *){ NULL }), -EINVAL);
}

int main(void)
{
	struct CMUnitTest tests[sizeof(cells) / sizeof(cells[0]) + 16];
	static char names[sizeof(cells) / sizeof(cells[0])][96];
	static const char *const mode_names[] = { "auto", "small", "big", "mergeable" };
	unsigned n = 0;

	for (unsigned i = 0; i < sizeof(cells) / sizeof(cells[0]); i++) {
		const struct cell *c = &cells[i];

		snprintf(names[i], sizeof(names[i]), "matrix_%s_%s_indirect%d_inorder%d_%s_mtu%u",
			 c->ring == UVN_RING_PACKED ? "packed" : "split", mode_names[c->mode],
			 c->indirect, c->in_order, c->deferred ? "deferred" : "predeferred", c->mtu);
		tests[n++] = (struct CMUnitTest){ names[i], run_cell, NULL, NULL, (void *)c };
	}
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_cfg_parse);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_mrg_sizing);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_deferred_switch);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_desc_cache);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_tx_offloads);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_bounce);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_segs_over_ring);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_ctrl_mq);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_no_ctrl);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_interrupts);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_small_too_big);
	return _cmocka_run_group_tests("driver", tests, n, NULL, NULL);
}
