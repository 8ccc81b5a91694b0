/* SPDX-License-Identifier: MIT */
/* One guest queue for the net fuzzers (fuzz_guest.h). */
#include <stdlib.h>
#include <string.h>

#include <endian.h>

#include <linux/virtio_config.h>
#include <linux/virtio_net.h>

#include "fuzz_guest.h"
#include "fuzz_mem.h"

#define F(b) (1ull << (b))
#define POOL_SMALL 64u
#define POOL_BIG 8u

static void *xlate_self(void *ctx, uint64_t addr, uint64_t *len)
{
	(void)ctx;
	(void)len;
	return (void *)(uintptr_t)addr;
}

/* Largest segment fz_guest_post takes (a frame's last, 16-bit length). */
#define SEG_CAP 65536u

/*
 * A guest's memory, kept from one input to the next (allocating and
 * faulting it in afresh was much of an input's time): the ring, the netdev
 * queue, and an area per segment of each buffer slot, so the same slot gets
 * the same addresses in every input (they are the guest addresses too).
 */
struct fz_guest_areas {
	const struct fz_guest *owner;
	struct fz_area ring, q;
	struct fz_area seg[FZ_GUEST_NUM][8];
};

static struct fz_guest_areas *areas_of(const struct fz_guest *g)
{
	static struct fz_guest_areas a[2];

	for (unsigned i = 0; i < 2; i++) {
		if (!a[i].owner)
			a[i].owner = g;
		if (a[i].owner == g)
			return &a[i];
	}
	CHECK(!"more than two guests");
	return NULL;
}

static size_t ring_cap(void)
{
	struct uvn_vq_layout s, p;

	CHECK(uvn_vq_layout(false, FZ_GUEST_NUM, &s) == 0);
	CHECK(uvn_vq_layout(true, FZ_GUEST_NUM, &p) == 0);
	return s.size > p.size ? s.size : p.size;
}

bool fz_guest_init(struct fz_guest *g, uint64_t features, bool tx)
{
	bool packed = features & (1ull << VIRTIO_F_RING_PACKED);
	struct uvn_vq_layout l;
	struct uvn_vq_drv_cfg dc = { .num = FZ_GUEST_NUM, .features = features };
	struct uvn_vq_dev_cfg vc = { .num = FZ_GUEST_NUM, .features = features,
				     .xlate = xlate_self, .avail_wrap = true, .used_wrap = true };

	memset(g, 0, sizeof(*g));
	g->areas = areas_of(g);
	CHECK(uvn_vq_layout(packed, FZ_GUEST_NUM, &l) == 0);
	g->ring = fz_area_get(&g->areas->ring, ring_cap(), l.size, 64);
	if (!g->ring)
		return false;
	g->q = (void *)fz_area_get(&g->areas->q, sizeof(*g->q), sizeof(*g->q), 64);
	if (!g->q)
		return false;
	memset(g->q, 0, sizeof(*g->q));
	dc.ring = g->ring;
	CHECK(uvn_vq_drv_create(&dc, &g->drv) == 0);
	vc.desc = g->ring + l.desc;
	vc.driver = g->ring + l.driver;
	vc.device = g->ring + l.device;
	CHECK(uvn_vq_dev_create(&vc, &g->dev) == 0);
	uvn_netdev_q_init(g->q, g->dev, features, tx);
	g->features = features;
	return true;
}

void fz_guest_release(struct fz_buf *b)
{
	CHECK(b->posted); /* a token given back twice */
	for (unsigned i = 0; i < b->n; i++)
		fz_area_put(b->area[i]);
	b->n = 0;
	b->posted = false;
}

void fz_guest_fini(struct fz_guest *g)
{
	for (unsigned i = 0; i < FZ_GUEST_NUM; i++)
		if (g->buf[i].posted)
			fz_guest_release(&g->buf[i]);
	if (g->q)
		uvn_netdev_q_fini(g->q);
	if (g->dev)
		uvn_vq_dev_destroy(g->dev);
	if (g->drv)
		uvn_vq_drv_destroy(g->drv);
	if (g->areas) {
		fz_area_put(&g->areas->q);
		fz_area_put(&g->areas->ring);
	}
}

struct fz_buf *fz_guest_post(struct fz_guest *g, const uint8_t *data, const uint32_t *len,
			     unsigned n, bool out)
{
	struct uvn_sg sg[8];
	struct fz_buf *b = NULL;

	CHECK(n >= 1 && n <= 8);
	for (unsigned i = 0; i < FZ_GUEST_NUM && !b; i++)
		if (!g->buf[i].posted)
			b = &g->buf[i];
	if (!b)
		return NULL;
	for (unsigned i = 0; i < n; i++) {
		b->area[i] = &g->areas->seg[b - g->buf][i];
		/* 16: the alignment malloc gave */
		b->p[i] = fz_area_get(b->area[i], SEG_CAP, len[i], 16);
		CHECK(b->p[i]);
		if (out) {
			memcpy(b->p[i], data, len[i]);
			data += len[i];
		} else {
			memset(b->p[i], 0x5a, len[i]);
		}
		b->len[i] = len[i];
		sg[i] = (struct uvn_sg){ (uint64_t)(uintptr_t)b->p[i], len[i] };
	}
	b->n = n;
	b->out = out;
	b->posted = true;
	if (uvn_vq_drv_add(g->drv, sg, out ? n : 0, out ? 0 : n, b, 0)) {
		fz_guest_release(b);
		return NULL;
	}
	return b;
}

void fz_guest_kick(struct fz_guest *g)
{
	(void)uvn_vq_drv_kick_prepare(g->drv);
}

/* bit 0..7: GUEST_CSUM, GUEST_TSO4, GUEST_TSO6, GUEST_USO4+6, GUEST_ECN,
 * MRG_RXBUF, RING_PACKED, IN_ORDER */
uint64_t fz_rx_features(uint8_t v)
{
	uint64_t f = F(VIRTIO_F_VERSION_1);

	f |= v & 1 ? F(VIRTIO_NET_F_GUEST_CSUM) : 0;
	f |= v & 2 ? F(VIRTIO_NET_F_GUEST_TSO4) : 0;
	f |= v & 4 ? F(VIRTIO_NET_F_GUEST_TSO6) : 0;
	f |= v & 8 ? F(VIRTIO_NET_F_GUEST_USO4) | F(VIRTIO_NET_F_GUEST_USO6) : 0;
	f |= v & 16 ? F(VIRTIO_NET_F_GUEST_ECN) : 0;
	f |= v & 32 ? F(VIRTIO_NET_F_MRG_RXBUF) : 0;
	f |= v & 64 ? F(VIRTIO_F_RING_PACKED) : 0;
	f |= v & 128 ? F(VIRTIO_F_IN_ORDER) : 0;
	return f;
}

/* A frame of @len bytes without GSO, @type its bytes 12-13: does it fit
 * the MTU (a VLAN tag may add 4 bytes)? */
static void check_mtu(const struct fz_guest *b, uint32_t len, const uint8_t *type)
{
	uint16_t t = (uint16_t)(type[0] << 8 | type[1]);

	if (len > b->mtu + UVN_ETH_HLEN)
		CHECK(len <= b->mtu + UVN_ETH_HLEN + 4 && (t == 0x8100 || t == 0x88a8));
}

void fz_guest_check_rx(struct fz_guest *b, uint32_t buf_size)
{
	struct uvn_vq_done done[FZ_GUEST_NUM];
	bool mrg = b->features & F(VIRTIO_NET_F_MRG_RXBUF);
	unsigned more = 0;
	bool sized = false; /* the frame is held to the MTU: its bytes so far */
	uint32_t len = 0;
	uint8_t type[2] = { 0, 0 };
	int n;

	while ((n = uvn_vq_drv_get_used(b->drv, done, FZ_GUEST_NUM)) > 0) {
		for (int i = 0; i < n; i++) {
			struct fz_buf *fb = done[i].token;
			struct virtio_net_hdr_v1 h;
			uint32_t frame;

			CHECK(done[i].len <= buf_size);
			if (more) {
				more--; /* a later buffer of a mergeable packet */
				CHECK(done[i].len > 0);
				len += done[i].len;
				if (sized && !more)
					check_mtu(b, len, type);
				fz_guest_release(fb);
				continue;
			}
			CHECK(done[i].len >= UVN_NET_HDR_LEN);
			memcpy(&h, fb->p[0], sizeof(h));
			frame = done[i].len - UVN_NET_HDR_LEN;
			CHECK(le16toh(h.num_buffers) >= 1);
			if (mrg)
				more = le16toh(h.num_buffers) - 1u;
			else
				CHECK(le16toh(h.num_buffers) == 1);
			CHECK(!(h.flags & ~(VIRTIO_NET_HDR_F_NEEDS_CSUM | VIRTIO_NET_HDR_F_DATA_VALID)));
			if (!(b->features & F(VIRTIO_NET_F_GUEST_CSUM)))
				CHECK(!h.flags);
			if (uvn_hdr_needs_csum(&h) && !more)
				CHECK((uint32_t)le16toh(h.csum_start) + le16toh(h.csum_offset) + 2 <=
				      frame);
			switch (h.gso_type & ~VIRTIO_NET_HDR_GSO_ECN) {
			case VIRTIO_NET_HDR_GSO_NONE:
				CHECK(!(h.gso_type & VIRTIO_NET_HDR_GSO_ECN));
				break;
			case VIRTIO_NET_HDR_GSO_TCPV4:
				CHECK(b->features & F(VIRTIO_NET_F_GUEST_TSO4));
				break;
			case VIRTIO_NET_HDR_GSO_TCPV6:
				CHECK(b->features & F(VIRTIO_NET_F_GUEST_TSO6));
				break;
			case VIRTIO_NET_HDR_GSO_UDP_L4:
				CHECK(b->features & F(VIRTIO_NET_F_GUEST_USO4));
				break;
			default:
				CHECK(!"gso type not negotiated");
			}
			if (h.gso_type) {
				CHECK(le16toh(h.gso_size) > 0 && uvn_hdr_needs_csum(&h));
				if (h.gso_type & VIRTIO_NET_HDR_GSO_ECN)
					CHECK(b->features & F(VIRTIO_NET_F_GUEST_ECN));
			}
			sized = b->mtu && !h.gso_type;
			len = frame;
			type[0] = type[1] = 0;
			if (frame >= UVN_ETH_HLEN) /* else a frame too short to matter */
				memcpy(type, (const uint8_t *)fb->p[0] + UVN_NET_HDR_LEN + 12, 2);
			if (sized && !more)
				check_mtu(b, len, type);
			fz_guest_release(fb);
		}
	}
	CHECK(n == 0);
	CHECK(!more); /* a packet's buffers are published together */
}

static struct uvn_pkt_pool *small_pool, *big_pool;

static void pools_init(void)
{
	struct uvn_pkt_pool_cfg sc = { .count = POOL_SMALL, .buf_size = 2048, .name = "fz-small" };
	struct uvn_pkt_pool_cfg bc = { .count = POOL_BIG, .buf_size = UVN_NETDEV_MAX_FRAME + 64,
				       .name = "fz-big" };

	if (small_pool)
		return;
	CHECK(uvn_pkt_pool_create(&sc, &small_pool) == 0);
	CHECK(uvn_pkt_pool_create(&bc, &big_pool) == 0);
}

struct uvn_pkt_pool *fz_pool_small(void)
{
	pools_init();
	return small_pool;
}

struct uvn_pkt_pool *fz_pool_big(void)
{
	pools_init();
	return big_pool;
}

void fz_pools_check(void)
{
	pools_init();
	CHECK(uvn_pkt_pool_avail(small_pool) == POOL_SMALL);
	CHECK(uvn_pkt_pool_avail(big_pool) == POOL_BIG);
}
