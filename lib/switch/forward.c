/* SPDX-License-Identifier: MIT */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "net/csum.h"
#include "net/hdr.h"
#include "switch/forward.h"
#include "util/sys.h"

#define BURST 32
#define FDB_SIZE 4096
#define FDB_AGE_NS (300ull * 1000000000ull)

int uvn_fwd_init(struct uvn_fwd *f, enum uvn_fwd_mode mode, uint32_t txonly_size)
{
	memset(f, 0, sizeof(*f));
	f->mode = mode;
	f->txonly_size = txonly_size;
	atomic_init(&f->gen_left, 0);
	return uvn_fdb_init(&f->fdb, FDB_SIZE, FDB_AGE_NS);
}

void uvn_fwd_fini(struct uvn_fwd *f)
{
	uvn_fdb_fini(&f->fdb);
}

void uvn_fwd_stats_add(struct uvn_fwd_stats *sum, const struct uvn_fwd_worker *w)
{
	struct uvn_fwd_stats s;

	uvn_stats_snapshot(&s, &w->st, sizeof(s));
	sum->forwarded += s.forwarded;
	sum->flooded += s.flooded;
	sum->filtered += s.filtered;
	sum->sunk += s.sunk;
	sum->generated += s.generated;
}

int uvn_fwd_add_port(struct uvn_fwd *f, struct uvn_port *p)
{
	unsigned i = 0;

	while (i < f->nports && f->ports[i])
		i++;
	if (i == UVN_FWD_MAX_PORTS)
		return -ENOSPC;
	p->id = (uint16_t)i;
	f->ports[i] = p;
	if (i == f->nports)
		f->nports++;
	return 0;
}

void uvn_fwd_del_port(struct uvn_fwd *f, struct uvn_port *p)
{
	uvn_fwd_port_down(f, p);
	f->ports[p->id] = NULL;
	while (f->nports && !f->ports[f->nports - 1])
		f->nports--;
}

void uvn_fwd_port_down(struct uvn_fwd *f, struct uvn_port *p)
{
	uvn_fdb_flush_port(&f->fdb, p->id);
}

/* Frames for one output port, collected over a burst, sent on the
 * worker's queue of that port. */
static void send_list(struct uvn_port *p, unsigned hint, struct uvn_fwd_out *o)
{
	p->ops->tx(p, hint, o->pkts, o->n);
	/* tx copies what it sends: our references go either way. */
	uvn_pkt_free_bulk(o->pkts, o->n);
	o->n = 0;
}

static const uint8_t *frame_macs(const struct uvn_pkt *p)
{
	/* Ingress guarantees at least an Ethernet header in the first segment
	 * for frames we copied; check anyway for borrowed ones. */
	return p->seg[0].iov_len >= UVN_ETH_HLEN ? p->seg[0].iov_base : NULL;
}

static void do_switch(struct uvn_fwd *f, struct uvn_fwd_worker *w, struct uvn_port *in,
		      struct uvn_pkt **pkts, unsigned n)
{
	struct uvn_fwd_out *out = w->out;
	uint64_t now = uvn_now_ns();

	for (unsigned i = 0; i < n; i++) {
		const uint8_t *mac = frame_macs(pkts[i]);
		uint16_t dst = UVN_FDB_NO_PORT;

		if (!mac) {
			uvn_pkt_free(pkts[i]);
			continue;
		}
		if (!uvn_mac_is_multicast(mac + 6))
			uvn_fdb_learn(&f->fdb, uvn_mac_key(mac + 6), in->id, now);
		if (!uvn_mac_is_multicast(mac))
			dst = uvn_fdb_lookup(&f->fdb, uvn_mac_key(mac), now);
		if (dst == in->id) {
			uvn_stat_inc(&w->st.filtered);
			uvn_pkt_free(pkts[i]);
		} else if (dst != UVN_FDB_NO_PORT && dst < f->nports && f->ports[dst]) {
			out[dst].pkts[out[dst].n++] = pkts[i];
			uvn_stat_inc(&w->st.forwarded);
		} else {
			/* Flood: one reference per other port; ours goes to the last. */
			unsigned targets = 0;

			for (unsigned o = 0; o < f->nports; o++) {
				if (o == in->id || !f->ports[o])
					continue;
				if (targets++)
					uvn_pkt_ref(pkts[i]);
				out[o].pkts[out[o].n++] = pkts[i];
			}
			if (!targets)
				uvn_pkt_free(pkts[i]);
			uvn_stat_inc(&w->st.flooded);
		}
	}
	for (unsigned o = 0; o < f->nports; o++)
		if (out[o].n)
			send_list(f->ports[o], w->id, &out[o]);
}

static void do_loopback(struct uvn_fwd_worker *w, struct uvn_port *in, struct uvn_pkt **pkts,
			unsigned n)
{
	unsigned out = 0;

	for (unsigned i = 0; i < n; i++) {
		struct uvn_pkt *p = pkts[i];
		uint8_t *m, t[6];

		/* The swap writes the frame: never into a guest's TX buffer. */
		if (p->ubuf || p->seg[0].iov_len < 12) {
			struct uvn_pkt *c = w->copy ? uvn_pkt_copy(p, w->copy) : NULL;

			uvn_pkt_free(p);
			if (!c || c->len < 12) {
				if (c)
					uvn_pkt_free(c);
				continue;
			}
			p = c;
		}
		m = p->seg[0].iov_base;
		memcpy(t, m, 6);
		memcpy(m, m + 6, 6);
		memcpy(m + 6, t, 6);
		pkts[out++] = p;
	}
	/* Back on the queue they came from, like testpmd's macswap: one
	 * worker serves that rx queue, so it is the only sender there. */
	if (out)
		in->ops->tx(in, pkts[0]->queue, pkts, out);
	uvn_pkt_free_bulk(pkts, out);
}

void uvn_fwd_burst(struct uvn_fwd *f, struct uvn_fwd_worker *w, struct uvn_port *in,
		   struct uvn_pkt **pkts, unsigned n)
{
	switch (f->mode) {
	case UVN_FWD_SWITCH:
		do_switch(f, w, in, pkts, n);
		break;
	case UVN_FWD_LOOPBACK:
		do_loopback(w, in, pkts, n);
		break;
	default:
		uvn_stat_add(&w->st.sunk, n);
		uvn_pkt_free_bulk(pkts, n);
		break;
	}
}

/*
 * txonly frames. Up to 1518 bytes (an MTU-size frame, or the "1518 B" of
 * benchmark tables, which testpmd sends plain too) an Ethernet + IPv4 + UDP
 * frame like testpmd's; above, a TCPv4 GSO frame (NEEDS_CSUM, MSS 1448) as
 * a guest's TSO would send it, for 64 KB streams: its payload is
 * gen_payload, never written, shared by every such frame (segment 1).
 */
#define GEN_MTU_FRAME 1518u
#define GEN_MSS 1448u
#define GEN_TCP_HDR 54u
static uint8_t gen_payload[65536];

static void put16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* Ethernet + IPv4 header (with its checksum) for an IP packet of @size - 14 bytes. */
static void write_l2_l3(uint8_t *b, const uint8_t *src_mac, uint32_t size, uint8_t proto)
{
	static const uint8_t dst[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x02 };

	memcpy(b, dst, 6);
	memcpy(b + 6, src_mac, 6);
	b[12] = 0x08;
	b[13] = 0x00;
	memset(b + 14, 0, 20);
	b[14] = 0x45;
	put16(b + 16, size - 14);
	b[20] = proto == 6 ? 0x40 : 0; /* TCP: don't fragment */
	b[22] = 64;
	b[23] = proto;
	memcpy(b + 26, "\xc6\x12\x00\x01\xc6\x12\x00\x02", 8); /* 198.18.0.1 -> .2 */
	put16(b + 24, (uint16_t)~uvn_csum_buf(b + 14, 20));
}

static void write_template(uint8_t *b, const uint8_t *src_mac, uint32_t size)
{
	write_l2_l3(b, src_mac, size, 17);
	memset(b + 34, 0, 8);
	put16(b + 34, 1024);
	put16(b + 36, 1025);
	put16(b + 38, size - 34);
}

static void write_gso(struct uvn_pkt *p, const uint8_t *src_mac, uint32_t size)
{
	uint8_t *b = p->buf, *th = b + 34;
	uint32_t sum;

	write_l2_l3(b, src_mac, size, 6);
	memset(th, 0, 20);
	put16(th, 1024);
	put16(th + 2, 1025);
	th[12] = 5 << 4;
	th[13] = 0x18; /* ACK, PSH */
	put16(th + 14, 0xffff);
	/* NEEDS_CSUM: the checksum field holds the pseudo-header sum. */
	sum = uvn_csum_buf(b + 26, 8) + 6u + (size - 34);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	put16(th + 16, sum);
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
	struct uvn_pkt *pkts[BURST];
	unsigned sent, n = BURST;

	if (f->txonly_count && !(n = budget(f, BURST)))
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
