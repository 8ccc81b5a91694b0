/* SPDX-License-Identifier: MIT */
/*
 * Packed ring, device half. A chain is available when its head's AVAIL bit
 * equals the device's avail wrap counter and its USED bit does not (read
 * with acquire: the flags publish the descriptor). Used elements are written
 * in ring order at the device's used position, which advances by the number
 * of descriptors of the chain completed; the first of a batch gets its flags
 * last so the driver sees the batch at once.
 */
#include "inflight.h"
#include "vq.h"

#define F_AVAIL (1u << VRING_PACKED_DESC_F_AVAIL)
#define F_USED (1u << VRING_PACKED_DESC_F_USED)
#define WRAP_BIT (1u << VRING_PACKED_EVENT_F_WRAP_CTR)

void uvn_packed_dev_init(struct uvn_vq_dev *vq, const struct uvn_vq_dev_cfg *cfg)
{
	vq->pk.desc = cfg->desc;
	vq->pk.driver = cfg->driver;
	vq->pk.device = cfg->device;
	vq->pk.last_avail = cfg->avail_idx;
	vq->pk.avail_wrap = cfg->avail_wrap;
	vq->pk.used_pos = cfg->used_idx;
	vq->pk.used_wrap = cfg->used_wrap;
	vq->pk.event_flags = 0xffff; /* unknown: the first enable/disable writes */
	vq->signalled_valid = false;
}

static bool is_avail(uint16_t flags, bool wrap)
{
	return !!(flags & F_AVAIL) == wrap && !!(flags & F_USED) != wrap;
}

int uvn_packed_dev_avail(struct uvn_vq_dev *vq)
{
	uint16_t flags = uvn_load_acquire16(&vq->pk.desc[vq->pk.last_avail].flags);

	return is_avail(flags, vq->pk.avail_wrap);
}

/* Read a ring descriptor's body once; its flags were read separately. */
static void read_body(const struct vring_packed_desc *d, struct uvn_desc *out)
{
	const volatile uint64_t *p = (const volatile uint64_t *)d;
	uint64_t a = le64toh(p[0]);
	uint32_t len = le32toh(*(const volatile uint32_t *)&d->len);
	uint16_t id = le16toh(*(const volatile uint16_t *)&d->id);

	out->addr = a;
	out->len = len;
	out->next = id;
}

/* The general walk from the head descriptor @d (already read) at @pos. */
static int walk(struct uvn_vq_dev *vq, struct uvn_desc *d, uint16_t *pos, bool *wrap,
		struct uvn_chain_walk *w, unsigned *steps, uint16_t *id)
{
	for (;;) {
		int ret;

		*id = d->next; /* the buffer id is in the chain's last descriptor */
		uvn_ring_advance(pos, wrap, vq->num);
		if (d->flags & VRING_DESC_F_INDIRECT)
			return uvn_chain_indirect(w, d);
		ret = uvn_chain_add(w, d);
		if (UVN_UNLIKELY(ret))
			return ret;
		if (!(d->flags & VRING_DESC_F_NEXT))
			return 0;
		if (UVN_UNLIKELY((*steps)++ >= vq->num))
			return UVN_VQ_E_LOOP;
		read_body(&vq->pk.desc[*pos], d);
		d->flags = uvn_rd16(&vq->pk.desc[*pos].flags);
	}
}

/* A chain that did not fit the caller's array, checked like one taken. */
static __attribute__((noinline, cold)) int iov_full(struct uvn_vq_dev *vq, struct uvn_vq_chain *ch,
						    uint16_t id, unsigned steps)
{
	if (UVN_UNLIKELY(id >= vq->num))
		return uvn_vq_dev_fail(vq, UVN_VQ_E_HEAD_RANGE);
	if (UVN_UNLIKELY(vq->held + steps > vq->num)) /* see vq.h */
		return uvn_vq_dev_fail(vq, UVN_VQ_E_OVERRUN);
	return uvn_chain_iov_full(ch, id, steps);
}

static inline __attribute__((always_inline)) int pop_ring(struct uvn_vq_dev *vq,
							  struct uvn_vq_chain *ch,
							  struct iovec *iov, unsigned iov_max)
{
	uint16_t pos = vq->pk.last_avail, id = 0;
	bool wrap = vq->pk.avail_wrap;
	struct uvn_chain_walk w;
	struct uvn_desc d;
	unsigned steps = 1;
	int ret;

	/* Acquire: the head's body and the rest of the chain after its flags. */
	d.flags = uvn_load_acquire16(&vq->pk.desc[pos].flags);
	if (!is_avail(d.flags, wrap))
		return 0;
	read_body(&vq->pk.desc[pos], &d);
	if (UVN_LIKELY(!(d.flags & (VRING_DESC_F_NEXT | VRING_DESC_F_INDIRECT)))) {
		ret = uvn_chain_single(vq, &d, iov, iov_max, ch);
		if (UVN_LIKELY(ret == 0)) {
			id = d.next;
			uvn_ring_advance(&pos, &wrap, vq->num);
			goto done;
		}
		if (ret > 0)
			return uvn_vq_dev_fail(vq, ret);
	}
	uvn_chain_begin(&w, vq, iov, iov_max);
	ret = walk(vq, &d, &pos, &wrap, &w, &steps, &id);
	if (UVN_UNLIKELY(ret))
		return uvn_vq_dev_fail(vq, ret);
	if (UVN_UNLIKELY(uvn_chain_end(&w, ch)))
		return iov_full(vq, ch, id, steps);
done:
	/* Ids index the driver's bookkeeping; every known driver keeps them
	 * below the queue size and the used side relies on it. */
	if (UVN_UNLIKELY(id >= vq->num))
		return uvn_vq_dev_fail(vq, UVN_VQ_E_HEAD_RANGE);
	if (UVN_UNLIKELY(vq->held + steps > vq->num)) /* see vq.h */
		return uvn_vq_dev_fail(vq, UVN_VQ_E_OVERRUN);
	vq->held = (uint16_t)(vq->held + steps);
	ch->id = id;
	ch->ndesc = (uint16_t)steps;
	vq->pk.last_avail = pos;
	vq->pk.avail_wrap = wrap;
	uvn_stat_inc(&vq->st.bufs);
	return 1;
}

/* The tracker's way to the ring (inflight_packed.c). */
int uvn_packed_dev_pop_ring(struct uvn_vq_dev *vq, struct uvn_vq_chain *ch, struct iovec *iov,
			    unsigned iov_max)
{
	return pop_ring(vq, ch, iov, iov_max);
}

int uvn_packed_dev_pop(struct uvn_vq_dev *vq, struct uvn_vq_chain *ch, struct iovec *iov,
		       unsigned iov_max)
{
	if (UVN_UNLIKELY(vq->inflight != NULL))
		return uvn_inflight_packed_pop(vq, ch, iov, iov_max);
	return pop_ring(vq, ch, iov, iov_max);
}

static uint16_t used_flags(bool wrap, uint32_t len)
{
	return (uint16_t)((wrap ? F_AVAIL | F_USED : 0) | (len ? VRING_DESC_F_WRITE : 0));
}

static void write_used(struct uvn_vq_dev *vq, uint16_t id, uint32_t len, uint16_t ndesc)
{
	uint16_t pos = vq->pk.used_pos;
	uint16_t f = used_flags(vq->pk.used_wrap, len);
	struct vring_packed_desc *d = &vq->pk.desc[pos];

	uvn_wr16(&d->id, id);
	uvn_wr32(&d->len, len);
	if (!vq->pk.first_held) {
		/* Published last, at flush: the driver stops at this slot until then. */
		vq->pk.first_held = true;
		vq->pk.first_pos = pos;
		vq->pk.first_flags = f;
	} else {
		/* id and len before the flags that make the element used. */
		uvn_store_release16(&d->flags, f);
	}
	pos = (uint16_t)(pos + ndesc);
	if (pos >= vq->num) {
		pos = (uint16_t)(pos - vq->num);
		vq->pk.used_wrap = !vq->pk.used_wrap;
	}
	vq->pk.used_pos = pos;
}

/*
 * IN_ORDER batch (spec: packed virtqueues, in-order use of descriptors):
 * one used element carrying the last buffer id, at the batch's first
 * position; both sides skip the rest of its descriptors.
 */
void uvn_packed_dev_end_batch(struct uvn_vq_dev *vq)
{
	if (!vq->batch_n)
		return;
	write_used(vq, vq->batch_id, vq->batch_len, vq->batch_ndesc);
	vq->batch_n = 0;
	vq->batch_ndesc = 0;
}

void uvn_packed_dev_push(struct uvn_vq_dev *vq, const struct uvn_vq_chain *ch, uint32_t len)
{
	vq->pushed = (uint16_t)(vq->pushed + ch->ndesc);
	uvn_stat_inc(&vq->st.used);
	vq->staged++;
	if (UVN_UNLIKELY(vq->inflight != NULL))
		uvn_inflight_packed_push(vq->inflight, ch);
	if (vq->batch_used) {
		vq->batch_id = ch->id;
		vq->batch_len = len;
		vq->batch_ndesc = (uint16_t)(vq->batch_ndesc + ch->ndesc);
		vq->batch_n++;
		return;
	}
	write_used(vq, ch->id, len, ch->ndesc);
}

static bool need_notify(struct uvn_vq_dev *vq)
{
	uint16_t old = vq->signalled, new_pos = vq->pk.used_pos;
	bool valid = vq->signalled_valid, need;
	/* Acquire: the driver writes off_wrap before the flags that select it. */
	uint16_t flags = uvn_load_acquire16(&vq->pk.driver->flags) & UVN_EVENT_FLAGS_MASK;

	vq->signalled = new_pos;
	vq->signalled_valid = true;
	/* Moved since @old by new_pos - old descriptors, a whole lap if equal. */
	if (flags == VRING_PACKED_EVENT_FLAG_DESC && vq->event_idx)
		need = !valid || uvn_packed_need_event(uvn_rd16(&vq->pk.driver->off_wrap), new_pos,
						       (uint16_t)(new_pos > old ? new_pos - old
									   : new_pos + vq->num - old),
						       vq->pk.used_wrap, vq->num);
	else
		need = flags != VRING_PACKED_EVENT_FLAG_DISABLE;
	if (need)
		uvn_stat_inc(&vq->st.notify);
	else
		uvn_stat_inc(&vq->st.notify_suppressed);
	return need;
}

/* A flush with a tracker: the slice is told before the batch becomes
 * visible and after (inflight_packed.c says why in that order). */
static __attribute__((noinline)) bool flush_tracked(struct uvn_vq_dev *vq)
{
	uvn_inflight_packed_publishing(vq->inflight, vq->pk.used_pos, vq->pk.used_wrap);
	uvn_store_release16(&vq->pk.desc[vq->pk.first_pos].flags, vq->pk.first_flags);
	/* The slice is cleared only once the driver can see the batch used. */
	uvn_fence_full();
	uvn_inflight_packed_published(vq->inflight, vq->pk.used_pos, vq->pk.used_wrap);
	return need_notify(vq);
}

bool uvn_packed_dev_flush(struct uvn_vq_dev *vq)
{
	if (!vq->staged)
		return false;
	uvn_packed_dev_end_batch(vq);
	vq->staged = 0;
	/* The whole batch becomes visible with the first element's flags. */
	vq->pk.first_held = false;
	if (UVN_UNLIKELY(vq->inflight != NULL))
		return flush_tracked(vq);
	uvn_store_release16(&vq->pk.desc[vq->pk.first_pos].flags, vq->pk.first_flags);
	/* Used flags visible before we read the driver's event suppression. */
	uvn_fence_full();
	return need_notify(vq);
}

static void set_event_flags(struct uvn_vq_dev *vq, uint16_t flags)
{
	if (vq->pk.event_flags != flags) {
		vq->pk.event_flags = flags;
		uvn_wr16(&vq->pk.device->flags, flags);
	}
}

bool uvn_packed_dev_enable_notify(struct uvn_vq_dev *vq)
{
	if (vq->event_idx) {
		uint16_t off = (uint16_t)(vq->pk.last_avail | (vq->pk.avail_wrap ? WRAP_BIT : 0));

		uvn_wr16(&vq->pk.device->off_wrap, off);
		uvn_fence_release();
		set_event_flags(vq, VRING_PACKED_EVENT_FLAG_DESC);
	} else {
		set_event_flags(vq, VRING_PACKED_EVENT_FLAG_ENABLE);
	}
	/* The request visible before we look at the next descriptor again:
	 * the driver publishes a head and then reads our request. */
	uvn_fence_full();
	return !uvn_packed_dev_avail(vq);
}

void uvn_packed_dev_disable_notify(struct uvn_vq_dev *vq)
{
	set_event_flags(vq, VRING_PACKED_EVENT_FLAG_DISABLE);
}

/*
 * Can a device start at its avail position, nothing held (used position
 * the same), in the ring as it is? Called when a ring is set up from a
 * frontend's base, because one frontend cannot know where a packed ring
 * is: QEMU keeps, for a packed ring, the position of its last start when
 * its backend dies (virtio_queue_packed_restore_last_avail_idx() does
 * nothing: "We don't have a reference like avail idx in shared memory")
 * and sends that again to the restarted backend. Nor can the backend find
 * the position from the ring: a used element and a chain's skipped slots,
 * or an IN_ORDER batch, look the same as elements and chains of other
 * shapes, and which chains the driver has taken back leaves no trace (see
 * the commit that added this). What can be told is when a base cannot be
 * right:
 *  - going on from the base, the chains available in this lap, then only
 *    slots of the lap before: any slot of this lap further on (a used
 *    element, or a chain beyond the driver's avail position) means the
 *    ring has moved on since that base. No right base fails this, whatever
 *    the chains' shapes; a chain the driver is writing (tails first, its
 *    head last) is let through;
 *  - the base of a fresh ring (@fresh: position 0, wrap counter 1 for both
 *    halves, what QEMU sends at a start and after its backend died): a
 *    slot of the lap before that is not a used element (nor never written)
 *    may be a chain the driver still waits for, the ring being a lap or
 *    more past that base. A fresh ring has no such slot, nor has a ring
 *    that came back to position 0 with every chain done, unless chains
 *    of several descriptors or IN_ORDER batches left skipped slots: then
 *    the queue is refused, the position being unknowable.
 * A queue held with chains in flight (avail and used halves apart) comes
 * from a device that stopped cleanly: taken as it is.
 * Declared in lib/vhost_user/ring_msgs.c, its one caller.
 * @return NULL, or why not (the queue is then broken: UVN_VQ_E_BASE)
 */
const char *uvn_packed_dev_check_base(struct uvn_vq_dev *vq, bool fresh);
const char *uvn_packed_dev_check_base(struct uvn_vq_dev *vq, bool fresh)
{
	uint16_t pos = vq->pk.last_avail, num = vq->num;
	bool lap = vq->pk.avail_wrap, tails = false;
	const char *why = NULL;
	unsigned i = 0;

	if (pos != vq->pk.used_pos || lap != vq->pk.used_wrap)
		return NULL;
	for (; i < num && is_avail(uvn_load_acquire16(&vq->pk.desc[pos].flags), lap); i++)
		uvn_ring_advance(&pos, &lap, num);
	for (unsigned first = i; i < num && !why; i++) {
		uint16_t f = uvn_load_acquire16(&vq->pk.desc[pos].flags);

		if (!!(f & F_AVAIL) == lap) {
			/* This lap's: past the chains available, only a chain
			 * being written right behind its unwritten head. */
			tails = (i == first + 1 || tails) && is_avail(f, lap);
			if (!tails)
				why = f & F_USED ? "used elements of this lap lie beyond the base"
						 : "chains of this lap lie beyond the driver's avail position";
			else if (!(f & VRING_DESC_F_NEXT))
				tails = false; /* its last one */
		} else {
			tails = false;
			if (fresh && !(f & F_USED) != !(f & F_AVAIL))
				why = "a slot of the lap before is not a used element: the ring "
				      "has run, its position is unknown";
		}
		uvn_ring_advance(&pos, &lap, num);
	}
	if (why)
		uvn_vq_dev_fail(vq, UVN_VQ_E_BASE);
	return why;
}
