/* SPDX-License-Identifier: MIT */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "net/frame.h"
#include "net/hdr.h"
#include "ring/ring.h"
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
	sum->vlan_dropped += s.vlan_dropped;
	sum->limit_dropped += s.limit_dropped;
	sum->tag_failed += s.tag_failed;
}

static bool vlan_conf(const struct uvn_port *p)
{
	return p->conf.vlan.tag || p->conf.vlan.trunk;
}

/* Does any port take the VLAN path for every frame? */
static void update_vlans(struct uvn_fwd *f)
{
	f->vlans = false;
	for (unsigned i = 0; i < f->nports; i++)
		if (f->ports[i] && vlan_conf(f->ports[i]))
			f->vlans = true;
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
	/* What the slot's last port left: nothing of it counts for this one. */
	uvn_fdb_flush_port(&f->fdb, p->id);
	uvn_fdb_set_limit(&f->fdb, p->id, p->conf.mac_limit);
	atomic_store_explicit(&f->fdb.port[i].limited, 0, memory_order_relaxed);
	atomic_store_explicit(&f->port_st[i].vlan_dropped, 0, memory_order_relaxed);
	update_vlans(f);
	return 0;
}

void uvn_fwd_del_port(struct uvn_fwd *f, struct uvn_port *p)
{
	uvn_fwd_port_down(f, p);
	f->ports[p->id] = NULL;
	while (f->nports && !f->ports[f->nports - 1])
		f->nports--;
	update_vlans(f);
}

void uvn_fwd_port_down(struct uvn_fwd *f, struct uvn_port *p)
{
	uvn_fdb_flush_port(&f->fdb, p->id);
}

/* Frames for one output port, collected over a burst, sent on the
 * worker's queue of that port. tx copies what it sends, and the list holds
 * no references: the frames are freed once, after every list went. */
static void send_list(struct uvn_port *p, unsigned hint, struct uvn_fwd_out *o)
{
	p->ops->tx(p, hint, o->pkts, o->n);
	o->n = 0;
}

static const uint8_t *frame_macs(const struct uvn_pkt *p)
{
	/* Ingress guarantees at least an Ethernet header in the first segment
	 * for frames we copied; check anyway for borrowed ones. */
	return p->seg[0].iov_len >= UVN_ETH_HLEN ? p->seg[0].iov_base : NULL;
}

#define ETH_P_8021Q 0x8100
#define VLAN_HLEN 4u

static bool has_tag(const uint8_t *mac)
{
	uint16_t type;

	memcpy(&type, mac + 12, sizeof(type)); /* one load, one compare */
	return type == htobe16(ETH_P_8021Q);
}

/* How a frame is encoded, on the wire in or as a port needs it out. */
enum { ENC_UNTAGGED, ENC_TAGGED, ENC_PRIO /* in only: a VID 0 tag */ };

/* One frame on its way through the VLAN path. */
struct vframe {
	struct uvn_pkt *p;
	uint16_t vlan;
	uint16_t tci;            /* the tag in, or 0 */
	int enc;                 /* ENC_* of @p */
	bool copy_hdr;           /* borrowed: every output gets our copy of the header */
	uint8_t hdr[18];         /* the frame's first bytes as read once (MACs, tag) */
	struct uvn_pkt *out[2];  /* as ENC_UNTAGGED, ENC_TAGGED: NULL until needed */
	bool failed[2];
};

/* The frame's VLAN on port @in. @return false: dropped by its rules */
static bool classify(const struct uvn_port *in, struct vframe *fr)
{
	const struct uvn_port_vlans *v = &in->conf.vlan;
	struct uvn_pkt *p = fr->p;
	unsigned vid;

	fr->enc = ENC_UNTAGGED;
	fr->tci = 0;
	fr->vlan = v->tag;
	if (!has_tag(fr->hdr))
		return true;
	if (UVN_LIKELY(p->seg[0].iov_len >= UVN_ETH_HLEN + VLAN_HLEN))
		memcpy(fr->hdr + 14, (const uint8_t *)p->seg[0].iov_base + 14, 4);
	else if (p->len < UVN_ETH_HLEN + VLAN_HLEN || uvn_pkt_read(p, 14, fr->hdr + 14, 4) != 4)
		return false;
	fr->tci = (uint16_t)(fr->hdr[14] << 8 | fr->hdr[15]);
	vid = fr->tci & 0xfff;
	if (!vid) {
		fr->enc = ENC_PRIO; /* untagged, with a priority */
		return true;
	}
	if (v->tag || !uvn_port_vlan_allowed(v, vid) || vid > UVN_VLAN_MAX)
		return false;
	fr->enc = ENC_TAGGED;
	fr->vlan = (uint16_t)vid;
	return true;
}

/* The packet's bytes from @off on, after @n segments already in @v.
 * @return false if they do not fit in a packet's segments */
static bool append_from(struct uvn_pkt *v, const struct uvn_pkt *p, uint32_t off)
{
	for (unsigned i = 0; i < p->nseg; i++) {
		size_t l = p->seg[i].iov_len;

		if (off >= l) {
			off -= (uint32_t)l;
			continue;
		}
		if (v->nseg == UVN_PKT_MAX_SEGS)
			return false;
		v->seg[v->nseg++] = (struct iovec){ (char *)p->seg[i].iov_base + off, l - off };
		off = 0;
	}
	return true;
}

/* csum_start and hdr_len count from the frame's start: @delta bytes more
 * (or fewer) in front of them. @return false if they would leave the frame
 * head (a checksum that covers the tag: malformed) */
static bool shift_offsets(struct virtio_net_hdr_v1 *h, int delta)
{
	int cs = le16toh(h->csum_start), hl = le16toh(h->hdr_len);

	if (uvn_hdr_needs_csum(h)) {
		if (cs + delta < (int)UVN_ETH_HLEN || cs + delta > 0xffff)
			return false;
		h->csum_start = htole16((uint16_t)(cs + delta));
	}
	if (hl)
		h->hdr_len = htole16((uint16_t)(hl + delta < 0 ? 0 : hl + delta > 0xffff ? 0xffff
											  : hl + delta));
	return true;
}

/* @fr as encoding @enc: a view with our header in front of the rest of
 * its bytes. @return the view, or NULL (counted) */
static struct uvn_pkt *build_view(struct uvn_fwd_worker *w, struct vframe *fr, int enc)
{
	struct uvn_fwd_view *vw = &w->views[w->nviews];
	struct uvn_pkt *v = &vw->pkt;
	const struct uvn_pkt *p = fr->p;
	uint32_t skip = fr->enc == ENC_UNTAGGED ? 12 : 12 + VLAN_HLEN, hlen = 12;

	if (UVN_UNLIKELY(w->nviews == sizeof(w->views) / sizeof(w->views[0]))) {
		uvn_stat_inc(&w->st.tag_failed); /* a burst over UVN_FWD_BURST */
		return NULL;
	}
	memcpy(vw->hdr, fr->hdr, 12);
	if (enc == ENC_TAGGED) {
		/* The VLAN's VID; a priority that came with a tag stays. */
		uint16_t tci = (uint16_t)((fr->tci & 0xf000) | fr->vlan);

		vw->hdr[12] = ETH_P_8021Q >> 8;
		vw->hdr[13] = ETH_P_8021Q & 0xff;
		vw->hdr[14] = (uint8_t)(tci >> 8);
		vw->hdr[15] = (uint8_t)tci;
		hlen += VLAN_HLEN;
	}
	/* The ethertype too, from the copy that was classified: a guest that
	 * rewrites its borrowed frame cannot change what the receivers see
	 * of the header (PITFALLS 26). */
	memcpy(vw->hdr + hlen, fr->hdr + skip, 2);
	hlen += 2;
	skip += 2;
	/* Field by field: the segments past the ones set stay unread. */
	v->pool = NULL;
	v->buf = NULL;
	v->ubuf = p->ubuf;
	v->frags = NULL;
	v->len = p->len - skip + hlen;
	v->flags = 0;
	v->refcnt = 1;
	v->port = p->port;
	v->queue = p->queue;
	v->user = p->user;
	v->vnet = p->vnet;
	v->seg[0] = (struct iovec){ vw->hdr, hlen };
	v->nseg = 1;
	if (!append_from(v, p, skip) || !shift_offsets(&v->vnet, (int)hlen - (int)skip)) {
		uvn_stat_inc(&w->st.tag_failed);
		return NULL;
	}
	w->nviews++;
	return v;
}

/* @fr as output port @o needs it. @return NULL if it cannot be had */
static inline struct uvn_pkt *frame_for(struct uvn_fwd_worker *w, struct vframe *fr,
					const struct uvn_port *o)
{
	int enc = !o->conf.vlan.tag && fr->vlan ? ENC_TAGGED : ENC_UNTAGGED;

	if (UVN_LIKELY(fr->out[enc] || fr->failed[enc]))
		return fr->out[enc];
	if (enc == fr->enc && !fr->copy_hdr)
		fr->out[enc] = fr->p;
	else
		fr->out[enc] = build_view(w, fr, enc);
	fr->failed[enc] = !fr->out[enc];
	return fr->out[enc];
}

static inline void put(struct uvn_fwd_worker *w, struct vframe *fr, const struct uvn_port *o)
{
	struct uvn_pkt *q = frame_for(w, fr, o);

	if (q)
		w->out[o->id].pkts[w->out[o->id].n++] = q;
}

/*
 * A frame through the VLAN path: its VLAN from the input port and its tag,
 * learning and lookup by (VLAN, MAC), and to each output port as it needs
 * it. @return true if @p is to be freed after the burst, false if it was
 * dropped (the caller frees it now). Kept out of line: the loop of a
 * switch without VLANs stays as small as it was.
 */
__attribute__((noinline)) static bool switch_vlan(struct uvn_fwd *f, struct uvn_fwd_worker *w,
						  struct uvn_port *in, struct uvn_pkt *p,
						  const uint8_t *mac, uint64_t now)
{
	struct vframe fr = { .p = p, .copy_hdr = p->ubuf != NULL };
	uint16_t dst = UVN_FDB_NO_PORT;

	memcpy(fr.hdr, mac, UVN_ETH_HLEN);
	if (!classify(in, &fr)) {
		uvn_stat_inc(&w->st.vlan_dropped);
		atomic_fetch_add_explicit(&f->port_st[in->id].vlan_dropped, 1, memory_order_relaxed);
		return false;
	}
	if (!uvn_mac_is_multicast(fr.hdr + 6) &&
	    uvn_fdb_learn(&f->fdb, uvn_fdb_key(fr.vlan, uvn_mac_key(fr.hdr + 6)), in->id, now) ==
		    UVN_FDB_LIMITED) {
		uvn_stat_inc(&w->st.limit_dropped);
		return false;
	}
	if (!uvn_mac_is_multicast(fr.hdr))
		dst = uvn_fdb_lookup(&f->fdb, uvn_fdb_key(fr.vlan, uvn_mac_key(fr.hdr)), now);
	if (dst == in->id) {
		uvn_stat_inc(&w->st.filtered);
		return false;
	}
	/* A static entry may name a port outside the VLAN: flood in it instead. */
	if (dst < f->nports && f->ports[dst] && uvn_fwd_port_in_vlan(f->ports[dst], fr.vlan)) {
		put(w, &fr, f->ports[dst]);
		uvn_stat_inc(&w->st.forwarded);
		return true;
	}
	for (unsigned o = 0; o < f->nports; o++)
		if (o != in->id && f->ports[o] && uvn_fwd_port_in_vlan(f->ports[o], fr.vlan))
			put(w, &fr, f->ports[o]);
	uvn_stat_inc(&w->st.flooded);
	return true;
}

/* The last decision of a burst, for the next frame with the same
 * addresses: a burst from one port is mostly one flow. */
struct fwd_memo {
	uint8_t macs[12];
	uint16_t dst;
	bool valid;
};

/* Learn the source of the untagged frame @mac from @in and look up its
 * destination. @return the port, UVN_FDB_NO_PORT (flood), or -1: the
 * source is over its port's mac-limit */
static int untagged_dst(struct uvn_fwd *f, struct uvn_port *in, const uint8_t *mac, uint64_t now,
			struct fwd_memo *m)
{
	uint16_t dst = UVN_FDB_NO_PORT;

	if (m->valid && !memcmp(mac, m->macs, sizeof(m->macs)))
		return m->dst;
	if (!uvn_mac_is_multicast(mac + 6) &&
	    UVN_UNLIKELY(uvn_fdb_learn(&f->fdb, uvn_fdb_key(0, uvn_mac_key(mac + 6)), in->id, now) ==
			 UVN_FDB_LIMITED))
		return -1;
	if (!uvn_mac_is_multicast(mac))
		dst = uvn_fdb_lookup(&f->fdb, uvn_fdb_key(0, uvn_mac_key(mac)), now);
	memcpy(m->macs, mac, sizeof(m->macs));
	m->dst = dst;
	m->valid = true;
	return dst;
}

static void do_switch(struct uvn_fwd *f, struct uvn_fwd_worker *w, struct uvn_port *in,
		      struct uvn_pkt **pkts, unsigned n)
{
	struct fwd_memo memo = { .valid = false };
	struct uvn_fwd_out *out = w->out;
	uint64_t now = uvn_now_ns();
	bool vlans = f->vlans;
	unsigned kept = 0;

	w->nviews = 0;
	for (unsigned i = 0; i < n; i++) {
		const uint8_t *frame = frame_macs(pkts[i]);
		uint8_t mac[UVN_ETH_HLEN];
		int dst;

		if (!frame) {
			uvn_pkt_free(pkts[i]);
			continue;
		}
		/* One read of what a zero-copy sender may still rewrite: what
		 * is tested (multicast?) is what is learnt and looked up. */
		memcpy(mac, frame, sizeof(mac));
		/* The one test the frames of a switch without VLANs pay. */
		if (UVN_UNLIKELY(vlans | has_tag(mac))) {
			if (switch_vlan(f, w, in, pkts[i], mac, now))
				pkts[kept++] = pkts[i];
			else
				uvn_pkt_free(pkts[i]);
			continue;
		}
		dst = untagged_dst(f, in, mac, now, &memo);
		if (UVN_UNLIKELY(dst < 0)) {
			uvn_stat_inc(&w->st.limit_dropped);
			uvn_pkt_free(pkts[i]);
			continue;
		}
		if (dst == in->id) {
			uvn_stat_inc(&w->st.filtered);
			uvn_pkt_free(pkts[i]);
			continue;
		}
		pkts[kept++] = pkts[i];
		if (dst != UVN_FDB_NO_PORT && (unsigned)dst < f->nports && f->ports[dst]) {
			out[dst].pkts[out[dst].n++] = pkts[i];
			uvn_stat_inc(&w->st.forwarded);
		} else {
			for (unsigned o = 0; o < f->nports; o++)
				if (o != in->id && f->ports[o])
					out[o].pkts[out[o].n++] = pkts[i];
			uvn_stat_inc(&w->st.flooded);
		}
	}
	for (unsigned o = 0; o < f->nports; o++)
		if (out[o].n)
			send_list(f->ports[o], w->id, &out[o]);
	uvn_pkt_free_bulk(pkts, kept);
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

/*
 * Sum of every byte of @len at @b, eight at a time in four independent
 * sums: the loads, not the adds, set the pace, so a sink reads as fast as
 * the bytes arrive from wherever they are (the guest's CPU's cache, memory).
 */
static uint64_t sum_bytes(const uint8_t *b, size_t len)
{
	uint64_t s[4] = { 0, 0, 0, 0 }, v;
	size_t k = 0;

	for (; k + 32 <= len; k += 32)
		for (unsigned j = 0; j < 4; j++) {
			memcpy(&v, b + k + 8 * j, 8);
			s[j] += v;
		}
	for (; k < len; k++)
		s[0] += b[k];
	return s[0] + s[1] + s[2] + s[3];
}

/* sink: read every byte of each frame before dropping it. A frame is never
 * trusted: its segments' lengths are summed up to its length, no further. */
static void do_sink(struct uvn_fwd_worker *w, struct uvn_pkt **pkts, unsigned n)
{
	uint64_t sum = 0;

	for (unsigned i = 0; i < n; i++) {
		const struct uvn_pkt *p = pkts[i];
		uint32_t left = p->len;

		for (unsigned k = 0; k < p->nseg && left; k++) {
			size_t len = p->seg[k].iov_len < left ? p->seg[k].iov_len : left;

			sum += sum_bytes(p->seg[k].iov_base, len);
			left -= (uint32_t)len;
		}
	}
	w->sink_sum += sum;
	uvn_stat_add(&w->st.sunk, n);
	uvn_pkt_free_bulk(pkts, n);
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
	case UVN_FWD_SINK:
		do_sink(w, pkts, n);
		break;
	default: /* rxonly */
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
