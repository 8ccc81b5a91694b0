/* SPDX-License-Identifier: MIT */
/*
 * What a worker does with a burst of frames from a port: the learning
 * switch (untagged frames here, the VLAN path in vlan.c), loopback, sink
 * and rxonly; txonly's frames are built in generate.c.
 */
#include <errno.h>
#include <string.h>

#include "net/hdr.h"
#include "ring/ring.h"
#include "switch/forward.h"
#include "switch/vlan.h"
#include "util/sys.h"

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
		if (UVN_UNLIKELY(vlans | uvn_fwd_has_tag(mac))) {
			if (uvn_fwd_switch_vlan(f, w, in, pkts[i], mac, now))
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
