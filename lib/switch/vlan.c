/* SPDX-License-Identifier: MIT */
/*
 * The switch's VLAN path: a frame's VLAN from its input port's rules and
 * its tag, learning and lookup by (VLAN, MAC), and to each output port the
 * frame as that port needs it (tag added or removed in a view that puts
 * our copy of the header in front of the frame's own bytes; the frame
 * itself, possibly a guest's buffer, is never written).
 */
#include <endian.h>
#include <string.h>

#include "net/hdr.h"
#include "ring/ring.h"
#include "switch/vlan.h"

#define VLAN_HLEN 4u

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
	if (!uvn_fwd_has_tag(fr->hdr))
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

/* The VLAN path of the switch (vlan.h). */
bool uvn_fwd_switch_vlan(struct uvn_fwd *f, struct uvn_fwd_worker *w, struct uvn_port *in,
			 struct uvn_pkt *p, const uint8_t *mac, uint64_t now)
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
