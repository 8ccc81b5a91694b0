/* SPDX-License-Identifier: MIT */
/*
 * Packed ring, driver half. Descriptors are written in ring order; a chain's
 * head flags are stored last (at kick_prepare, after one release fence for
 * the whole batch), which is what makes the chain available. Buffer ids come
 * from a private free list; used descriptors are matched back through them,
 * and only for chains already published: an id whose chain is still pending
 * is not the device's to return (its head is in pend_pos, npend counts it).
 */
#include <stdlib.h>

#include "packed.h"

#define F_AVAIL UVN_PK_AVAIL
#define F_USED UVN_PK_USED
#define WRAP_BIT UVN_PK_WRAP

int uvn_packed_drv_init(struct uvn_vq_drv *vq, void *ring)
{
	struct uvn_vq_layout lay;

	uvn_vq_layout(true, vq->num, &lay);
	vq->pk.desc = ring;
	vq->pk.driver = (struct vring_packed_desc_event *)((char *)ring + lay.driver);
	vq->pk.device = (struct vring_packed_desc_event *)((char *)ring + lay.device);
	vq->pk.avail_wrap = true;
	vq->pk.used_wrap = true;
	vq->pk.pend_pos = calloc(1, uvn_pk_keep_bytes(vq->num));
	vq->pk.pend_flags = calloc(vq->num, sizeof(uint16_t));
	if (!vq->pk.pend_pos || !vq->pk.pend_flags)
		return -UVN_VQ_E_NOMEM;
	uvn_pk_keep_init(vq);
	for (unsigned i = 0; i < vq->num; i++)
		vq->next[i] = (uint16_t)(i + 1);
	vq->free_head = 0;
	vq->num_free = vq->num;
	vq->epoch = 1;
	return 0;
}

/* Write the chain's descriptors; all but the head's flags are stored now. */
static void write_chain(struct uvn_vq_drv *vq, const struct uvn_sg *sg, unsigned nout,
			unsigned total, uint16_t id, uint16_t *head_flags)
{
	uint16_t pos = vq->pk.next_avail;
	bool wrap = vq->pk.avail_wrap;

	for (unsigned k = 0; k < total; k++) {
		uint16_t f = (uint16_t)((k + 1 < total ? VRING_DESC_F_NEXT : 0) |
					(k >= nout ? VRING_DESC_F_WRITE : 0) | uvn_pk_avail_flags(wrap));

		uvn_pk_write_body(&vq->pk.desc[pos], sg[k].addr, sg[k].len, id);
		if (k == 0)
			*head_flags = f;
		else
			uvn_wr16(&vq->pk.desc[pos].flags, f);
		uvn_ring_advance(&pos, &wrap, vq->num);
	}
	vq->pk.next_avail = pos;
	vq->pk.avail_wrap = wrap;
}

int uvn_packed_drv_add(struct uvn_vq_drv *vq, const struct uvn_sg *sg, unsigned nout,
		       unsigned nin, void *token, bool indirect)
{
	unsigned total = nout + nin, ndesc;
	struct vring_packed_desc *table = NULL;
	uint64_t taddr = 0, in_len = 0;
	uint16_t id, head_flags = 0, head_pos = vq->pk.next_avail;

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
	id = vq->free_head;
	vq->free_head = vq->next[id];
	if (table) {
		for (unsigned k = 0; k < total; k++) {
			uvn_pk_write_body(&table[k], sg[k].addr, sg[k].len, 0);
			uvn_wr16(&table[k].flags, k >= nout ? VRING_DESC_F_WRITE : 0);
		}
		uvn_pk_write_body(&vq->pk.desc[head_pos], taddr, (uint32_t)(16 * total), id);
		head_flags = (uint16_t)(VRING_DESC_F_INDIRECT | uvn_pk_avail_flags(vq->pk.avail_wrap));
		uvn_ring_advance(&vq->pk.next_avail, &vq->pk.avail_wrap, vq->num);
		vq->st.indirect++;
	} else {
		write_chain(vq, sg, nout, total, id, &head_flags);
	}
	/* npend <= ids in flight and not published <= num: get_used takes
	 * back published ids only, detach_unused drops what is pending. */
	vq->pk.pend_pos[vq->pk.npend] = head_pos;
	vq->pk.pend_flags[vq->pk.npend] = head_flags;
	vq->pk.npend++;
	vq->num_free = (uint16_t)(vq->num_free - ndesc);
	vq->state[id] = (struct uvn_drv_state){
		.token = token, .indirect = table, .in_len = (uint32_t)in_len,
		.ndesc = (uint16_t)ndesc, .nindir = table ? (uint16_t)total : 0,
		.epoch = vq->epoch,
	};
	if (uvn_pk_keeping(vq))
		uvn_pk_keep_chain(vq, sg, nout, total, table ? taddr : 0, id);
	vq->added = (uint16_t)(vq->added + ndesc);
	vq->in_flight++;
	if (vq->in_order)
		uvn_drv_order_push(vq, id);
	vq->st.bufs++;
	return 0;
}

void uvn_packed_drv_publish(struct uvn_vq_drv *vq)
{
	if (!vq->pk.npend)
		return;
	/* Bodies of every pending chain before any of their heads. */
	uvn_fence_release();
	for (unsigned i = 0; i < vq->pk.npend; i++)
		uvn_store_release16(&vq->pk.desc[vq->pk.pend_pos[i]].flags, vq->pk.pend_flags[i]);
	vq->pk.npend = 0;
	vq->added = 0;
	uvn_drv_next_epoch(vq);
}

bool uvn_packed_drv_kick_prepare(struct uvn_vq_drv *vq)
{
	uint16_t flags, added = vq->added;
	bool need;

	if (!vq->pk.npend)
		return false;
	uvn_packed_drv_publish(vq);
	/* Heads visible before we read the device's event suppression. */
	uvn_fence_full();
	/* Acquire: the device writes off_wrap before the flags that select it. */
	flags = uvn_load_acquire16(&vq->pk.device->flags) & UVN_EVENT_FLAGS_MASK;
	if (flags == VRING_PACKED_EVENT_FLAG_DESC && vq->event_idx)
		need = uvn_packed_need_event(uvn_rd16(&vq->pk.device->off_wrap), vq->pk.next_avail,
					     added, vq->pk.avail_wrap, vq->num);
	else
		need = flags != VRING_PACKED_EVENT_FLAG_DISABLE;
	if (need)
		vq->st.notify++;
	else
		vq->st.notify_suppressed++;
	return need;
}

/* Give back an id's slot and descriptors without touching the ring. */
static void *forget(struct uvn_vq_drv *vq, uint16_t id)
{
	struct uvn_drv_state *s = &vq->state[id];
	void *token = s->token;

	if (uvn_pk_keeping(vq))
		uvn_pk_keep_release(vq, s);
	uvn_drv_release_indirect(vq, s);
	vq->next[id] = vq->free_head;
	vq->free_head = id;
	vq->num_free = (uint16_t)(vq->num_free + s->ndesc);
	s->token = NULL;
	vq->in_flight--;
	return token;
}

static void *detach(struct uvn_vq_drv *vq, uint16_t id)
{
	/* The device skips the rest of the chain's descriptors; so do we. */
	for (unsigned k = 0; k < vq->state[id].ndesc; k++)
		uvn_ring_advance(&vq->pk.last_used, &vq->pk.used_wrap, vq->num);
	vq->st.used++;
	return forget(vq, id);
}

/* Read the used descriptor at last_used. @return 1, 0 if none, or an error. */
static int read_used(struct uvn_vq_drv *vq, uint16_t *id, uint32_t *len)
{
	struct vring_packed_desc *d = &vq->pk.desc[vq->pk.last_used];
	/* Acquire: id and len are read after the flags that publish them. */
	uint16_t flags = uvn_load_acquire16(&d->flags);

	if (!uvn_pk_is_used(flags, vq->pk.used_wrap))
		return 0;
	*id = uvn_rd16(&d->id);
	/* Without WRITE the length is reserved and ignored: nothing written. */
	*len = flags & VRING_DESC_F_WRITE ? le32toh(*(volatile uint32_t *)&d->len) : 0;
	/* IN_ORDER: a published id means every chain before it is too. */
	if (UVN_UNLIKELY(*id >= vq->num || !uvn_drv_returnable(vq, &vq->state[*id])))
		return uvn_vq_drv_fail(vq, UVN_VQ_E_USED_ID);
	if (UVN_UNLIKELY(*len > vq->state[*id].in_len))
		return uvn_vq_drv_fail(vq, UVN_VQ_E_USED_LEN);
	return 1;
}

static int get_in_order(struct uvn_vq_drv *vq, struct uvn_vq_done *out)
{
	uint16_t id;

	if (!vq->in_batch) {
		uint32_t len;
		int ret = read_used(vq, &vq->batch_id, &len);

		if (ret <= 0)
			return ret;
		vq->batch_len = len;
		vq->in_batch = true;
	}
	if (UVN_UNLIKELY(!vq->in_flight))
		return uvn_vq_drv_fail(vq, UVN_VQ_E_USED_ID);
	id = uvn_drv_order_peek(vq);
	if (id == vq->batch_id) {
		vq->in_batch = false;
		out->len = vq->batch_len;
	} else {
		out->len = vq->state[id].in_len; /* skipped: used completely */
	}
	uvn_drv_order_pop(vq);
	out->token = detach(vq, id);
	return 1;
}

int uvn_packed_drv_get_used(struct uvn_vq_drv *vq, struct uvn_vq_done *out, unsigned max)
{
	unsigned n = 0;

	while (n < max) {
		int ret;

		if (vq->in_order) {
			ret = get_in_order(vq, &out[n]);
		} else {
			uint16_t id;
			uint32_t len;

			ret = read_used(vq, &id, &len);
			if (ret > 0) {
				out[n].len = len;
				out[n].token = detach(vq, id);
			}
		}
		if (ret < 0)
			/* Buffers reclaimed before the bad element are not lost;
			 * the next call reports the broken queue. */
			return n ? (int)n : ret;
		if (ret == 0)
			break;
		n++;
	}
	return (int)n;
}

bool uvn_packed_drv_has_used(struct uvn_vq_drv *vq)
{
	if (vq->in_batch)
		return true;
	return uvn_pk_is_used(uvn_load_acquire16(&vq->pk.desc[vq->pk.last_used].flags), vq->pk.used_wrap);
}

static void set_event_flags(struct uvn_vq_drv *vq, uint16_t flags)
{
	if (vq->pk.event_flags != flags) {
		vq->pk.event_flags = flags;
		uvn_wr16(&vq->pk.driver->flags, flags);
	}
}

void uvn_packed_drv_disable_cb(struct uvn_vq_drv *vq)
{
	set_event_flags(vq, VRING_PACKED_EVENT_FLAG_DISABLE);
}

/* Descriptors the used element of @id stands for: the chain, or with
 * IN_ORDER every chain from the oldest in flight (order cursor *@oh) to it.
 * @return 0 for an id that is not in flight (get_used will report it). */
static unsigned element_span(const struct uvn_vq_drv *vq, uint16_t id, uint16_t *oh,
			     unsigned *left)
{
	unsigned span = 0;

	if (id >= vq->num || !uvn_drv_returnable(vq, &vq->state[id]) || !*left)
		return 0;
	if (!vq->in_order) {
		--*left;
		return vq->state[id].ndesc;
	}
	for (;;) {
		uint16_t x = vq->order[*oh];

		span += vq->state[x].ndesc;
		--*left;
		if (++*oh == vq->num)
			*oh = 0;
		if (x == id)
			return span;
		if (!*left)
			return 0;
	}
}

/*
 * Has the device's used position already gone more than @ahead descriptors
 * past ours? Its elements need not start at any given position (chains and
 * in-order batches are skipped over), so walk them the way get_used will,
 * without taking anything.
 */
static bool device_passed(const struct uvn_vq_drv *vq, unsigned ahead)
{
	unsigned pos = vq->pk.last_used, walked = 0, left = vq->in_flight;
	uint16_t oh = vq->order_head;
	bool wrap = vq->pk.used_wrap;

	while (walked <= ahead) {
		const struct vring_packed_desc *d = &vq->pk.desc[pos];
		unsigned span;

		if (!uvn_pk_is_used(uvn_load_acquire16(&d->flags), wrap))
			return false;
		span = element_span(vq, uvn_rd16(&d->id), &oh, &left);
		if (!span)
			return true; /* let get_used deal with it */
		/* A span is at most the ring: one wrap at most. */
		walked += span;
		pos += span;
		if (pos >= vq->num) {
			pos -= vq->num;
			wrap = !wrap;
		}
	}
	return true;
}

bool uvn_packed_drv_enable_cb(struct uvn_vq_drv *vq, bool delayed)
{
	uint16_t pos = vq->pk.last_used;
	bool wrap = vq->pk.used_wrap;
	unsigned ahead = 0;

	if (vq->event_idx) {
		if (delayed)
			ahead = (unsigned)(vq->num - vq->num_free) * 3 / 4;
		pos = (uint16_t)(pos + ahead);
		if (pos >= vq->num) {
			pos = (uint16_t)(pos - vq->num);
			wrap = !wrap;
		}
		/* The event position first: the device reads it after the flags. */
		uvn_wr16(&vq->pk.driver->off_wrap, (uint16_t)(pos | (wrap ? WRAP_BIT : 0)));
		uvn_fence_release();
		set_event_flags(vq, VRING_PACKED_EVENT_FLAG_DESC);
	} else {
		set_event_flags(vq, VRING_PACKED_EVENT_FLAG_ENABLE);
	}
	/* The request visible before we look for used descriptors again. */
	uvn_fence_full();
	if (vq->in_batch)
		return false;
	if (!ahead)
		return !uvn_packed_drv_has_used(vq);
	/* Delayed: the device may have passed the event before it saw it; it
	 * then will not notify, so we must not sleep. */
	return !device_passed(vq, ahead);
}

void *uvn_packed_drv_detach_unused(struct uvn_vq_drv *vq)
{
	void *token = NULL;

	if (!vq->in_flight)
		return NULL;
	/* Chains not yet published never will be: their ids may be given
	 * back now, and pend_pos must not outgrow the ids in flight. */
	vq->pk.npend = 0;
	vq->added = 0;
	if (vq->in_order) {
		/* Oldest first, keeping the order of the rest. */
		token = forget(vq, uvn_drv_order_peek(vq));
		uvn_drv_order_pop(vq);
	} else {
		for (unsigned i = 0; i < vq->num && !token; i++) {
			if (vq->state[i].token)
				token = forget(vq, (uint16_t)i);
		}
	}
	if (!vq->in_flight)
		vq->in_batch = false;
	return token;
}
