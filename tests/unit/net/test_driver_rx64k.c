/* SPDX-License-Identifier: MIT */
/*
 * 64 KB frames received whole, none dropped, in every rx mode. The driver
 * sends 65535-byte TSO frames through the project's own backend
 * (test_driver_be.c, loop mode), which passes each back whole to big and
 * mergeable buffers (GUEST_TSO4) and segments it for small buffers (the
 * driver does not negotiate guest GSO there). The frames of a ring's worth
 * of buffers are in the ring before the one burst that takes them all, and
 * the application holds them all at once: mergeable frames of 43 or 44
 * buffers each, more than a packet had segments (they were copied into a
 * pool of four rooms, and the fifth frame of a burst was dropped). Every
 * byte is checked, every buffer comes back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <uvnet/driver.h>

#include "gso_frames.h"
#include "test_driver_be.h"

#define F(b) (1ull << (b))
#define MRG UVN_RX_MERGEABLE
#define SPLIT UVN_RING_SPLIT
#define PACKED UVN_RING_PACKED
#define FRAME 65535u                     /* bytes, as uvnet-perf's stream rx 65535 */
#define PAYLOAD (FRAME - 14u - 20u - 20u)
#define MSS 1460u
#define NSEG ((PAYLOAD + MSS - 1) / MSS) /* segments of a frame for small buffers */
#define ROOM 65600u                      /* a frame's room in shared memory */
#define QSIZE 256u
#define NFRAMES 5u                       /* 5 x 44 mergeable buffers, 5 x 45 small ones fit */
#define ROUNDS 3u
#define MAXRX (NFRAMES * NSEG)

struct cell {
	const char *name;
	enum uvn_rx_mode mode;
	enum uvn_ring_layout ring;
	bool indirect, deferred;
	enum uvn_mrg_sizing sizing;
};

static const struct cell cells[] = {
	{ "mergeable split", MRG, SPLIT, true, true, UVN_MRG_HDR_MTU },
	{ "mergeable split mtu-only", MRG, SPLIT, true, true, UVN_MRG_MTU_ONLY },
	{ "mergeable split objects posted", MRG, SPLIT, false, false, UVN_MRG_HDR_MTU },
	{ "mergeable packed", MRG, PACKED, false, true, UVN_MRG_HDR_MTU },
	{ "mergeable packed ewma", MRG, PACKED, true, false, UVN_MRG_EWMA },
	{ "big split", UVN_RX_BIG, SPLIT, true, true, UVN_MRG_HDR_MTU },
	{ "big split direct", UVN_RX_BIG, SPLIT, false, false, UVN_MRG_HDR_MTU },
	{ "big packed", UVN_RX_BIG, PACKED, true, true, UVN_MRG_HDR_MTU },
	{ "small split", UVN_RX_SMALL, SPLIT, true, true, UVN_MRG_HDR_MTU },
	{ "small packed objects posted", UVN_RX_SMALL, PACKED, false, false, UVN_MRG_HDR_MTU },
};

static uint8_t want[FRAME + 64], got[FRAME + 64];

static struct tf_opts frame_opts(unsigned i)
{
	return (struct tf_opts){ .mss = MSS, .seed = (uint8_t)(i * 31 + 7), .seq = 1000000u * i,
				 .ip_id = (uint16_t)(i * 100) };
}

/* Lay frame @i out in @room and send it from there (one segment, no copy). */
static void send_frame(struct uvn_drv *d, struct uvn_pkt_pool *ext, uint8_t *room, unsigned i)
{
	struct tf_opts o = frame_opts(i);
	struct virtio_net_hdr_v1 h;
	struct tf_layout l = tf_build(room, PAYLOAD, &o, &h);
	struct uvn_pkt *p;

	assert_int_equal(l.len, FRAME);
	p = uvn_pkt_alloc(ext);
	assert_non_null(p);
	p->seg[0] = (struct iovec){ room, FRAME };
	p->nseg = 1;
	p->len = FRAME;
	p->vnet = h;
	assert_int_equal(uvn_tx_burst(d, 0, &p, 1), 1);
}

/* Take back every packet the driver sent (the backend took them all). */
static void reclaim_all(struct tbe *be, struct uvn_drv *d, struct uvn_pkt_pool *ext)
{
	for (;;) {
		uint64_t seen = tbe_events(be);

		assert_true(uvn_tx_reclaim(d, 0) >= 0);
		if (uvn_pkt_pool_avail(ext) == uvn_pkt_pool_count(ext))
			return;
		assert_true(tbe_wait(be, seen));
	}
}

/* Wait until the backend delivered or dropped @n frames in all. */
static void wait_delivered(struct tbe *be, uint64_t n)
{
	for (;;) {
		uint64_t seen = tbe_events(be);

		if (tbe_rx_frames(be) + tbe_drops(be) >= n)
			return;
		assert_true(tbe_wait(be, seen));
	}
}

/* Frame @i came back whole: the same bytes, still a TSO frame. */
static void check_whole(const struct uvn_pkt *p, unsigned i)
{
	struct tf_opts o = frame_opts(i);
	struct virtio_net_hdr_v1 h;

	tf_build(want, PAYLOAD, &o, &h);
	assert_int_equal(p->len, FRAME);
	assert_true(p->nseg <= UVN_PKT_MAX_SEGS);
	assert_int_equal(uvn_pkt_read(p, 0, got, FRAME), FRAME);
	assert_memory_equal(got, want, FRAME);
	assert_int_equal(p->vnet.gso_type, VIRTIO_NET_HDR_GSO_TCPV4);
	assert_int_equal(le16toh(p->vnet.gso_size), MSS);
}

/* Segment @s of frame @i: headers and payload slice as the frame says. */
static void check_seg(const struct uvn_pkt *p, unsigned i, unsigned s)
{
	struct tf_opts o = frame_opts(i);
	struct virtio_net_hdr_v1 h;
	struct tf_layout l = tf_build(want, PAYLOAD, &o, &h);
	const char *err;

	assert_true(p->len <= sizeof(got));
	assert_int_equal(uvn_pkt_read(p, 0, got, p->len), p->len);
	err = tf_check_seg(got, p->len, want, &l, &o, s, NSEG,
			   p->vnet.flags & VIRTIO_NET_HDR_F_NEEDS_CSUM);
	if (err)
		fail_msg("frame %u segment %u: %s", i, s, err);
}

static void run_cell(void **state)
{
	const struct cell *cell = *state;
	struct tbe_cfg bc = { .mode = TBE_LOOP };
	struct uvn_pkt_pool_cfg pc = { .count = NFRAMES, .name = "ext" };
	struct uvn_pkt_pool *ext;
	struct uvn_drv_rxq_stats rs;
	struct uvn_drv_mem_info mi;
	struct uvn_drv_cfg cfg;
	struct uvn_pkt **pkts;
	struct uvn_drv *d;
	const char *path;
	struct tbe *be;
	bool whole = cell->mode != UVN_RX_SMALL;
	unsigned per = whole ? 1 : NSEG;
	uint8_t *mem;

	bc.features = tbe_default_features() | F(VIRTIO_NET_F_HOST_TSO4) |
		      F(VIRTIO_NET_F_GUEST_TSO4);
	be = tbe_start(&bc, &path);
	assert_non_null(be);
	assert_int_equal(uvn_pkt_pool_create(&pc, &ext), 0);
	uvn_drv_cfg_init(&cfg);
	cfg.path = path;
	cfg.ring = cell->ring;
	cfg.rx_mode = cell->mode;
	cfg.queue_size = QSIZE;
	cfg.poll = true;
	cfg.deferred_alloc = cell->deferred;
	cfg.mrg_sizing = cell->sizing;
	cfg.app_mem_bytes = 2 * NFRAMES * ROOM;
	/* What uvnet-perf asks for, GUEST_TSO4 in small mode too. */
	cfg.features_extra |= F(VIRTIO_NET_F_HOST_TSO4) | F(VIRTIO_NET_F_GUEST_TSO4);
	if (!cell->indirect)
		cfg.features_off |= F(VIRTIO_RING_F_INDIRECT_DESC);
	assert_int_equal(uvn_drv_open(&cfg, &d), 0);
	assert_int_equal(uvn_drv_rx_mode(d), cell->mode);
	/* Small buffers cannot take a GSO frame: the backend segments for them. */
	assert_int_equal(!!(uvn_drv_features(d) & F(VIRTIO_NET_F_GUEST_TSO4)), whole);
	mem = uvn_drv_mem_alloc(d, NFRAMES * ROOM);
	assert_non_null(mem);
	pkts = calloc(MAXRX + 1, sizeof(*pkts));
	assert_non_null(pkts);

	for (unsigned r = 0; r < ROUNDS; r++) {
		unsigned first = r * NFRAMES, n = 0;
		int k;

		for (unsigned i = 0; i < NFRAMES; i++)
			send_frame(d, ext, mem + i * ROOM, first + i);
		wait_delivered(be, first + NFRAMES);
		assert_int_equal(tbe_drops(be), 0);
		/* One burst takes every frame in the ring, and they are all held. */
		k = uvn_rx_burst(d, 0, pkts, MAXRX + 1);
		assert_int_equal(k, NFRAMES * per);
		for (unsigned i = 0; i < NFRAMES; i++)
			for (unsigned s = 0; s < per; s++, n++) {
				if (whole)
					check_whole(pkts[n], first + i);
				else
					check_seg(pkts[n], first + i, s);
			}
		uvn_pkt_free_bulk(pkts, (unsigned)k);
		reclaim_all(be, d, ext);
	}
	assert_int_equal(uvn_drv_rxq_stats(d, 0, &rs), 0);
	assert_int_equal(rs.packets, ROUNDS * NFRAMES * per);
	assert_int_equal(rs.drops, 0);
	assert_int_equal(rs.drop_nopkt, 0);
	assert_int_equal(rs.err_len + rs.err_num_buffers + rs.err_hdr, 0);
	assert_int_equal(rs.refill_fail, 0);
	/* Received in place: only small mode's deferred buffers are copied out. */
	assert_int_equal(rs.copies, cell->mode == UVN_RX_SMALL && cell->deferred ? rs.packets : 0);
	if (cell->mode == UVN_RX_MERGEABLE)
		assert_int_equal(rs.mrg_multi, ROUNDS * NFRAMES);
	assert_int_equal(tbe_drops(be), 0);

	uvn_drv_mem_free(d, mem, NFRAMES * ROOM);
	uvn_drv_stop(d);
	assert_int_equal(uvn_drv_mem_info(d, 0, &mi), 0);
	assert_int_equal(mi.rx_frags_out, 0);
	assert_int_equal(mi.rx_pkts_free, mi.rx_pkts_total);
	assert_int_equal(mi.tx_pkts_free, mi.tx_pkts_total);
	free(pkts);
	uvn_drv_close(d);
	tbe_stop(be);
	uvn_pkt_pool_destroy(ext);
}

int main(void)
{
	struct CMUnitTest tests[sizeof(cells) / sizeof(cells[0])];

	for (size_t i = 0; i < sizeof(cells) / sizeof(cells[0]); i++)
		tests[i] = (struct CMUnitTest){ .name = cells[i].name, .test_func = run_cell,
						.initial_state = (void *)&cells[i] };
	return cmocka_run_group_tests(tests, NULL, NULL);
}
