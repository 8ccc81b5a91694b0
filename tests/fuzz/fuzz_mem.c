/* SPDX-License-Identifier: MIT */
/* Guest memory and chain checks shared by the ring fuzzers (fuzz_mem.h). */
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include <sanitizer/asan_interface.h>

#include "fuzz_mem.h"

/* Room for two fz_mem alive at once (the fuzzers use one). */
#define POOL (2 * FZ_MEM_MAX_PIECES)

static size_t round_page(size_t n)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	return (n + pg - 1) / pg * pg;
}

uint8_t *fz_area_get(struct fz_area *a, size_t cap, size_t len, size_t align)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	uintptr_t end;

	CHECK(!a->p && len <= cap && align && !(align & (align - 1)));
	if (!a->map) {
		size_t room = round_page(cap + align);
		void *m = mmap(NULL, room + 2 * pg, PROT_NONE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

		if (m == MAP_FAILED)
			return NULL;
		if (mprotect((uint8_t *)m + pg, room, PROT_READ | PROT_WRITE)) {
			munmap(m, room + 2 * pg);
			return NULL;
		}
		ASAN_POISON_MEMORY_REGION((uint8_t *)m + pg, room);
		a->map = m;
		a->cap = room;
	}
	CHECK(cap + align <= a->cap);
	end = (uintptr_t)(a->map + pg + a->cap);
	a->p = (uint8_t *)((end - len) & ~(uintptr_t)(align - 1));
	a->len = len;
	ASAN_UNPOISON_MEMORY_REGION(a->p, len);
	return a->p;
}

void fz_area_put(struct fz_area *a)
{
	if (!a->p)
		return;
	ASAN_POISON_MEMORY_REGION(a->p, a->len);
	a->p = NULL;
}

bool fz_mem_add(struct fz_mem *m, uint64_t gpa, uint64_t len)
{
	static struct fz_area pool[POOL];
	struct fz_piece *p;
	unsigned i;

	if (m->npc == FZ_MEM_MAX_PIECES || len > FZ_MEM_PIECE_CAP)
		return false;
	for (i = 0; i < POOL && pool[i].p; i++)
		;
	CHECK(i < POOL);
	p = &m->pc[m->npc];
	/* 16: the alignment malloc would give. */
	p->host = fz_area_get(&pool[i], FZ_MEM_PIECE_CAP, len, 16);
	if (!p->host)
		return false;
	memset(p->host, 0, len);
	p->area = &pool[i];
	p->gpa = gpa;
	p->len = len;
	m->npc++;
	return true;
}

void fz_mem_free(struct fz_mem *m)
{
	for (unsigned i = 0; i < m->npc; i++)
		fz_area_put(m->pc[i].area);
	m->npc = 0;
}

void *fz_mem_xlate(void *ctx, uint64_t addr, uint64_t *len)
{
	struct fz_mem *m = ctx;

	/* The walker never asks for a range that wraps the address space. */
	CHECK(*len > 0 && addr + (*len - 1) >= addr);
	m->xlate_calls++;
	if (m->on_xlate)
		m->on_xlate(m->on_xlate_ctx);
	for (unsigned i = 0; i < m->npc; i++) {
		const struct fz_piece *p = &m->pc[i];

		if (addr - p->gpa < p->len) {
			uint64_t n = p->len - (addr - p->gpa);

			if (*len > n)
				*len = n;
			return p->host + (addr - p->gpa);
		}
	}
	return NULL;
}

bool fz_mem_contains(const struct fz_mem *m, const struct iovec *v)
{
	const uint8_t *b = v->iov_base;

	for (unsigned i = 0; i < m->npc; i++) {
		const struct fz_piece *p = &m->pc[i];

		if (b >= p->host && b < p->host + p->len)
			return v->iov_len <= (size_t)(p->host + p->len - b);
	}
	return false;
}

void fz_check_chain(const struct fz_mem *m, unsigned num, const struct uvn_vq_chain *ch,
		    const struct iovec *iov, unsigned iov_max)
{
	uint64_t out = 0, in = 0;
	unsigned n = ch->nout + ch->nin;

	CHECK(n >= 1 && n <= iov_max);
	CHECK(ch->id < num);
	CHECK(ch->ndesc >= 1 && ch->ndesc <= num);
	for (unsigned k = 0; k < n; k++) {
		CHECK(iov[k].iov_len > 0);
		CHECK(fz_mem_contains(m, &iov[k]));
		if (k < ch->nout)
			out += iov[k].iov_len;
		else
			in += iov[k].iov_len;
	}
	CHECK(out == ch->out_len && in == ch->in_len);
	CHECK(out + in <= UINT32_MAX);
}

uint32_t fz_use_chain(const struct uvn_vq_chain *ch, const struct iovec *iov)
{
	volatile uint8_t sink = 0;

	for (unsigned k = 0; k < ch->nout; k++) {
		const uint8_t *p = iov[k].iov_base;

		sink ^= p[0] ^ p[iov[k].iov_len - 1];
	}
	for (unsigned k = ch->nout; k < ch->nout + ch->nin; k++)
		memset(iov[k].iov_base, 0xab, iov[k].iov_len);
	(void)sink;
	return ch->in_len;
}
