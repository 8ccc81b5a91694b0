/* SPDX-License-Identifier: MIT */
/*
 * In-flight tracking of the split device half (lib/ring/inflight.c): a
 * random run of publish / pop / push / flush in which the backend
 * "crashes" at every step (the ring and the region copied at that instant,
 * and the states inside a flush built from the copies before and after
 * it); each time a new device half recovers from the copies and must pop
 * exactly the chains the driver still has out, each once, the ones it held
 * first in the order it popped them. Then every way a hostile region can
 * be wrong: refused with its code, the queue left untracked, no crash.
 */
#include <stdlib.h>
#include <string.h>

#include "ring/inflight.h"
#include "ring_test.h"

#define NUM 8

struct sim {
	struct tq q;
	uint8_t *region;
	size_t rlen;
	uint64_t buf[NUM];
	bool outstanding[NUM]; /* made available, used not published */
	bool held[NUM];        /* popped by the device, used not published */
	uint64_t popseq[NUM];
	uint64_t seq;
	struct uvn_vq_chain popped[NUM]; /* popped, not pushed */
	unsigned npopped;
	uint16_t pushed[NUM];  /* pushed since the last flush, in order */
	unsigned npushed;
	bool batch;
	unsigned checks;
};

static uint8_t *dup_bytes(const void *p, size_t n)
{
	uint8_t *d = aligned_alloc(64, (n + 63) & ~(size_t)63);

	assert_non_null(d);
	memcpy(d, p, n);
	return d;
}

static struct uvn_inflight_split *reg(uint8_t *p)
{
	return (struct uvn_inflight_split *)p;
}

/*
 * The newest k of the n chains popped (resubmitted ones, then ones from the
 * ring) given back newest first, as a mergeable receive short of buffers
 * does: popped again they are the same chains in the same order, each
 * marked once, and nothing more comes.
 */
static void give_back_and_pop_again(struct sim *s, struct uvn_vq_dev *dev, const uint8_t *region,
				    struct uvn_vq_chain *ch, const uint16_t *heads, unsigned n)
{
	const struct uvn_inflight_split *r = (const struct uvn_inflight_split *)region;
	unsigned k = s->checks % (n + 1);
	struct iovec iov[2];

	for (unsigned i = n; i > n - k; i--)
		uvn_vq_dev_unpop(dev, &ch[i - 1]);
	for (unsigned i = n - k; i < n; i++) {
		assert_int_equal(uvn_vq_dev_pop(dev, &ch[i], iov, 2), 1);
		assert_int_equal(ch[i].id, heads[i]);
	}
	assert_int_equal(uvn_vq_dev_pop(dev, &ch[n], iov, 2), 0);
	for (unsigned i = 0; i < n; i++)
		assert_int_equal(r->desc[heads[i]].inflight, 1);
}

/*
 * A backend restarted from @ring and @region (copies; the live ring is put
 * back afterwards): it must pop the model's outstanding chains, held ones
 * first in pop order, each once; completing them all leaves the region
 * with nothing marked.
 */
static void check_recovery(struct sim *s, const uint8_t *ring, const uint8_t *region,
			   const bool *outstanding, const bool *held)
{
	struct tq *q = &s->q;
	uint8_t *live = dup_bytes(q->ring, q->lay.size);
	uint8_t *r = dup_bytes(region, s->rlen);
	uint16_t used, heads[NUM], want_held[NUM];
	unsigned n = 0, nheld = 0, nout = 0;
	struct uvn_vq_chain ch[NUM + 1];
	struct uvn_vq_dev *dev;
	struct iovec iov[2];
	bool seen[NUM] = { false };

	memcpy(q->ring, ring, q->lay.size);
	used = le16(sq_used(q)->idx);
	/* QEMU restarts a ring whose backend died from the used index. */
	struct uvn_vq_dev_cfg cfg = tq_dev_cfg(q, used, false, used, false);

	assert_int_equal(uvn_vq_dev_create(&cfg, &dev), 0);
	assert_int_equal(uvn_vq_dev_inflight_attach(dev, r, s->rlen), 0);
	for (uint16_t h = 0; h < NUM; h++) {
		nout += outstanding[h];
		if (held[h])
			want_held[nheld++] = h;
	}
	/* oldest pop first */
	for (unsigned i = 1; i < nheld; i++)
		for (unsigned j = i; j > 0 && s->popseq[want_held[j - 1]] > s->popseq[want_held[j]]; j--) {
			uint16_t t = want_held[j];

			want_held[j] = want_held[j - 1];
			want_held[j - 1] = t;
		}
	assert_int_equal(uvn_vq_dev_inflight_pending(dev), nheld);
	while (n <= NUM && uvn_vq_dev_pop(dev, &ch[n], iov, 2) == 1) {
		heads[n] = ch[n].id;
		n++;
	}
	assert_int_equal(uvn_vq_dev_error(dev), 0);
	assert_int_equal(n, nout);
	for (unsigned i = 0; i < n; i++) {
		assert_true(heads[i] < NUM);
		assert_false(seen[heads[i]]);       /* none twice */
		seen[heads[i]] = true;
		assert_true(outstanding[heads[i]]); /* none the driver has back */
		if (i < nheld)
			assert_int_equal(heads[i], want_held[i]);
	}
	give_back_and_pop_again(s, dev, r, ch, heads, n);
	for (unsigned i = 0; i < n; i++)
		uvn_vq_dev_push(dev, &ch[i], 0);
	uvn_vq_dev_flush(dev);
	for (unsigned h = 0; h < NUM; h++)
		assert_int_equal(reg(r)->desc[h].inflight, 0);
	assert_int_equal(reg(r)->used_idx, le16(sq_used(q)->idx));
	uvn_vq_dev_inflight_detach(dev);
	uvn_vq_dev_destroy(dev);
	memcpy(q->ring, live, q->lay.size);
	free(live);
	free(r);
	s->checks++;
}

static void check_now(struct sim *s)
{
	check_recovery(s, s->q.ring, s->region, s->outstanding, s->held);
}

static void op_publish(struct sim *s, uint32_t *rng)
{
	uint16_t h = (uint16_t)(trand(rng) % NUM);

	for (unsigned k = 0; k < NUM && s->outstanding[h]; k++)
		h = (uint16_t)((h + 1) % NUM);
	if (s->outstanding[h])
		return;
	sq_set_desc(&s->q, h, s->buf[h], 64, (h & 1) ? VRING_DESC_F_WRITE : 0, 0);
	sq_publish(&s->q, h);
	s->outstanding[h] = true;
}

static void op_pop(struct sim *s)
{
	struct iovec iov[2];
	struct uvn_vq_chain ch;

	if (uvn_vq_dev_pop(s->q.dev, &ch, iov, 2) != 1)
		return;
	assert_true(ch.id < NUM && s->outstanding[ch.id] && !s->held[ch.id]);
	s->held[ch.id] = true;
	s->popseq[ch.id] = ++s->seq;
	s->popped[s->npopped++] = ch;
}

static void op_push(struct sim *s, uint32_t *rng)
{
	unsigned i;

	if (!s->npopped)
		return;
	/* IN_ORDER batches complete in pop order; otherwise any order. */
	i = s->batch ? 0 : trand(rng) % s->npopped;
	uvn_vq_dev_push(s->q.dev, &s->popped[i], 64);
	s->pushed[s->npushed++] = s->popped[i].id;
	memmove(&s->popped[i], &s->popped[i + 1], (s->npopped - i - 1) * sizeof(s->popped[0]));
	s->npopped--;
}

static void op_flush(struct sim *s)
{
	uint8_t *reg0 = dup_bytes(s->region, s->rlen);
	bool out[NUM], held[NUM];

	uvn_vq_dev_flush(s->q.dev);
	memcpy(out, s->outstanding, sizeof(out));
	memcpy(held, s->held, sizeof(held));
	for (unsigned k = 0; k < s->npushed; k++)
		out[s->pushed[k]] = held[s->pushed[k]] = false;
	/* Inside the flush: the used index published, j of the batch
	 * cleared, the region's used_idx not yet moved. */
	for (unsigned j = 0; j <= s->npushed; j++) {
		uint8_t *mid = dup_bytes(reg0, s->rlen);

		for (unsigned k = 0; k < j; k++)
			reg(mid)->desc[s->pushed[k]].inflight = 0;
		check_recovery(s, s->q.ring, mid, out, held);
		free(mid);
	}
	memcpy(s->outstanding, out, sizeof(out));
	memcpy(s->held, held, sizeof(held));
	s->npushed = 0;
	free(reg0);
}

static uint64_t run(uint64_t features, bool batch, uint32_t seed, unsigned steps)
{
	struct sim s;
	uint32_t rng = seed;

	memset(&s, 0, sizeof(s));
	tq_setup(&s.q, NUM, features, TQ_DEV);
	s.batch = batch;
	if (batch)
		uvn_vq_dev_set_batch_used(s.q.dev, true);
	s.rlen = uvn_inflight_slice_size(NUM);
	s.region = calloc(1, s.rlen);
	for (unsigned h = 0; h < NUM; h++)
		s.buf[h] = tbuf(&s.q, 64);
	assert_int_equal(uvn_vq_dev_inflight_attach(s.q.dev, s.region, s.rlen), 0);
	assert_int_equal(reg(s.region)->version, 1);
	assert_int_equal(reg(s.region)->desc_num, NUM);
	for (unsigned i = 0; i < steps; i++) {
		switch (trand(&rng) % 4) {
		case 0:
			op_publish(&s, &rng);
			break;
		case 1:
			op_pop(&s);
			break;
		case 2:
			op_push(&s, &rng);
			break;
		default:
			op_flush(&s);
			break;
		}
		check_now(&s);
		/* the region says exactly what the device holds */
		for (unsigned h = 0; h < NUM; h++)
			assert_int_equal(reg(s.region)->desc[h].inflight, s.held[h]);
	}
	assert_true(s.checks > steps);
	assert_true(s.seq > 50); /* the run went round the ring many times */
	assert_int_equal(uvn_vq_dev_error(s.q.dev), 0);
	uvn_vq_dev_inflight_detach(s.q.dev);
	tq_teardown(&s.q);
	free(s.region);
	return s.seq;
}

static void crash_everywhere_out_of_order(void **state)
{
	(void)state;
	run(0, false, 1, 1500);
	run(F_EVENT_IDX, false, 7, 1500);
}

static void crash_everywhere_in_order_batch(void **state)
{
	(void)state;
	run(F_IN_ORDER, true, 3, 1500);
}

/* The 16-bit avail and used indices wrap (and the region's used_idx). */
static void crash_across_index_wrap(void **state)
{
	(void)state;
	assert_true(run(0, false, 11, 600000) > 65536 + 1000);
}

/* ------------------------------------------------------- hostile region */

struct hostile {
	struct tq q;
	uint8_t *r;
	size_t rlen;
};

/* A region as a run would leave it: chains 2, 5, 1 popped in that order,
 * none used; used index 0. */
static void h_setup(struct hostile *h)
{
	struct iovec iov[2];
	struct uvn_vq_chain ch;

	tq_setup(&h->q, NUM, 0, TQ_DEV);
	h->rlen = uvn_inflight_slice_size(NUM);
	h->r = calloc(1, h->rlen);
	for (unsigned i = 0; i < NUM; i++)
		sq_set_desc(&h->q, i, tbuf(&h->q, 32), 32, 0, 0);
	assert_int_equal(uvn_vq_dev_inflight_attach(h->q.dev, h->r, h->rlen), 0);
	sq_publish(&h->q, 2);
	sq_publish(&h->q, 5);
	sq_publish(&h->q, 1);
	for (int i = 0; i < 3; i++)
		assert_int_equal(uvn_vq_dev_pop(h->q.dev, &ch, iov, 2), 1);
	uvn_vq_dev_inflight_detach(h->q.dev);
	uvn_vq_dev_destroy(h->q.dev);
	h->q.dev = NULL;
	assert_int_equal(reg(h->r)->desc[5].inflight, 1);
}

static struct uvn_vq_dev *h_dev(struct hostile *h)
{
	struct uvn_vq_dev_cfg cfg = tq_dev_cfg(&h->q, 0, false, 0, false);
	struct uvn_vq_dev *dev;

	assert_int_equal(uvn_vq_dev_create(&cfg, &dev), 0);
	return dev;
}

static void h_teardown(struct hostile *h)
{
	tq_teardown(&h->q);
	free(h->r);
}

/* Attach a copy of the region with @mutate applied: @code expected. */
static void expect_refused(void (*mutate)(struct uvn_inflight_split *r), int code)
{
	struct hostile h;
	struct uvn_vq_dev *dev;
	struct uvn_vq_chain ch;
	struct iovec iov[2];

	h_setup(&h);
	mutate(reg(h.r));
	dev = h_dev(&h);
	assert_int_equal(uvn_vq_dev_inflight_attach(dev, h.r, h.rlen), code);
	assert_string_not_equal(uvn_inflight_strerror(code), "unknown in-flight error");
	/* nothing attached: the queue is untracked and unharmed */
	assert_int_equal(uvn_vq_dev_inflight_pending(dev), 0);
	assert_int_equal(uvn_vq_dev_pop(dev, &ch, iov, 2), 1);
	assert_int_equal(ch.id, 2);
	uvn_vq_dev_destroy(dev);
	h_teardown(&h);
}

static void m_version(struct uvn_inflight_split *r)
{
	r->version = 2;
}
static void m_features(struct uvn_inflight_split *r)
{
	r->features = 1;
}
static void m_desc_num(struct uvn_inflight_split *r)
{
	r->desc_num = NUM * 2;
}
static void m_flag(struct uvn_inflight_split *r)
{
	r->desc[3].inflight = 2;
}
static void m_counter_dup(struct uvn_inflight_split *r)
{
	r->desc[5].counter = r->desc[2].counter;
}
static void m_counter_end(struct uvn_inflight_split *r)
{
	r->desc[1].counter = UINT64_MAX;
}
static void m_batch(struct uvn_inflight_split *r)
{
	r->used_idx = 0x8000; /* used index 0 is 0x8000 past it */
}
static void m_list(struct uvn_inflight_split *r)
{
	r->used_idx = (uint16_t)-2; /* a batch of 2 to repair ... */
	r->last_batch_head = 5;
	r->desc[5].next = 0xffff;   /* ... whose second entry is out of range */
}

static void hostile_contents(void **state)
{
	(void)state;
	expect_refused(m_version, UVN_INFLIGHT_E_VERSION);
	expect_refused(m_features, UVN_INFLIGHT_E_VERSION);
	expect_refused(m_desc_num, UVN_INFLIGHT_E_NUM);
	expect_refused(m_flag, UVN_INFLIGHT_E_FLAG);
	expect_refused(m_counter_dup, UVN_INFLIGHT_E_COUNTER);
	expect_refused(m_counter_end, UVN_INFLIGHT_E_COUNTER);
	expect_refused(m_batch, UVN_INFLIGHT_E_BATCH);
	expect_refused(m_list, UVN_INFLIGHT_E_HEAD);
}

static void hostile_attach_args(void **state)
{
	struct hostile h;
	struct uvn_vq_dev *dev;
	struct uvn_vq_chain ch;
	struct iovec iov[2];
	struct tq pq;

	(void)state;
	h_setup(&h);
	dev = h_dev(&h);
	assert_int_equal(uvn_vq_dev_inflight_attach(dev, h.r, 16 + 16 * NUM - 1), UVN_INFLIGHT_E_SMALL);
	assert_int_equal(uvn_vq_dev_inflight_attach(dev, NULL, h.rlen), UVN_INFLIGHT_E_SMALL);
	/* not after the first pop */
	assert_int_equal(uvn_vq_dev_pop(dev, &ch, iov, 2), 1);
	assert_int_equal(uvn_vq_dev_inflight_attach(dev, h.r, h.rlen), UVN_INFLIGHT_E_BUSY);
	uvn_vq_dev_destroy(dev);
	/* a tracked queue is not attached twice */
	dev = h_dev(&h);
	assert_int_equal(uvn_vq_dev_inflight_attach(dev, h.r, h.rlen), 0);
	assert_int_equal(uvn_vq_dev_inflight_attach(dev, h.r, h.rlen), UVN_INFLIGHT_E_BUSY);
	uvn_vq_dev_inflight_detach(dev);
	uvn_vq_dev_inflight_detach(dev); /* harmless */
	uvn_vq_dev_destroy(dev);
	h_teardown(&h);

	/* a packed ring takes the same slice size (test_inflight_packed.c) */
	tq_setup(&pq, NUM, F_PACKED, TQ_DEV);
	h.r = calloc(1, uvn_inflight_slice_size(NUM));
	assert_int_equal(uvn_vq_dev_inflight_attach(pq.dev, h.r, uvn_inflight_slice_size(NUM)), 0);
	uvn_vq_dev_inflight_detach(pq.dev);
	free(h.r);
	tq_teardown(&pq);
	assert_int_equal(uvn_inflight_slice_size(0), 0);
	assert_int_equal(uvn_inflight_slice_size(UVN_VQ_MAX_SIZE + 1), 0);
	assert_int_equal(uvn_inflight_slice_size(256), (32 + 32 * 256 + 63) / 64 * 64);
}

/* A new device half recovering from h_setup's region: 2, 5, 1 pending. */
static struct uvn_vq_dev *h_recover(struct hostile *h)
{
	struct uvn_vq_dev *dev;

	h_setup(h);
	dev = h_dev(h);
	assert_int_equal(uvn_vq_dev_inflight_attach(dev, h->r, h->rlen), 0);
	assert_int_equal(uvn_vq_dev_inflight_pending(dev), 3);
	return dev;
}

/* The plain recovery of h_setup's region: 2, 5, 1 again, in that order. */
static void resubmits_in_pop_order(void **state)
{
	struct hostile h;
	struct uvn_vq_dev *dev = h_recover(&h);
	struct uvn_vq_chain ch;
	struct iovec iov[2];

	(void)state;
	assert_int_equal(uvn_vq_dev_pop(dev, &ch, iov, 2), 1);
	assert_int_equal(ch.id, 2);
	assert_int_equal(uvn_vq_dev_pop(dev, &ch, iov, 2), 1);
	assert_int_equal(ch.id, 5);
	assert_int_equal(uvn_vq_dev_pop(dev, &ch, iov, 2), 1);
	assert_int_equal(ch.id, 1);
	assert_int_equal(uvn_vq_dev_pop(dev, &ch, iov, 2), 0);
	sq_publish(&h.q, 7);
	assert_int_equal(uvn_vq_dev_pop(dev, &ch, iov, 2), 1);
	assert_int_equal(ch.id, 7);
	/* a new pop gets a counter after the recovered ones */
	assert_true(reg(h.r)->desc[7].counter > reg(h.r)->desc[1].counter);
	uvn_vq_dev_inflight_detach(dev);
	uvn_vq_dev_destroy(dev);
	h_teardown(&h);
}

/* Several chains given back newest first, resubmitted ones and one from
 * the ring: each popped again once, in the same order, still marked; none
 * lost, none twice. */
static void give_backs_newest_first(void **state)
{
	struct hostile h;
	struct uvn_vq_dev *dev = h_recover(&h);
	static const uint16_t want[] = { 2, 5, 1, 7 };
	struct uvn_vq_chain ch[4], extra;
	struct iovec iov[2];

	(void)state;
	sq_publish(&h.q, 7);
	for (unsigned round = 0; round < 3; round++) {
		for (unsigned i = 0; i < 4; i++) {
			assert_int_equal(uvn_vq_dev_pop(dev, &ch[i], iov, 2), 1);
			assert_int_equal(ch[i].id, want[i]);
			assert_int_equal(reg(h.r)->desc[want[i]].inflight, 1);
		}
		assert_int_equal(uvn_vq_dev_pop(dev, &extra, iov, 2), 0);
		/* all four back, then only the two resubmitted after the first */
		for (unsigned i = 4; i > (round == 1 ? 1u : 0u); i--)
			uvn_vq_dev_unpop(dev, &ch[i - 1]);
		if (round == 1) {
			for (unsigned i = 1; i < 4; i++) {
				assert_int_equal(uvn_vq_dev_pop(dev, &ch[i], iov, 2), 1);
				assert_int_equal(ch[i].id, want[i]);
			}
			for (unsigned i = 4; i > 0; i--)
				uvn_vq_dev_unpop(dev, &ch[i - 1]);
		}
		assert_int_equal(uvn_vq_dev_inflight_pending(dev), 3);
		assert_int_equal(reg(h.r)->desc[7].inflight, 0);
	}
	assert_int_equal(uvn_vq_dev_error(dev), 0);
	uvn_vq_dev_inflight_detach(dev);
	uvn_vq_dev_destroy(dev);
	h_teardown(&h);
}

/* A chain too long for the caller's array, resubmitted or new from the
 * ring: not taken, not marked, popped again whole; dropped (no iovecs), a
 * new one is marked like any. */
static void iov_full_neither_taken_nor_marked(void **state)
{
	struct hostile h;
	struct uvn_vq_dev *dev = h_recover(&h);
	struct uvn_vq_chain ch;
	struct iovec iov[2];

	(void)state;
	assert_int_equal(uvn_vq_dev_pop(dev, &ch, iov, 0), -UVN_VQ_E_IOV_FULL);
	assert_int_equal(ch.id, 2);
	assert_int_equal(uvn_vq_dev_inflight_pending(dev), 3);
	for (unsigned i = 0; i < 3; i++) {
		assert_int_equal(uvn_vq_dev_pop(dev, &ch, iov, 2), 1);
		assert_int_equal(ch.id, i == 0 ? 2 : i == 1 ? 5 : 1);
	}
	sq_publish(&h.q, 7);
	assert_int_equal(uvn_vq_dev_pop(dev, &ch, iov, 0), -UVN_VQ_E_IOV_FULL);
	assert_int_equal(ch.id, 7);
	assert_int_equal(reg(h.r)->desc[7].inflight, 0);
	assert_int_equal(uvn_vq_dev_pop(dev, &ch, NULL, 0), 1);
	assert_int_equal(ch.id, 7);
	assert_int_equal(reg(h.r)->desc[7].inflight, 1);
	assert_int_equal(uvn_vq_dev_error(dev), 0);
	uvn_vq_dev_inflight_detach(dev);
	uvn_vq_dev_destroy(dev);
	h_teardown(&h);
}

/* A chain the caller never popped, with a head past the ring (a test
 * backend corrupting its used ring does this): the region stays untouched
 * (the slice is malloc'd to its exact size: ASan sees any write past it). */
static void push_of_foreign_head_stays_in_region(void **state)
{
	struct hostile h;
	struct uvn_vq_dev *dev;
	struct uvn_vq_chain ch = { .id = NUM + 3 };
	uint8_t *before;

	(void)state;
	h_setup(&h);
	dev = h_dev(&h);
	assert_int_equal(uvn_vq_dev_inflight_attach(dev, h.r, h.rlen), 0);
	before = dup_bytes(h.r, h.rlen);
	uvn_vq_dev_push(dev, &ch, 0);
	assert_memory_equal(h.r, before, h.rlen);
	free(before);
	uvn_vq_dev_inflight_detach(dev);
	uvn_vq_dev_destroy(dev);
	h_teardown(&h);
}

/* A region that claims more in flight than the driver made available: the
 * avail index looks like it went backwards, a counted queue error. */
static void m_extra(struct uvn_inflight_split *r)
{
	r->desc[6].inflight = 1;
	r->desc[6].counter = 100;
}

static void hostile_claims_more_than_available(void **state)
{
	struct hostile h;
	struct uvn_vq_dev *dev;
	struct uvn_vq_chain ch;
	struct iovec iov[2];

	(void)state;
	h_setup(&h);
	m_extra(reg(h.r));
	dev = h_dev(&h);
	assert_int_equal(uvn_vq_dev_inflight_attach(dev, h.r, h.rlen), 0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(uvn_vq_dev_pop(dev, &ch, iov, 2), 1);
	/* 4 claimed, 3 made available: last_avail is past avail->idx */
	assert_int_equal(uvn_vq_dev_pop(dev, &ch, iov, 2), -UVN_VQ_E_AVAIL_IDX);
	assert_int_equal(uvn_vq_dev_stats(dev)->err[UVN_VQ_ERR_SLOT(UVN_VQ_E_AVAIL_IDX)], 1);
	uvn_vq_dev_inflight_detach(dev);
	uvn_vq_dev_destroy(dev);
	h_teardown(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(crash_everywhere_out_of_order),
		cmocka_unit_test(crash_everywhere_in_order_batch),
		cmocka_unit_test(crash_across_index_wrap),
		cmocka_unit_test(resubmits_in_pop_order),
		cmocka_unit_test(give_backs_newest_first),
		cmocka_unit_test(iov_full_neither_taken_nor_marked),
		cmocka_unit_test(push_of_foreign_head_stays_in_region),
		cmocka_unit_test(hostile_contents),
		cmocka_unit_test(hostile_attach_args),
		cmocka_unit_test(hostile_claims_more_than_available),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
