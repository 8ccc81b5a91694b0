/* SPDX-License-Identifier: MIT */
/*
 * In-flight tracking of packed rings (vhost-user.rst, QueueRegionPacked).
 * A packed ring's slots are overwritten by used elements while other
 * chains are still in flight, so every descriptor popped is copied into an
 * entry of the slice, taken from a free list; a chain's entries are linked
 * by next, its head entry holds its length, last entry, counter and mark.
 *
 * What we write, in order, and what a crash at each point leaves:
 *   pop:   the chain's descriptors into entries from free_head on; the
 *          head entry's num, last, counter, inflight = 1; free_head and
 *          then old_free_head past the chain.
 *     Until old_free_head moves the entries are still on the free list:
 *     recovery unmarks them and the chain is read from the ring again.
 *   flush: the batch's chains linked back onto the free list (free_head),
 *          used_idx / used_wrap_counter past the batch;
 *          the batch's first used element published (its flags);
 *          inflight = 0 for each chain; old_* = the new values.
 *     Until that store, the slot at old_used_idx is not a used element of
 *     its lap: recovery rolls back to old_*, the batch is still in flight.
 *     After it, it is (or the driver's next chain): recovery rolls
 *     forward, the batch is free.
 * Only a flush puts entries back on the free list: pushes wait in our
 * private batch, because a pop in between commits the free list
 * (old_free_head), and with it chains the driver has not seen used.
 *
 * There is no avail index: the chains popped and not used are exactly the
 * descriptors from the used position on, so after a restart the avail
 * position is the used one plus the descriptors of the chains still
 * marked. That range may hold used elements a batch stored behind its
 * first (their flags are stored at push, seen only after the first's):
 * the driver has not seen them, and must not once the new backend
 * publishes the slot before them, so recovery turns them back.
 *
 * The slice is the frontend's: each field is read once (recover() takes a
 * private copy of the links), checked, and never read back at run time
 * but for the descriptor copies, which are checked like ring descriptors
 * when popped again.
 */
#include <stdlib.h>

#include "inflight.h"
#include "vq.h"

#define F_AVAIL (1u << VRING_PACKED_DESC_F_AVAIL)
#define F_USED (1u << VRING_PACKED_DESC_F_USED)

enum { ENT_UNSEEN, ENT_FREE, ENT_HELD };

static uint64_t rd64(const void *p)
{
	return *(const volatile uint64_t *)p;
}

static void wr64(void *p, uint64_t v)
{
	*(volatile uint64_t *)p = v;
}

static uint8_t rd8(const void *p)
{
	return *(const volatile uint8_t *)p;
}

/* Forward distance from position (a, aw) to (b, bw): the wrap counter
 * tells two laps apart. */
static unsigned ring_dist(uint16_t a, bool aw, uint16_t b, bool bw, uint16_t num)
{
	unsigned n2 = 2u * num, la = aw ? a : a + (unsigned)num, lb = bw ? b : b + (unsigned)num;

	return (lb + n2 - la) % n2;
}

/* ------------------------------------------------------------ run time */

/* Link chain @h's entries in front of the free list. */
static void link_free(struct uvn_inflight *t, uint16_t h)
{
	uint16_t last = t->ent[h].last;

	t->ent[last].next = t->free_head;
	uvn_slice_wr16(&t->p->desc[last].next, t->free_head);
	t->free_head = h;
	uvn_slice_wr16(&t->p->free_head, h);
}

/* Chain @h given back unused: free and unmarked. A crash before the
 * old_free_head store leaves it marked (popped again from the slice),
 * after it free (read from the ring again): either way once. */
static void release(struct uvn_inflight *t, uint16_t h)
{
	link_free(t, h);
	uvn_slice_wr16(&t->p->old_free_head, h);
	uvn_slice_wr8(&t->p->desc[h].inflight, 0);
	t->entry[t->ent[h].id] = t->num;
}

/* Copy ring slot @s (still ours: popped, not used) into entry @d. */
static void copy_desc(struct uvn_inflight_desc_packed *d, const struct vring_packed_desc *s,
		      uint16_t id)
{
	struct uvn_desc v;

	uvn_desc_read_packed(s, &v);
	wr64(&d->addr, v.addr);
	*(volatile uint32_t *)&d->len = v.len;
	uvn_slice_wr16(&d->flags, v.flags);
	/* The chain's buffer id (the one in its last descriptor), what a
	 * pop again reports. */
	uvn_slice_wr16(&d->id, id);
}

/*
 * Mark the chain just popped from ring position @pos. A buffer id still
 * held is a chain given back (uvn_vq_dev_unpop()) and popped again: its
 * old entries go first. Without enough free entries (a region attached to
 * a queue that held chains already) the chain is not tracked.
 */
static void mark(struct uvn_vq_dev *vq, struct uvn_inflight *t, uint16_t pos,
		 const struct uvn_vq_chain *ch)
{
	struct uvn_inflight_packed *p = t->p;
	uint16_t head, e, num = t->num;

	if (t->entry[ch->id] != num)
		release(t, t->entry[ch->id]);
	head = e = t->free_head;
	for (uint16_t k = 0;; k++) {
		if (UVN_UNLIKELY(e >= num))
			return;
		copy_desc(&p->desc[e], &vq->pk.desc[pos], ch->id);
		if (k + 1 == ch->ndesc)
			break;
		e = t->ent[e].next;
		pos = pos + 1 == num ? 0 : pos + 1;
	}
	t->ent[head] = (struct uvn_inflight_ent){ t->ent[head].next, e, ch->ndesc, ch->id };
	uvn_slice_wr16(&p->desc[head].last, e);
	uvn_slice_wr16(&p->desc[head].num, ch->ndesc);
	wr64(&p->desc[head].counter, ++t->counter);
	uvn_slice_wr8(&p->desc[head].inflight, 1);
	t->free_head = t->ent[e].next;
	uvn_slice_wr16(&p->free_head, t->free_head);
	uvn_slice_wr16(&p->old_free_head, t->free_head);
	t->entry[ch->id] = head;
}

/* One entry of a chain popped again: checked like a ring descriptor. */
static int repop_desc(struct uvn_chain_walk *w, const struct uvn_inflight_desc_packed *s, bool last)
{
	struct uvn_desc d = {
		.addr = rd64(&s->addr),
		.len = *(const volatile uint32_t *)&s->len,
		.flags = uvn_slice_rd16(&s->flags),
	};

	/* As in a ring walk, an indirect descriptor ends its chain. */
	if (d.flags & VRING_DESC_F_INDIRECT)
		return last ? uvn_chain_indirect(w, &d) : UVN_VQ_E_INDIRECT_NEXT;
	return uvn_chain_add(w, &d);
}

/* Pop the chain of head entry @head again, from its copies. */
static int repop(struct uvn_vq_dev *vq, struct uvn_inflight *t, uint16_t head,
		 struct uvn_vq_chain *ch, struct iovec *iov, unsigned iov_max)
{
	const struct uvn_inflight_ent *h = &t->ent[head];
	struct uvn_chain_walk w;
	uint16_t e = head;
	int ret = 0;

	uvn_chain_begin(&w, vq, iov, iov_max);
	for (uint16_t k = 0; k < h->num && !ret; k++, e = t->ent[e].next)
		ret = repop_desc(&w, &t->p->desc[e], k + 1 == h->num);
	if (UVN_UNLIKELY(ret))
		return uvn_vq_dev_fail(vq, ret);
	if (UVN_UNLIKELY(vq->held + h->num > vq->num))
		return uvn_vq_dev_fail(vq, UVN_VQ_E_OVERRUN);
	if (UVN_UNLIKELY(uvn_chain_end(&w, ch)))
		return uvn_chain_iov_full(ch, h->id, h->num);
	vq->held = (uint16_t)(vq->held + h->num);
	ch->id = h->id;
	ch->ndesc = h->num;
	uvn_stat_inc(&vq->st.bufs);
	return 1;
}

/*
 * The caller gave chains back (uvn_vq_dev_unpop(), newest first), which
 * moved the avail position back over their descriptors. Chains from the
 * ring are read from there again. Chains popped again from the slice were
 * never in front of that position: they go back to the head of the queue
 * to pop again, and the position past them all.
 */
static void undone(struct uvn_vq_dev *vq, struct uvn_inflight *t)
{
	uint64_t back = ring_dist(vq->pk.last_avail, vq->pk.avail_wrap, t->pos, t->wrap, t->num);

	if (back <= t->ring_desc) {
		t->ring_desc -= back;
	} else {
		back -= t->ring_desc;
		t->ring_desc = 0;
		while (back && t->next_resubmit) {
			uint16_t n = t->ent[t->resubmit[--t->next_resubmit]].num;

			back = back > n ? back - n : 0;
		}
		vq->pk.last_avail = t->resub_end;
		vq->pk.avail_wrap = t->resub_wrap;
	}
	t->pos = vq->pk.last_avail;
	t->wrap = vq->pk.avail_wrap;
}

/* uvn_packed_dev_pop() with a tracker: the chains a restart left marked
 * first, oldest first; every chain from the ring marked. */
int uvn_inflight_packed_pop(struct uvn_vq_dev *vq, struct uvn_vq_chain *ch, struct iovec *iov,
			    unsigned iov_max)
{
	struct uvn_inflight *t = vq->inflight;
	uint16_t pos;
	int ret;

	if (UVN_UNLIKELY(vq->pk.last_avail != t->pos || vq->pk.avail_wrap != t->wrap))
		undone(vq, t);
	if (t->next_resubmit < t->nresubmit) {
		ret = repop(vq, t, t->resubmit[t->next_resubmit], ch, iov, iov_max);
		if (ret == 1)
			t->next_resubmit++;
		return ret;
	}
	pos = vq->pk.last_avail;
	ret = uvn_packed_dev_pop_ring(vq, ch, iov, iov_max);
	if (ret != 1)
		return ret;
	t->pos = vq->pk.last_avail;
	t->wrap = vq->pk.avail_wrap;
	t->ring_desc += ch->ndesc;
	mark(vq, t, pos, ch);
	return 1;
}

void uvn_inflight_packed_push(struct uvn_inflight *t, const struct uvn_vq_chain *ch)
{
	uint16_t h;

	/* A chain we did not pop, or one pushed twice (test backends that
	 * corrupt their used ring on purpose do both): nothing to clear. */
	if (UVN_UNLIKELY(ch->id >= t->num || t->entry[ch->id] == t->num))
		return;
	h = t->entry[ch->id];
	t->entry[ch->id] = t->num;
	/* Each held chain has its own head entry: at most num of them. */
	t->batch[t->nbatch++] = h;
}

void uvn_inflight_packed_publishing(struct uvn_inflight *t, uint16_t used_pos, bool used_wrap)
{
	for (uint16_t k = 0; k < t->nbatch; k++)
		link_free(t, t->batch[k]);
	uvn_slice_wr16(&t->p->used_idx, used_pos);
	uvn_slice_wr8(&t->p->used_wrap_counter, used_wrap);
}

void uvn_inflight_packed_published(struct uvn_inflight *t, uint16_t used_pos, bool used_wrap)
{
	struct uvn_inflight_packed *p = t->p;

	/* Called after the publishing store and a full fence. */
	for (uint16_t k = 0; k < t->nbatch; k++)
		uvn_slice_wr8(&p->desc[t->batch[k]].inflight, 0);
	uvn_slice_wr16(&p->old_free_head, t->free_head);
	uvn_slice_wr16(&p->old_used_idx, used_pos);
	uvn_slice_wr8(&p->old_used_wrap_counter, used_wrap);
	t->nbatch = 0;
}

/* ------------------------------------------------------------ recovery */

/* A slice never used: an empty start from the ring's positions. */
static void init_slice(struct uvn_vq_dev *vq, struct uvn_inflight *t)
{
	struct uvn_inflight_packed *p = t->p;

	uvn_inflight_zero(p->desc, (size_t)t->num * sizeof(p->desc[0]));
	t->free_head = 0;
	for (uint16_t i = 0; i < t->num; i++) {
		t->ent[i].next = (uint16_t)(i + 1); /* num ends the list */
		uvn_slice_wr16(&p->desc[i].next, (uint16_t)(i + 1));
	}
	wr64(&p->features, 0);
	uvn_slice_wr16(&p->desc_num, t->num);
	uvn_slice_wr16(&p->free_head, 0);
	uvn_slice_wr16(&p->old_free_head, 0);
	uvn_slice_wr16(&p->used_idx, vq->pk.used_pos);
	uvn_slice_wr16(&p->old_used_idx, vq->pk.used_pos);
	uvn_slice_wr8(&p->used_wrap_counter, vq->pk.used_wrap);
	uvn_slice_wr8(&p->old_used_wrap_counter, vq->pk.used_wrap);
	/* Valid only once complete. */
	atomic_thread_fence(memory_order_release);
	uvn_slice_wr16(&p->version, 1);
}

/* Where the slice says the ring is, once the last batch is settled. */
struct settled {
	uint16_t free_head, used;
	bool wrap;
};

/*
 * Read the header's positions once, check them, and settle a flush that
 * stopped half way: rolled forward if its first used element is visible,
 * back otherwise. Visible: the USED bit of the slot at old_used_idx is
 * old_used_wrap_counter's, as in a used element of that lap or in the
 * driver's next chain there (it took the batch); the driver's chain of
 * that lap, not yet used, has it the other way. Either way, both halves
 * of the header are made equal.
 */
static int settle(struct uvn_vq_dev *vq, struct uvn_inflight *t, struct settled *s)
{
	struct uvn_inflight_packed *p = t->p;
	uint16_t fh = uvn_slice_rd16(&p->free_head), ofh = uvn_slice_rd16(&p->old_free_head);
	uint16_t ui = uvn_slice_rd16(&p->used_idx), oui = uvn_slice_rd16(&p->old_used_idx);
	uint8_t uw = rd8(&p->used_wrap_counter), ouw = rd8(&p->old_used_wrap_counter);

	if (fh > t->num || ofh > t->num || ui >= t->num || oui >= t->num || uw > 1 || ouw > 1)
		return UVN_INFLIGHT_E_POS;
	*s = (struct settled){ ofh, oui, ouw };
	if ((ui != oui || uw != ouw) &&
	    !!(uvn_load_acquire16(&vq->pk.desc[oui].flags) & F_USED) == ouw)
		*s = (struct settled){ fh, ui, uw };
	uvn_slice_wr16(&p->free_head, s->free_head);
	uvn_slice_wr16(&p->used_idx, s->used);
	uvn_slice_wr8(&p->used_wrap_counter, s->wrap);
	uvn_slice_wr16(&p->old_free_head, s->free_head);
	uvn_slice_wr16(&p->old_used_idx, s->used);
	uvn_slice_wr8(&p->old_used_wrap_counter, s->wrap);
	return 0;
}

/* What recovery reads of each entry, once. */
struct snap {
	uint8_t *state; /* ENT_ */
	uint8_t *flag;  /* inflight as read */
	uint64_t *counter;
};

static void take_snapshot(struct uvn_inflight *t, struct snap *sn)
{
	for (uint16_t i = 0; i < t->num; i++) {
		const struct uvn_inflight_desc_packed *d = &t->p->desc[i];

		t->ent[i].next = uvn_slice_rd16(&d->next);
		t->ent[i].last = uvn_slice_rd16(&d->last);
		t->ent[i].num = uvn_slice_rd16(&d->num);
		t->ent[i].id = uvn_slice_rd16(&d->id);
		sn->flag[i] = rd8(&d->inflight);
		sn->counter[i] = rd64(&d->counter);
	}
}

/* The free list: each entry once, ended by num; its marks cleared (a
 * chain whose pop had not committed). */
static int walk_free(struct uvn_inflight *t, struct snap *sn, uint16_t e)
{
	while (e != t->num) {
		if (e > t->num || sn->state[e] != ENT_UNSEEN)
			return UVN_INFLIGHT_E_LIST;
		sn->state[e] = ENT_FREE;
		if (sn->flag[e])
			uvn_slice_wr8(&t->p->desc[e].inflight, 0);
		e = t->ent[e].next;
	}
	return 0;
}

/* The chain of marked head entry @h: num entries, none free or taken,
 * ending at last, with a buffer id of its own. */
static int claim(struct uvn_inflight *t, struct snap *sn, uint16_t h)
{
	uint16_t n = t->ent[h].num, e = h, id;

	if (n == 0 || n > t->num)
		return UVN_INFLIGHT_E_LIST;
	for (uint16_t k = 0;; k++) {
		if (e >= t->num || sn->state[e] != ENT_UNSEEN)
			return UVN_INFLIGHT_E_LIST;
		sn->state[e] = ENT_HELD;
		if (k + 1 == n)
			break;
		e = t->ent[e].next;
	}
	if (e != t->ent[h].last)
		return UVN_INFLIGHT_E_LIST;
	id = t->ent[e].id;
	if (id >= t->num || t->entry[id] != t->num)
		return UVN_INFLIGHT_E_ID;
	t->ent[h].id = id;
	t->entry[id] = h;
	return 0;
}

/* Every entry not free: a marked chain's, or the region is not ours.
 * @return the descriptors held in *@ndesc, chains into @m */
static int claim_all(struct uvn_inflight *t, struct snap *sn, struct uvn_inflight_marked *m,
		     unsigned *nm, unsigned *ndesc)
{
	for (uint16_t i = 0; i < t->num; i++) {
		int ret;

		if (sn->state[i] == ENT_FREE || !sn->flag[i])
			continue;
		if (sn->flag[i] > 1)
			return UVN_INFLIGHT_E_FLAG;
		ret = claim(t, sn, i);
		if (ret)
			return ret;
		m[*nm] = (struct uvn_inflight_marked){ sn->counter[i], i };
		(*nm)++;
		*ndesc += t->ent[i].num;
	}
	for (uint16_t i = 0; i < t->num; i++)
		if (sn->state[i] == ENT_UNSEEN)
			return UVN_INFLIGHT_E_LIST;
	return 0;
}

/* Used elements stored behind an unpublished first one, in the @n slots
 * from the used position: made to read as not used again (see top). */
static void unstage(struct uvn_vq_dev *vq, uint16_t pos, bool wrap, unsigned n)
{
	for (unsigned k = 0; k < n; k++) {
		uint16_t f = uvn_rd16(&vq->pk.desc[pos].flags);

		/* A used element of this lap; the driver's were (AVAIL, !USED). */
		if (!!(f & F_AVAIL) == wrap && !!(f & F_USED) == wrap)
			uvn_wr16(&vq->pk.desc[pos].flags, (uint16_t)(f ^ F_USED));
		uvn_ring_advance(&pos, &wrap, vq->num);
	}
}

/* The ring's positions from the settled slice and the chains held. */
static void place(struct uvn_vq_dev *vq, struct uvn_inflight *t, const struct settled *s,
		  unsigned ndesc)
{
	uint16_t pos = s->used;
	bool wrap = s->wrap;

	/* A broken queue's ring is not written any more. */
	if (!vq->err)
		unstage(vq, pos, wrap, ndesc);
	vq->pk.used_pos = pos;
	vq->pk.used_wrap = wrap;
	for (unsigned k = 0; k < ndesc; k++)
		uvn_ring_advance(&pos, &wrap, vq->num);
	vq->pk.last_avail = t->pos = t->resub_end = pos;
	vq->pk.avail_wrap = t->wrap = t->resub_wrap = wrap;
	t->free_head = s->free_head;
}

static int recover_used(struct uvn_vq_dev *vq, struct uvn_inflight *t, struct snap *sn,
			struct uvn_inflight_marked *m)
{
	struct settled s;
	unsigned nm = 0, ndesc = 0;
	int ret = settle(vq, t, &s);

	if (ret)
		return ret;
	take_snapshot(t, sn);
	ret = walk_free(t, sn, s.free_head);
	if (!ret)
		ret = claim_all(t, sn, m, &nm, &ndesc);
	if (!ret)
		ret = uvn_inflight_order(t, m, nm);
	if (!ret)
		place(vq, t, &s, ndesc);
	return ret;
}

static int recover(struct uvn_vq_dev *vq, struct uvn_inflight *t)
{
	struct uvn_inflight_packed *p = t->p;
	uint16_t version = uvn_slice_rd16(&p->version);
	struct snap sn;
	struct uvn_inflight_marked *m;
	int ret = UVN_INFLIGHT_E_NOMEM;

	t->pos = t->resub_end = vq->pk.last_avail;
	t->wrap = t->resub_wrap = vq->pk.avail_wrap;
	if (version == 0) {
		init_slice(vq, t);
		return 0;
	}
	if (version != 1 || rd64(&p->features) != 0)
		return UVN_INFLIGHT_E_VERSION;
	if (uvn_slice_rd16(&p->desc_num) != t->num)
		return UVN_INFLIGHT_E_NUM;
	sn.state = calloc(t->num, 1);
	sn.flag = malloc(t->num);
	sn.counter = malloc(t->num * sizeof(*sn.counter));
	m = malloc(t->num * sizeof(*m));
	if (sn.state && sn.flag && sn.counter && m)
		ret = recover_used(vq, t, &sn, m);
	t->resumed = !ret;
	free(sn.state);
	free(sn.flag);
	free(sn.counter);
	free(m);
	return ret;
}

int uvn_inflight_packed_attach(struct uvn_vq_dev *vq, struct uvn_inflight *t, void *region,
			       size_t len)
{
	if (len <
	    UVN_INFLIGHT_PACKED_HDR + (size_t)vq->num * sizeof(struct uvn_inflight_desc_packed))
		return UVN_INFLIGHT_E_SMALL;
	t->p = region;
	t->ent = calloc(vq->num, sizeof(*t->ent));
	t->entry = malloc(vq->num * sizeof(*t->entry));
	if (!t->ent || !t->entry)
		return UVN_INFLIGHT_E_NOMEM;
	for (uint16_t i = 0; i < vq->num; i++)
		t->entry[i] = vq->num;
	return recover(vq, t);
}
