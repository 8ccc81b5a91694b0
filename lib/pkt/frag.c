/* SPDX-License-Identifier: MIT */
/*
 * Page-fragment pool: rx buffers are carved from big pages, each page keeps
 * a count of the fragments still out; a page is reused once that count is
 * zero and it is not the one being carved. A fragment finds its page by
 * address (pages are aligned to their size), so packets need no back
 * pointer per segment.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include <uvnet/pkt.h>

struct frag_page {
	uint32_t refs;      /* fragments out, +1 while it is the carving page */
	uint32_t next_free; /* free-list link (page index), or UINT32_MAX */
};

struct uvn_frag_pool {
	char *base;
	size_t page_size;
	unsigned shift;
	uint32_t npages;
	struct frag_page *pages;
	uint32_t free_head;
	uint32_t cur;        /* carving page, UINT32_MAX if none */
	size_t off;          /* next free byte in the carving page */
	struct uvn_frag_pool_stats st;
};

#define NONE UINT32_MAX

int uvn_frag_pool_create(void *mem, size_t len, size_t page_size, struct uvn_frag_pool **out)
{
	struct uvn_frag_pool *fp;

	if (!mem || page_size < 64 || (page_size & (page_size - 1)) ||
	    ((uintptr_t)mem & (page_size - 1)) || len / page_size == 0 ||
	    len / page_size >= NONE)
		return -EINVAL;
	fp = calloc(1, sizeof(*fp));
	if (!fp)
		return -ENOMEM;
	fp->base = mem;
	fp->page_size = page_size;
	fp->shift = (unsigned)__builtin_ctzl(page_size);
	fp->npages = (uint32_t)(len / page_size);
	fp->pages = calloc(fp->npages, sizeof(*fp->pages));
	if (!fp->pages) {
		free(fp);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < fp->npages; i++)
		fp->pages[i].next_free = i + 1 < fp->npages ? i + 1 : NONE;
	fp->free_head = 0;
	fp->cur = NONE;
	*out = fp;
	return 0;
}

void uvn_frag_pool_destroy(struct uvn_frag_pool *fp)
{
	if (!fp)
		return;
	free(fp->pages);
	free(fp);
}

static void page_release(struct uvn_frag_pool *fp, uint32_t idx)
{
	fp->pages[idx].next_free = fp->free_head;
	fp->free_head = idx;
	fp->st.pages_used--;
}

static void drop_carving(struct uvn_frag_pool *fp)
{
	if (fp->cur == NONE)
		return;
	if (--fp->pages[fp->cur].refs == 0)
		page_release(fp, fp->cur);
	fp->cur = NONE;
}

void uvn_frag_pool_retire(struct uvn_frag_pool *fp)
{
	drop_carving(fp);
}

/* Start carving the next free page. @return false if none is free */
static bool next_page(struct uvn_frag_pool *fp)
{
	drop_carving(fp);
	if (fp->free_head == NONE) {
		fp->st.alloc_fail++;
		return false;
	}
	fp->cur = fp->free_head;
	fp->free_head = fp->pages[fp->cur].next_free;
	fp->pages[fp->cur].refs = 1; /* the carving reference */
	fp->st.pages_used++;
	fp->off = 0;
	return true;
}

void *uvn_frag_alloc(struct uvn_frag_pool *fp, size_t size, size_t align)
{
	size_t off;

	size = (size + align - 1) & ~(align - 1);
	if (size > fp->page_size)
		return NULL;
	off = (fp->off + align - 1) & ~(align - 1);
	if (fp->cur == NONE || off + size > fp->page_size) {
		if (!next_page(fp))
			return NULL;
		off = 0;
	}
	fp->pages[fp->cur].refs++;
	fp->off = off + size;
	fp->st.frags_out++;
	return fp->base + ((size_t)fp->cur << fp->shift) + off;
}

/*
 * uvn_frag_alloc() of @n fragments at once (the rx refill's): the
 * fragments of one page cost one update of its count. Declared in
 * net/driver/rx_buf.h, the driver being its one user.
 * @return fragments stored in @out (fewer than @n: no page was free)
 */
unsigned uvn_frag_alloc_n(struct uvn_frag_pool *fp, size_t size, size_t align, void **out,
			  unsigned n);
unsigned uvn_frag_alloc_n(struct uvn_frag_pool *fp, size_t size, size_t align, void **out,
			  unsigned n)
{
	unsigned got = 0;

	size = (size + align - 1) & ~(align - 1);
	if (size > fp->page_size)
		return 0;
	while (got < n) {
		size_t off = (fp->off + align - 1) & ~(align - 1), room;
		unsigned k;
		char *f;

		if (fp->cur == NONE || off + size > fp->page_size) {
			if (!next_page(fp))
				break;
			off = 0;
		}
		room = (fp->page_size - off) / size;
		k = room < n - got ? (unsigned)room : n - got;
		f = fp->base + ((size_t)fp->cur << fp->shift) + off;
		for (unsigned i = 0; i < k; i++, f += size)
			out[got++] = f;
		fp->pages[fp->cur].refs += k;
		fp->off = off + (size_t)k * size;
		fp->st.frags_out += k;
	}
	return got;
}

static uint32_t page_of(const struct uvn_frag_pool *fp, const void *frag)
{
	return (uint32_t)(((const char *)frag - fp->base) >> fp->shift);
}

void uvn_frag_get(struct uvn_frag_pool *fp, const void *frag)
{
	fp->pages[page_of(fp, frag)].refs++;
	fp->st.frags_out++;
}

void uvn_frag_put(struct uvn_frag_pool *fp, const void *frag)
{
	uint32_t idx = page_of(fp, frag);

	fp->st.frags_out--;
	if (--fp->pages[idx].refs == 0)
		page_release(fp, idx);
}

const struct uvn_frag_pool_stats *uvn_frag_pool_stats(const struct uvn_frag_pool *fp)
{
	return &fp->st;
}

size_t uvn_frag_pool_page_size(const struct uvn_frag_pool *fp)
{
	return fp->page_size;
}
