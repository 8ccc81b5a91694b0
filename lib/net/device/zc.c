/* SPDX-License-Identifier: MIT */
/*
 * Zero-copy guest TX (docs/seeds.md, 001 and 004). A frame leaves as a packet whose
 * segments are the guest's own buffers; the chain is held until the last
 * packet pointing at it is freed, whose ubuf completion returns it. While
 * zero-copy is on every chain of the queue passes through a FIFO in pop
 * order, copied or not, so that with IN_ORDER chains go back in the order
 * they came (a copied chain never overtakes a held one); without IN_ORDER
 * each goes back as soon as it is done.
 *
 * Safe by design, against the two ways zero-copy went wrong before (DPDK
 * removed its dequeue zero-copy, Linux turned vhost-net's off): the number
 * of held chains is bounded (beyond it frames are copied), packets that
 * would be kept past a burst are copied first (uvn_pkt_copy), and small
 * frames are copied because that is cheaper than tracking them.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include "net/device/netdev.h"
#include "net/device/zc.h"
#include "ring/ring.h"

int uvn_netdev_q_set_zerocopy(struct uvn_netdev_q *q, enum uvn_zc_mode mode, uint32_t min_len,
			      unsigned max_held, struct uvn_pkt_pool *ext)
{
	struct uvn_netdev_zc *z = q->zc;
	unsigned num;

	if (mode == UVN_ZC_OFF || !ext) {
		if (z)
			z->mode = UVN_ZC_OFF; /* held chains still come back */
		return 0;
	}
	if (!z) {
		num = uvn_vq_dev_num(q->vq);
		z = calloc(1, sizeof(*z));
		if (!z)
			return -ENOMEM;
		z->slot = calloc(num, sizeof(*z->slot));
		z->fifo = calloc(num, sizeof(*z->fifo));
		if (!z->slot || !z->fifo) {
			free(z->slot);
			free(z->fifo);
			free(z);
			return -ENOMEM;
		}
		z->num = (uint16_t)num;
		z->q = q;
		z->in_order = uvn_has_feature(q->features, VIRTIO_F_IN_ORDER);
		for (unsigned i = 0; i < num; i++) {
			z->slot[i].zc = z;
			z->slot[i].ubuf.complete = uvn_zc_complete;
		}
		q->zc = z;
	}
	z->mode = mode;
	z->min_len = min_len;
	z->max_held = max_held && max_held < z->num ? max_held : z->num / 2;
	z->pool = ext;
	return 0;
}

void uvn_netdev_q_fini(struct uvn_netdev_q *q)
{
	if (!q->zc)
		return;
	free(q->zc->slot);
	free(q->zc->fifo);
	free(q->zc);
	q->zc = NULL;
}

bool uvn_zc_active(const struct uvn_netdev_q *q)
{
	return q->zc && (q->zc->mode != UVN_ZC_OFF || q->zc->held || q->zc->queued);
}

static uint16_t fifo_next(const struct uvn_netdev_zc *z, uint16_t i)
{
	return (uint16_t)(i + 1 == z->num ? 0 : i + 1);
}

/* An id is queued at most once (its slot's flag), so at most num are. */
static void fifo_put(struct uvn_netdev_zc *z, struct uvn_zc_slot *s, uint16_t id)
{
	s->queued = true;
	z->fifo[z->tail] = id;
	z->tail = fifo_next(z, z->tail);
	z->queued++;
}

/* Give back the chains at the head of the FIFO that are done. */
static void release_in_order(struct uvn_netdev_zc *z)
{
	while (z->queued) {
		struct uvn_zc_slot *s = &z->slot[z->fifo[z->head]];

		if (!s->done)
			break;
		uvn_vq_dev_push(z->q->vq, &s->ch, 0);
		s->queued = false;
		z->head = fifo_next(z, z->head);
		z->queued--;
		z->pushed++;
	}
}

int uvn_zc_queue_done(struct uvn_netdev_q *q, const struct uvn_vq_chain *ch)
{
	struct uvn_netdev_zc *z = q->zc;
	struct uvn_zc_slot *s = &z->slot[ch->id];

	s->ch = *ch;
	s->done = true;
	fifo_put(z, s, ch->id);
	release_in_order(z);
	return 0;
}

struct uvn_pkt_ubuf *uvn_zc_hold(struct uvn_netdev_q *q, const struct uvn_vq_chain *ch)
{
	struct uvn_netdev_zc *z = q->zc;
	struct uvn_zc_slot *s = &z->slot[ch->id];

	/* The ring guarantees id < num; a driver reusing an id still held
	 * would be caught here rather than corrupt the slot. */
	if (UVN_UNLIKELY(s->held || s->queued))
		return NULL;
	s->ch = *ch;
	s->held = true;
	s->done = false;
	s->ubuf.refs = 1;
	if (z->in_order)
		fifo_put(z, s, ch->id);
	z->held++;
	if (z->held > q->st.zc_held_peak)
		uvn_stat_set(&q->st.zc_held_peak, z->held);
	uvn_stat_set(&q->st.zc_held, z->held);
	return &s->ubuf;
}

void uvn_zc_complete(struct uvn_pkt_ubuf *u)
{
	struct uvn_zc_slot *s = (struct uvn_zc_slot *)((char *)u - offsetof(struct uvn_zc_slot, ubuf));
	struct uvn_netdev_zc *z = s->zc;

	s->held = false;
	z->held--;
	uvn_stat_set(&z->q->st.zc_held, z->held);
	if (!z->in_order) {
		uvn_vq_dev_push(z->q->vq, &s->ch, 0);
		z->pushed++;
		return;
	}
	s->done = true;
	release_in_order(z);
}

void uvn_netdev_tx_complete(struct uvn_netdev_q *q)
{
	struct uvn_netdev_zc *z = q->zc;

	if (!z || !z->pushed)
		return;
	z->pushed = 0;
	uvn_netdev_q_flush(q);
}
