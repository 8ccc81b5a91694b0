/* SPDX-License-Identifier: MIT */
/* The txonly forwarding mode: frames built here and sent to a port. */
#include <endian.h>
#include <string.h>

#include "net/frame.h"
#include "net/hdr.h"
#include "switch/forward.h"

/*
 * txonly frames. Up to 1518 bytes (an MTU-size frame, or the "1518 B" of
 * benchmark tables, which testpmd sends plain too) an Ethernet + IPv4 + UDP
 * frame like testpmd's; above, a TCPv4 GSO frame (NEEDS_CSUM, MSS 1448) as
 * a guest's TSO would send it, for 64 KB streams: its payload is
 * gen_payload, never written, shared by every such frame (segment 1).
 */
#define GEN_MTU_FRAME 1518u
#define GEN_MSS 1448u
#define GEN_TCP_HDR UVN_FRAME_TCP_HDR
static uint8_t gen_payload[65536];

/* txonly frames go to 02:00:00:00:00:02, from 1024 to 1025. */
static struct uvn_frame_addr gen_addr(const uint8_t *src_mac)
{
	static const uint8_t dst[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x02 };

	return (struct uvn_frame_addr){ .dst = dst, .src = src_mac, .sport = 1024, .dport = 1025 };
}

static void write_template(uint8_t *b, const uint8_t *src_mac, uint32_t size)
{
	struct uvn_frame_addr a = gen_addr(src_mac);

	uvn_frame_udp4(b, &a, size);
	uvn_frame_ipv4_csum(b);
}

static void write_gso(struct uvn_pkt *p, const uint8_t *src_mac, uint32_t size)
{
	struct uvn_frame_addr a = gen_addr(src_mac);
	uint8_t *b = p->buf;

	uvn_frame_tcp4(b, &a, size);
	uvn_frame_ipv4_csum(b);
	p->vnet.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	p->vnet.gso_type = VIRTIO_NET_HDR_GSO_TCPV4;
	p->vnet.hdr_len = htole16(GEN_TCP_HDR);
	p->vnet.gso_size = htole16(GEN_MSS);
	p->vnet.csum_start = htole16(34);
	p->vnet.csum_offset = htole16(16);
	p->seg[0] = (struct iovec){ b, GEN_TCP_HDR };
	p->seg[1] = (struct iovec){ gen_payload, size - GEN_TCP_HDR };
	p->nseg = 2;
	p->len = size;
}

/* Were the cached headers built for this port, its MAC (a guest may change
 * it) and this size? Each frame then copies them instead of building them
 * and summing the IPv4 header again (testpmd's txonly does the same). */
static bool tpl_fresh(const struct uvn_fwd_tpl *t, const struct uvn_port *p, uint32_t size)
{
	return t->port == p && t->size == size && !memcmp(t->mac, p->mac, sizeof(t->mac));
}

/* Take up to @want frames from the txonly budget. */
static unsigned budget(struct uvn_fwd *f, unsigned want)
{
	uint64_t left = atomic_load_explicit(&f->gen_left, memory_order_relaxed);

	do {
		if (left < want)
			want = (unsigned)left;
	} while (want && !atomic_compare_exchange_weak_explicit(&f->gen_left, &left, left - want,
								memory_order_relaxed,
								memory_order_relaxed));
	return want;
}

unsigned uvn_fwd_generate(struct uvn_fwd *f, struct uvn_fwd_worker *w, struct uvn_port *p)
{
	struct uvn_pkt *pkts[UVN_FWD_BURST];
	unsigned sent, n = UVN_FWD_BURST;

	if (f->txonly_count && !(n = budget(f, UVN_FWD_BURST)))
		return 0;
	if (!uvn_pkt_alloc_bulk(w->gen, pkts, n)) {
		if (f->txonly_count)
			atomic_fetch_add_explicit(&f->gen_left, n, memory_order_relaxed);
		return 0;
	}
	if (f->txonly_size <= GEN_MTU_FRAME && !tpl_fresh(&w->tpl, p, f->txonly_size)) {
		w->tpl.port = p;
		w->tpl.size = f->txonly_size;
		memcpy(w->tpl.mac, p->mac, sizeof(w->tpl.mac));
		write_template(w->tpl.hdr, p->mac, f->txonly_size);
	}
	for (unsigned i = 0; i < n; i++) {
		if (f->txonly_size > GEN_MTU_FRAME) {
			write_gso(pkts[i], p->mac, f->txonly_size);
			continue;
		}
		memcpy(pkts[i]->buf, w->tpl.hdr, sizeof(w->tpl.hdr));
		uvn_pkt_set_buf(pkts[i], f->txonly_size);
	}
	sent = p->ops->tx(p, w->id, pkts, n);
	uvn_pkt_free_bulk(pkts, n);
	/* The budget counts frames delivered: what a full ring refused goes back. */
	if (f->txonly_count && sent < n)
		atomic_fetch_add_explicit(&f->gen_left, n - sent, memory_order_relaxed);
	uvn_stat_add(&w->st.generated, sent);
	return sent;
}
