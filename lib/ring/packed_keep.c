/* SPDX-License-Identifier: MIT */
/*
 * Packed ring, driver half: what a reconnecting driver needs, a copy of
 * every chain in flight and the resubmission that lays them out again for
 * a new device (the ring itself is packed_drv.c).
 */
#include <stdlib.h>

#include "packed.h"

/*
 * Chains kept for a resubmission (uvn_packed_drv_keep(), a reconnecting
 * driver): unlike a split ring's table, a packed ring's slots do not keep
 * a chain the device holds. The driver reuses a slot as soon as a used
 * element covering it comes back, and that element may stand for another
 * chain (out of order), so the descriptors of a chain a dead device held
 * may be gone from the ring. Each chain's descriptors are copied here as
 * they are written (links in .next, entries from a free list: the entries
 * in use are the ring slots in flight, never more than num), with the
 * chain's first entry in its state's .last (unused by packed rings) and its
 * age. The block lives behind pend_pos[num], in the same allocation, so
 * the ring objects need no field for it and the destroy path frees it.
 */
struct pk_keep {
	struct uvn_desc *copy;  /* [num]: addr, len, flags (NEXT, WRITE, INDIRECT), next entry */
	uint32_t *age;          /* [num] per id: adds before it */
	uint32_t seq;           /* adds so far */
	uint16_t free_head;     /* first free entry */
	bool on;
};

static size_t keep_offset(unsigned num)
{
	return ((size_t)num * sizeof(uint16_t) + 15) & ~(size_t)15;
}

static size_t keep_size(unsigned num)
{
	return ((sizeof(struct pk_keep) + 15) & ~(size_t)15) +
	       (size_t)num * (sizeof(struct uvn_desc) + sizeof(uint32_t));
}

static struct pk_keep *keep_of(const struct uvn_vq_drv *vq)
{
	return (struct pk_keep *)((char *)vq->pk.pend_pos + keep_offset(vq->num));
}

size_t uvn_pk_keep_bytes(unsigned num)
{
	return keep_offset(num) + keep_size(num);
}

bool uvn_pk_keeping(const struct uvn_vq_drv *vq)
{
	return keep_of(vq)->on;
}

void uvn_pk_keep_init(struct uvn_vq_drv *vq)
{
	struct pk_keep *k = keep_of(vq);

	k->copy = (struct uvn_desc *)((char *)k + ((sizeof(*k) + 15) & ~(size_t)15));
	k->age = (uint32_t *)(k->copy + vq->num);
	for (unsigned i = 0; i < vq->num; i++)
		k->copy[i].next = (uint16_t)(i + 1);
	k->free_head = 0;
}

/* Copy one descriptor of chain @id (the previous entry *@prev, or none). */
static void keep_desc(struct pk_keep *k, uint16_t *prev, uint16_t *first, uint64_t addr,
		      uint32_t len, uint16_t flags)
{
	uint16_t e = k->free_head;

	k->free_head = k->copy[e].next;
	k->copy[e] = (struct uvn_desc){ .addr = addr, .len = len, .flags = flags };
	if (*prev == UINT16_MAX)
		*first = e;
	else
		k->copy[*prev].next = e;
	*prev = e;
}

/* The copies of a chain given back: its entries return to the free list. */
void uvn_pk_keep_release(struct uvn_vq_drv *vq, const struct uvn_drv_state *s)
{
	struct pk_keep *k = keep_of(vq);
	uint16_t e = s->last;

	for (unsigned i = 0; i < s->ndesc; i++) {
		uint16_t next = k->copy[e].next;

		k->copy[e].next = k->free_head;
		k->free_head = e;
		e = next;
	}
}

/* Keep chain @id's descriptors as written (@taddr: its indirect table, or 0:
 * a table is never at address 0, the arena it comes from is mapped). */
void uvn_pk_keep_chain(struct uvn_vq_drv *vq, const struct uvn_sg *sg, unsigned nout,
		       unsigned total, uint64_t taddr, uint16_t id)
{
	struct pk_keep *k = keep_of(vq);
	uint16_t prev = UINT16_MAX, first = 0;

	if (taddr) {
		keep_desc(k, &prev, &first, taddr, (uint32_t)(16 * total), VRING_DESC_F_INDIRECT);
	} else {
		for (unsigned i = 0; i < total; i++)
			keep_desc(k, &prev, &first, sg[i].addr, sg[i].len,
				  (uint16_t)((i + 1 < total ? VRING_DESC_F_NEXT : 0) |
					     (i >= nout ? VRING_DESC_F_WRITE : 0)));
	}
	vq->state[id].last = first;
	k->age[id] = k->seq++;
}

/*
 * From now on keep every chain's descriptors (struct pk_keep), for
 * uvn_packed_drv_resubmit(); only on a queue with nothing in flight.
 * Declared in net/driver/drv.h: the ring's one user that reconnects.
 * @return 0, or -1 (not packed, or chains in flight already)
 */
int uvn_packed_drv_keep(struct uvn_vq_drv *vq);
int uvn_packed_drv_keep(struct uvn_vq_drv *vq)
{
	if (!vq->packed || vq->in_flight)
		return -1;
	keep_of(vq)->on = true;
	return 0;
}

/* A ring position and the wrap counter that goes with it. */
struct pk_pos {
	uint16_t pos;
	bool wrap;
};

/* Move @p on by @n <= num descriptors. */
static void pos_skip(const struct uvn_vq_drv *vq, struct pk_pos *p, unsigned n)
{
	unsigned v = p->pos + n;

	if (v >= vq->num) {
		v -= vq->num;
		p->wrap = !p->wrap;
	}
	p->pos = (uint16_t)v;
}

/* IN_ORDER: the chains from the order cursor *@oh up to @id are done. */
static void walk_order(const struct uvn_vq_drv *vq, struct pk_pos *p, uint16_t *oh, uint16_t id,
		       uint8_t *mark)
{
	for (unsigned n = 0; n < vq->num; n++) {
		uint16_t x = vq->order[*oh];

		mark[x] = 2;
		pos_skip(vq, p, vq->state[x].ndesc);
		if (++*oh == vq->num)
			*oh = 0;
		if (x == id)
			return;
	}
}

/*
 * The used elements the dead device published that we have not read yet,
 * taken the way get_used will take them (chains skipped as it skips them,
 * IN_ORDER batches as a whole): their chains are marked 2 (done). Stops at
 * the first slot that is not an element get_used would accept: that one
 * and any after it are overwritten by the resubmission, as if the device
 * had never written them (a batch whose first element it had not
 * published yet when it died). @return the position after the last one
 */
static struct pk_pos walk_used(const struct uvn_vq_drv *vq, uint8_t *mark)
{
	struct pk_pos p = { vq->pk.last_used, vq->pk.used_wrap };
	uint16_t oh = vq->order_head;

	/* An element read already stands for the chains up to batch_id. */
	if (vq->in_batch)
		walk_order(vq, &p, &oh, vq->batch_id, mark);
	for (;;) {
		const struct vring_packed_desc *d = &vq->pk.desc[p.pos];
		uint16_t flags = uvn_load_acquire16(&d->flags), id;
		uint32_t len;

		if (!uvn_pk_is_used(flags, p.wrap))
			break;
		id = uvn_rd16(&d->id);
		len = flags & VRING_DESC_F_WRITE ? le32toh(*(volatile uint32_t *)&d->len) : 0;
		if (id >= vq->num || mark[id] != 1 || len > vq->state[id].in_len)
			break;
		if (vq->in_order) {
			walk_order(vq, &p, &oh, id, mark);
		} else {
			mark[id] = 2;
			pos_skip(vq, &p, vq->state[id].ndesc);
		}
	}
	return p;
}

static int older_first(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? 1 : x > y ? -1 : 0;
}

/*
 * After the device died and before another one starts (vhost-user
 * reconnect): lay the chains it had not completed out again, from the
 * used position it had reached on, and say where that is. A packed ring
 * has no index in memory a new device could start from, and the slots of
 * the chains the old one held may be overwritten (by used elements of
 * chains it completed out of order, by chains we added since in slots
 * those freed): so the device's used position is found by walking its
 * elements from ours (walk_used()), and from there every published chain
 * still in flight and not among them is written again from its kept
 * copy, oldest first (IN_ORDER: the order they must come back in). They
 * fill the ring exactly up to our next avail position: the descriptors
 * in flight are those from our used position to it. The new device
 * starts at @base with nothing held (SET_VRING_BASE: position | wrap <<
 * 15). Chains added and not published yet are published first.
 * Declared in net/driver/drv.h: the ring's one user that reconnects.
 * @mark, @keys: scratch of num bytes and num entries (no allocation here).
 * @return chains laid out again, or -1 if the ring's state does not add
 *         up (or chains were not kept): nothing is changed then
 */
int uvn_packed_drv_resubmit(struct uvn_vq_drv *vq, uint8_t *mark, uint64_t *keys, uint16_t *base);
int uvn_packed_drv_resubmit(struct uvn_vq_drv *vq, uint8_t *mark, uint64_t *keys, uint16_t *base)
{
	struct pk_keep *k = keep_of(vq);
	struct pk_pos u, p;
	unsigned n = 0, ndesc = 0;
	int dist;

	if (!vq->packed || !k->on || vq->err)
		return -1;
	uvn_packed_drv_publish(vq);
	for (unsigned h = 0; h < vq->num; h++)
		mark[h] = uvn_drv_returnable(vq, &vq->state[h]);
	u = walk_used(vq, mark);
	for (unsigned h = 0; h < vq->num; h++) {
		if (mark[h] != 1)
			continue;
		keys[n++] = (uint64_t)(uint32_t)(k->seq - k->age[h]) << 16 | h;
		ndesc += vq->state[h].ndesc;
	}
	dist = (int)vq->pk.next_avail - (int)u.pos + (u.wrap != vq->pk.avail_wrap ? vq->num : 0);
	if (dist < 0 || (unsigned)dist != ndesc)
		return -1;
	qsort(keys, n, sizeof(*keys), older_first);
	p = u;
	for (unsigned i = 0; i < n; i++) {
		uint16_t id = (uint16_t)keys[i];
		uint16_t e = vq->state[id].last;

		for (unsigned j = 0; j < vq->state[id].ndesc; j++) {
			const struct uvn_desc *c = &k->copy[e];
			uint16_t f = (uint16_t)(c->flags | uvn_pk_avail_flags(p.wrap));

			uvn_pk_write_body(&vq->pk.desc[p.pos], c->addr, c->len, id);
			if (j) {
				uvn_wr16(&vq->pk.desc[p.pos].flags, f);
			} else {
				/* Heads last, as for any add (publish below). */
				vq->pk.pend_pos[vq->pk.npend] = p.pos;
				vq->pk.pend_flags[vq->pk.npend++] = f;
			}
			e = c->next;
			pos_skip(vq, &p, 1);
		}
	}
	uvn_packed_drv_publish(vq);
	*base = (uint16_t)(u.pos | (u.wrap ? UVN_PK_WRAP : 0));
	return (int)n;
}
