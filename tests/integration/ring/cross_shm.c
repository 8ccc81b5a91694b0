/* SPDX-License-Identifier: MIT */
/*
 * The shared memfd: its layout, the device's scattered view of it and the
 * translation from driver addresses, and the driver's indirect tables.
 *
 *   page 0      control block (struct cross_ctl)
 *   ring        uvn_vq_layout() bytes, one piece in the device's view
 *   tables      num indirect tables, CROSS_TABLE_STRIDE apart
 *   pool        num buffer slots, CROSS_SLOT_STRIDE apart
 *
 * The device maps tables and pool as pieces of 1..16 pages, in shuffled
 * order with a PROT_NONE page between neighbours, and covers the driver's
 * (inherited) mapping with PROT_NONE: an address used untranslated, or a
 * piece overrun, faults instead of reading the right bytes by luck.
 */
#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cross.h"

static size_t page_up(size_t v)
{
	return (v + CROSS_PAGE - 1) & ~(size_t)(CROSS_PAGE - 1);
}

int cross_shm_create(const struct cross_cfg *cfg, struct cross_ctl **out, int *out_fd)
{
	struct uvn_vq_layout lay;
	struct cross_ctl *ctl;
	size_t ring_off = CROSS_PAGE, table_off, pool_off, size;
	int fd;

	if (uvn_vq_layout(cfg->packed, cfg->num, &lay))
		return -1;
	table_off = ring_off + page_up(lay.size);
	pool_off = table_off + page_up((size_t)cfg->num * CROSS_TABLE_STRIDE);
	size = pool_off + page_up((size_t)cfg->num * CROSS_SLOT_STRIDE);
	fd = memfd_create("uvn-cross", MFD_CLOEXEC);
	if (fd < 0)
		return -1;
	if (ftruncate(fd, (off_t)size) < 0)
		goto fail;
	ctl = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (ctl == MAP_FAILED)
		goto fail;
	ctl->cfg = *cfg;
	ctl->drv_base = (uint64_t)(uintptr_t)ctl;
	ctl->size = size;
	ctl->ring_off = ring_off;
	ctl->ring_size = lay.size;
	ctl->table_off = table_off;
	ctl->pool_off = pool_off;
	atomic_store(&ctl->ops_final, cfg->ops);
	*out = ctl;
	*out_fd = fd;
	return 0;
fail:
	close(fd);
	return -1;
}

/* ------------------------------------------------------------- device view */

struct cross_region {
	size_t off, len;
	uint8_t *va;
};

struct cross_devmap {
	uint64_t drv_base;
	size_t size, xlate_from;    /* buffers and tables live in [xlate_from, size) */
	uint8_t *reserve;
	size_t reserve_len;
	unsigned nreg;
	struct cross_region *reg;
	uint32_t *page_reg;         /* page index -> region */
};

/* Cut the memfd into regions: control, ring, then random 1..16 page pieces. */
static unsigned cut_regions(struct cross_devmap *m, const struct cross_ctl *ctl, uint64_t seed)
{
	uint64_t r = cross_mix(seed, 0x5eed);
	unsigned n = 0;

	m->reg[n++] = (struct cross_region){ .off = 0, .len = CROSS_PAGE };
	m->reg[n++] = (struct cross_region){ .off = ctl->ring_off,
					     .len = ctl->table_off - ctl->ring_off };
	for (size_t off = ctl->table_off; off < ctl->size;) {
		size_t len = (size_t)(1 + cross_below(&r, 16)) * CROSS_PAGE;

		if (len > ctl->size - off)
			len = ctl->size - off;
		m->reg[n++] = (struct cross_region){ .off = off, .len = len };
		off += len;
	}
	return n;
}

static int map_regions(struct cross_devmap *m, int memfd, uint64_t seed)
{
	unsigned *order = calloc(m->nreg, sizeof(*order));
	uint64_t r = cross_mix(seed, 0x0de7);
	size_t cursor = CROSS_PAGE; /* a guard page before the first piece too */

	if (!order)
		return -1;
	for (unsigned i = 0; i < m->nreg; i++)
		order[i] = i;
	for (unsigned i = m->nreg - 1; i > 0; i--) {
		unsigned j = cross_below(&r, i + 1), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	for (unsigned i = 0; i < m->nreg; i++) {
		struct cross_region *g = &m->reg[order[i]];
		void *va = mmap(m->reserve + cursor, g->len, PROT_READ | PROT_WRITE,
				MAP_SHARED | MAP_FIXED, memfd, (off_t)g->off);

		if (va == MAP_FAILED) {
			free(order);
			return -1;
		}
		g->va = va;
		for (size_t p = g->off / CROSS_PAGE; p < (g->off + g->len) / CROSS_PAGE; p++)
			m->page_reg[p] = order[i];
		cursor += g->len + CROSS_PAGE;
	}
	free(order);
	return 0;
}

struct cross_devmap *cross_devmap_create(int memfd, struct cross_ctl *inherited)
{
	struct cross_devmap *m = calloc(1, sizeof(*m));
	size_t size = inherited->size, pages = size / CROSS_PAGE;
	uint64_t seed = inherited->cfg.seed;

	if (!m)
		return NULL;
	m->drv_base = inherited->drv_base;
	m->size = size;
	m->xlate_from = inherited->table_off;
	m->reg = calloc(pages + 2, sizeof(*m->reg));
	m->page_reg = calloc(pages, sizeof(*m->page_reg));
	if (!m->reg || !m->page_reg)
		goto fail;
	m->nreg = cut_regions(m, inherited, seed);
	m->reserve_len = size + (m->nreg + 1) * (size_t)CROSS_PAGE;
	/* Reserved while the inherited mapping exists, so it cannot overlap it. */
	m->reserve = mmap(NULL, m->reserve_len, PROT_NONE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m->reserve == MAP_FAILED) {
		m->reserve = NULL;
		goto fail;
	}
	if (map_regions(m, memfd, seed))
		goto fail;
	/* From now on the driver's addresses mean nothing here. */
	if (mmap(inherited, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE,
		 -1, 0) == MAP_FAILED)
		goto fail;
	return m;
fail:
	cross_devmap_destroy(m);
	return NULL;
}

void cross_devmap_destroy(struct cross_devmap *m)
{
	if (!m)
		return;
	if (m->reserve)
		munmap(m->reserve, m->reserve_len);
	free(m->reg);
	free(m->page_reg);
	free(m);
}

void *cross_devmap_ptr(struct cross_devmap *m, size_t off)
{
	const struct cross_region *g = &m->reg[m->page_reg[off / CROSS_PAGE]];

	return g->va + (off - g->off);
}

struct cross_ctl *cross_devmap_ctl(struct cross_devmap *m)
{
	return cross_devmap_ptr(m, 0);
}

void *cross_xlate(void *ctx, uint64_t addr, uint64_t *len)
{
	struct cross_devmap *m = ctx;
	uint64_t off = addr - m->drv_base;
	const struct cross_region *g;
	uint64_t left;

	/* Only tables and buffers are device-addressable: a ring or control
	 * address coming out of a descriptor would be a bug. */
	if (addr < m->drv_base || off < m->xlate_from || off >= m->size)
		return NULL;
	g = &m->reg[m->page_reg[off / CROSS_PAGE]];
	left = g->off + g->len - off;
	if (*len > left)
		*len = left;
	return g->va + (off - g->off);
}

/* ------------------------------------------------------ indirect tables */

struct cross_tables {
	struct cross_proc *proc;
	uint8_t *base;           /* driver address of table 0 */
	unsigned count, nfree;
	uint16_t *free;
	uint8_t *busy;           /* entries handed out, 0 if free */
	uint64_t rng;
};

struct cross_tables *cross_tables_create(struct cross_proc *p)
{
	struct cross_tables *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->proc = p;
	t->base = (uint8_t *)p->ctl + p->ctl->table_off;
	t->count = p->cfg->num;
	t->free = calloc(t->count, sizeof(*t->free));
	t->busy = calloc(t->count, sizeof(*t->busy));
	if (!t->free || !t->busy) {
		cross_tables_destroy(t);
		return NULL;
	}
	for (unsigned i = 0; i < t->count; i++)
		t->free[t->nfree++] = (uint16_t)(t->count - 1 - i);
	t->rng = cross_mix(p->cfg->seed, 0x7ab1e);
	return t;
}

void cross_tables_destroy(struct cross_tables *t)
{
	if (!t)
		return;
	free(t->free);
	free(t->busy);
	free(t);
}

void *cross_table_alloc(void *ctx, unsigned n, uint64_t *addr)
{
	struct cross_tables *t = ctx;
	struct cross_side *me = &t->proc->ctl->side[DRV];
	uint8_t *table;
	unsigned i;

	if (n < 2 || n > CROSS_MAX_SEGS)
		cross_fail(t->proc, FAIL_CHECK, "indirect table of %u entries requested", n);
	/* Fail now and then: the ring must fall back to direct descriptors. */
	if (!t->nfree || cross_below(&t->rng, 16) == 0)
		return NULL;
	i = t->free[--t->nfree];
	t->busy[i] = (uint8_t)n;
	table = t->base + (size_t)i * CROSS_TABLE_STRIDE;
	/* Junk in every entry: one the ring forgets to write is then invalid. */
	memset(table, 0xa5, 16u * n);
	*addr = (uint64_t)(uintptr_t)table;
	me->indirect_allocs++;
	return table;
}

void cross_table_free(void *ctx, void *table, unsigned n)
{
	struct cross_tables *t = ctx;
	size_t off = (size_t)((uint8_t *)table - t->base);
	unsigned i = (unsigned)(off / CROSS_TABLE_STRIDE);

	if ((uint8_t *)table < t->base || off % CROSS_TABLE_STRIDE || i >= t->count ||
	    t->busy[i] != n)
		cross_fail(t->proc, FAIL_CHECK, "indirect free of %p (%u entries): not allocated so",
			   table, n);
	t->busy[i] = 0;
	memset(table, 0x5a, 16u * n);
	t->free[t->nfree++] = (uint16_t)i;
	t->proc->ctl->side[DRV].indirect_frees++;
}

unsigned cross_tables_busy(const struct cross_tables *t)
{
	return t->count - t->nfree;
}

/* ------------------------------------------------------------------ dump */

static uint16_t rd16(const uint8_t *p)
{
	return le16toh(*(const volatile uint16_t *)p);
}

void cross_ring_dump(const struct cross_cfg *cfg, const uint8_t *ring, char *buf, size_t n)
{
	struct uvn_vq_layout lay;

	if (!ring || uvn_vq_layout(cfg->packed, cfg->num, &lay)) {
		snprintf(buf, n, "?");
		return;
	}
	if (cfg->packed) {
		/* struct vring_packed_desc_event: off_wrap, then flags */
		snprintf(buf, n, "driver event off_wrap 0x%04x flags %u, device event off_wrap 0x%04x "
			 "flags %u", rd16(ring + lay.driver), rd16(ring + lay.driver + 2),
			 rd16(ring + lay.device), rd16(ring + lay.device + 2));
		return;
	}
	/* avail: flags, idx, ring[num], used_event; used: flags, idx, ring[num], avail_event */
	snprintf(buf, n, "avail flags %u idx %u used_event %u, used flags %u idx %u avail_event %u",
		 rd16(ring + lay.driver), rd16(ring + lay.driver + 2),
		 rd16(ring + lay.driver + 4 + 2 * cfg->num), rd16(ring + lay.device),
		 rd16(ring + lay.device + 2), rd16(ring + lay.device + 4 + 8 * cfg->num));
}
