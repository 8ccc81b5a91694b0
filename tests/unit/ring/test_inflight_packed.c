/* SPDX-License-Identifier: MIT */
/*
 * In-flight tracking of the packed device half (lib/ring/inflight_packed.c).
 * A random run of our driver half and the tracked device half (chains of
 * one to three descriptors, direct or indirect, completed out of order or
 * in IN_ORDER batches, some given back and popped again) in which the
 * backend "crashes" at every step: the ring and the region copied at that
 * instant, and the states inside a pop and inside a flush built from the
 * copies before and after it. Each time a new device half, started from
 * QEMU's base for a ring it knows nothing about, recovers from the copies:
 * it must be at the used position the driver saw, pop exactly the chains
 * the driver still has out, each once, the ones it held first in the order
 * it popped them, and its used elements must read, one by one, as exactly
 * those (nothing a dead batch left behind). Then a table of every way a
 * hostile region can be wrong: refused with its code, nothing attached,
 * the queue not broken.
 */
#include <endian.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "ring/inflight.h"
#include "ring_test.h"

#define NUM 7 /* not a power of two: packed positions wrap at num */
#define NT 12 /* buffers the driver cycles through */
#define SEG 64

struct view {
	bool out[NT];    /* made available, used not published */
	bool marked[NT]; /* popped, used not published: the region's */
	uint64_t popseq[NT];
	uint16_t upos; /* the used position the driver has seen */
	bool uwrap;
};

struct held {
	struct uvn_vq_chain ch;
	int tok;
};

struct sim {
	struct tq q;
	uint8_t *region;
	size_t rlen;
	uint64_t gpa[NT];
	uint16_t ndesc[NT]; /* ring descriptors, as the device popped it */
	bool done[NT];      /* used published, not yet taken back by the driver */
	struct view v;
	uint64_t seq;
	struct held popped[NT]; /* the live device holds, not pushed */
	unsigned npopped;
	struct held pushed[NT]; /* since the last flush */
	unsigned npushed;
	bool batch;
	unsigned checks, unpops, resubmits;
};

static uint8_t *dup_bytes(const void *p, size_t n)
{
	uint8_t *d = aligned_alloc(64, (n + 63) & ~(size_t)63);

	assert_non_null(d);
	memcpy(d, p, n);
	return d;
}

static struct uvn_inflight_packed *reg(uint8_t *p)
{
	return (struct uvn_inflight_packed *)p;
}

/* The buffer a popped chain is, from its first iovec. */
static int token_of(struct sim *s, const struct iovec *iov)
{
	for (int t = 0; t < NT; t++)
		if (iov[0].iov_base == tm_ptr(&s->q.m, s->gpa[t]))
			return t;
	fail_msg("a chain of no buffer of ours");
	return -1;
}

static bool looks_used(struct tq *q, unsigned pos, bool wrap)
{
	uint16_t f = le16(pq_desc(q, pos)->flags);

	return !!(f & PK_AVAIL) == wrap && !!(f & PK_USED) == wrap;
}

static void advance(uint16_t *pos, bool *wrap, unsigned n)
{
	while (n--) {
		if (++*pos == NUM) {
			*pos = 0;
			*wrap = !*wrap;
		}
	}
}

/* ------------------------------------------------------------ recovery */

struct rec {
	struct uvn_vq_dev *dev;
	int tok[NT];
	uint16_t id[NT];
	struct uvn_vq_chain ch[NT];
	unsigned n;
	uint16_t rpos; /* the mini driver's used reader */
	bool rwrap;
};

static unsigned expected_held(const struct view *v, int *order)
{
	unsigned n = 0;

	for (int t = 0; t < NT; t++)
		if (v->marked[t])
			order[n++] = t;
	for (unsigned i = 1; i < n; i++) /* oldest pop first */
		for (unsigned j = i; j > 0 && v->popseq[order[j - 1]] > v->popseq[order[j]]; j--) {
			int x = order[j];

			order[j] = order[j - 1];
			order[j - 1] = x;
		}
	return n;
}

/* Pop everything; one chain given back first and popped again. */
static void rec_pop_all(struct sim *s, struct rec *r)
{
	struct iovec iov[4];

	if (uvn_vq_dev_pop(r->dev, &r->ch[0], iov, 4) == 1)
		uvn_vq_dev_unpop(r->dev, &r->ch[0]);
	while (r->n < NT && uvn_vq_dev_pop(r->dev, &r->ch[r->n], iov, 4) == 1) {
		r->tok[r->n] = token_of(s, iov);
		r->id[r->n] = r->ch[r->n].id;
		r->n++;
	}
	assert_int_equal(uvn_vq_dev_error(r->dev), 0);
}

/* The used elements from the reader's position: @n, chains i0.., and
 * then a slot that does not read as used. */
static void rec_read(struct tq *q, struct rec *r, unsigned i0, unsigned n)
{
	for (unsigned i = i0; i < i0 + n; i++) {
		const struct vring_packed_desc *d = pq_desc(q, r->rpos);
		uint16_t f = le16(d->flags);

		assert_int_equal(!!(f & PK_AVAIL), r->rwrap);
		assert_int_equal(!!(f & PK_USED), r->rwrap);
		assert_int_equal(le16(d->id), r->id[i]);
		advance(&r->rpos, &r->rwrap, r->ch[i].ndesc);
	}
	assert_false(looks_used(q, r->rpos, r->rwrap));
}

static void check_recovery(struct sim *s, const uint8_t *ring, const uint8_t *region,
			   const struct view *v)
{
	struct tq *q = &s->q;
	uint8_t *live = dup_bytes(q->ring, q->lay.size);
	uint8_t *rg = dup_bytes(region, s->rlen);
	int order[NT];
	unsigned nheld = expected_held(v, order), nout = 0, held_desc = 0;
	struct rec r = { .rpos = v->upos, .rwrap = v->uwrap };
	bool seen[NT] = { false };
	uint16_t apos = v->upos;
	bool awrap = v->uwrap;

	memcpy(q->ring, ring, q->lay.size);
	/* What QEMU sends for a packed ring after its backend died. */
	struct uvn_vq_dev_cfg cfg = tq_dev_cfg(q, 0, true, 0, true);

	assert_int_equal(uvn_vq_dev_create(&cfg, &r.dev), 0);
	assert_int_equal(uvn_vq_dev_inflight_attach(r.dev, rg, s->rlen), 0);
	assert_int_equal(uvn_vq_dev_inflight_pending(r.dev), nheld);
	for (unsigned i = 0; i < nheld; i++)
		held_desc += s->ndesc[order[i]];
	advance(&apos, &awrap, held_desc);
	assert_int_equal(uvn_vq_dev_used_state(r.dev), v->upos | v->uwrap << 15);
	assert_int_equal(uvn_vq_dev_avail_state(r.dev), apos | awrap << 15);
	rec_pop_all(s, &r);
	for (int t = 0; t < NT; t++)
		nout += v->out[t];
	assert_int_equal(r.n, nout);
	for (unsigned i = 0; i < r.n; i++) {
		assert_false(seen[r.tok[i]]); /* none twice */
		seen[r.tok[i]] = true;
		assert_true(v->out[r.tok[i]]); /* none the driver has back */
		if (i < nheld) {
			assert_int_equal(r.tok[i], order[i]);
			assert_int_equal(r.ch[i].ndesc, s->ndesc[order[i]]);
		}
	}
	/* One used, then the rest: the driver sees each once, nothing more. */
	if (r.n) {
		uvn_vq_dev_push(r.dev, &r.ch[0], 0);
		uvn_vq_dev_flush(r.dev);
		rec_read(q, &r, 0, 1);
	}
	for (unsigned i = 1; i < r.n; i++)
		uvn_vq_dev_push(r.dev, &r.ch[i], 0);
	uvn_vq_dev_flush(r.dev);
	if (r.n)
		rec_read(q, &r, 1, r.n - 1);
	for (unsigned e = 0; e < NUM; e++)
		assert_int_equal(reg(rg)->desc[e].inflight, 0);
	assert_int_equal(reg(rg)->old_used_idx, reg(rg)->used_idx);
	uvn_vq_dev_inflight_detach(r.dev);
	uvn_vq_dev_destroy(r.dev);
	memcpy(q->ring, live, q->lay.size);
	free(live);
	free(rg);
	s->checks++;
	s->resubmits += nheld;
}

static void check_now(struct sim *s)
{
	check_recovery(s, s->q.ring, s->region, &s->v);
}

/* ------------------------------------------------------------ the run */

static void op_publish(struct sim *s, uint32_t *rng)
{
	int t = (int)(trand(rng) % NT);
	unsigned nseg = 1 + trand(rng) % 3;
	struct uvn_sg sg[3];

	for (int k = 0; k < NT && (s->v.out[t] || s->done[t]); k++)
		t = (t + 1) % NT;
	if (s->v.out[t] || s->done[t])
		return;
	for (unsigned k = 0; k < nseg; k++)
		sg[k] = (struct uvn_sg){ .addr = s->gpa[t] + k * SEG, .len = SEG };
	if (uvn_vq_drv_add(s->q.drv, sg, nseg, 0, &s->gpa[t], 0) != 0)
		return; /* ring full */
	(void)uvn_vq_drv_kick_prepare(s->q.drv);
	s->v.out[t] = true;
}

static void op_pop(struct sim *s, uint32_t *rng)
{
	uint8_t *before = dup_bytes(s->region, s->rlen), *mid;
	struct uvn_vq_chain ch;
	struct iovec iov[4];
	int t;

	if (uvn_vq_dev_pop(s->q.dev, &ch, iov, 4) != 1) {
		free(before);
		return;
	}
	t = token_of(s, iov);
	assert_true(s->v.out[t]);
	/* Inside the pop: all of it written but old_free_head (a chain
	 * popped again after it was given back is marked anew). */
	mid = dup_bytes(s->region, s->rlen);
	reg(mid)->old_free_head = reg(before)->old_free_head;
	if (!s->v.marked[t])
		check_recovery(s, s->q.ring, mid, &s->v);
	free(mid);
	free(before);
	s->ndesc[t] = ch.ndesc;
	s->v.marked[t] = true;
	s->v.popseq[t] = ++s->seq;
	if (trand(rng) % 4 == 0) {
		/* Given back: still marked until popped again. */
		uvn_vq_dev_unpop(s->q.dev, &ch);
		s->unpops++;
		return;
	}
	s->popped[s->npopped++] = (struct held){ ch, t };
}

static void op_push(struct sim *s, uint32_t *rng)
{
	unsigned i;

	if (!s->npopped)
		return;
	/* IN_ORDER batches complete in pop order; otherwise any order. */
	i = s->batch ? 0 : trand(rng) % s->npopped;
	uvn_vq_dev_push(s->q.dev, &s->popped[i].ch, 0);
	s->pushed[s->npushed++] = s->popped[i];
	memmove(&s->popped[i], &s->popped[i + 1], (s->npopped - i - 1) * sizeof(s->popped[0]));
	s->npopped--;
}

/* The driver takes back everything published: each buffer once. */
static void take_back(struct sim *s)
{
	struct uvn_vq_done done[NT];
	int n = uvn_vq_drv_get_used(s->q.drv, done, NT);

	assert_true(n >= 0);
	for (int i = 0; i < n; i++) {
		int t = (int)((uint64_t *)done[i].token - s->gpa);

		assert_true(t >= 0 && t < NT && s->done[t]);
		s->done[t] = false;
	}
	for (int t = 0; t < NT; t++)
		assert_false(s->done[t]);
	assert_int_equal(uvn_vq_drv_error(s->q.drv), 0);
}

/* The header's old_* half of @from into @to. */
static void old_half(uint8_t *to, const uint8_t *from)
{
	reg(to)->old_free_head = reg((uint8_t *)from)->old_free_head;
	reg(to)->old_used_idx = reg((uint8_t *)from)->old_used_idx;
	reg(to)->old_used_wrap_counter = reg((uint8_t *)from)->old_used_wrap_counter;
}

/*
 * Crashes inside the flush: before the batch is visible (free list and
 * used position written, the ring as before: @g0) it is still held; after
 * it, whatever part of the batch's marks were cleared, it is done.
 */
static void check_inside_flush(struct sim *s, const uint8_t *g0, const uint8_t *r0,
			       const struct view *v0)
{
	uint8_t *r1 = dup_bytes(s->region, s->rlen), *mid;
	uint16_t heads[NUM];
	unsigned nh = 0;

	for (uint16_t e = 0; e < NUM; e++)
		if (reg((uint8_t *)r0)->desc[e].inflight && !reg(r1)->desc[e].inflight)
			heads[nh++] = e;
	mid = dup_bytes(r1, s->rlen);
	old_half(mid, r0);
	for (unsigned k = 0; k < nh; k++)
		reg(mid)->desc[heads[k]].inflight = 1;
	check_recovery(s, g0, mid, v0);
	for (unsigned j = 0; j <= nh; j++) {
		if (j)
			reg(mid)->desc[heads[j - 1]].inflight = 0;
		check_recovery(s, s->q.ring, mid, &s->v);
	}
	free(mid);
	free(r1);
}

static void op_flush(struct sim *s)
{
	uint8_t *r0 = dup_bytes(s->region, s->rlen), *g0 = dup_bytes(s->q.ring, s->q.lay.size);
	struct view v0 = s->v;

	uvn_vq_dev_flush(s->q.dev);
	for (unsigned k = 0; k < s->npushed; k++) {
		int t = s->pushed[k].tok;

		s->v.out[t] = s->v.marked[t] = false;
		s->done[t] = true;
		advance(&s->v.upos, &s->v.uwrap, s->ndesc[t]);
	}
	if (s->npushed)
		check_inside_flush(s, g0, r0, &v0);
	s->npushed = 0;
	take_back(s);
	free(r0);
	free(g0);
}

static struct sim *sim_new(uint64_t features, bool batch)
{
	struct sim *s = calloc(1, sizeof(*s));

	assert_non_null(s);
	tq_setup(&s->q, NUM, F_PACKED | features, TQ_DRV | TQ_DEV);
	s->batch = batch;
	if (batch)
		uvn_vq_dev_set_batch_used(s->q.dev, true);
	s->rlen = uvn_inflight_slice_size(NUM);
	s->region = calloc(1, s->rlen);
	for (int t = 0; t < NT; t++)
		s->gpa[t] = tbuf(&s->q, 3 * SEG);
	s->v.uwrap = true;
	assert_int_equal(uvn_vq_dev_inflight_attach(s->q.dev, s->region, s->rlen), 0);
	assert_int_equal(reg(s->region)->version, 1);
	assert_int_equal(reg(s->region)->desc_num, NUM);
	return s;
}

static void sim_free(struct sim *s)
{
	uvn_vq_dev_inflight_detach(s->q.dev);
	tq_teardown(&s->q);
	free(s->region);
	free(s);
}

static void run(uint64_t features, bool batch, uint32_t seed, unsigned steps)
{
	struct sim *s = sim_new(features, batch);
	uint32_t rng = seed;

	for (unsigned i = 0; i < steps; i++) {
		switch (trand(&rng) % 4) {
		case 0:
			op_publish(s, &rng);
			break;
		case 1:
			op_pop(s, &rng);
			break;
		case 2:
			op_push(s, &rng);
			break;
		default:
			op_flush(s);
			break;
		}
		check_now(s);
		/* the region marks exactly the chains popped and not used */
		unsigned marks = 0, want = 0;

		for (unsigned e = 0; e < NUM; e++)
			marks += reg(s->region)->desc[e].inflight;
		for (int t = 0; t < NT; t++)
			want += s->v.marked[t];
		assert_int_equal(marks, want);
	}
	print_message("# %u recoveries, %u chains popped again, %u pops, %u given back\n",
		      s->checks, s->resubmits, (unsigned)s->seq, s->unpops);
	assert_true(s->checks > steps);
	assert_true(s->seq > 100); /* round the ring many times */
	assert_true(s->unpops > 10);
	assert_true(s->resubmits > 100);
	assert_int_equal(uvn_vq_dev_error(s->q.dev), 0);
	sim_free(s);
}

static void crash_everywhere_out_of_order(void **state)
{
	(void)state;
	run(0, false, 1, 6000);
	run(F_EVENT_IDX, false, 7, 6000);
}

static void crash_everywhere_indirect(void **state)
{
	(void)state;
	run(F_INDIRECT, false, 5, 6000);
}

static void crash_everywhere_in_order_batch(void **state)
{
	(void)state;
	run(F_IN_ORDER, true, 3, 6000);
}

/* ------------------------------------------------ one region, in detail */

struct fixed {
	struct tq q;
	uint8_t *r;
	size_t rlen;
	struct uvn_vq_chain ch[3];
};

static struct uvn_vq_dev *fresh_dev(struct tq *q)
{
	struct uvn_vq_dev_cfg cfg = tq_dev_cfg(q, 0, true, 0, true);
	struct uvn_vq_dev *dev;

	assert_int_equal(uvn_vq_dev_create(&cfg, &dev), 0);
	return dev;
}

/*
 * Chains A (id 0, one descriptor, ring slot 0), B (id 1, two, slots 1-2)
 * and C (id 2, one, slot 3) popped into entries 0, 1-2 and 3; then @push
 * (a bit per chain, pushed in the order C, B, A) and, if @flush, flushed.
 * The device then dies.
 */
static void f_setup(struct fixed *f, unsigned push, bool flush)
{
	struct pkdrv d = { 0, true };
	struct iovec iov[4];

	tq_setup(&f->q, NUM, F_PACKED, TQ_DEV);
	f->rlen = uvn_inflight_slice_size(NUM);
	f->r = calloc(1, f->rlen);
	for (uint16_t id = 0; id < 3; id++) {
		struct tdesc ds[2] = { { tbuf(&f->q, 32), 32, 0 }, { tbuf(&f->q, 32), 32, 0 } };

		pk_chain(&f->q, &d, ds, id == 1 ? 2 : 1, id);
	}
	assert_int_equal(uvn_vq_dev_inflight_attach(f->q.dev, f->r, f->rlen), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(uvn_vq_dev_pop(f->q.dev, &f->ch[i], iov, 4), 1);
	for (int i = 2; i >= 0; i--)
		if (push & (1u << i))
			uvn_vq_dev_push(f->q.dev, &f->ch[i], 0);
	if (flush)
		uvn_vq_dev_flush(f->q.dev);
	uvn_vq_dev_inflight_detach(f->q.dev);
	uvn_vq_dev_destroy(f->q.dev);
	f->q.dev = NULL;
}

static void f_teardown(struct fixed *f)
{
	tq_teardown(&f->q);
	free(f->r);
}

static void expect_pop(struct uvn_vq_dev *dev, uint16_t id, uint16_t ndesc)
{
	struct uvn_vq_chain ch;
	struct iovec iov[4];

	assert_int_equal(uvn_vq_dev_pop(dev, &ch, iov, 4), 1);
	assert_int_equal(ch.id, id);
	assert_int_equal(ch.ndesc, ndesc);
}

/* B used out of order and published: A and C again, in pop order, from
 * the positions the slice gives (QEMU's base says 0), then new chains. */
static void resubmits_in_pop_order(void **state)
{
	struct fixed f;
	struct uvn_vq_dev *dev;
	struct uvn_vq_chain ch[4];
	struct iovec iov[4];
	struct pkdrv d = { 4, true };

	(void)state;
	f_setup(&f, 2, true);
	assert_true(looks_used(&f.q, 0, true));
	dev = fresh_dev(&f.q);
	assert_int_equal(uvn_vq_dev_inflight_attach(dev, f.r, f.rlen), 0);
	assert_int_equal(uvn_vq_dev_inflight_pending(dev), 2);
	assert_int_equal(uvn_vq_dev_used_state(dev), 2 | 1u << 15);
	assert_int_equal(uvn_vq_dev_avail_state(dev), 4 | 1u << 15);
	/* A given back and taken again stays first */
	assert_int_equal(uvn_vq_dev_pop(dev, &ch[0], iov, 4), 1);
	uvn_vq_dev_unpop(dev, &ch[0]);
	for (int i = 0; i < 2; i++)
		assert_int_equal(uvn_vq_dev_pop(dev, &ch[i], iov, 4), 1);
	assert_int_equal(ch[0].id, 0);
	assert_int_equal(ch[1].id, 2);
	assert_int_equal(uvn_vq_dev_pop(dev, &ch[2], iov, 4), 0);
	{
		struct tdesc ds = { tbuf(&f.q, 32), 32, 0 };

		pk_chain(&f.q, &d, &ds, 1, 5);
	}
	assert_int_equal(uvn_vq_dev_pop(dev, &ch[2], iov, 4), 1);
	assert_int_equal(ch[2].id, 5);
	/* a new pop gets the entry B freed, and a counter after C's */
	assert_int_equal(reg(f.r)->desc[1].inflight, 1);
	assert_true(reg(f.r)->desc[1].counter > reg(f.r)->desc[3].counter);
	for (int i = 0; i < 3; i++)
		uvn_vq_dev_push(dev, &ch[i], 0);
	uvn_vq_dev_flush(dev);
	assert_true(looks_used(&f.q, 2, true) && le16(pq_desc(&f.q, 2)->id) == 0);
	assert_true(looks_used(&f.q, 3, true) && le16(pq_desc(&f.q, 3)->id) == 2);
	assert_true(looks_used(&f.q, 4, true) && le16(pq_desc(&f.q, 4)->id) == 5);
	assert_int_equal(uvn_vq_dev_error(dev), 0);
	uvn_vq_dev_inflight_detach(dev);
	uvn_vq_dev_destroy(dev);
	f_teardown(&f);
}

/* A chain too long for the caller's array, resubmitted or new from the
 * ring: not taken, popped again whole, the slice as without it. */
static void iov_full_neither_taken_nor_marked(void **state)
{
	struct fixed f;
	struct uvn_vq_dev *dev;
	struct uvn_vq_chain ch;
	struct iovec iov[4];
	struct pkdrv d = { 4, true };
	struct tdesc ds[2];

	(void)state;
	f_setup(&f, 2, true);
	dev = fresh_dev(&f.q);
	assert_int_equal(uvn_vq_dev_inflight_attach(dev, f.r, f.rlen), 0);
	assert_int_equal(uvn_vq_dev_pop(dev, &ch, iov, 0), -UVN_VQ_E_IOV_FULL);
	assert_int_equal(ch.id, 0);
	assert_int_equal(uvn_vq_dev_inflight_pending(dev), 2);
	expect_pop(dev, 0, 1);
	expect_pop(dev, 2, 1);
	ds[0] = (struct tdesc){ tbuf(&f.q, 32), 32, 0 };
	ds[1] = (struct tdesc){ tbuf(&f.q, 32), 32, 0 };
	pk_chain(&f.q, &d, ds, 2, 5);
	assert_int_equal(uvn_vq_dev_pop(dev, &ch, iov, 1), -UVN_VQ_E_IOV_FULL);
	assert_int_equal(ch.id, 5);
	assert_int_equal(ch.ndesc, 2);
	assert_int_equal(uvn_vq_dev_avail_state(dev), 4 | 1u << 15);
	assert_int_equal(reg(f.r)->desc[1].inflight, 0);
	expect_pop(dev, 5, 2);
	assert_int_equal(reg(f.r)->desc[1].inflight, 1);
	assert_int_equal(uvn_vq_dev_error(dev), 0);
	uvn_vq_dev_inflight_detach(dev);
	uvn_vq_dev_destroy(dev);
	f_teardown(&f);
}

/* Chains given back newest first, across the ones popped again from the
 * slice and the ring's: the same three come again in the same order. */
static void given_back_across_resubmits(void **state)
{
	struct fixed f;
	struct uvn_vq_dev *dev;
	struct uvn_vq_chain ch[3];
	struct iovec iov[4];
	struct pkdrv d = { 4, true };
	struct tdesc ds[2];

	(void)state;
	f_setup(&f, 2, true);
	ds[0] = (struct tdesc){ tbuf(&f.q, 32), 32, 0 };
	ds[1] = (struct tdesc){ tbuf(&f.q, 32), 32, 0 };
	pk_chain(&f.q, &d, ds, 2, 6);
	dev = fresh_dev(&f.q);
	assert_int_equal(uvn_vq_dev_inflight_attach(dev, f.r, f.rlen), 0);
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 3; i++)
			assert_int_equal(uvn_vq_dev_pop(dev, &ch[i], iov, 4), 1);
		assert_int_equal(ch[0].id, 0);
		assert_int_equal(ch[1].id, 2);
		assert_int_equal(ch[2].id, 6);
		assert_int_equal(ch[2].ndesc, 2);
		assert_int_equal(uvn_vq_dev_avail_state(dev), 6 | 1u << 15);
		for (int i = 2; i >= 0 && round == 0; i--)
			uvn_vq_dev_unpop(dev, &ch[i]);
	}
	assert_int_equal(uvn_vq_dev_pop(dev, &ch[0], iov, 4), 0);
	assert_int_equal(uvn_vq_dev_error(dev), 0);
	uvn_vq_dev_inflight_detach(dev);
	uvn_vq_dev_destroy(dev);
	f_teardown(&f);
}

/*
 * C and A pushed, not flushed: C's element waits at slot 0 for its
 * flags, A's is complete at slot 1. The driver never saw either; once the
 * new backend publishes slot 0 it must not take slot 1's stale A too.
 */
static void staged_elements_are_not_seen(void **state)
{
	struct fixed f;
	struct uvn_vq_dev *dev;

	(void)state;
	f_setup(&f, 1 | 4, false);
	assert_true(looks_used(&f.q, 1, true));
	assert_false(looks_used(&f.q, 0, true));
	dev = fresh_dev(&f.q);
	assert_int_equal(uvn_vq_dev_inflight_attach(dev, f.r, f.rlen), 0);
	assert_int_equal(uvn_vq_dev_inflight_pending(dev), 3);
	assert_false(looks_used(&f.q, 1, true));
	assert_int_equal(uvn_vq_dev_used_state(dev), 0 | 1u << 15);
	assert_int_equal(uvn_vq_dev_avail_state(dev), 4 | 1u << 15);
	expect_pop(dev, 0, 1);
	{
		struct uvn_vq_chain a = { .id = 0, .ndesc = 1 };

		uvn_vq_dev_push(dev, &a, 0);
	}
	uvn_vq_dev_flush(dev);
	assert_true(looks_used(&f.q, 0, true));
	assert_false(looks_used(&f.q, 1, true));
	expect_pop(dev, 1, 2);
	expect_pop(dev, 2, 1);
	uvn_vq_dev_inflight_detach(dev);
	uvn_vq_dev_destroy(dev);
	f_teardown(&f);
}

static void attach_args(void **state)
{
	struct fixed f;
	struct uvn_vq_dev *dev;
	struct uvn_vq_chain ch;
	struct iovec iov[4];

	(void)state;
	f_setup(&f, 0, false);
	dev = fresh_dev(&f.q);
	assert_int_equal(uvn_vq_dev_inflight_attach(dev, f.r, 32 + 32 * NUM - 1),
			 UVN_INFLIGHT_E_SMALL);
	assert_int_equal(uvn_vq_dev_inflight_attach(dev, f.r, f.rlen), 0);
	assert_int_equal(uvn_vq_dev_inflight_attach(dev, f.r, f.rlen), UVN_INFLIGHT_E_BUSY);
	uvn_vq_dev_inflight_detach(dev);
	uvn_vq_dev_destroy(dev);
	/* not after the first pop */
	dev = fresh_dev(&f.q);
	assert_int_equal(uvn_vq_dev_pop(dev, &ch, iov, 4), 1);
	assert_int_equal(uvn_vq_dev_inflight_attach(dev, f.r, f.rlen), UVN_INFLIGHT_E_BUSY);
	uvn_vq_dev_destroy(dev);
	f_teardown(&f);
}

/* ------------------------------------------------------ hostile regions */

/* f_setup(B pushed, flushed): A in entry 0, C in 3; free 1 2 4 5 6. */
struct hostile_row {
	const char *name;
	void (*mutate)(struct uvn_inflight_packed *r);
	int code;
};

static void m_version(struct uvn_inflight_packed *r)
{
	r->version = 2;
}
static void m_features(struct uvn_inflight_packed *r)
{
	r->features = 1;
}
static void m_desc_num(struct uvn_inflight_packed *r)
{
	r->desc_num = NUM + 1;
}
static void m_free_head(struct uvn_inflight_packed *r)
{
	r->free_head = NUM + 1;
}
static void m_old_free_head(struct uvn_inflight_packed *r)
{
	r->old_free_head = 0xffff;
}
static void m_used_idx(struct uvn_inflight_packed *r)
{
	r->used_idx = NUM;
}
static void m_old_used_idx(struct uvn_inflight_packed *r)
{
	r->old_used_idx = 0x8001;
}
static void m_wrap(struct uvn_inflight_packed *r)
{
	r->used_wrap_counter = 2;
}
static void m_old_wrap(struct uvn_inflight_packed *r)
{
	r->old_used_wrap_counter = 0xff;
}
static void m_free_loop(struct uvn_inflight_packed *r)
{
	r->desc[4].next = 1;
}
static void m_free_range(struct uvn_inflight_packed *r)
{
	r->desc[4].next = NUM + 3;
}
static void m_free_short(struct uvn_inflight_packed *r)
{
	r->desc[5].next = NUM;
}
static void m_num_zero(struct uvn_inflight_packed *r)
{
	r->desc[0].num = 0;
}
static void m_num_big(struct uvn_inflight_packed *r)
{
	r->desc[0].num = NUM + 1;
}
static void m_last(struct uvn_inflight_packed *r)
{
	r->desc[0].last = 5;
}
static void m_flag(struct uvn_inflight_packed *r)
{
	r->desc[3].inflight = 2;
}
static void m_id_range(struct uvn_inflight_packed *r)
{
	r->desc[0].id = NUM;
}
static void m_id_twice(struct uvn_inflight_packed *r)
{
	r->desc[3].id = r->desc[0].id;
}
static void m_counter_dup(struct uvn_inflight_packed *r)
{
	r->desc[3].counter = r->desc[0].counter;
}
static void m_counter_end(struct uvn_inflight_packed *r)
{
	r->desc[0].counter = UINT64_MAX;
}

/* C's chain runs on into the free list, or into A's. */
static void m_chain_into_free(struct uvn_inflight_packed *r)
{
	r->desc[3].num = 2;
	r->desc[3].next = 4;
	r->desc[3].last = 4;
}

static void m_chains_share(struct uvn_inflight_packed *r)
{
	r->desc[3].num = 2;
	r->desc[3].next = 0;
	r->desc[3].last = 0;
}

/* A marked entry neither on the free list nor reached as a head's chain
 * (a second entry marked inside C's would be claimed twice). */
static void m_marked_inside(struct uvn_inflight_packed *r)
{
	r->desc[3].num = 2;
	r->desc[3].next = 6;
	r->desc[3].last = 6;
	r->desc[5].next = NUM;
	r->desc[6].id = r->desc[3].id;
	r->desc[6].inflight = 1;
}

static const struct hostile_row hostile_rows[] = {
	{ "m_version", m_version, UVN_INFLIGHT_E_VERSION },
	{ "m_features", m_features, UVN_INFLIGHT_E_VERSION },
	{ "m_desc_num", m_desc_num, UVN_INFLIGHT_E_NUM },
	{ "m_free_head", m_free_head, UVN_INFLIGHT_E_POS },
	{ "m_old_free_head", m_old_free_head, UVN_INFLIGHT_E_POS },
	{ "m_used_idx", m_used_idx, UVN_INFLIGHT_E_POS },
	{ "m_old_used_idx", m_old_used_idx, UVN_INFLIGHT_E_POS },
	{ "m_wrap", m_wrap, UVN_INFLIGHT_E_POS },
	{ "m_old_wrap", m_old_wrap, UVN_INFLIGHT_E_POS },
	{ "m_free_loop", m_free_loop, UVN_INFLIGHT_E_LIST },
	{ "m_free_range", m_free_range, UVN_INFLIGHT_E_LIST },
	{ "m_free_short", m_free_short, UVN_INFLIGHT_E_LIST },
	{ "m_num_zero", m_num_zero, UVN_INFLIGHT_E_LIST },
	{ "m_num_big", m_num_big, UVN_INFLIGHT_E_LIST },
	{ "m_last", m_last, UVN_INFLIGHT_E_LIST },
	{ "m_chain_into_free", m_chain_into_free, UVN_INFLIGHT_E_LIST },
	{ "m_chains_share", m_chains_share, UVN_INFLIGHT_E_LIST },
	{ "m_marked_inside", m_marked_inside, UVN_INFLIGHT_E_LIST },
	{ "m_flag", m_flag, UVN_INFLIGHT_E_FLAG },
	{ "m_id_range", m_id_range, UVN_INFLIGHT_E_ID },
	{ "m_id_twice", m_id_twice, UVN_INFLIGHT_E_ID },
	{ "m_counter_dup", m_counter_dup, UVN_INFLIGHT_E_COUNTER },
	{ "m_counter_end", m_counter_end, UVN_INFLIGHT_E_COUNTER },
};

/* Refused with the row's code; nothing attached, the queue not broken. */
static void hostile_region(void **state)
{
	const struct hostile_row *row = *state;
	struct fixed f;
	struct uvn_vq_dev *dev;

	f_setup(&f, 2, true);
	row->mutate(reg(f.r));
	dev = fresh_dev(&f.q);
	assert_int_equal(uvn_vq_dev_inflight_attach(dev, f.r, f.rlen), row->code);
	assert_string_not_equal(uvn_inflight_strerror(row->code), "unknown in-flight error");
	assert_int_equal(uvn_vq_dev_inflight_pending(dev), 0);
	assert_int_equal(uvn_vq_dev_error(dev), 0);
	uvn_vq_dev_destroy(dev);
	f_teardown(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(crash_everywhere_out_of_order),
		cmocka_unit_test(crash_everywhere_indirect),
		cmocka_unit_test(crash_everywhere_in_order_batch),
		cmocka_unit_test(resubmits_in_pop_order),
		cmocka_unit_test(iov_full_neither_taken_nor_marked),
		cmocka_unit_test(given_back_across_resubmits),
		cmocka_unit_test(staged_elements_are_not_seen),
		cmocka_unit_test(attach_args),
	};
	const struct test_table tables[] = { TEST_TABLE(hostile_rows, hostile_region) };

	return run_test_tables(tests, NELEM(tests), tables, NELEM(tables));
}
