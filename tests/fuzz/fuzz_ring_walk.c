/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the device ring walkers (split and packed, IN_ORDER or
 * not, batched used elements or not) driven op by op, with no flush forced
 * between rounds, against a driver that writes the ring memory at will.
 * After every op the device's positions must stay in range (packed: used
 * and avail position < num), and after every flush the used position must
 * have moved by exactly what was pushed. The ring ends at a guard page
 * with everything before it poisoned (fz_area), so a used element written
 * past it is caught by ASan. Every input starts from the same state
 * (FZ_REPEAT=1 checks it: fuzz_repeat.h).
 *
 * Input:
 *   [0]     flags: FL_* below
 *   [1]     size: packed num = 1 + v; split num = 1 << (v % 9)
 *   [2..3]  start (le16): split avail = used index; packed position
 *           (mod num) and wrap counters (bit 15)
 *   ops     one byte each, op = b & 15, arg = b >> 4, some with operands:
 *     AVAIL     the driver publishes 1 + (arg & 3) chains of 1 + (arg >> 2)
 *               descriptors at its own position, whatever the device did
 *     FLIP      operand p: packed: desc[p % num] gets AVAIL = arg & 1,
 *               USED = arg & 2; split: avail->idx += arg
 *     RAW       operands i, v16: a ring field: arg selects desc[i] addr,
 *               len, flags or next/id; split also avail->ring[i], avail->idx
 *     POP       pop up to 1 + arg chains (the device holds at most num)
 *     PUSH      push a held chain (IN_ORDER: the oldest; else held[arg])
 *     PUSH_ALL  push every held chain, oldest first
 *     END_BATCH close the batch in progress (batch_used off and on again)
 *     FLUSH     publish
 *     NOTIFY    arg & 1: enable, else disable driver notifications
 *     UNPOP     right after a POP: give back the last chain popped
 */
#include <endian.h>
#include <stdlib.h>
#include <string.h>

#include <linux/virtio_config.h>
#include <linux/virtio_ring.h>
#include <uvnet/virtqueue.h>

#include "fuzz_mem.h"
#include "fuzz_repeat.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum {
	FL_PACKED = 1 << 0,
	FL_IN_ORDER = 1 << 1,
	FL_BATCH = 1 << 2,
	FL_EVENT_IDX = 1 << 3,
	FL_INDIRECT = 1 << 4,
};

enum { OP_AVAIL, OP_FLIP, OP_RAW, OP_POP, OP_PUSH, OP_PUSH_ALL, OP_END_BATCH, OP_FLUSH,
       OP_NOTIFY, OP_UNPOP, OP__COUNT };

#define GPA 0x10000ull
#define MEM_LEN 4096u
#define BUF_LEN 64u
#define IOV_MAX_W 8u
#define PK_AVAIL (1u << VRING_PACKED_DESC_F_AVAIL)
#define PK_USED (1u << VRING_PACKED_DESC_F_USED)

struct held {
	struct uvn_vq_chain ch;
	uint32_t len;
};

struct rw {
	bool packed, in_order, batch;
	unsigned num;
	uint8_t *ring;
	struct uvn_vq_layout lay;
	struct fz_mem mem;
	struct uvn_vq_dev *vq;
	const uint8_t *in;
	size_t left;
	/* the driver's own position: split avail index and next descriptor;
	 * packed ring position, wrap counter and next buffer id */
	uint16_t drv_idx, drv_desc, drv_id;
	bool drv_wrap;
	/* popped, not yet pushed, oldest first */
	struct held *held;
	unsigned nheld;
	/* what the used position must be after the next flush: split the used
	 * index; packed the position plus num times the wrap parity */
	uint32_t used_expect;
	bool last_pop;
};

static uint8_t take8(struct rw *r)
{
	if (!r->left)
		return 0;
	r->left--;
	return *r->in++;
}

static uint16_t take16(struct rw *r)
{
	uint16_t lo = take8(r);

	return (uint16_t)(lo | take8(r) << 8);
}

static struct vring_desc *split_desc(struct rw *r, unsigned i)
{
	return (struct vring_desc *)(r->ring + r->lay.desc) + i % r->num;
}

static struct vring_avail *split_avail(struct rw *r)
{
	return (struct vring_avail *)(r->ring + r->lay.driver);
}

static struct vring_packed_desc *pk_desc(struct rw *r, unsigned i)
{
	return (struct vring_packed_desc *)(r->ring + r->lay.desc) + i % r->num;
}

/* One buffer of the k-th descriptor a chain: the first readable, the
 * rest writable (a readable one after a writable one is an error). */
static void buffer(struct rw *r, unsigned k, unsigned n, uint64_t *addr, uint16_t *flags)
{
	*addr = GPA + (uint64_t)((r->drv_desc + k) * BUF_LEN % MEM_LEN);
	*flags = (uint16_t)((k + 1 < n ? VRING_DESC_F_NEXT : 0) |
			    (k || n == 1 ? VRING_DESC_F_WRITE : 0));
}

static void avail_split(struct rw *r, unsigned n)
{
	struct vring_avail *a = split_avail(r);
	uint16_t head = (uint16_t)(r->drv_desc % r->num);

	for (unsigned k = 0; k < n; k++) {
		struct vring_desc *d = split_desc(r, r->drv_desc);
		uint64_t addr;
		uint16_t fl;

		buffer(r, k, n, &addr, &fl);
		d->addr = htole64(addr);
		d->len = htole32(BUF_LEN);
		d->flags = htole16(fl);
		r->drv_desc = (uint16_t)((r->drv_desc + 1) % r->num);
		d->next = htole16(r->drv_desc);
	}
	a->ring[r->drv_idx % r->num] = htole16(head);
	r->drv_idx++;
	__atomic_store_n(&a->idx, htole16(r->drv_idx), __ATOMIC_RELEASE);
}

static void avail_packed(struct rw *r, unsigned n)
{
	uint16_t head_pos = (uint16_t)(r->drv_desc % r->num), head_flags = 0;
	uint16_t id = (uint16_t)(r->drv_id++ % r->num);

	for (unsigned k = 0; k < n; k++) {
		struct vring_packed_desc *d = pk_desc(r, r->drv_desc);
		uint64_t addr;
		uint16_t fl;

		buffer(r, k, n, &addr, &fl);
		fl |= r->drv_wrap ? PK_AVAIL : PK_USED;
		d->addr = htole64(addr);
		d->len = htole32(BUF_LEN);
		d->id = htole16(id);
		if (k)
			d->flags = htole16(fl);
		else
			head_flags = fl;
		if (++r->drv_desc == r->num) {
			r->drv_desc = 0;
			r->drv_wrap = !r->drv_wrap;
		}
	}
	/* The head's flags last: they publish the chain. */
	__atomic_store_n(&pk_desc(r, head_pos)->flags, htole16(head_flags), __ATOMIC_RELEASE);
}

static void op_avail(struct rw *r, unsigned arg)
{
	unsigned chains = 1 + (arg & 3), ndesc = 1 + (arg >> 2);

	if (ndesc > r->num)
		ndesc = r->num;
	for (unsigned c = 0; c < chains; c++) {
		if (r->packed)
			avail_packed(r, ndesc);
		else
			avail_split(r, ndesc);
	}
}

static void op_flip(struct rw *r, unsigned arg)
{
	uint8_t p = take8(r);

	if (r->packed) {
		struct vring_packed_desc *d = pk_desc(r, p);
		uint16_t fl = le16toh(d->flags) & (uint16_t)~(PK_AVAIL | PK_USED);

		fl |= (arg & 1 ? PK_AVAIL : 0) | (arg & 2 ? PK_USED : 0);
		__atomic_store_n(&d->flags, htole16(fl), __ATOMIC_RELEASE);
	} else {
		struct vring_avail *a = split_avail(r);

		a->idx = htole16((uint16_t)(le16toh(a->idx) + arg));
	}
}

static void op_raw(struct rw *r, unsigned arg)
{
	uint8_t i = take8(r);
	uint16_t v = take16(r);

	if (r->packed) {
		struct vring_packed_desc *d = pk_desc(r, i);

		switch (arg & 3) {
		case 0: d->addr = htole64(GPA + v); break;
		case 1: d->len = htole32(v); break;
		case 2: d->flags = htole16(v); break;
		default: d->id = htole16(v); break;
		}
		return;
	}
	struct vring_desc *d = split_desc(r, i);

	switch (arg % 6) {
	case 0: d->addr = htole64(GPA + v); break;
	case 1: d->len = htole32(v); break;
	case 2: d->flags = htole16(v); break;
	case 3: d->next = htole16(v); break;
	case 4: split_avail(r)->ring[i % r->num] = htole16(v); break;
	default: split_avail(r)->idx = htole16(v); break;
	}
}

/* @return false when the queue broke (the run ends). */
static bool op_pop(struct rw *r, unsigned arg)
{
	struct iovec iov[IOV_MAX_W];

	for (unsigned k = 0; k <= arg && r->nheld < r->num; k++) {
		struct held *h = &r->held[r->nheld];
		uint16_t before = uvn_vq_dev_avail_state(r->vq);
		int ret = uvn_vq_dev_pop(r->vq, &h->ch, iov, IOV_MAX_W);

		if (ret == -UVN_VQ_E_IOV_FULL) {
			/* A legal chain longer than our array: not taken, the
			 * queue runs. */
			CHECK(!uvn_vq_dev_error(r->vq));
			CHECK(uvn_vq_dev_avail_state(r->vq) == before);
			break;
		}
		if (ret < 0) {
			CHECK(uvn_vq_dev_error(r->vq) == ret);
			return false;
		}
		CHECK(ret <= 1);
		if (!ret)
			break;
		fz_check_chain(&r->mem, r->num, &h->ch, iov, IOV_MAX_W);
		h->len = fz_use_chain(&h->ch, iov);
		r->nheld++;
		r->last_pop = true;
	}
	return true;
}

static void push(struct rw *r, unsigned i)
{
	struct held h = r->held[i];

	memmove(&r->held[i], &r->held[i + 1], (r->nheld - i - 1) * sizeof(*r->held));
	r->nheld--;
	uvn_vq_dev_push(r->vq, &h.ch, h.len);
	r->used_expect += r->packed ? h.ch.ndesc : 1;
}

/* The device's positions are in range after every op. */
static void check_ranges(struct rw *r)
{
	uint16_t used = uvn_vq_dev_used_state(r->vq), avail = uvn_vq_dev_avail_state(r->vq);

	CHECK(r->nheld <= r->num);
	if (!r->packed)
		return;
	CHECK((used & 0x7fffu) < r->num);
	CHECK((avail & 0x7fffu) < r->num);
}

/* After a flush everything pushed is published, at the right place. */
static void check_flushed(struct rw *r)
{
	uint16_t used = uvn_vq_dev_used_state(r->vq);

	check_ranges(r);
	if (r->packed) {
		uint32_t turns = r->used_expect / r->num;

		r->used_expect %= 2 * r->num;
		CHECK((used & 0x7fffu) == r->used_expect % r->num);
		CHECK(!!(used & 0x8000u) == (bool)(turns & 1));
	} else {
		const struct vring_used *u = (const void *)(r->ring + r->lay.device);

		CHECK(used == (uint16_t)r->used_expect);
		CHECK(le16toh(u->idx) == (uint16_t)r->used_expect);
	}
}

static void run(struct rw *r)
{
	while (r->left) {
		uint8_t b = take8(r);
		unsigned op = (b & 15u) % OP__COUNT, arg = b >> 4;
		bool was_pop = r->last_pop;

		r->last_pop = false;
		switch (op) {
		case OP_AVAIL: op_avail(r, arg); break;
		case OP_FLIP: op_flip(r, arg); break;
		case OP_RAW: op_raw(r, arg); break;
		case OP_POP:
			if (!op_pop(r, arg))
				return;
			break;
		case OP_PUSH:
			if (r->nheld)
				push(r, r->in_order ? 0 : arg % r->nheld);
			break;
		case OP_PUSH_ALL:
			while (r->nheld)
				push(r, 0);
			break;
		case OP_END_BATCH:
			uvn_vq_dev_set_batch_used(r->vq, false);
			uvn_vq_dev_set_batch_used(r->vq, r->batch);
			break;
		case OP_FLUSH:
			uvn_vq_dev_flush(r->vq);
			check_flushed(r);
			break;
		case OP_NOTIFY:
			if (arg & 1)
				(void)uvn_vq_dev_enable_notify(r->vq);
			else
				uvn_vq_dev_disable_notify(r->vq);
			break;
		default: /* OP_UNPOP */
			if (was_pop && r->nheld) {
				uvn_vq_dev_unpop(r->vq, &r->held[--r->nheld].ch);
				r->last_pop = r->nheld > 0;
			}
			break;
		}
		if (uvn_vq_dev_error(r->vq))
			return; /* a driver violation: counted, the queue is done */
		check_ranges(r);
	}
	uvn_vq_dev_flush(r->vq);
	if (!uvn_vq_dev_error(r->vq))
		check_flushed(r);
}

/* Kept across inputs, each ending at a guard page (fz_area). */
static struct fz_area ring_area, held_area;

/* Room for the largest ring either layout takes (num <= 256). */
static size_t ring_cap(void)
{
	static size_t cap;
	struct uvn_vq_layout s, p;

	if (!cap) {
		CHECK(uvn_vq_layout(false, 256, &s) == 0 && uvn_vq_layout(true, 256, &p) == 0);
		cap = s.size > p.size ? s.size : p.size;
	}
	return cap;
}

static bool setup(struct rw *r, const uint8_t *data)
{
	uint8_t fl = data[0];
	uint16_t start = (uint16_t)(data[2] | data[3] << 8);
	struct uvn_vq_dev_cfg cfg = { 0 };

	r->packed = fl & FL_PACKED;
	r->in_order = fl & FL_IN_ORDER;
	r->batch = fl & FL_BATCH;
	r->num = r->packed ? 1u + data[1] : 1u << (data[1] % 9);
	if (uvn_vq_layout(r->packed, r->num, &r->lay))
		return false;
	/* The ring ends at a guard page: a write past it is caught (16: the
	 * alignment calloc gave); so does the array of held chains. */
	r->ring = fz_area_get(&ring_area, ring_cap(), r->lay.size, 16);
	r->held = (struct held *)fz_area_get(&held_area, 256 * sizeof(*r->held),
					    r->num * sizeof(*r->held), 16);
	if (!r->ring || !r->held || !fz_mem_add(&r->mem, GPA, MEM_LEN))
		return false;
	memset(r->ring, 0, r->lay.size);
	memset(r->held, 0, r->num * sizeof(*r->held));
	cfg.num = r->num;
	cfg.features = 1ull << VIRTIO_F_VERSION_1 |
		       (r->packed ? 1ull << VIRTIO_F_RING_PACKED : 0) |
		       (r->in_order ? 1ull << VIRTIO_F_IN_ORDER : 0) |
		       (fl & FL_EVENT_IDX ? 1ull << VIRTIO_RING_F_EVENT_IDX : 0) |
		       (fl & FL_INDIRECT ? 1ull << VIRTIO_RING_F_INDIRECT_DESC : 0);
	cfg.desc = r->ring + r->lay.desc;
	cfg.driver = r->ring + r->lay.driver;
	cfg.device = r->ring + r->lay.device;
	cfg.xlate = fz_mem_xlate;
	cfg.xlate_ctx = &r->mem;
	if (r->packed) {
		cfg.avail_idx = cfg.used_idx = (uint16_t)((start & 0x7fff) % r->num);
		cfg.avail_wrap = cfg.used_wrap = start >> 15;
		r->drv_desc = cfg.avail_idx;
		r->drv_wrap = cfg.avail_wrap;
		r->used_expect = cfg.used_idx + (cfg.used_wrap ? r->num : 0);
	} else {
		cfg.avail_idx = cfg.used_idx = start;
		r->drv_idx = start;
		split_avail(r)->idx = htole16(start);
		((struct vring_used *)(r->ring + r->lay.device))->idx = htole16(start);
		r->used_expect = start;
	}
	CHECK(uvn_vq_dev_create(&cfg, &r->vq) == 0);
	uvn_vq_dev_set_batch_used(r->vq, r->batch);
	return true;
}

/* How an input ended, to compare two runs of it (FZ_REPEAT). */
struct outcome {
	struct uvn_vq_stats st;
	uint64_t ring_hash, mem_hash;
	int32_t err;
	uint32_t nheld;
	uint16_t used, avail, pad[2];
};

static void run_input(const uint8_t *data, size_t size, void *out)
{
	struct outcome *o = out;
	struct rw r = { 0 };

	if (setup(&r, data)) {
		r.in = data + 4;
		r.left = size - 4;
		run(&r);
	}
	if (o && r.vq) {
		o->st = *uvn_vq_dev_stats(r.vq);
		o->err = uvn_vq_dev_error(r.vq);
		o->used = uvn_vq_dev_used_state(r.vq);
		o->avail = uvn_vq_dev_avail_state(r.vq);
		o->nheld = r.nheld;
		o->ring_hash = fz_hash(r.ring, r.lay.size, FZ_HASH_SEED);
		o->mem_hash = fz_hash(r.mem.pc[0].host, MEM_LEN, FZ_HASH_SEED);
	}
	if (r.vq)
		uvn_vq_dev_destroy(r.vq);
	fz_mem_free(&r.mem);
	fz_area_put(&held_area);
	fz_area_put(&ring_area);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct outcome a, b;

	if (size < 4)
		return 0;
	fz_run_checked(run_input, data, size, &a, &b, sizeof(a));
	return 0;
}
