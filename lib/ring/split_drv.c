/* SPDX-License-Identifier: MIT */
/*
 * Split ring, driver half: fill descriptors and avail entries, publish the
 * avail index in batches, decide on kicks, reclaim used buffers.
 *
 * The free list and chain links live in a private array (vq->next), never
 * read back from the descriptor table: the device can write shared memory.
 * The device may return only published chains: the used index may not move
 * past them (in_flight - added) and no used entry may name a head added
 * since the last publish (its epoch).
 */
#include "vq.h"

static inline uint16_t *used_event(struct uvn_vq_drv *vq)
{
	return &vq->split.avail->ring[vq->num];
}

static inline uint16_t *avail_event(struct uvn_vq_drv *vq)
{
	return (uint16_t *)&vq->split.used->ring[vq->num];
}

int uvn_split_drv_init(struct uvn_vq_drv *vq, void *ring)
{
	struct uvn_vq_layout lay;

	uvn_vq_layout(false, vq->num, &lay);
	vq->split.desc = ring;
	vq->split.avail = (struct vring_avail *)((char *)ring + lay.driver);
	vq->split.used = (struct vring_used *)((char *)ring + lay.device);
	for (unsigned i = 0; i < vq->num; i++)
		vq->next[i] = (uint16_t)(i + 1);
	vq->free_head = 0;
	vq->num_free = vq->num;
	vq->epoch = 1;
	return 0;
}

static void write_desc(struct vring_desc *d, uint64_t addr, uint32_t len, uint16_t flags,
		       uint16_t next)
{
	uvn_wr64(&d->addr, addr);
	uvn_wr32(&d->len, len);
	uvn_wr16(&d->flags, flags);
	uvn_wr16(&d->next, next);
}

/*
 * The descriptor after @i in a chain. With IN_ORDER the driver uses the
 * table in ring order, next = i + 1 wrapping to 0 (spec: split virtqueues,
 * the virtqueue descriptor table); buffers come back in order, so the free
 * descriptors stay one contiguous run starting at free_head.
 */
static uint16_t chain_next(const struct uvn_vq_drv *vq, uint16_t i)
{
	return vq->in_order ? (uint16_t)((i + 1) & (vq->num - 1)) : vq->next[i];
}

static uint16_t seg_flags(unsigned i, unsigned nout, unsigned total)
{
	return (uint16_t)((i + 1 < total ? VRING_DESC_F_NEXT : 0) |
			  (i >= nout ? VRING_DESC_F_WRITE : 0));
}

/*
 * Put @head in the next avail slot. A slot that already holds it is left
 * alone: with IN_ORDER the slots settle to fixed values after the first lap,
 * and not writing them keeps the avail ring's cache lines shared with the
 * device instead of bouncing one line to us and back every 32 packets.
 */
static inline void publish_head(struct uvn_vq_drv *vq, uint16_t head)
{
	uint16_t *slot = &vq->split.avail->ring[vq->split.avail_idx & (vq->num - 1)];

	if (uvn_rd16(slot) != head)
		uvn_wr16(slot, head);
}

/* The chain at @head is written: put it in the next avail slot. */
static inline void make_avail(struct uvn_vq_drv *vq, uint16_t head)
{
	publish_head(vq, head);
	vq->split.avail_idx++;
	vq->added++;
	vq->in_flight++;
	if (vq->in_order)
		uvn_drv_order_push(vq, head);
	vq->st.bufs++;
}

int uvn_split_drv_add(struct uvn_vq_drv *vq, const struct uvn_sg *sg, unsigned nout, unsigned nin,
		      void *token, bool indirect)
{
	unsigned total = nout + nin, ndesc;
	struct vring_desc *table = NULL;
	uint64_t taddr = 0, in_len = 0;
	uint16_t head = vq->free_head, i, last;

	for (unsigned k = nout; k < total; k++)
		in_len += sg[k].len;
	if (indirect)
		table = vq->indirect_alloc(vq->indirect_ctx, total, &taddr);
	ndesc = table ? 1 : total;
	if (vq->num_free < ndesc) {
		if (table)
			vq->indirect_free(vq->indirect_ctx, table, total);
		return -UVN_VQ_E_NOSPC;
	}
	if (table) {
		for (unsigned k = 0; k < total; k++)
			write_desc(&table[k], sg[k].addr, sg[k].len, seg_flags(k, nout, total),
				   (uint16_t)(k + 1));
		write_desc(&vq->split.desc[head], taddr, (uint32_t)(16 * total),
			   VRING_DESC_F_INDIRECT, 0);
		last = head;
		vq->st.indirect++;
	} else {
		i = head;
		last = head;
		for (unsigned k = 0; k < total; k++) {
			write_desc(&vq->split.desc[i], sg[k].addr, sg[k].len,
				   seg_flags(k, nout, total), chain_next(vq, i));
			last = i;
			i = chain_next(vq, i);
		}
	}
	vq->free_head = chain_next(vq, last);
	vq->num_free = (uint16_t)(vq->num_free - ndesc);
	vq->state[head] = (struct uvn_drv_state){
		.token = token, .indirect = table, .in_len = (uint32_t)in_len,
		.ndesc = (uint16_t)ndesc, .nindir = table ? (uint16_t)total : 0, .last = last,
		.epoch = vq->epoch,
	};
	make_avail(vq, head);
	return 0;
}

void uvn_split_drv_publish(struct uvn_vq_drv *vq)
{
	if (!vq->added)
		return;
	vq->added = 0;
	uvn_drv_next_epoch(vq);
	/* Descriptors and avail entries must be visible before the index. */
	uvn_store_release16(&vq->split.avail->idx, vq->split.avail_idx);
}

/* One buffer, one descriptor: uvn_split_drv_add() without the loops. */
int uvn_split_drv_add_one(struct uvn_vq_drv *vq, uint64_t addr, uint32_t len, bool writable,
			  void *token)
{
	uint16_t head = vq->free_head;

	if (UVN_UNLIKELY(!vq->num_free))
		return -UVN_VQ_E_NOSPC;
	write_desc(&vq->split.desc[head], addr, len, writable ? VRING_DESC_F_WRITE : 0, 0);
	vq->free_head = chain_next(vq, head);
	vq->num_free--;
	vq->state[head] = (struct uvn_drv_state){
		.token = token, .in_len = writable ? len : 0, .ndesc = 1, .last = head,
		.epoch = vq->epoch,
	};
	make_avail(vq, head);
	return 0;
}

/* uvn_split_drv_add_one() of @n writable buffers, the ring's indices in registers. */
unsigned uvn_split_drv_add_in_n(struct uvn_vq_drv *vq, const uint64_t *addr, void *const *tokens,
				 uint32_t len, unsigned n)
{
	uint16_t head = vq->free_head, idx = vq->split.avail_idx, epoch = vq->epoch;

	if (n > vq->num_free)
		n = vq->num_free;
	for (unsigned i = 0; i < n; i++) {
		uint16_t *slot = &vq->split.avail->ring[idx++ & (vq->num - 1)];

		write_desc(&vq->split.desc[head], addr[i], len, VRING_DESC_F_WRITE, 0);
		vq->state[head] = (struct uvn_drv_state){
			.token = tokens[i], .in_len = len, .ndesc = 1, .last = head, .epoch = epoch,
		};
		if (uvn_rd16(slot) != head)
			uvn_wr16(slot, head);
		if (vq->in_order)
			uvn_drv_order_push(vq, head);
		head = chain_next(vq, head);
	}
	vq->free_head = head;
	vq->split.avail_idx = idx;
	vq->num_free = (uint16_t)(vq->num_free - n);
	vq->added = (uint16_t)(vq->added + n);
	vq->in_flight = (uint16_t)(vq->in_flight + n);
	vq->st.bufs += n;
	return n;
}

bool uvn_split_drv_kick_prepare(struct uvn_vq_drv *vq)
{
	uint16_t new_idx = vq->split.avail_idx, old = (uint16_t)(new_idx - vq->added);
	bool need;

	if (!vq->added)
		return false;
	uvn_split_drv_publish(vq);
	/* The new index must be visible before we read avail_event/flags, or
	 * the device may go to sleep on the old index while we skip the kick. */
	uvn_fence_full();
	if (vq->event_idx)
		need = uvn_need_event(uvn_rd16(avail_event(vq)), new_idx, old);
	else
		need = !(uvn_rd16(&vq->split.used->flags) & VRING_USED_F_NO_NOTIFY);
	if (need)
		vq->st.notify++;
	else
		vq->st.notify_suppressed++;
	return need;
}

static void *detach(struct uvn_vq_drv *vq, uint16_t head)
{
	struct uvn_drv_state *s = &vq->state[head];
	void *token = s->token;

	uvn_drv_release_indirect(vq, s);
	if (!vq->in_order) {
		vq->next[s->last] = vq->free_head;
		vq->free_head = head;
	}
	vq->num_free = (uint16_t)(vq->num_free + s->ndesc);
	s->token = NULL;
	vq->in_flight--;
	return token;
}

/* Are there used entries we have not read? Re-reads used->idx when needed. */
static int used_pending(struct uvn_vq_drv *vq)
{
	uint16_t idx;

	if (vq->split.last_used != vq->split.shadow_used)
		return 1;
	/* Acquire: the used entries and buffer contents behind the index. */
	idx = uvn_load_acquire16(&vq->split.used->idx);
	/* Published and not returned: the chains added since the last publish
	 * are not the device's (IN_ORDER reclaim trusts this count alone). */
	if (UVN_UNLIKELY((uint16_t)(idx - vq->split.last_used) >
			 (uint16_t)(vq->in_flight - vq->added)))
		return uvn_vq_drv_fail(vq, UVN_VQ_E_USED_IDX);
	vq->split.shadow_used = idx;
	return idx != vq->split.last_used;
}

/* The used entry at free-running position @pos. */
static void read_used_at(struct uvn_vq_drv *vq, uint16_t pos, uint16_t *id, uint32_t *len)
{
	struct vring_used_elem *e = &vq->split.used->ring[pos & (vq->num - 1)];
	uint32_t v = le32toh(*(volatile uint32_t *)&e->id);

	*len = le32toh(*(volatile uint32_t *)&e->len);
	/* Out of range ids become num, which the caller rejects. */
	*id = v < vq->num ? (uint16_t)v : vq->num;
}

static void read_used(struct uvn_vq_drv *vq, uint16_t *id, uint32_t *len)
{
	read_used_at(vq, vq->split.last_used, id, len);
}

/* One used entry per buffer. */
static int get_one(struct uvn_vq_drv *vq, struct uvn_vq_done *out)
{
	uint16_t id;
	uint32_t len;

	read_used(vq, &id, &len);
	if (UVN_UNLIKELY(id >= vq->num || !uvn_drv_returnable(vq, &vq->state[id])))
		return uvn_vq_drv_fail(vq, UVN_VQ_E_USED_ID);
	if (UVN_UNLIKELY(len > vq->state[id].in_len))
		return uvn_vq_drv_fail(vq, UVN_VQ_E_USED_LEN);
	out->len = len;
	out->token = detach(vq, id);
	vq->split.last_used++;
	vq->st.used++;
	return 0;
}

/* IN_ORDER: one used entry may stand for every buffer up to its id. */
static int get_in_order(struct uvn_vq_drv *vq, struct uvn_vq_done *out)
{
	uint16_t head;

	if (!vq->in_batch) {
		uint16_t id;
		uint32_t len;

		read_used(vq, &id, &len);
		/* A published id means every chain before it is too. */
		if (UVN_UNLIKELY(id >= vq->num || !uvn_drv_returnable(vq, &vq->state[id])))
			return uvn_vq_drv_fail(vq, UVN_VQ_E_USED_ID);
		if (UVN_UNLIKELY(len > vq->state[id].in_len))
			return uvn_vq_drv_fail(vq, UVN_VQ_E_USED_LEN);
		vq->in_batch = true;
		vq->batch_id = id;
		vq->batch_len = len;
	}
	/* The device advanced the used index by the whole batch at once. */
	if (UVN_UNLIKELY(vq->split.last_used == vq->split.shadow_used))
		return uvn_vq_drv_fail(vq, UVN_VQ_E_USED_IDX);
	head = uvn_drv_order_peek(vq);
	if (head == vq->batch_id) {
		vq->in_batch = false;
		out->len = vq->batch_len;
	} else {
		/* Skipped buffers were used completely. */
		out->len = vq->state[head].in_len;
	}
	uvn_drv_order_pop(vq);
	out->token = detach(vq, head);
	vq->split.last_used++;
	vq->st.used++;
	return 0;
}

/*
 * IN_ORDER, the common entry: it names the oldest buffer in flight (the
 * device returned buffers one by one), so no batch is opened. Checked as
 * get_in_order() checks it; anything else is left to get_in_order(), which
 * reads the entry again. @return true if it took the entry into @out
 */
static inline bool get_in_order_one(struct uvn_vq_drv *vq, uint16_t pos, struct uvn_vq_done *out)
{
	uint16_t id, head = uvn_drv_order_peek(vq);
	struct uvn_drv_state *s = &vq->state[head];
	uint32_t len;

	read_used_at(vq, pos, &id, &len);
	if (UVN_UNLIKELY(id != head || !uvn_drv_returnable(vq, s) || len > s->in_len))
		return false;
	uvn_drv_release_indirect(vq, s);
	out->len = len;
	out->token = s->token;
	s->token = NULL;
	vq->num_free = (uint16_t)(vq->num_free + s->ndesc);
	uvn_drv_order_pop(vq);
	return true;
}

/* IN_ORDER: the entries the last read of the used index showed, up to @max. */
static unsigned get_used_in_order(struct uvn_vq_drv *vq, struct uvn_vq_done *out, unsigned max,
				  int *err)
{
	uint16_t ready = (uint16_t)(vq->split.shadow_used - vq->split.last_used);
	unsigned n = 0;

	*err = 0;
	if (ready > max)
		ready = (uint16_t)max;
	while (n < ready && !vq->in_batch &&
	       get_in_order_one(vq, (uint16_t)(vq->split.last_used + n), &out[n]))
		n++;
	vq->in_flight = (uint16_t)(vq->in_flight - n);
	vq->split.last_used = (uint16_t)(vq->split.last_used + n);
	vq->st.used += n;
	for (; n < ready; n++) {
		*err = get_in_order(vq, &out[n]);
		if (*err)
			break;
	}
	return n;
}

int uvn_split_drv_get_used(struct uvn_vq_drv *vq, struct uvn_vq_done *out, unsigned max)
{
	unsigned n = 0;

	while (vq->in_order && n < max) {
		int ret = used_pending(vq);

		if (ret <= 0)
			return n ? (int)n : ret;
		n += get_used_in_order(vq, out + n, max - n, &ret);
		if (ret)
			return n ? (int)n : ret;
	}
	while (n < max) {
		int ret = used_pending(vq);

		if (ret < 0)
			return n ? (int)n : ret;
		if (ret == 0)
			break;
		ret = vq->in_order ? get_in_order(vq, &out[n]) : get_one(vq, &out[n]);
		if (ret)
			/* Buffers reclaimed before the bad entry are not lost;
			 * the next call reports the broken queue. */
			return n ? (int)n : ret;
		n++;
	}
	return (int)n;
}

/*
 * IN_ORDER, chains without writable descriptors: the used index alone says
 * how many of the oldest chains are done, so the entries (one per chain, or
 * one per batch) are not read. Stops before a chain with writable
 * descriptors, whose used length matters.
 */
static unsigned reclaim_in_order(struct uvn_vq_drv *vq, void **tokens, unsigned max)
{
	unsigned n = 0, ndesc = 0;

	if ((uint16_t)(vq->split.shadow_used - vq->split.last_used) < max)
		max = (uint16_t)(vq->split.shadow_used - vq->split.last_used);
	for (; n < max; n++) {
		struct uvn_drv_state *s = &vq->state[uvn_drv_order_peek(vq)];

		if (s->in_len)
			break;
		uvn_drv_release_indirect(vq, s);
		tokens[n] = s->token;
		s->token = NULL;
		ndesc += s->ndesc;
		uvn_drv_order_pop(vq);
	}
	vq->num_free = (uint16_t)(vq->num_free + ndesc);
	vq->in_flight = (uint16_t)(vq->in_flight - n);
	vq->split.last_used = (uint16_t)(vq->split.last_used + n);
	vq->st.used += n;
	return n;
}

/* uvn_vq_drv_reclaim() under IN_ORDER. @return chains reclaimed, 0 if
 * none is done, or a broken queue's error. */
int uvn_split_drv_reclaim_in_order(struct uvn_vq_drv *vq, void **tokens, unsigned max)
{
	int n;

	/* A batch entry already read is finished by get_in_order(). */
	if (vq->in_batch)
		return uvn_vq_drv_reclaim_entries(vq, tokens, max);
	n = used_pending(vq);
	if (n <= 0)
		return n;
	n = (int)reclaim_in_order(vq, tokens, max);
	/* None by the index alone: the next one needs its used entry read. */
	return n ? n : uvn_vq_drv_reclaim_entries(vq, tokens, max);
}

bool uvn_split_drv_has_used(struct uvn_vq_drv *vq)
{
	return used_pending(vq) > 0;
}

void uvn_split_drv_disable_cb(struct uvn_vq_drv *vq)
{
	if (vq->split.flags_shadow & VRING_AVAIL_F_NO_INTERRUPT)
		return;
	vq->split.flags_shadow |= VRING_AVAIL_F_NO_INTERRUPT;
	if (vq->event_idx)
		/* An event index just behind us is crossed only after 64K entries. */
		uvn_wr16(used_event(vq), (uint16_t)(vq->split.last_used - 1));
	else
		uvn_wr16(&vq->split.avail->flags, vq->split.flags_shadow);
}

bool uvn_split_drv_enable_cb(struct uvn_vq_drv *vq, bool delayed)
{
	uint16_t bufs = 0, idx;

	vq->split.flags_shadow &= (uint16_t)~VRING_AVAIL_F_NO_INTERRUPT;
	if (vq->event_idx) {
		if (delayed)
			bufs = (uint16_t)(vq->in_flight * 3 / 4);
		uvn_wr16(used_event(vq), (uint16_t)(vq->split.last_used + bufs));
	} else {
		uvn_wr16(&vq->split.avail->flags, vq->split.flags_shadow);
	}
	/* The request must be visible before we look at the used index again:
	 * the device reads it after publishing, the mirror of this order. */
	uvn_fence_full();
	if (vq->in_batch)
		return false;
	idx = uvn_load_acquire16(&vq->split.used->idx);
	return (uint16_t)(idx - vq->split.last_used) <= bufs;
}

void *uvn_split_drv_detach_unused(struct uvn_vq_drv *vq)
{
	void *token = NULL;

	if (!vq->in_flight)
		return NULL;
	/* Chains not yet published never will be; added must stay within
	 * in_flight for the used index bound. */
	vq->added = 0;
	if (vq->in_order) {
		/* Oldest first, so the free descriptors stay contiguous. */
		token = detach(vq, uvn_drv_order_peek(vq));
		uvn_drv_order_pop(vq);
	} else {
		for (unsigned i = 0; i < vq->num && !token; i++) {
			if (vq->state[i].token)
				token = detach(vq, (uint16_t)i);
		}
	}
	if (!vq->in_flight)
		vq->in_batch = false;
	return token;
}

/*
 * After the device died and before another one starts from the used index
 * (vhost-user reconnect without an in-flight region): make the avail slots
 * from the used index up to the published index hold exactly the chains
 * the dead device had not completed. A device that completed chains out of
 * order leaves there chains it completed and misses older ones it still
 * held; the next device, starting at the used index, would return the first
 * twice and never the second. The published chains not completed are ours
 * to know: published (not this epoch), not yet returned, and not named by a
 * used entry we have not read yet. Their number must be the slots' number;
 * if not (the dead device wrote nonsense) nothing is changed.
 * Declared in net/driver/drv.h: the ring's one user that reconnects.
 * @mark, @list: scratch of num bytes and num entries (no allocation here).
 * @return slots rewritten, or -1 if the ring's state does not add up
 */
int uvn_split_drv_resubmit(struct uvn_vq_drv *vq, uint8_t *mark, uint16_t *list);
int uvn_split_drv_resubmit(struct uvn_vq_drv *vq, uint8_t *mark, uint16_t *list)
{
	uint16_t used = uvn_load_acquire16(&vq->split.used->idx);
	uint16_t published = uvn_load_acquire16(&vq->split.avail->idx);
	uint16_t n = (uint16_t)(published - used), k = 0, changed = 0;

	if (vq->in_order || vq->packed || n == 0)
		return 0;
	if ((uint16_t)(used - vq->split.last_used) > vq->num || n > vq->num)
		return -1;
	/* 1: still ours to take back; 2: completed, entry not read yet. */
	for (unsigned h = 0; h < vq->num; h++)
		mark[h] = uvn_drv_returnable(vq, &vq->state[h]);
	for (uint16_t i = vq->split.last_used; i != used; i++) {
		uint32_t id = le32toh(vq->split.used->ring[i & (vq->num - 1)].id);

		if (id < vq->num && mark[id] == 1)
			mark[id] = 2;
	}
	for (unsigned h = 0; h < vq->num; h++)
		k = (uint16_t)(k + (mark[h] == 1));
	if (k != n)
		return -1;
	/* Keep the order they were made available in where the slots still
	 * tell it (a head's latest slot of the last lap), the ones whose slot
	 * was reused since (held longest) first. Gathered before writing: the
	 * slots written are among the ones read. */
	k = n;
	for (unsigned c = 0; c < vq->num; c++) {
		uint16_t h = uvn_rd16(&vq->split.avail->ring[(uint16_t)(published - 1 - c) & (vq->num - 1)]);

		if (h < vq->num && mark[h] == 1) {
			mark[h] = 3;
			list[--k] = h;
		}
	}
	for (unsigned h = 0, j = 0; h < vq->num && j < k; h++)
		if (mark[h] == 1)
			list[j++] = (uint16_t)h;
	for (k = 0; k < n; k++) {
		uint16_t *slot = &vq->split.avail->ring[(uint16_t)(used + k) & (vq->num - 1)];

		if (uvn_rd16(slot) != list[k]) {
			uvn_wr16(slot, list[k]);
			changed++;
		}
	}
	return changed;
}
