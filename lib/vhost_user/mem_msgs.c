/* SPDX-License-Identifier: MIT */
/*
 * Memory table requests: SET_MEM_TABLE replaces the table, ADD_MEM_REG /
 * REM_MEM_REG (CONFIGURE_MEM_SLOTS) change one region. A new table or
 * region is mapped and checked completely before anything changes; then
 * the ready queues are paused, the table swapped, every ring translated
 * again (in whatever state: a ring no longer in memory loses its device
 * half, vu_queue_translate), the queues resumed, and only then the old
 * mappings go away. Each fd is closed as soon as it is mapped (the mapping
 * holds the file), so a frontend repeating these requests cannot make us
 * leak (CVE-2019-14818).
 */
#include <errno.h>
#include <unistd.h>

#include "internal.h"
#include "util/log.h"

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

uint64_t vu_table_bytes(const struct uvn_mem *m)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < m->n; i++)
		n = add_sat(n, m->r[i].map_len);
	return n;
}

bool vu_map_fits(const struct uvn_vu_backend *b, enum vu_map_kind kind, uint64_t bytes)
{
	uint64_t n = kind == VU_MAP_TABLE ? bytes : vu_table_bytes(b->mem);

	n = add_sat(n, kind == VU_MAP_LOG ? bytes : b->log.map ? b->log.map_len : 0);
	n = add_sat(n, kind == VU_MAP_INFLIGHT ? bytes
		       : b->inflight.reg.map ? b->inflight.reg.map_len : 0);
	return n <= b->max_mem;
}

static int too_much(struct uvn_vu_backend *b, uint64_t bytes)
{
	return vu_conn_error(b, &b->st.err_mem,
			     "a memory table of 0x%llx bytes: more than the session may map "
			     "(max-mem=, 0x%llx; the machine's memory by default)",
			     (unsigned long long)bytes, (unsigned long long)b->max_mem);
}

static int map_one(struct uvn_vu_backend *b, const struct uvn_vu_region *w, int fd, unsigned i,
		   struct uvn_mem_region *r)
{
	struct uvn_mem_region_desc d = {
		.gpa = w->guest_phys_addr,
		.size = w->memory_size,
		.uva = w->userspace_addr,
		.mmap_offset = w->mmap_offset,
	};
	int ret = uvn_mem_region_map_owned(&d, fd, &b->guard, r);

	if (ret)
		return vu_conn_error(b, &b->st.err_mem,
				     "memory region %u (gpa 0x%llx size 0x%llx offset 0x%llx): %s", i,
				     (unsigned long long)d.gpa, (unsigned long long)d.size,
				     (unsigned long long)d.mmap_offset, uvn_mem_map_hint(ret));
	return 0;
}

static int insert_error(struct uvn_vu_backend *b, struct uvn_mem_region *r, int err)
{
	uvn_mem_region_unmap(r);
	if (err == -ENOSPC)
		return vu_conn_error(b, &b->st.err_mem, "more than %u memory regions",
				     UVN_MEM_MAX_REGIONS);
	return vu_conn_error(b, &b->st.err_mem,
			     "memory region at gpa 0x%llx size 0x%llx overlaps another",
			     (unsigned long long)r->gpa, (unsigned long long)r->size);
}

/* Swap in the changed table: queues paused around it, rings re-translated. */
static void commit(struct uvn_vu_backend *b, struct uvn_mem *new_mem)
{
	struct uvn_mem *old = b->mem;

	vu_pause_all(b);
	b->mem = new_mem;
	vu_mem_changed(b);
	if (old != new_mem)
		uvn_mem_destroy(old);
	b->st.mem_changes++;
}

int vu_h_SET_MEM_TABLE(struct uvn_vu_backend *b, struct uvn_vu_msg *m, struct uvn_vu_msg *reply)
{
	const struct uvn_vu_memory *t = &m->p.memory;
	struct uvn_mem *nm;
	uint64_t bytes = 0;
	int ret = 0;

	(void)reply;
	for (unsigned i = 0; i < t->nregions; i++)
		bytes = add_sat(bytes, t->regions[i].memory_size);
	if (!vu_map_fits(b, VU_MAP_TABLE, bytes))
		return too_much(b, bytes);
	nm = uvn_mem_create();
	if (!nm)
		return vu_req_error(b, &b->st.err_mem, "out of memory for a memory table");
	for (unsigned i = 0; i < t->nregions; i++) {
		struct uvn_mem_region r;
		int fd = uvn_vu_msg_take_fd(m, i);

		ret = map_one(b, &t->regions[i], fd, i, &r);
		close(fd);
		if (ret)
			goto fail;
		ret = uvn_mem_insert(nm, &r);
		if (ret) {
			ret = insert_error(b, &r, ret);
			goto fail;
		}
	}
	commit(b, nm);
	vu_log(b, UVN_LOG_DEBUG, "memory table: %u regions", nm->n);
	return 0;
fail:
	uvn_mem_destroy(nm);
	return ret;
}

int vu_h_ADD_MEM_REG(struct uvn_vu_backend *b, struct uvn_vu_msg *m, struct uvn_vu_msg *reply)
{
	const struct uvn_vu_region *w = &m->p.mem_reg.region;
	struct uvn_mem_region r;
	int fd = uvn_vu_msg_take_fd(m, 0);
	int ret;

	(void)reply;
	/* QEMU with several queue pairs sends each region once per pair
	 * (one vhost device each): the same region again is a reference,
	 * matched by a REM_MEM_REG per pair later. */
	ret = uvn_mem_find(b->mem, w->guest_phys_addr, w->userspace_addr, w->memory_size);
	if (ret >= 0) {
		close(fd);
		b->mem->r[ret].refs++;
		return 0;
	}
	if (!vu_map_fits(b, VU_MAP_TABLE, add_sat(vu_table_bytes(b->mem), w->memory_size))) {
		close(fd);
		return too_much(b, add_sat(vu_table_bytes(b->mem), w->memory_size));
	}
	ret = map_one(b, &m->p.mem_reg.region, fd, b->mem->n, &r);
	close(fd);
	if (ret)
		return ret;
	ret = uvn_mem_check(b->mem, &r);
	if (ret)
		return insert_error(b, &r, ret);
	vu_pause_all(b);
	uvn_mem_insert(b->mem, &r); /* cannot fail after the check */
	commit(b, b->mem);
	return 0;
}

int vu_h_REM_MEM_REG(struct uvn_vu_backend *b, struct uvn_vu_msg *m, struct uvn_vu_msg *reply)
{
	const struct uvn_vu_region *w = &m->p.mem_reg.region;
	struct uvn_mem_region r;
	int idx;

	(void)reply;
	/* Identified by gpa, user address and size; the offset is ignored and
	 * a stray fd is closed unused by the dispatcher. */
	idx = uvn_mem_find(b->mem, w->guest_phys_addr, w->userspace_addr, w->memory_size);
	if (idx < 0)
		return vu_req_error(b, &b->st.err_mem,
				    "REM_MEM_REG: no region at gpa 0x%llx size 0x%llx",
				    (unsigned long long)w->guest_phys_addr,
				    (unsigned long long)w->memory_size);
	if (b->mem->r[idx].refs > 1) {
		b->mem->r[idx].refs--;
		return 0;
	}
	vu_pause_all(b);
	uvn_mem_take(b->mem, (unsigned)idx, &r);
	commit(b, b->mem);
	uvn_mem_region_unmap(&r);
	return 0;
}

int vu_h_GET_MAX_MEM_SLOTS(struct uvn_vu_backend *b, struct uvn_vu_msg *m, struct uvn_vu_msg *reply)
{
	(void)b;
	(void)m;
	reply->hdr.size = sizeof(uint64_t);
	reply->p.u64 = VHOST_USER_MAX_RAM_SLOTS < UVN_MEM_MAX_REGIONS ? VHOST_USER_MAX_RAM_SLOTS
								       : UVN_MEM_MAX_REGIONS;
	return 0;
}
