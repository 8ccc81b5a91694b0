/* SPDX-License-Identifier: MIT */
/*
 * Split ring, device half: read the avail index (acquire), walk chains into
 * iovecs, push used elements and publish them with one index store, decide
 * on notifications. Every value read from the ring is validated.
 */
#include "inflight.h"
#include "vq.h"

static inline uint16_t *used_event(struct uvn_vq_dev *vq)
{
	return &vq->split.avail->ring[vq->num];
}

static inline uint16_t *avail_event(struct uvn_vq_dev *vq)
{
	return (uint16_t *)&vq->split.used->ring[vq->num];
}

void uvn_split_dev_init(struct uvn_vq_dev *vq, const struct uvn_vq_dev_cfg *cfg)
{
	vq->split.desc = cfg->desc;
	vq->split.avail = cfg->driver;
	vq->split.used = cfg->device;
	vq->split.last_avail = cfg->avail_idx;
	vq->split.shadow_avail = cfg->avail_idx;
	vq->split.used_idx = cfg->used_idx;
	vq->signalled_valid = false;
}

int uvn_split_dev_avail(struct uvn_vq_dev *vq)
{
	/* Acquire: avail entries and descriptors are read after the index. */
	uint16_t idx = uvn_load_acquire16(&vq->split.avail->idx);
	uint16_t n = (uint16_t)(idx - vq->split.last_avail);

	if (UVN_UNLIKELY(n > vq->num))
		return uvn_vq_dev_fail(vq, UVN_VQ_E_AVAIL_IDX);
	vq->split.shadow_avail = idx;
	return n;
}

/* The general walk; @d is the head descriptor, already read. */
static int walk(struct uvn_vq_dev *vq, struct uvn_desc *d, struct uvn_chain_walk *w,
		unsigned *ndesc)
{
	unsigned steps = 1;

	for (;;) {
		int ret;

		if (d->flags & VRING_DESC_F_INDIRECT) {
			*ndesc = steps;
			return uvn_chain_indirect(w, d);
		}
		ret = uvn_chain_add(w, d);
		if (UVN_UNLIKELY(ret))
			return ret;
		if (!(d->flags & VRING_DESC_F_NEXT))
			break;
		if (UVN_UNLIKELY(d->next >= vq->num))
			return UVN_VQ_E_NEXT_RANGE;
		if (UVN_UNLIKELY(steps++ >= vq->num))
			return UVN_VQ_E_LOOP;
		uvn_desc_read_split(&vq->split.desc[d->next], d);
	}
	*ndesc = steps;
	return 0;
}

/* A chain that did not fit the caller's array, checked like one taken. */
static __attribute__((noinline, cold)) int iov_full(struct uvn_vq_dev *vq, struct uvn_vq_chain *ch,
						    uint16_t head, unsigned ndesc)
{
	if (UVN_UNLIKELY(vq->held >= vq->num)) /* see vq.h */
		return uvn_vq_dev_fail(vq, UVN_VQ_E_OVERRUN);
	return uvn_chain_iov_full(ch, head, ndesc);
}

/* Pop the chain at @head (read from the avail ring or the in-flight
 * slice). @return 1, -UVN_VQ_E_IOV_FULL (nothing taken), or an error
 * (queue broken). */
static inline __attribute__((always_inline)) int pop_head(struct uvn_vq_dev *vq, uint16_t head,
							  struct uvn_vq_chain *ch, struct iovec *iov,
							  unsigned iov_max)
{
	struct uvn_chain_walk w;
	struct uvn_desc d;
	unsigned ndesc = 0;
	int ret;

	if (UVN_UNLIKELY(head >= vq->num))
		return uvn_vq_dev_fail(vq, UVN_VQ_E_HEAD_RANGE);
	uvn_desc_read_split(&vq->split.desc[head], &d);
	if (UVN_LIKELY(!(d.flags & (VRING_DESC_F_NEXT | VRING_DESC_F_INDIRECT)))) {
		ret = uvn_chain_single(vq, &d, iov, iov_max, ch);
		if (UVN_LIKELY(ret == 0)) {
			ndesc = 1;
			goto done;
		}
		if (ret > 0)
			return uvn_vq_dev_fail(vq, ret);
	}
	uvn_chain_begin(&w, vq, iov, iov_max);
	ret = walk(vq, &d, &w, &ndesc);
	if (UVN_UNLIKELY(ret))
		return uvn_vq_dev_fail(vq, ret);
	if (UVN_UNLIKELY(uvn_chain_end(&w, ch)))
		return iov_full(vq, ch, head, ndesc);
done:
	if (UVN_UNLIKELY(vq->held >= vq->num)) /* see vq.h */
		return uvn_vq_dev_fail(vq, UVN_VQ_E_OVERRUN);
	vq->held++;
	ch->id = head;
	ch->ndesc = (uint16_t)ndesc;
	uvn_stat_inc(&vq->st.bufs);
	return 1;
}

/* The head of the next avail entry. @return 1, 0 (none), or a ring error */
static inline int next_head(struct uvn_vq_dev *vq, uint16_t *head)
{
	if (vq->split.last_avail == vq->split.shadow_avail) {
		int ret = uvn_split_dev_avail(vq);

		if (ret <= 0)
			return ret;
	}
	*head = uvn_rd16(&vq->split.avail->ring[vq->split.last_avail & (vq->num - 1)]);
	return 1;
}

/*
 * With in-flight tracking: the chains a restart left marked come first,
 * oldest first (they are counted in last_avail already); every chain taken
 * from the avail ring is marked.
 */
static __attribute__((noinline)) int pop_tracked(struct uvn_vq_dev *vq, struct uvn_vq_chain *ch,
						 struct iovec *iov, unsigned iov_max)
{
	struct uvn_inflight *t = vq->inflight;
	uint16_t head;
	int ret;

	if (t->next_resubmit < t->nresubmit) {
		ret = pop_head(vq, t->resubmit[t->next_resubmit], ch, iov, iov_max);
		if (ret == 1)
			t->next_resubmit++;
		return ret;
	}
	ret = next_head(vq, &head);
	if (ret <= 0)
		return ret;
	ret = pop_head(vq, head, ch, iov, iov_max);
	if (ret == 1) {
		vq->split.last_avail++;
		t->ring_popped++;
		uvn_inflight_split_mark(t, head);
	}
	return ret;
}

int uvn_split_dev_pop(struct uvn_vq_dev *vq, struct uvn_vq_chain *ch, struct iovec *iov,
		      unsigned iov_max)
{
	uint16_t head;
	int ret;

	if (UVN_UNLIKELY(vq->inflight != NULL))
		return pop_tracked(vq, ch, iov, iov_max);
	ret = next_head(vq, &head);
	if (ret <= 0)
		return ret;
	ret = pop_head(vq, head, ch, iov, iov_max);
	if (ret == 1)
		vq->split.last_avail++;
	return ret;
}

static void write_used(struct uvn_vq_dev *vq, uint16_t slot, uint16_t id, uint32_t len)
{
	struct vring_used_elem *e = &vq->split.used->ring[slot & (vq->num - 1)];

	uvn_wr32(&e->id, id);
	uvn_wr32(&e->len, len);
}

/*
 * IN_ORDER batch (spec: split virtqueues, in-order use of descriptors):
 * one used entry at the batch's first slot, carrying the head of its last
 * chain; the used index moves by the number of chains in the batch.
 */
void uvn_split_dev_end_batch(struct uvn_vq_dev *vq)
{
	if (!vq->batch_n)
		return;
	write_used(vq, vq->split.used_idx, vq->batch_id, vq->batch_len);
	vq->split.used_idx = (uint16_t)(vq->split.used_idx + vq->batch_n);
	vq->batch_n = 0;
}

void uvn_split_dev_push(struct uvn_vq_dev *vq, const struct uvn_vq_chain *ch, uint32_t len)
{
	vq->pushed++;
	uvn_stat_inc(&vq->st.used);
	vq->staged++;
	if (UVN_UNLIKELY(vq->inflight != NULL))
		uvn_inflight_split_push(vq->inflight, (uint16_t)ch->id);
	if (vq->batch_used) {
		vq->batch_id = ch->id;
		vq->batch_len = len;
		vq->batch_n++;
		return;
	}
	write_used(vq, vq->split.used_idx, ch->id, len);
	vq->split.used_idx++;
}

static bool need_notify(struct uvn_vq_dev *vq, uint16_t new_idx)
{
	bool need;

	if (vq->event_idx) {
		uint16_t old = vq->signalled;
		bool valid = vq->signalled_valid;

		vq->signalled = new_idx;
		vq->signalled_valid = true;
		need = !valid || uvn_need_event(uvn_rd16(used_event(vq)), new_idx, old);
	} else {
		need = !(uvn_rd16(&vq->split.avail->flags) & VRING_AVAIL_F_NO_INTERRUPT);
	}
	if (need)
		uvn_stat_inc(&vq->st.notify);
	else
		uvn_stat_inc(&vq->st.notify_suppressed);
	return need;
}

bool uvn_split_dev_flush(struct uvn_vq_dev *vq)
{
	if (!vq->staged)
		return false;
	uvn_split_dev_end_batch(vq);
	vq->staged = 0;
	/* Used entries (and the data written into the buffers) before the index. */
	uvn_store_release16(&vq->split.used->idx, vq->split.used_idx);
	/* The index must be visible before we read used_event/flags, or the
	 * driver may sleep on the old index while we skip the notification. */
	uvn_fence_full();
	/* Tracked chains are cleared only once the driver can see them used. */
	if (UVN_UNLIKELY(vq->inflight != NULL))
		uvn_inflight_split_published(vq->inflight, vq->split.used_idx);
	return need_notify(vq, vq->split.used_idx);
}

bool uvn_split_dev_enable_notify(struct uvn_vq_dev *vq)
{
	int n;

	if (vq->event_idx) {
		uvn_wr16(avail_event(vq), vq->split.last_avail);
	} else {
		vq->split.flags_shadow &= (uint16_t)~VRING_USED_F_NO_NOTIFY;
		uvn_wr16(&vq->split.used->flags, vq->split.flags_shadow);
	}
	/* The request must be visible before we re-read the avail index: the
	 * driver publishes its index and then reads our request. */
	uvn_fence_full();
	n = uvn_split_dev_avail(vq);
	return n == 0;
}

void uvn_split_dev_disable_notify(struct uvn_vq_dev *vq)
{
	/* With EVENT_IDX a stale avail_event already suppresses kicks. */
	if (vq->event_idx || (vq->split.flags_shadow & VRING_USED_F_NO_NOTIFY))
		return;
	vq->split.flags_shadow |= VRING_USED_F_NO_NOTIFY;
	uvn_wr16(&vq->split.used->flags, vq->split.flags_shadow);
}
