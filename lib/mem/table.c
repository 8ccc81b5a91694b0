/* SPDX-License-Identifier: MIT */
/*
 * The region table and its translations. Guest-physical lookups are the
 * data path (every descriptor buffer): a per-user hint to the last region
 * hit, then a binary search; no allocation, no logging. The others run on
 * the control path or during migration only and scan linearly.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mem.h"

struct uvn_mem *uvn_mem_create(void)
{
	return calloc(1, sizeof(struct uvn_mem));
}

void uvn_mem_clear(struct uvn_mem *m)
{
	for (unsigned i = 0; i < m->n; i++)
		uvn_mem_region_unmap(&m->r[i]);
	m->n = 0;
}

void uvn_mem_destroy(struct uvn_mem *m)
{
	if (!m)
		return;
	uvn_mem_clear(m);
	free(m);
}

static bool overlaps(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return a < b + blen && b < a + alen;
}

int uvn_mem_check(const struct uvn_mem *m, const struct uvn_mem_region *r)
{
	if (m->n >= UVN_MEM_MAX_REGIONS)
		return -ENOSPC;
	/* Overlapping guest-physical ranges would make a buffer address
	 * ambiguous. (User addresses may alias: any match maps the same.) */
	for (unsigned i = 0; i < m->n; i++)
		if (overlaps(r->gpa, r->size, m->r[i].gpa, m->r[i].size))
			return -EEXIST;
	return 0;
}

int uvn_mem_insert(struct uvn_mem *m, const struct uvn_mem_region *r)
{
	unsigned pos = 0;
	int ret = uvn_mem_check(m, r);

	if (ret)
		return ret;
	while (pos < m->n && m->r[pos].gpa < r->gpa)
		pos++;
	memmove(&m->r[pos + 1], &m->r[pos], (m->n - pos) * sizeof(m->r[0]));
	m->r[pos] = *r;
	m->n++;
	return 0;
}

bool uvn_mem_faulted(const struct uvn_mem *m)
{
	for (unsigned i = 0; i < m->n; i++)
		if (uvn_mem_guard_faulted(m->r[i].guard))
			return true;
	return false;
}

int uvn_mem_find(const struct uvn_mem *m, uint64_t gpa, uint64_t uva, uint64_t size)
{
	for (unsigned i = 0; i < m->n; i++)
		if (m->r[i].gpa == gpa && m->r[i].uva == uva && m->r[i].size == size)
			return (int)i;
	return -ENOENT;
}

void uvn_mem_take(struct uvn_mem *m, unsigned idx, struct uvn_mem_region *out)
{
	*out = m->r[idx];
	memmove(&m->r[idx], &m->r[idx + 1], (m->n - idx - 1) * sizeof(m->r[0]));
	m->n--;
}

/* Is [addr, addr + len) inside [base, base + size)? Written so nothing overflows. */
static inline bool inside(uint64_t base, uint64_t size, uint64_t addr, uint64_t len)
{
	return addr >= base && addr - base < size && len <= size - (addr - base);
}

/* Index of the last region starting at or below @gpa, or -1. */
static inline int search(const struct uvn_mem *m, uint64_t gpa)
{
	int lo = 0, hi = (int)m->n - 1, found = -1;

	while (lo <= hi) {
		int mid = (lo + hi) / 2;

		if (m->r[mid].gpa <= gpa) {
			found = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return found;
}

void *uvn_mem_gpa(const struct uvn_mem *m, uint64_t gpa, uint64_t len)
{
	int i = search(m, gpa);

	if (len == 0 || i < 0 || !inside(m->r[i].gpa, m->r[i].size, gpa, len))
		return NULL;
	return m->r[i].host + (gpa - m->r[i].gpa);
}

void *uvn_mem_uva(const struct uvn_mem *m, uint64_t uva, uint64_t len)
{
	if (len == 0)
		return NULL;
	for (unsigned i = 0; i < m->n; i++)
		if (inside(m->r[i].uva, m->r[i].size, uva, len))
			return m->r[i].host + (uva - m->r[i].uva);
	return NULL;
}

int uvn_mem_va_to_gpa(const struct uvn_mem *m, const void *va, uint64_t *gpa, uint64_t *avail)
{
	uintptr_t p = (uintptr_t)va;

	for (unsigned i = 0; i < m->n; i++) {
		uintptr_t h = (uintptr_t)m->r[i].host;

		if (p >= h && p - h < m->r[i].size) {
			*gpa = m->r[i].gpa + (p - h);
			*avail = m->r[i].size - (p - h);
			return 0;
		}
	}
	return -ENOENT;
}

void *uvn_mem_xlate(void *ctx, uint64_t gpa, uint64_t *len)
{
	struct uvn_mem_cursor *c = ctx;
	const struct uvn_mem *m = c->mem;
	const struct uvn_mem_region *r;
	uint64_t off, left;
	unsigned i = c->hint;

	if (__builtin_expect(*len == 0, 0))
		return NULL;
	/* The common case, a single region or runs of buffers from one
	 * region, hits here without a search. */
	if (__builtin_expect(i >= m->n || gpa < m->r[i].gpa || gpa - m->r[i].gpa >= m->r[i].size, 0)) {
		int k = search(m, gpa);

		if (k < 0 || gpa - m->r[k].gpa >= m->r[k].size)
			return NULL;
		i = (unsigned)k;
		c->hint = i; /* written only on a miss: no store per translation */
	}
	r = &m->r[i];
	off = gpa - r->gpa;
	left = r->size - off;
	if (*len > left)
		*len = left;
	return r->host + off;
}
