/* SPDX-License-Identifier: MIT */
/*
 * Packets -> guest RX. With MRG_RXBUF a frame spreads over as many posted
 * buffers as it needs (every buffer but the last filled, num_buffers in the
 * header of the first); without it each frame takes one chain and a frame
 * larger than the chain is dropped, never truncated. Chains taken for a
 * frame that then does not fit are given back (unpop), so no buffer is
 * lost; everything pushed in a burst is published by one flush.
 *
 * A plain frame that fits one buffer takes the fast path below; any other
 * has its stream decided in rx_offload.c (offloads, the MTU) and written
 * here.
 */
#include <endian.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "net/device/netdev.h"
#include "net/device/rx_frame.h"
#include "net/iov.h"
#include "ring/ring.h"
#include "util/log.h"

/* Chains one frame may take: 64 KB in buffers of at least 256 bytes. */
#define MAX_BUFS 256

/* Packet bytes [@from, @from + @len) to @dst, a copy per packet segment. */
static void copy_segs(char *dst, const struct uvn_pkt *p, size_t from, size_t len)
{
	const struct iovec *g = p->seg, *end = p->seg + p->nseg;

	for (; len && g < end; g++) {
		size_t have = g->iov_len, c;

		if (from >= have) {
			from -= have;
			continue;
		}
		c = have - from < len ? have - from : len;
		uvn_copy(dst, (const char *)g->iov_base + from, c);
		dst += c;
		len -= c;
		from = 0;
	}
}

/* Write stream bytes [off, off + len) of the frame (off >= the virtio-net
 * header) into the @niov iovecs at @iov, starting at their offset @coff. */
static void fill(const struct iovec *iov, unsigned niov, const struct rx_frame *f, uint32_t off,
		 uint32_t coff, uint32_t len)
{
	const struct uvn_pkt *p = f->p;
	uint32_t body_at = UVN_NET_HDR_LEN + f->pre_len, o = off, co = coff, l = len;

	if (UVN_UNLIKELY(o < body_at)) {
		uint32_t c = body_at - o < l ? body_at - o : l;

		uvn_buf_to_iov(iov, niov, co, f->pre + (o - UVN_NET_HDR_LEN), c);
		o += c;
		co += c;
		l -= c;
	}
	if (UVN_LIKELY(niov == 1))
		copy_segs((char *)iov[0].iov_base + co, p, f->body + (o - body_at), l);
	else if (l)
		uvn_iov_to_iov(iov, niov, co, p->seg, p->nseg, f->body + (o - body_at), l);
	/* A completed checksum overrides the two bytes it covers. */
	if (f->csum_pos) {
		for (uint32_t b = 0; b < 2; b++) {
			uint32_t at = f->csum_pos + b;

			if (at >= off && at < off + len)
				uvn_buf_to_iov(iov, niov, coff + (at - off), &f->csum[b], 1);
		}
	}
}

static void log_iov(struct uvn_netdev_q *q, const struct iovec *iov, unsigned niov, uint32_t len)
{
	for (unsigned i = 0; i < niov && len; i++) {
		size_t l = iov[i].iov_len < len ? iov[i].iov_len : len;

		q->log_write(q->log_ctx, iov[i].iov_base, l);
		len -= (uint32_t)l;
	}
}

/* Take the next chain, its iovecs into @iov (room for @max). */
static int pop_rx(struct uvn_netdev_q *q, struct uvn_vq_chain *ch, struct iovec *iov, unsigned max)
{
	int r = uvn_vq_dev_pop(q->vq, ch, iov, max);

	if (UVN_UNLIKELY(r < 0)) {
		if (r == -UVN_VQ_E_IOV_FULL)
			return RX_LONG;
		uvn_netdev_q_set_broken(q, r);
		uvn_stat_inc(&q->st.err_ring);
		UVN_LOG_PEER("guest rx ring broken: %s", uvn_vq_strerror(r));
		return RX_BROKEN;
	}
	if (r == 0)
		return RX_NOBUF;
	if (UVN_UNLIKELY(ch->nout)) {
		uvn_netdev_q_set_broken(q, 0);
		uvn_stat_inc(&q->st.err_format);
		UVN_LOG_PEER("guest rx chain has device-readable buffers: queue stopped");
		return RX_BROKEN;
	}
	return RX_OK;
}

/*
 * The next chain has more buffers than q->iov holds (RX_LONG): it is taken
 * without them and given back empty, counted. Chains taken before it must
 * have gone back already (IN_ORDER: used in the order made available).
 * At most UVN_NETDEV_LONG_DROPS per call. @return RX_OK (the frame may try
 * the chains after it), RX_NOBUF or RX_BROKEN
 */
static __attribute__((noinline)) int drop_long(struct uvn_netdev_q *q)
{
	struct uvn_vq_chain ch;
	int r;

	if (!q->long_left)
		return RX_NOBUF; /* this call's budget spent: the chain waits */
	q->long_left--;
	r = uvn_vq_dev_pop(q->vq, &ch, NULL, 0);

	if (r <= 0) {
		if (r == 0)
			return RX_NOBUF;
		uvn_netdev_q_set_broken(q, r);
		uvn_stat_inc(&q->st.err_ring);
		UVN_LOG_PEER("guest rx ring broken: %s", uvn_vq_strerror(r));
		return RX_BROKEN;
	}
	if (UVN_UNLIKELY(ch.nout)) {
		uvn_netdev_q_set_broken(q, 0);
		uvn_stat_inc(&q->st.err_format);
		UVN_LOG_PEER("guest rx chain has device-readable buffers: queue stopped");
		return RX_BROKEN;
	}
	uvn_vq_dev_push(q->vq, &ch, 0);
	uvn_stat_inc(&q->st.drop_long);
	UVN_LOG_PEER("guest rx chain of %u buffers (more than %u): returned unused", ch.nin,
		     UVN_NETDEV_MAX_IOV);
	return RX_OK;
}

static int rx_single(struct uvn_netdev_q *q, struct rx_frame *f)
{
	struct uvn_vq_chain ch;
	int r = pop_rx(q, &ch, q->iov, UVN_NETDEV_MAX_IOV);

	while (UVN_UNLIKELY(r == RX_LONG)) {
		r = drop_long(q);
		if (r == RX_OK)
			r = pop_rx(q, &ch, q->iov, UVN_NETDEV_MAX_IOV);
	}
	if (r != RX_OK)
		return r;
	if (ch.in_len < f->total) {
		uvn_vq_dev_unpop(q->vq, &ch);
		return RX_TOOBIG;
	}
	f->hdr.num_buffers = htole16(1);
	uvn_buf_to_iov(q->iov, ch.nin, 0, &f->hdr, UVN_NET_HDR_LEN);
	fill(q->iov, ch.nin, f, UVN_NET_HDR_LEN, UVN_NET_HDR_LEN, f->total - UVN_NET_HDR_LEN);
	if (UVN_UNLIKELY(q->log_write))
		log_iov(q, q->iov, ch.nin, f->total);
	uvn_vq_dev_push(q->vq, &ch, f->total);
	return RX_OK;
}

/*
 * Write a frame's stream from @off on into chains [@a, @b) of @chs, whose
 * iovecs lie side by side from q->iov[0] (chain 0's first @skip bytes, the
 * header, excepted): each chain's first @lens bytes. The iovecs are cut
 * to those bytes in place, and the frame goes in one iovec after another.
 * (Joining buffers that lie back to back into one long copy does not pay
 * here: glibc copies long runs with REP MOVSB, which on this AMD host runs
 * 3-4x slower when source and destination are not equally aligned, and
 * the header puts the frame 12 bytes into its first buffer.)
 */
static void write_chains(struct uvn_netdev_q *q, const struct rx_frame *f,
			 struct uvn_vq_chain *chs, uint32_t *lens, unsigned a, unsigned b,
			 uint32_t skip, uint32_t off)
{
	struct iovec *v = q->iov;
	unsigned r = 0, w = 0;
	uint32_t len = 0;

	for (unsigned k = a; k < b; r += chs[k++].nin) {
		uint32_t left = lens[k];

		for (unsigned i = r; i < r + chs[k].nin && left; i++) {
			char *base = v[i].iov_base;
			uint32_t l = v[i].iov_len < left ? (uint32_t)v[i].iov_len : left;

			left -= l;
			if (skip) {
				uint32_t s = skip < l ? skip : l;

				base += s;
				l -= s;
				skip -= s;
				if (!l)
					continue;
			}
			len += l;
			v[w++] = (struct iovec){ base, l }; /* w <= i: not read yet */
		}
	}
	for (unsigned i = 0, o = off; i < w; o += (uint32_t)v[i++].iov_len)
		fill(&v[i], 1, f, o, 0, (uint32_t)v[i].iov_len);
	if (UVN_UNLIKELY(q->log_write))
		log_iov(q, v, w, len);
}

/*
 * Mergeable: the frame's chains are taken first (pass 1), then the frame
 * is written through all of them (pass 2), so the ring's loads for the
 * next buffer do not wait behind each buffer's copy. Their iovecs go side
 * by side into q->iov; a chain that does not fit in what is left has the
 * chains before it written first and gets all of q->iov.
 */
static int rx_mergeable(struct uvn_netdev_q *q, struct rx_frame *f)
{
	struct uvn_vq_chain chs[MAX_BUFS];
	uint32_t lens[MAX_BUFS], off = 0, woff = UVN_NET_HDR_LEN;
	struct iovec hdr_iov[UVN_NET_HDR_LEN];
	unsigned k = 0, nhdr = 0, a = 0, used = 0;

	while (off < f->total) {
		struct uvn_vq_chain *ch = &chs[k];
		int r = k < MAX_BUFS ? pop_rx(q, ch, q->iov + used, UVN_NETDEV_MAX_IOV - used)
				     : RX_TOOBIG;
		uint32_t c, start;

		if (UVN_UNLIKELY(r == RX_LONG) && used &&
		    ch->nin + ch->nout <= UVN_NETDEV_MAX_IOV) {
			/* Too long for what is left but not for q->iov: the
			 * chains before it are written, and it tries again
			 * with all of q->iov (one more walk of at most
			 * UVN_NETDEV_MAX_IOV buffers per chain taken). A chain
			 * too long for q->iov goes straight to the drop. */
			write_chains(q, f, chs, lens, a, k, a ? 0 : UVN_NET_HDR_LEN, woff);
			woff = off;
			a = k;
			used = 0;
			continue;
		}
		if (UVN_UNLIKELY(r == RX_LONG)) {
			/* The chains before it go back first, empty (they are
			 * used before it in ring order); the frame starts over
			 * in the chains after it. */
			for (unsigned i = 0; i < k; i++)
				uvn_vq_dev_push(q->vq, &chs[i], 0);
			k = 0;
			a = 0;
			used = 0;
			off = 0;
			woff = UVN_NET_HDR_LEN;
			nhdr = 0;
			r = drop_long(q);
			if (r == RX_OK)
				continue;
		}
		if (r != RX_OK) {
			if (r == RX_BROKEN)
				return r;
			while (k)
				uvn_vq_dev_unpop(q->vq, &chs[--k]);
			return r;
		}
		start = k == 0 ? UVN_NET_HDR_LEN : 0;
		if (k == 0) {
			/* Remember where the header goes: num_buffers is known last. */
			for (uint32_t need = UVN_NET_HDR_LEN; need && nhdr < ch->nin; nhdr++) {
				hdr_iov[nhdr] = q->iov[nhdr];
				if (hdr_iov[nhdr].iov_len > need)
					hdr_iov[nhdr].iov_len = need;
				need -= (uint32_t)hdr_iov[nhdr].iov_len;
			}
			if (ch->in_len < UVN_NET_HDR_LEN) {
				/* Not even room for the header: give it back, drop. */
				uvn_vq_dev_unpop(q->vq, ch);
				return RX_TOOBIG;
			}
			off = UVN_NET_HDR_LEN;
		}
		c = ch->in_len - start < f->total - off ? ch->in_len - start : f->total - off;
		lens[k] = start + c;
		off += c;
		used += ch->nin;
		k++;
	}
	write_chains(q, f, chs, lens, a, k, a ? 0 : UVN_NET_HDR_LEN, woff);
	f->hdr.num_buffers = htole16((uint16_t)k);
	uvn_buf_to_iov(hdr_iov, nhdr, 0, &f->hdr, UVN_NET_HDR_LEN);
	/* Logged again now that it holds num_buffers: a page marked before
	 * its last write may have been sent already. */
	for (unsigned i = 0; UVN_UNLIKELY(q->log_write) && i < nhdr; i++)
		q->log_write(q->log_ctx, hdr_iov[i].iov_base, hdr_iov[i].iov_len);
	for (unsigned i = 0; i < k; i++)
		uvn_vq_dev_push(q->vq, &chs[i], lens[i]);
	return RX_OK;
}

int uvn_rx_deliver(struct uvn_netdev_q *q, struct rx_frame *f)
{
	int r = q->mrg_rxbuf ? rx_mergeable(q, f) : rx_single(q, f);

	if (UVN_LIKELY(r == RX_OK)) {
		uvn_stat_inc(&q->st.packets);
		uvn_stat_add(&q->st.bytes, f->total - UVN_NET_HDR_LEN);
	}
	return r;
}

/*
 * The common case goes in two passes: a frame with no offload to complete,
 * in one segment, that fits the one buffer of the next chain. Pass 1 takes
 * the chains of a run of such frames and asks for their cache lines; pass 2
 * writes them, so the misses of the run overlap. Any other frame first
 * finishes the run (chains go back in ring order) and then takes the
 * general path.
 */
struct rx_item {
	struct uvn_vq_chain ch;
	uint8_t *dst;
	const struct uvn_pkt *p;
	uint32_t len;          /* header + frame, for the used entry */
};

#if defined(__x86_64__) || defined(__i386__)
static bool have_prefetchw;

__attribute__((constructor)) static void rx_cpu_init(void)
{
	unsigned a, b, c, d;

	have_prefetchw = __get_cpuid(0x80000001, &a, &b, &c, &d) && (c & bit_PRFCHW);
}
#endif

/*
 * Ask for a line of a guest buffer we are about to write, in the state a
 * write needs. The guest's CPU has read these lines (it looked at the last
 * frame in that buffer), so a read prefetch finds our shared copy and does
 * nothing; the store then waits for the other copy to be invalidated, one
 * round trip per line, in store order. PREFETCHW asks for ownership now,
 * for the whole run at once. (GCC emits it for __builtin_prefetch(p, 1)
 * only with -mprfchw.)
 */
static inline void prefetch_for_write(const void *p)
{
#if defined(__x86_64__) || defined(__i386__)
	if (UVN_LIKELY(have_prefetchw)) {
		__asm__ volatile("prefetchw %0" : : "m"(*(const char *)p));
		return;
	}
#endif
	__builtin_prefetch(p, 1);
}

static bool fast_frame(const struct uvn_netdev_q *q, const struct uvn_pkt *p)
{
	return !p->vnet.gso_type && !uvn_hdr_needs_csum(&p->vnet) && p->nseg == 1 &&
	       p->len <= q->plain_max && !q->log_write;
}

/* Pass 1 for one frame. @return RX_OK (taken), RX_DROP (not this path:
 * nothing taken; a chain too long for q->iov included), or RX_NOBUF /
 * RX_BROKEN */
static int take_fast(struct uvn_netdev_q *q, const struct uvn_pkt *p, struct rx_item *it)
{
	int r = pop_rx(q, &it->ch, q->iov, UVN_NETDEV_MAX_IOV);

	if (r != RX_OK)
		return r == RX_LONG ? RX_DROP : r; /* the general path drops it */
	if (it->ch.nin != 1 || it->ch.in_len < UVN_NET_HDR_LEN + p->len) {
		uvn_vq_dev_unpop(q->vq, &it->ch);
		return RX_DROP;
	}
	it->dst = q->iov[0].iov_base;
	it->p = p;
	prefetch_for_write(it->dst);
	prefetch_for_write(it->dst + UVN_NET_HDR_LEN);
	prefetch_for_write(it->dst + UVN_NET_HDR_LEN + p->len - 1);
	return RX_OK;
}

/*
 * Pass 2: write the run's frames, then give their chains back, in order.
 * The used entries go after the frames: each is a line the guest's CPU
 * reads, and stores leave in order, so one that waits for its line would
 * hold back the frame copies behind it.
 */
static void write_fast(struct uvn_netdev_q *q, struct rx_item *items, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		const struct uvn_pkt *p = items[i].p;
		struct virtio_net_hdr_v1 h = { .num_buffers = htole16(1) };
		uint32_t total = UVN_NET_HDR_LEN + p->len;

		if (q->guest_csum)
			h.flags = p->vnet.flags & VIRTIO_NET_HDR_F_DATA_VALID;
		uvn_hdr_store(items[i].dst, &h, UVN_NET_HDR_LEN);
		uvn_copy(items[i].dst + UVN_NET_HDR_LEN, p->seg[0].iov_base, p->len);
		items[i].len = total;
		uvn_stat_inc(&q->st.packets);
		uvn_stat_add(&q->st.bytes, p->len);
	}
	for (unsigned i = 0; i < n; i++)
		uvn_vq_dev_push(q->vq, &items[i].ch, items[i].len);
}

unsigned uvn_netdev_rx(struct uvn_netdev_q *q, struct uvn_pkt *const *pkts, unsigned n)
{
	struct rx_item items[UVN_NETDEV_BURST];
	uint64_t pushed = q->st.packets;
	unsigned delivered = 0, ni = 0, i;

	if (UVN_UNLIKELY(q->broken)) {
		uvn_stat_add(&q->st.drop_nobuf, n);
		return 0;
	}
	q->long_left = UVN_NETDEV_LONG_DROPS;
	for (i = 0; i < n; i++) {
		const struct uvn_pkt *p = pkts[i];
		int r = RX_DROP;

		if (UVN_LIKELY(fast_frame(q, p))) {
			r = take_fast(q, p, &items[ni]);
			if (r == RX_OK) {
				if (++ni == UVN_NETDEV_BURST) {
					write_fast(q, items, ni);
					delivered += ni;
					ni = 0;
				}
				continue;
			}
		}
		/* Whatever comes next goes after the run. */
		write_fast(q, items, ni);
		delivered += ni;
		ni = 0;
		if (r == RX_DROP)
			r = UVN_LIKELY(!uvn_hdr_is_gso(&p->vnet)) ? uvn_rx_plain(q, p) : uvn_rx_gso(q, p);
		if (UVN_LIKELY(r == RX_OK)) {
			delivered++;
		} else if (r == RX_TOOBIG) {
			uvn_stat_inc(&q->st.drop_toobig);
		} else if (r != RX_DROP) {
			/* No buffers (or a broken ring): the rest cannot go either. */
			uvn_stat_add(&q->st.drop_nobuf, n - i);
			break;
		}
	}
	write_fast(q, items, ni);
	delivered += ni;
	/* Segments of a frame that then ran out of buffers went in too, and
	 * chains too long for q->iov went back empty, as did a frame's chains
	 * before one (also when the drop then found no chain after all). */
	if (q->st.packets != pushed) {
		uvn_netdev_q_flush(q);
		uvn_stat_inc(&q->st.bursts);
	} else if (UVN_UNLIKELY(q->long_left != UVN_NETDEV_LONG_DROPS)) {
		uvn_netdev_q_flush(q);
	}
	return delivered;
}
