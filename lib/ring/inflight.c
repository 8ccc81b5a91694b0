/* SPDX-License-Identifier: MIT */
/*
 * In-flight tracking (see inflight.h): attaching a slice, recovering what
 * it says after a restart, and the used side of the split protocol.
 *
 * Split rings; packed ones are in inflight_packed.c.
 *
 * Publication order, and what a crash at each point leaves:
 *   push:  desc[head].next = last_batch_head; last_batch_head = head
 *   flush: used->idx stored (the driver sees the batch)
 *          inflight = 0 for each head of the batch
 *          used_idx = used->idx
 * Before the used index moves, the batch is still marked and not seen by
 * the driver: it is popped again. After it moved, used_idx differs from
 * used->idx by the batch size, and the list from last_batch_head names the
 * batch: recovery clears it, whatever part was cleared already.
 */
#include <stdlib.h>
#include <string.h>

#include "inflight.h"
#include "vq.h"

static size_t align64(size_t v)
{
	return (v + 63) & ~(size_t)63;
}

size_t uvn_inflight_slice_size(unsigned queue_size)
{
	size_t split, packed;

	if (queue_size == 0 || queue_size > UVN_VQ_MAX_SIZE)
		return 0;
	split = sizeof(struct uvn_inflight_split) +
		(size_t)queue_size * sizeof(struct uvn_inflight_desc_split);
	packed = UVN_INFLIGHT_PACKED_HDR + (size_t)queue_size * sizeof(struct uvn_inflight_desc_packed);
	return align64(split > packed ? split : packed);
}

static const char *const errstr[UVN_INFLIGHT_E__COUNT] = {
	[UVN_INFLIGHT_OK] = "ok",
	[UVN_INFLIGHT_E_SMALL] = "slice too small for the queue size",
	[UVN_INFLIGHT_E_VERSION] = "unknown region version or features",
	[UVN_INFLIGHT_E_NUM] = "region queue size differs from the ring's",
	[UVN_INFLIGHT_E_BATCH] = "used index moved by more than the queue size since the region's",
	[UVN_INFLIGHT_E_HEAD] = "last-batch list names a head out of range",
	[UVN_INFLIGHT_E_FLAG] = "in-flight flag neither 0 nor 1",
	[UVN_INFLIGHT_E_COUNTER] = "in-flight counters repeat or are exhausted",
	[UVN_INFLIGHT_E_NOMEM] = "out of memory",
	[UVN_INFLIGHT_E_BUSY] = "chains popped before the region was attached",
	[UVN_INFLIGHT_E_POS] = "free head, used position or wrap counter out of range",
	[UVN_INFLIGHT_E_LIST] = "entry lists loop, cross or leave entries out",
	[UVN_INFLIGHT_E_ID] = "buffer id out of range or held twice",
};

const char *uvn_inflight_strerror(int code)
{
	if (code < 0)
		code = -code;
	if (code >= UVN_INFLIGHT_E__COUNT)
		return "unknown in-flight error";
	return errstr[code];
}

void uvn_inflight_zero(void *p, size_t n)
{
	volatile uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		b[i] = 0;
}

static int by_counter(const void *a, const void *b)
{
	const struct uvn_inflight_marked *x = a, *y = b;

	return x->counter < y->counter ? -1 : x->counter > y->counter;
}

int uvn_inflight_order(struct uvn_inflight *t, struct uvn_inflight_marked *m, unsigned n)
{
	qsort(m, n, sizeof(m[0]), by_counter);
	for (unsigned k = 0; k < n; k++) {
		/* Counters are handed out once each, increasing: a repeat is a
		 * region nobody of ours wrote, and one at the end would wrap. */
		if ((k && m[k].counter == m[k - 1].counter) || m[k].counter == UINT64_MAX)
			return UVN_INFLIGHT_E_COUNTER;
		t->resubmit[k] = m[k].head;
	}
	t->nresubmit = (uint16_t)n;
	t->counter = n ? m[n - 1].counter : 0;
	return 0;
}

/* A slice never used: a fresh start from the ring's indices. */
static void init_slice(struct uvn_inflight_split *r, uint16_t num, uint16_t used)
{
	uvn_inflight_zero(r->desc, (size_t)num * sizeof(r->desc[0]));
	*(volatile uint64_t *)&r->features = 0;
	uvn_slice_wr16(&r->desc_num, num);
	uvn_slice_wr16(&r->last_batch_head, 0);
	uvn_slice_wr16(&r->used_idx, used);
	/* Valid only once complete. */
	atomic_thread_fence(memory_order_release);
	uvn_slice_wr16(&r->version, 1);
}

/* The batch whose used index was published but not cleared (a crash
 * inside a flush): clear it now. */
static int repair_batch(struct uvn_inflight_split *r, uint16_t num, uint16_t used)
{
	uint16_t n = (uint16_t)(used - uvn_slice_rd16(&r->used_idx));
	uint16_t head = uvn_slice_rd16(&r->last_batch_head);

	if (n > num)
		return UVN_INFLIGHT_E_BATCH;
	for (uint16_t k = 0; k < n; k++) {
		if (head >= num)
			return UVN_INFLIGHT_E_HEAD;
		uvn_slice_wr8(&r->desc[head].inflight, 0);
		head = uvn_slice_rd16(&r->desc[head].next);
	}
	uvn_slice_wr16(&r->used_idx, used);
	return 0;
}

/* The heads still marked, oldest first, into t->resubmit. */
static int collect(struct uvn_inflight *t, struct uvn_inflight_split *r)
{
	struct uvn_inflight_marked *m = malloc(sizeof(*m) * t->num);
	unsigned n = 0;
	int ret = 0;

	if (!m)
		return UVN_INFLIGHT_E_NOMEM;
	for (uint16_t i = 0; i < t->num; i++) {
		uint8_t f = *(volatile uint8_t *)&r->desc[i].inflight;

		if (f > 1) {
			ret = UVN_INFLIGHT_E_FLAG;
			goto out;
		}
		if (f) {
			m[n].counter = *(volatile uint64_t *)&r->desc[i].counter;
			m[n++].head = i;
		}
	}
	ret = uvn_inflight_order(t, m, n);
out:
	free(m);
	return ret;
}

static int recover(struct uvn_vq_dev *vq, struct uvn_inflight *t)
{
	struct uvn_inflight_split *r = t->r;
	/* The used index in guest memory is the truth, not ours. */
	uint16_t used = uvn_load_acquire16(&vq->split.used->idx);
	uint16_t version = uvn_slice_rd16(&r->version);
	int ret;

	vq->split.used_idx = used;
	if (version == 0) {
		init_slice(r, t->num, used);
		return 0;
	}
	if (version != 1 || *(volatile uint64_t *)&r->features != 0)
		return UVN_INFLIGHT_E_VERSION;
	if (uvn_slice_rd16(&r->desc_num) != t->num)
		return UVN_INFLIGHT_E_NUM;
	if (uvn_slice_rd16(&r->used_idx) != used) {
		ret = repair_batch(r, t->num, used);
		if (ret)
			return ret;
	}
	ret = collect(t, r);
	if (ret)
		return ret;
	/* Only a link value, never followed at run time. */
	t->last_head = uvn_slice_rd16(&r->last_batch_head);
	/* Every chain popped is either used or still marked. */
	vq->split.last_avail = (uint16_t)(used + t->nresubmit);
	vq->split.shadow_avail = vq->split.last_avail;
	return 0;
}

static void free_tracker(struct uvn_inflight *t)
{
	if (!t)
		return;
	free(t->batch);
	free(t->resubmit);
	free(t->ent);
	free(t->entry);
	free(t);
}

static int attach_split(struct uvn_vq_dev *vq, struct uvn_inflight *t, void *region, size_t len)
{
	if (len < sizeof(struct uvn_inflight_split) +
		  (size_t)vq->num * sizeof(struct uvn_inflight_desc_split))
		return UVN_INFLIGHT_E_SMALL;
	t->r = region;
	return recover(vq, t);
}

int uvn_vq_dev_inflight_attach(struct uvn_vq_dev *vq, void *region, size_t len)
{
	struct uvn_inflight *t;
	int ret;

	if (vq->held || vq->inflight)
		return UVN_INFLIGHT_E_BUSY;
	if (!region)
		return UVN_INFLIGHT_E_SMALL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return UVN_INFLIGHT_E_NOMEM;
	t->num = vq->num;
	t->batch = calloc(vq->num, sizeof(*t->batch));
	t->resubmit = calloc(vq->num, sizeof(*t->resubmit));
	if (!t->batch || !t->resubmit) {
		free_tracker(t);
		return UVN_INFLIGHT_E_NOMEM;
	}
	if (vq->packed)
		ret = uvn_inflight_packed_attach(vq, t, region, len);
	else
		ret = attach_split(vq, t, region, len);
	if (ret) {
		free_tracker(t);
		return ret;
	}
	vq->inflight = t;
	return 0;
}

void uvn_vq_dev_inflight_detach(struct uvn_vq_dev *vq)
{
	free_tracker(vq->inflight);
	vq->inflight = NULL;
}

unsigned uvn_vq_dev_inflight_pending(const struct uvn_vq_dev *vq)
{
	const struct uvn_inflight *t = vq->inflight;

	return t ? (unsigned)(t->nresubmit - t->next_resubmit) : 0;
}

bool uvn_vq_dev_inflight_resumed(const struct uvn_vq_dev *vq)
{
	return vq->inflight && vq->inflight->resumed;
}

void uvn_inflight_split_push(struct uvn_inflight *t, uint16_t head)
{
	struct uvn_inflight_split *r = t->r;

	/* Every pushed chain was popped and is held until the flush, and a
	 * queue holds at most num: the batch cannot overflow. The checks are
	 * for a caller pushing a chain twice, or one it never popped (a test
	 * backend corrupting its used ring on purpose does): the region is
	 * never written outside its num entries. */
	if (UVN_UNLIKELY(t->nbatch >= t->num || head >= t->num))
		return;
	t->batch[t->nbatch++] = head;
	uvn_slice_wr16(&r->desc[head].next, t->last_head);
	uvn_slice_wr16(&r->last_batch_head, head);
	t->last_head = head;
}

/*
 * Chains are given back newest first, and pops serve resubmit[] before the
 * avail ring: while any chain from the ring is out, the one given back is
 * from the ring; only then from resubmit[]. A flag for "the last pop" is
 * not enough: a caller may give back several.
 */
bool uvn_inflight_split_unpop(struct uvn_inflight *t, uint16_t head)
{
	if (t->ring_popped == 0 && t->next_resubmit > 0) {
		/* Stays marked, first in line again. */
		t->next_resubmit--;
		return true;
	}
	if (t->ring_popped)
		t->ring_popped--;
	/* Read from the avail ring again later, marked again then. */
	uvn_slice_wr8(&t->r->desc[head].inflight, 0);
	return false;
}

void uvn_inflight_split_published(struct uvn_inflight *t, uint16_t used_idx)
{
	struct uvn_inflight_split *r = t->r;

	/* Called after the used index store and a full fence. */
	for (uint16_t k = 0; k < t->nbatch; k++)
		uvn_slice_wr8(&r->desc[t->batch[k]].inflight, 0);
	uvn_slice_wr16(&r->used_idx, used_idx);
	t->nbatch = 0;
}
