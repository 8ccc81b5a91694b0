/* SPDX-License-Identifier: MIT */
/* Helpers shared by the ring unit tests (see ring_test.h). */
#include <endian.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "ring_test.h"

/* Big enough for a 32768-entry split ring plus buffers; pages are lazy. */
#define TM_SIZE (32u << 20)

uint16_t le16(uint16_t v)
{
	return le16toh(v);
}

void *tm_xlate(void *ctx, uint64_t addr, uint64_t *len)
{
	struct tmem *m = ctx;

	m->xlate_calls++;
	if (m->hook)
		m->hook(m->hook_ctx, addr, *len);
	for (unsigned i = 0; i < m->nreg; i++) {
		const struct treg *r = &m->reg[i];
		uint64_t n;

		if (addr - r->gpa >= r->len)
			continue;
		n = r->len - (addr - r->gpa);
		/* A region in front of this one that starts later cuts it short. */
		for (unsigned j = 0; j < i; j++) {
			if (m->reg[j].gpa > addr && m->reg[j].gpa - addr < n)
				n = m->reg[j].gpa - addr;
		}
		if (!r->host)
			return NULL;
		if (*len > n)
			*len = n;
		return r->host + (addr - r->gpa);
	}
	return m->identity ? (void *)(uintptr_t)addr : NULL;
}

uint64_t tm_alloc(struct tmem *m, size_t len, size_t align)
{
	size_t off = (m->brk + align - 1) & ~(align - 1);

	assert_true(off + len <= m->size);
	m->brk = off + len;
	return m->gpa + off;
}

void *tm_ptr(struct tmem *m, uint64_t gpa)
{
	assert_true(gpa >= m->gpa && gpa - m->gpa < m->size);
	return m->base + (gpa - m->gpa);
}

void tm_map(struct tmem *m, uint64_t gpa, uint64_t len, void *host)
{
	assert_true(m->nreg < TM_MAX_REG);
	memmove(&m->reg[1], &m->reg[0], sizeof(m->reg[0]) * m->nreg);
	m->reg[0] = (struct treg){ .gpa = gpa, .len = len, .host = host };
	m->nreg++;
}

void tm_protect(struct tmem *m, bool accessible)
{
	assert_int_equal(mprotect(m->base, m->size, accessible ? PROT_READ | PROT_WRITE : PROT_NONE),
			 0);
}

static void *pool_alloc(void *ctx, unsigned n, uint64_t *addr)
{
	struct tq *q = ctx;

	assert_true(n >= 2);
	if (q->pool_off || n > TQ_POOL_ENTRIES)
		return NULL;
	for (unsigned s = 0; s < TQ_POOL_SLOTS; s++) {
		if (q->pool_busy[s])
			continue;
		q->pool_busy[s] = true;
		q->pool_out++;
		q->pool_allocs++;
		*addr = q->pool_gpa + (uint64_t)s * TQ_POOL_ENTRIES * 16;
		return tm_ptr(&q->m, *addr);
	}
	return NULL;
}

static void pool_free(void *ctx, void *table, unsigned n)
{
	struct tq *q = ctx;
	uint64_t off = (uint64_t)((uint8_t *)table - (uint8_t *)tm_ptr(&q->m, q->pool_gpa));
	unsigned s = (unsigned)(off / (TQ_POOL_ENTRIES * 16));

	assert_true(n >= 2 && n <= TQ_POOL_ENTRIES);
	assert_int_equal(off % (TQ_POOL_ENTRIES * 16), 0);
	assert_true(s < TQ_POOL_SLOTS && q->pool_busy[s]);
	q->pool_busy[s] = false;
	q->pool_out--;
}

struct uvn_vq_dev_cfg tq_dev_cfg(struct tq *q, uint16_t avail, bool avail_wrap, uint16_t used,
				 bool used_wrap)
{
	return (struct uvn_vq_dev_cfg){
		.num = q->num,
		.features = q->features,
		.desc = q->ring + q->lay.desc,
		.driver = q->ring + q->lay.driver,
		.device = q->ring + q->lay.device,
		.xlate = tm_xlate,
		.xlate_ctx = &q->m,
		.avail_idx = avail,
		.avail_wrap = avail_wrap,
		.used_idx = used,
		.used_wrap = used_wrap,
	};
}

void tq_dev_create(struct tq *q, uint16_t avail, bool avail_wrap, uint16_t used, bool used_wrap)
{
	struct uvn_vq_dev_cfg cfg = tq_dev_cfg(q, avail, avail_wrap, used, used_wrap);

	if (q->dev)
		uvn_vq_dev_destroy(q->dev);
	q->dev = NULL;
	assert_int_equal(uvn_vq_dev_create(&cfg, &q->dev), 0);
}

void tq_setup(struct tq *q, unsigned num, uint64_t features, unsigned flags)
{
	memset(q, 0, sizeof(*q));
	q->m.size = TM_SIZE;
	q->m.base = mmap(NULL, TM_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(q->m.base != MAP_FAILED);
	q->m.identity = flags & TQ_HOST;
	q->m.gpa = q->m.identity ? (uint64_t)(uintptr_t)q->m.base : TM_GPA;
	q->m.reg[0] = (struct treg){ .gpa = q->m.gpa, .len = TM_SIZE, .host = q->m.base };
	q->m.nreg = 1;
	q->num = num;
	q->features = features;
	q->packed = features & F_PACKED;
	assert_int_equal(uvn_vq_layout(q->packed, num, &q->lay), 0);
	q->ring_gpa = tm_alloc(&q->m, q->lay.size, 64);
	q->ring = tm_ptr(&q->m, q->ring_gpa);
	q->pool_gpa = tm_alloc(&q->m, TQ_POOL_SLOTS * TQ_POOL_ENTRIES * 16, 16);
	if (flags & TQ_DRV) {
		struct uvn_vq_drv_cfg cfg = {
			.num = num, .features = features, .ring = q->ring,
			.indirect_alloc = (flags & TQ_NO_ALLOC) ? NULL : pool_alloc,
			.indirect_free = (flags & TQ_NO_ALLOC) ? NULL : pool_free,
			.indirect_ctx = q,
		};
		assert_int_equal(uvn_vq_drv_create(&cfg, &q->drv), 0);
	}
	if (flags & TQ_DEV)
		tq_dev_create(q, 0, true, 0, true);
}

void tq_pair(struct tq *q, unsigned num, uint64_t features)
{
	tq_setup(q, num, features, TQ_DRV | TQ_DEV | TQ_NO_ALLOC | TQ_HOST);
}

struct uvn_sg tq_sg(const void *p, uint32_t len)
{
	return (struct uvn_sg){ .addr = (uint64_t)(uintptr_t)p, .len = len };
}

void tq_give(struct tq *q, void *buf, uint32_t len, bool in)
{
	struct uvn_sg sg = tq_sg(buf, len);

	assert_int_equal(uvn_vq_drv_add(q->drv, &sg, in ? 0 : 1, in ? 1 : 0, buf, 0), 0);
}

unsigned tq_take(struct tq *q, struct uvn_vq_done *done, unsigned max)
{
	int n = uvn_vq_drv_get_used(q->drv, done, max);

	assert_true(n >= 0);
	return (unsigned)n;
}

void tq_teardown(struct tq *q)
{
	uvn_vq_drv_destroy(q->drv);
	uvn_vq_dev_destroy(q->dev);
	/* Every indirect table the driver took came back. */
	assert_int_equal(q->pool_out, 0);
	munmap(q->m.base, q->m.size);
	q->drv = NULL;
	q->dev = NULL;
}

/* ---------------------------------------------------------------- split */

struct vring_desc *sq_desc(struct tq *q, unsigned i)
{
	return (struct vring_desc *)(q->ring + q->lay.desc) + i;
}

struct vring_avail *sq_avail(struct tq *q)
{
	return (struct vring_avail *)(q->ring + q->lay.driver);
}

struct vring_used *sq_used(struct tq *q)
{
	return (struct vring_used *)(q->ring + q->lay.device);
}

uint16_t *sq_used_event(struct tq *q)
{
	return &sq_avail(q)->ring[q->num];
}

uint16_t *sq_avail_event(struct tq *q)
{
	return (uint16_t *)&sq_used(q)->ring[q->num];
}

void sq_set_desc(struct tq *q, unsigned i, uint64_t addr, uint32_t len, uint16_t flags,
		 uint16_t next)
{
	struct vring_desc *d = sq_desc(q, i);

	d->addr = htole64(addr);
	d->len = htole32(len);
	d->flags = htole16(flags);
	d->next = htole16(next);
}

void sq_publish(struct tq *q, uint16_t head)
{
	struct vring_avail *a = sq_avail(q);
	uint16_t idx = le16toh(a->idx);

	a->ring[idx & (q->num - 1)] = htole16(head);
	__atomic_store_n(&a->idx, htole16((uint16_t)(idx + 1)), __ATOMIC_RELEASE);
}

void sq_read_used(struct tq *q, uint16_t slot, uint32_t *id, uint32_t *len)
{
	struct vring_used_elem *e = &sq_used(q)->ring[slot & (q->num - 1)];

	*id = le32toh(e->id);
	*len = le32toh(e->len);
}

void sq_check_used(struct tq *q, uint16_t slot, uint32_t id, uint32_t len)
{
	uint32_t got_id, got_len;

	sq_read_used(q, slot, &got_id, &got_len);
	assert_int_equal(got_id, id);
	assert_int_equal(got_len, len);
}

void it_set(struct tq *q, uint64_t table, unsigned i, uint64_t addr, uint32_t len,
	    uint16_t flags, uint16_t next)
{
	struct vring_desc *d = (struct vring_desc *)tm_ptr(&q->m, table) + i;

	d->addr = htole64(addr);
	d->len = htole32(len);
	d->flags = htole16(flags);
	d->next = htole16(next);
}

/* --------------------------------------------------------------- packed */

void pt_set(struct tq *q, uint64_t table, unsigned i, uint64_t addr, uint32_t len,
	    uint16_t flags)
{
	struct vring_packed_desc *e = (struct vring_packed_desc *)tm_ptr(&q->m, table) + i;

	e->addr = htole64(addr);
	e->len = htole32(len);
	e->id = htole16(0xbeef);
	e->flags = htole16(flags);
}

struct vring_packed_desc *pq_desc(struct tq *q, unsigned pos)
{
	return (struct vring_packed_desc *)(q->ring + q->lay.desc) + pos;
}

struct vring_packed_desc_event *pq_driver(struct tq *q)
{
	return (struct vring_packed_desc_event *)(q->ring + q->lay.driver);
}

struct vring_packed_desc_event *pq_device(struct tq *q)
{
	return (struct vring_packed_desc_event *)(q->ring + q->lay.device);
}

uint16_t pk_avail_bits(bool wrap)
{
	return (uint16_t)(wrap ? PK_AVAIL : PK_USED);
}

static void pk_write(struct tq *q, struct pkdrv *d, const struct tdesc *ds, unsigned n,
		     uint16_t id, bool add_next)
{
	uint16_t head = d->pos, head_flags = 0;

	for (unsigned k = 0; k < n; k++) {
		struct vring_packed_desc *p = pq_desc(q, d->pos);
		uint16_t f = (uint16_t)(ds[k].flags | pk_avail_bits(d->wrap) |
					(add_next && k + 1 < n ? VRING_DESC_F_NEXT : 0));

		p->addr = htole64(ds[k].addr);
		p->len = htole32(ds[k].len);
		p->id = htole16(id);
		if (k == 0)
			head_flags = f;
		else
			p->flags = htole16(f);
		if (++d->pos == q->num) {
			d->pos = 0;
			d->wrap = !d->wrap;
		}
	}
	__atomic_store_n(&pq_desc(q, head)->flags, htole16(head_flags), __ATOMIC_RELEASE);
}

void pk_chain(struct tq *q, struct pkdrv *d, const struct tdesc *ds, unsigned n, uint16_t id)
{
	pk_write(q, d, ds, n, id, true);
}

void pk_chain_raw(struct tq *q, struct pkdrv *d, const struct tdesc *ds, unsigned n, uint16_t id)
{
	pk_write(q, d, ds, n, id, false);
}

/* ---------------------------------------------------------------- checks */

static void expect_counted_once(const struct uvn_vq_stats *st, int code)
{
	for (int k = 1; k < UVN_VQ_E__COUNT; k++)
		assert_int_equal(st->err[k], k == UVN_VQ_ERR_SLOT(code) ? 1 : 0);
}

void expect_dev_broken(struct tq *q, int code)
{
	const struct uvn_vq_stats *st = uvn_vq_dev_stats(q->dev);
	struct uvn_vq_chain ch = { .id = 0, .ndesc = 1, .nin = 1, .in_len = 1 };
	uint64_t bufs = st->bufs, used = st->used;
	unsigned calls = q->m.xlate_calls;
	struct iovec iov[4];

	assert_int_equal(uvn_vq_dev_error(q->dev), -code);
	expect_counted_once(st, code);
	/* Broken for good, and without a look at guest memory any more. */
	tm_protect(&q->m, false);
	assert_int_equal(uvn_vq_dev_pop(q->dev, &ch, iov, 4), -code);
	assert_int_equal(uvn_vq_dev_avail(q->dev), -code);
	uvn_vq_dev_push(q->dev, &ch, 1);
	assert_false(uvn_vq_dev_flush(q->dev));
	uvn_vq_dev_disable_notify(q->dev);
	assert_true(uvn_vq_dev_enable_notify(q->dev));
	tm_protect(&q->m, true);
	assert_int_equal(q->m.xlate_calls, calls);
	assert_int_equal(st->bufs, bufs);
	assert_int_equal(st->used, used);
	expect_counted_once(st, code);
	assert_int_equal(uvn_vq_dev_error(q->dev), -code);
}

void expect_pop_fails(struct tq *q, int code, unsigned iov_max)
{
	struct iovec iov[64];
	struct uvn_vq_chain ch;

	assert_true(iov_max <= 64);
	assert_int_equal(uvn_vq_dev_pop(q->dev, &ch, iov, iov_max), -code);
	expect_dev_broken(q, code);
}

void expect_drv_broken(struct tq *q, int code)
{
	const struct uvn_vq_stats *st = uvn_vq_drv_stats(q->drv);
	struct uvn_sg sg = { .addr = q->m.gpa, .len = 1 };
	uint64_t bufs = st->bufs, used = st->used;
	unsigned nfree = uvn_vq_drv_num_free(q->drv);
	struct uvn_vq_done done[4];

	assert_int_equal(uvn_vq_drv_error(q->drv), -code);
	expect_counted_once(st, code);
	tm_protect(&q->m, false);
	assert_int_equal(uvn_vq_drv_get_used(q->drv, done, 4), -code);
	assert_false(uvn_vq_drv_has_used(q->drv));
	assert_int_equal(uvn_vq_drv_add(q->drv, &sg, 1, 0, &sg, 0), -code);
	assert_false(uvn_vq_drv_kick_prepare(q->drv));
	uvn_vq_drv_disable_cb(q->drv);
	assert_true(uvn_vq_drv_enable_cb(q->drv));
	assert_true(uvn_vq_drv_enable_cb_delayed(q->drv));
	tm_protect(&q->m, true);
	assert_int_equal(st->bufs, bufs);
	assert_int_equal(st->used, used);
	assert_int_equal(uvn_vq_drv_num_free(q->drv), nfree);
	expect_counted_once(st, code);
}

void check_iov(struct tq *q, const struct iovec *iov, uint64_t gpa, size_t len)
{
	assert_ptr_equal(iov->iov_base, tm_ptr(&q->m, gpa));
	assert_int_equal(iov->iov_len, len);
}

void check_chain(const struct uvn_vq_chain *ch, uint16_t id, unsigned nout, unsigned nin,
		 uint32_t out_len, uint32_t in_len)
{
	assert_int_equal(ch->id, id);
	assert_int_equal(ch->nout, nout);
	assert_int_equal(ch->nin, nin);
	assert_int_equal(ch->out_len, out_len);
	assert_int_equal(ch->in_len, in_len);
}

void check_pchain(const struct uvn_vq_chain *ch, uint16_t id, unsigned ndesc, unsigned nout,
		  unsigned nin, uint32_t out_len, uint32_t in_len)
{
	assert_int_equal(ch->ndesc, ndesc);
	check_chain(ch, id, nout, nin, out_len, in_len);
}

void run_bad_ring(void **state)
{
	const struct bad_ring *r = *state;
	struct tq q;

	tq_setup(&q, r->num, r->features, TQ_DEV);
	r->write(&q);
	expect_pop_fails(&q, r->err, r->iov_max);
	tq_teardown(&q);
}

void expect_iov_full(struct tq *q, unsigned iov_max, unsigned need)
{
	const struct uvn_vq_stats *st = uvn_vq_dev_stats(q->dev);
	struct uvn_vq_chain ch, again;
	uint64_t bufs = st->bufs;
	struct iovec iov[64];

	assert_true(iov_max < need && need <= 64);
	assert_int_equal(uvn_vq_dev_pop(q->dev, &ch, iov, iov_max), -UVN_VQ_E_IOV_FULL);
	assert_int_equal(ch.nout + ch.nin, need);
	assert_int_equal(uvn_vq_dev_error(q->dev), 0);
	expect_counted_once(st, 0);
	assert_int_equal(st->bufs, bufs);
	/* Not taken: the same answer again, then the whole chain with room. */
	assert_int_equal(uvn_vq_dev_pop(q->dev, &again, iov, iov_max), -UVN_VQ_E_IOV_FULL);
	assert_memory_equal(&again, &ch, sizeof(ch));
	assert_int_equal(uvn_vq_dev_pop(q->dev, &again, iov, need), 1);
	assert_memory_equal(&again, &ch, sizeof(ch));
	assert_int_equal(st->bufs, bufs + 1);
	/* Given back, then dropped: taken without iovecs, returned empty. */
	uvn_vq_dev_unpop(q->dev, &again);
	memset(iov, 0, sizeof(iov));
	assert_int_equal(uvn_vq_dev_pop(q->dev, &again, NULL, 0), 1);
	assert_memory_equal(&again, &ch, sizeof(ch));
	uvn_vq_dev_push(q->dev, &again, 0);
	uvn_vq_dev_flush(q->dev);
	assert_int_equal(uvn_vq_dev_pop(q->dev, &again, iov, need), 0);
	assert_int_equal(uvn_vq_dev_error(q->dev), 0);
	expect_counted_once(st, 0);
	assert_int_equal(st->used, 1);
}

void run_iov_full(void **state)
{
	const struct iov_full_case *r = *state;
	struct tq q;

	tq_setup(&q, r->num, r->features, TQ_DEV);
	r->write(&q);
	expect_iov_full(&q, r->iov_max, r->need);
	tq_teardown(&q);
}

int run_test_tables(const struct CMUnitTest *plain, unsigned nplain,
		    const struct test_table *tables, unsigned ntables)
{
	unsigned n = nplain;
	struct CMUnitTest *all;
	int r;

	for (unsigned t = 0; t < ntables; t++)
		n += tables[t].n;
	all = calloc(n, sizeof(*all));
	assert_non_null(all);
	memcpy(all, plain, nplain * sizeof(*all));
	n = nplain;
	for (unsigned t = 0; t < ntables; t++) {
		for (unsigned i = 0; i < tables[t].n; i++) {
			const char *row = (const char *)tables[t].rows + i * tables[t].size;

			all[n++] = (struct CMUnitTest){ .name = *(const char *const *)(const void *)row,
							.test_func = tables[t].fn,
							.initial_state = (void *)row };
		}
	}
	r = _cmocka_run_group_tests("tests", all, n, NULL, NULL);
	free(all);
	return r;
}

uint64_t tbuf(struct tq *q, size_t len)
{
	uint64_t gpa = tm_alloc(&q->m, len, 8);
	uint8_t *p = tm_ptr(&q->m, gpa);

	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(gpa + i * 7);
	return gpa;
}
