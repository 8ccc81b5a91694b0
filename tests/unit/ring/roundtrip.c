/* SPDX-License-Identifier: MIT */
/*
 * The driver half and the device half of one queue against each other,
 * through the simulated guest memory. The device proves it saw the driver's
 * readable bytes by writing a digest of them into the writable buffers; the
 * driver checks that digest and that exactly the reported length was
 * written.
 */
#include <string.h>

#include "ring_test.h"

#define SEG_MAX 6
#define SEG_LEN 32

struct rec {
	uint32_t seq;
	unsigned nout, nin;
	struct uvn_sg sg[SEG_MAX];
	uint32_t in_len;
	bool busy;
};

struct rt {
	struct tq *q;
	const struct rt_opts *o;
	uint32_t rng;
	struct rec *recs;
	unsigned *free_slot, nfree;
	unsigned nrec, inflight, added, done;
	uint64_t bufs; /* SEG_MAX * SEG_LEN bytes per record */
};

uint32_t trand(uint32_t *s)
{
	/* xorshift32 */
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static uint8_t out_byte(uint32_t seq, unsigned seg, unsigned i)
{
	return (uint8_t)(seq * 131 + seg * 17 + i);
}

/* What the device writes at offset i of the writable part. */
static uint8_t in_byte(uint8_t digest, uint32_t i)
{
	return (uint8_t)(digest + i * 3);
}

static uint8_t digest_of(uint32_t sum, uint32_t out_len, uint32_t in_len)
{
	return (uint8_t)(sum + out_len * 31 + in_len * 13 + 1);
}

static bool add_one(struct rt *t)
{
	const struct rt_opts *o = t->o;
	unsigned most = o->max_segs < t->q->num ? o->max_segs : t->q->num, slot, n;
	struct rec *r;
	int ret;

	assert_true(t->nfree > 0);
	slot = t->free_slot[t->nfree - 1];
	r = &t->recs[slot];
	assert_false(r->busy);
	n = 1 + trand(&t->rng) % most;
	r->seq = t->added;
	r->nout = trand(&t->rng) % (n + 1);
	r->nin = n - r->nout;
	r->in_len = 0;
	for (unsigned k = 0; k < n; k++) {
		uint64_t gpa = t->bufs + ((uint64_t)slot * SEG_MAX + k) * SEG_LEN;
		uint8_t *p = tm_ptr(&t->q->m, gpa);

		r->sg[k] = (struct uvn_sg){ .addr = gpa, .len = 1 + trand(&t->rng) % SEG_LEN };
		for (unsigned i = 0; i < SEG_LEN; i++)
			p[i] = k < r->nout ? out_byte(r->seq, k, i) : 0;
		if (k >= r->nout)
			r->in_len += r->sg[k].len;
	}
	ret = uvn_vq_drv_add(t->q->drv, r->sg, r->nout, r->nin, r,
			     trand(&t->rng) % 4 == 0 ? UVN_VQ_ADD_NO_INDIRECT : 0);
	if (ret == -UVN_VQ_E_NOSPC)
		return false;
	assert_int_equal(ret, 0);
	t->nfree--;
	r->busy = true;
	t->inflight++;
	t->added++;
	return true;
}

static void fill_in(const struct iovec *iov, const struct uvn_vq_chain *ch, uint32_t wlen,
		    uint8_t digest)
{
	uint32_t off = 0;

	for (unsigned k = ch->nout; k < ch->nout + ch->nin && off < wlen; k++) {
		uint8_t *p = iov[k].iov_base;

		for (size_t i = 0; i < iov[k].iov_len && off < wlen; i++)
			p[i] = in_byte(digest, off++);
	}
}

/* Device: check the chain against itself, digest the readable bytes. */
static uint8_t device_digest(const struct iovec *iov, const struct uvn_vq_chain *ch)
{
	uint32_t sum = 0, out = 0, in = 0;

	for (unsigned k = 0; k < ch->nout + ch->nin; k++) {
		const uint8_t *p = iov[k].iov_base;

		assert_true(iov[k].iov_len > 0);
		if (k < ch->nout) {
			out += (uint32_t)iov[k].iov_len;
			for (size_t i = 0; i < iov[k].iov_len; i++)
				sum += p[i];
		} else {
			in += (uint32_t)iov[k].iov_len;
		}
	}
	assert_int_equal(out, ch->out_len);
	assert_int_equal(in, ch->in_len);
	return digest_of(sum, out, in);
}

struct popped {
	struct uvn_vq_chain ch;
	struct iovec iov[SEG_MAX * 2];
};

static unsigned device_pop(struct rt *t, struct popped *pp, unsigned max)
{
	unsigned n = 0;

	while (n < max) {
		int ret = uvn_vq_dev_pop(t->q->dev, &pp[n].ch, pp[n].iov, SEG_MAX * 2);

		assert_true(ret >= 0);
		if (!ret)
			break;
		n++;
		if (t->o->unpop && trand(&t->rng) % 8 == 0) {
			uvn_vq_dev_unpop(t->q->dev, &pp[--n].ch);
			break;
		}
	}
	return n;
}

static void device_round(struct rt *t, struct popped *pp, unsigned max)
{
	unsigned n = device_pop(t, pp, max), order[64];

	for (unsigned i = 0; i < n; i++)
		order[i] = i;
	if (t->o->shuffle) {
		for (unsigned i = n; i > 1; i--) {
			unsigned j = trand(&t->rng) % i, x = order[i - 1];

			order[i - 1] = order[j];
			order[j] = x;
		}
	}
	for (unsigned i = 0; i < n; i++) {
		struct popped *p = &pp[order[i]];
		uint8_t dg = device_digest(p->iov, &p->ch);
		bool last = i + 1 == n;
		/* Batched buffers that are not last are used completely; what
		 * they report is never written, so report garbage. */
		uint32_t wlen = p->ch.in_len, rep;

		if (!t->o->batch || last)
			wlen = p->ch.in_len ? trand(&t->rng) % (p->ch.in_len + 1) : 0;
		rep = t->o->batch && !last ? 1 : wlen;
		fill_in(p->iov, &p->ch, wlen, dg);
		uvn_vq_dev_push(t->q->dev, &p->ch, rep);
		if (!t->o->batch && trand(&t->rng) % 4 == 0)
			uvn_vq_dev_flush(t->q->dev);
	}
	uvn_vq_dev_flush(t->q->dev);
}

/* Driver: the digest of our own readable bytes, exactly len bytes of it. */
static void driver_check(struct rt *t, const struct uvn_vq_done *d)
{
	struct rec *r = d->token;
	uint32_t sum = 0, out = 0, off = 0;

	assert_true(r >= t->recs && r < t->recs + t->nrec && r->busy);
	assert_true(d->len <= r->in_len);
	for (unsigned k = 0; k < r->nout; k++) {
		out += r->sg[k].len;
		for (unsigned i = 0; i < r->sg[k].len; i++)
			sum += out_byte(r->seq, k, i);
	}
	uint8_t dg = digest_of(sum, out, r->in_len);

	for (unsigned k = r->nout; k < r->nout + r->nin; k++) {
		const uint8_t *p = tm_ptr(&t->q->m, r->sg[k].addr);

		for (unsigned i = 0; i < r->sg[k].len; i++, off++)
			assert_int_equal(p[i], off < d->len ? in_byte(dg, off) : 0);
	}
	r->busy = false;
	t->free_slot[t->nfree++] = (unsigned)(r - t->recs);
	t->inflight--;
	t->done++;
}

static void driver_reap(struct rt *t)
{
	struct uvn_vq_done done[16];
	int n;

	do {
		n = uvn_vq_drv_get_used(t->q->drv, done, 16);
		assert_true(n >= 0);
		for (int i = 0; i < n; i++)
			driver_check(t, &done[i]);
	} while (n == 16);
	assert_false(uvn_vq_drv_has_used(t->q->drv));
}

void roundtrip(struct tq *q, const struct rt_opts *o)
{
	struct rt t = { .q = q, .o = o, .rng = o->seed ? o->seed : 1 };
	struct popped pp[64];

	t.nrec = o->max_inflight ? o->max_inflight : q->num;
	t.recs = test_calloc(t.nrec, sizeof(*t.recs));
	t.free_slot = test_calloc(t.nrec, sizeof(*t.free_slot));
	for (unsigned i = 0; i < t.nrec; i++)
		t.free_slot[t.nfree++] = t.nrec - 1 - i;
	t.bufs = tm_alloc(&q->m, (size_t)t.nrec * SEG_MAX * SEG_LEN, 64);
	if (o->batch)
		uvn_vq_dev_set_batch_used(q->dev, true);
	while (t.done < o->chains) {
		while (t.inflight < t.nrec && t.added < o->chains && add_one(&t))
			;
		uvn_vq_drv_kick_prepare(q->drv);
		device_round(&t, pp, 1 + trand(&t.rng) % 64);
		driver_reap(&t);
	}
	assert_int_equal(uvn_vq_drv_num_free(q->drv), q->num);
	assert_int_equal(uvn_vq_drv_stats(q->drv)->bufs, o->chains);
	assert_int_equal(uvn_vq_drv_stats(q->drv)->used, o->chains);
	assert_int_equal(uvn_vq_dev_stats(q->dev)->bufs, o->chains);
	assert_int_equal(uvn_vq_dev_stats(q->dev)->used, o->chains);
	assert_int_equal(uvn_vq_drv_error(q->drv), 0);
	assert_int_equal(uvn_vq_dev_error(q->dev), 0);
	assert_null(uvn_vq_drv_detach_unused(q->drv));
	test_free(t.free_slot);
	test_free(t.recs);
}

void run_roundtrip(void **state)
{
	const struct rt_case *c = *state;
	struct tq q;

	tq_setup(&q, c->num, c->features, TQ_DRV | TQ_DEV);
	roundtrip(&q, &c->o);
	tq_teardown(&q);
}
