/* SPDX-License-Identifier: MIT */
/*
 * Mergeable rx takes all the buffers a frame needs first and then writes
 * the frame through them (lib/net/device/rx.c, write_chains()), the chains
 * taken so far first when the next one's iovecs do not fit beside theirs.
 * Whatever the layout (back to back, reversed, apart, chains of many
 * pieces, a packet of many segments, a checksum completed for the guest),
 * the guest gets every byte where the spec puts it, lengths and
 * num_buffers right, and nothing written past them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <endian.h>

#include <cmocka.h>

#include "net/device/netdev.h"
#include "netdev_fix.h"

#define BASE (F(VIRTIO_F_VERSION_1) | F(VIRTIO_NET_F_MRG_RXBUF))
#define BUF 1536u
#define NBUF 48u
#define FILL 0xee

/* The guest's receive memory: NBUF slots of BUF bytes, back to back. */
static uint8_t mem[NBUF][BUF];

static struct ndf *setup(unsigned num)
{
	struct ndf *fx = calloc(1, sizeof(*fx));

	ndf_init(fx, &(struct ndf_cfg){ .num = num, .features = BASE, .small = 4, .big = 2 });
	memset(mem, FILL, sizeof(mem));
	return fx;
}

static void teardown_fx(struct ndf *fx)
{
	ndf_fini(fx);
	free(fx);
}

static struct uvn_pkt *frame(struct ndf *fx, uint32_t len, uint8_t seed)
{
	struct uvn_pkt *p = uvn_pkt_alloc(fx->big);
	uint8_t *b = p->buf;

	for (uint32_t i = 0; i < len; i++)
		b[i] = (uint8_t)(seed + i * 13 + (i >> 8));
	uvn_pkt_set_buf(p, len);
	return p;
}

/* Post slots @order[0 .. n) as one-buffer chains of @len bytes. */
static void post(struct ndf *fx, const unsigned *order, unsigned n, uint32_t len)
{
	for (unsigned i = 0; i < n; i++)
		tq_give(&fx->ring, mem[order[i]], len, true);
	uvn_vq_drv_kick_prepare(fx->ring.drv);
}

/*
 * Take the used buffers back and rebuild what the guest received: the
 * header of the first (num_buffers checked) and the frame from the stream.
 * Every buffer but the last is full (@len bytes); the rest of the last one,
 * and the slots not used, keep FILL.
 */
static void check_got(struct ndf *fx, const struct uvn_pkt *p, unsigned nbufs, uint32_t len,
		      struct virtio_net_hdr_v1 *h)
{
	static uint8_t got[70000];
	struct uvn_vq_done done[NBUF];
	uint32_t at = 0, stream = UVN_NET_HDR_LEN + p->len;

	assert_int_equal(tq_take(&fx->ring, done, nbufs), nbufs);
	for (unsigned i = 0; i < nbufs; i++) {
		uint32_t want = i + 1 < nbufs ? len : stream - (nbufs - 1) * len;
		const uint8_t *b = done[i].token;

		assert_int_equal(done[i].len, want);
		memcpy(got + at, b, want);
		at += want;
		for (uint32_t k = want; k < len; k++)
			assert_int_equal(b[k], FILL);
	}
	memcpy(h, got, sizeof(*h));
	assert_int_equal(le16toh(h->num_buffers), nbufs);
	assert_memory_equal(got + UVN_NET_HDR_LEN, p->buf, p->len);
}

/* Buffers back to back (a driver carving them from pages). */
static void test_back_to_back(void **state)
{
	static const uint32_t sizes[] = { 1600, 16384, 65535 - 42, 3 * BUF - UVN_NET_HDR_LEN };

	(void)state;
	for (unsigned s = 0; s < 4; s++) {
		struct ndf *fx = setup(64);
		struct uvn_pkt *p = frame(fx, sizes[s], (uint8_t)s);
		unsigned order[NBUF], n = (UVN_NET_HDR_LEN + sizes[s] + BUF - 1) / BUF;
		struct virtio_net_hdr_v1 h;

		for (unsigned i = 0; i < NBUF; i++)
			order[i] = i;
		post(fx, order, NBUF, BUF);
		assert_int_equal(uvn_netdev_rx(&fx->q, &p, 1), 1);
		assert_int_equal(fx->notified, 1);
		check_got(fx, p, n, BUF, &h);
		assert_int_equal(h.flags, 0);
		/* Slots after the frame's were not written. */
		for (unsigned i = n; i < NBUF; i++)
			assert_int_equal(mem[i][0], FILL);
		assert_int_equal(mem[NBUF - 1][BUF - 1], FILL);
		uvn_pkt_free(p);
		teardown_fx(fx);
	}
}

/* Buffers of 4 KB, as a driver sizing them after the frames it gets posts
 * them: copies longer than REP MOVSB's threshold, source and destination
 * aligned differently (the header's 12 bytes), go in pieces. */
static void test_big_buffers(void **state)
{
	uint8_t *m = &mem[0][0];

	(void)state;
	for (unsigned shift = 0; shift < 2; shift++) {
		struct ndf *fx = setup(64);
		struct uvn_pkt *p = frame(fx, 60000, 17);
		struct virtio_net_hdr_v1 h;
		uint32_t len = 4096 - 64 * shift;

		for (unsigned i = 0; i < 16; i++)
			tq_give(&fx->ring, m + i * 4096 + 64 * shift, len, true);
		uvn_vq_drv_kick_prepare(fx->ring.drv);
		assert_int_equal(uvn_netdev_rx(&fx->q, &p, 1), 1);
		check_got(fx, p, (UVN_NET_HDR_LEN + 60000 + len - 1) / len, len, &h);
		uvn_pkt_free(p);
		teardown_fx(fx);
	}
}

/* The same frame into buffers in reverse memory order, and into buffers
 * with gaps between them (shorter than their slots). */
static void test_apart(void **state)
{
	(void)state;
	for (unsigned gap = 0; gap < 2; gap++) {
		struct ndf *fx = setup(64);
		struct uvn_pkt *p = frame(fx, 16384, 7);
		uint32_t len = gap ? BUF - 64 : BUF;
		unsigned order[NBUF], n = (UVN_NET_HDR_LEN + 16384 + len - 1) / len;
		struct virtio_net_hdr_v1 h;

		for (unsigned i = 0; i < NBUF; i++)
			order[i] = gap ? i : NBUF - 1 - i;
		post(fx, order, NBUF, len);
		assert_int_equal(uvn_netdev_rx(&fx->q, &p, 1), 1);
		check_got(fx, p, n, len, &h);
		uvn_pkt_free(p);
		teardown_fx(fx);
	}
}

/* Two frames, back to back except every third buffer. */
static void test_mixed(void **state)
{
	struct ndf *fx = setup(64);
	struct uvn_pkt *p[2] = { frame(fx, 20000, 3), frame(fx, 9000, 4) };
	unsigned order[NBUF], k = 0;
	struct virtio_net_hdr_v1 h;

	(void)state;
	for (unsigned i = 0; i < NBUF; i++)
		order[k++] = i % 3 == 2 ? NBUF - 1 - i / 3 : i - i / 3;
	post(fx, order, NBUF, BUF);
	assert_int_equal(uvn_netdev_rx(&fx->q, p, 2), 2);
	check_got(fx, p[0], 14, BUF, &h);
	check_got(fx, p[1], 6, BUF, &h);
	uvn_pkt_free_bulk(p, 2);
	teardown_fx(fx);
}

/*
 * A packet of several segments (a zero-copy frame in the sender's pages):
 * 54 bytes of headers, then 4 KB pieces apart from each other, each split
 * over the buffers it spans.
 */
static void test_segments(void **state)
{
	static uint8_t src[5][4096 + 100];
	static const uint32_t lens[5] = { 54, 4096, 4096, 4096, 16384 - 54 - 3 * 4096 };

	(void)state;
	for (unsigned apart = 0; apart < 2; apart++) {
		struct ndf *fx = setup(64);
		struct uvn_pkt *p = frame(fx, 16384, 21);
		unsigned order[NBUF], n = (UVN_NET_HDR_LEN + 16384 + BUF - 1) / BUF;
		struct uvn_pkt *s = uvn_pkt_alloc(fx->big);
		struct virtio_net_hdr_v1 h;
		uint32_t at = 0;

		/* s carries p's bytes in five pieces; p keeps them flat to compare. */
		for (unsigned i = 0; i < 5; i++) {
			memcpy(src[i] + 50, (uint8_t *)p->buf + at, lens[i]);
			s->seg[i] = (struct iovec){ src[i] + 50, lens[i] };
			at += lens[i];
		}
		s->nseg = 5;
		s->len = at;
		assert_int_equal(at, p->len);
		for (unsigned i = 0; i < NBUF; i++)
			order[i] = apart ? (i * 7) % NBUF : i;
		post(fx, order, NBUF, BUF);
		assert_int_equal(uvn_netdev_rx(&fx->q, &s, 1), 1);
		check_got(fx, p, n, BUF, &h);
		uvn_pkt_free(s);
		uvn_pkt_free(p);
		teardown_fx(fx);
	}
}

/*
 * Chains of many small pieces: three take more iovecs than a queue's
 * array holds (UVN_NETDEV_MAX_IOV), so the chains before the third are
 * written first, and the frame goes on in the third. Pieces back to back
 * and apart.
 */
#define PIECES 100u
#define PIECE 16u

static void test_many_pieces(void **state)
{
	(void)state;
	for (unsigned apart = 0; apart < 2; apart++) {
		struct ndf *fx = setup(512);
		struct uvn_pkt *p = frame(fx, 4000, 9);
		uint8_t *m = &mem[0][0];
		struct uvn_vq_done done[4];
		uint8_t got[4100];
		uint32_t at = 0, stride = apart ? 2 * PIECE : PIECE;

		for (unsigned c = 0; c < 3; c++) {
			struct uvn_sg sg[PIECES];

			for (unsigned i = 0; i < PIECES; i++)
				sg[i] = tq_sg(m + (c * PIECES + i) * stride, PIECE);
			assert_int_equal(uvn_vq_drv_add(fx->ring.drv, sg, 0, PIECES,
							m + c * PIECES * stride, 0), 0);
		}
		uvn_vq_drv_kick_prepare(fx->ring.drv);
		assert_int_equal(uvn_netdev_rx(&fx->q, &p, 1), 1);
		assert_false(fx->q.broken);
		assert_int_equal(tq_take(&fx->ring, done, 4), 3);
		assert_int_equal(done[0].len, PIECES * PIECE);
		assert_int_equal(done[1].len, PIECES * PIECE);
		assert_int_equal(done[2].len, UVN_NET_HDR_LEN + 4000 - 2 * PIECES * PIECE);
		for (unsigned i = 0; i < 3 * PIECES && at < UVN_NET_HDR_LEN + 4000; i++) {
			memcpy(got + at, m + i * stride, PIECE);
			at += PIECE;
		}
		assert_int_equal(le16toh(((struct virtio_net_hdr_v1 *)got)->num_buffers), 3);
		assert_memory_equal(got + UVN_NET_HDR_LEN, p->buf, 4000);
		/* Past the stream, and between the pieces, nothing written. */
		assert_int_equal(m[(2 * PIECES + 51) * stride], FILL);
		if (apart)
			assert_int_equal(m[PIECE], FILL);
		uvn_pkt_free(p);
		teardown_fx(fx);
	}
}

/*
 * A checksum completed for the guest lands in the right place however the
 * buffers lie: the same frame, delivered into buffers back to back and into
 * buffers apart, reads the same, its checksum field written.
 */
static const uint8_t udp4[42] = {
	[12] = 0x08, [13] = 0x00,                      /* IPv4 */
	[14] = 0x45, [23] = 17,                        /* IHL 5, UDP */
	[26] = 10, [29] = 1, [30] = 10, [33] = 2,      /* 10.0.0.1 -> 10.0.0.2 */
};

static void csum_into(const unsigned *order, uint8_t *out, uint32_t len)
{
	struct ndf *fx = setup(64);
	struct uvn_pkt *p = frame(fx, len, 5);
	uint16_t ulen = (uint16_t)(len - 34);
	struct virtio_net_hdr_v1 h;
	uint8_t *b = p->buf;

	memcpy(b, udp4, sizeof(udp4));
	b[16] = (uint8_t)((len - 14) >> 8);
	b[17] = (uint8_t)(len - 14);
	b[38] = (uint8_t)(ulen >> 8);
	b[39] = (uint8_t)ulen;
	p->vnet.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	p->vnet.csum_start = htole16(34);
	p->vnet.csum_offset = htole16(6);
	post(fx, order, 8, BUF);
	assert_int_equal(uvn_netdev_rx(&fx->q, &p, 1), 1);
	assert_int_equal(fx->q.st.csum_sw, 1);
	{
		struct uvn_vq_done done[8];
		uint32_t at = 0, stream = UVN_NET_HDR_LEN + len;
		unsigned n = tq_take(&fx->ring, done, 8);

		for (unsigned i = 0; i < n; i++) {
			memcpy(out + at, done[i].token, done[i].len);
			at += done[i].len;
		}
		assert_int_equal(at, stream);
	}
	memcpy(&h, out, sizeof(h));
	assert_int_equal(h.flags, 0);
	uvn_pkt_free(p);
	teardown_fx(fx);
}

static void test_csum_any_layout(void **state)
{
	static const unsigned together[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
	static const unsigned apart[8] = { 7, 5, 3, 1, 6, 4, 2, 0 };
	static uint8_t a[8 * BUF], b[8 * BUF];
	uint32_t len = 3000; /* the checksum field at stream offset 52 */

	(void)state;
	csum_into(together, a, len);
	csum_into(apart, b, len);
	assert_memory_equal(a, b, UVN_NET_HDR_LEN + len);
	assert_false(a[UVN_NET_HDR_LEN + 40] == 0 && a[UVN_NET_HDR_LEN + 41] == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_back_to_back),
		cmocka_unit_test(test_apart),
		cmocka_unit_test(test_big_buffers),
		cmocka_unit_test(test_mixed),
		cmocka_unit_test(test_segments),
		cmocka_unit_test(test_many_pieces),
		cmocka_unit_test(test_csum_any_layout),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
