/* SPDX-License-Identifier: MIT */
/* Zero-copy guest TX: held chains and their completions (zc.c). */
#ifndef UVN_NET_DEVICE_ZC_H
#define UVN_NET_DEVICE_ZC_H

#include "net/device/netdev.h"

struct uvn_zc_slot {
	struct uvn_pkt_ubuf ubuf;   /* completion of the packets borrowing the chain */
	struct uvn_netdev_zc *zc;
	struct uvn_vq_chain ch;
	bool held;                  /* packets point into the chain's buffers */
	bool done;                  /* may go back to the guest */
	bool queued;                /* waiting in the in-order FIFO */
};

struct uvn_netdev_zc {
	struct uvn_netdev_q *q;
	struct uvn_pkt_pool *pool;  /* descriptors without data rooms */
	enum uvn_zc_mode mode;
	uint32_t min_len;
	unsigned max_held, held;
	unsigned pushed;            /* used elements staged since the last flush */
	bool in_order;
	/* FIFO of chain ids in pop order (IN_ORDER). It may hold all num ids
	 * at once, when head == tail again: the count tells full from empty. */
	uint16_t num, head, tail, queued;
	uint16_t *fifo;
	struct uvn_zc_slot *slot;   /* by chain id */
};

/* Does the queue track chains (zero-copy on, or held chains draining)? */
bool uvn_zc_active(const struct uvn_netdev_q *q);

/* uvn_zc_finish() when held chains wait ahead of @ch (IN_ORDER). */
int uvn_zc_queue_done(struct uvn_netdev_q *q, const struct uvn_vq_chain *ch);

/* A chain done at pop time (copied or dropped): back now, or in order.
 * @return 0, or -1 if the driver reused an id that is still held. */
static inline int uvn_zc_finish(struct uvn_netdev_q *q, const struct uvn_vq_chain *ch)
{
	struct uvn_netdev_zc *z = q->zc;
	const struct uvn_zc_slot *s = &z->slot[ch->id];

	if (__builtin_expect(s->held || s->queued, 0))
		return -1;
	/* Nothing waits ahead of it: back now, in order either way. */
	if (!z->in_order || !z->queued) {
		uvn_vq_dev_push(q->vq, ch, 0);
		z->pushed++;
		return 0;
	}
	return uvn_zc_queue_done(q, ch);
}

/* Hold a chain for packets that borrow it. @return its completion (one
 * reference, for the first packet), or NULL if the id is already held. */
struct uvn_pkt_ubuf *uvn_zc_hold(struct uvn_netdev_q *q, const struct uvn_vq_chain *ch);

/* The last packet borrowing a chain was freed. */
void uvn_zc_complete(struct uvn_pkt_ubuf *u);

#endif
