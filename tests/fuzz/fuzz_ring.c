/* SPDX-License-Identifier: MIT */
/*
 * The chain-walker fuzz harness: builds guest memory (mapped pieces and
 * holes) and a ring from the input, runs the device half over it for a few
 * rounds and checks, for every chain popped, that its iovecs lie wholly
 * inside one mapped piece and add up to its lengths, and for every error,
 * that it is counted once and leaves the queue broken without further
 * reads. Optionally the translate callback rewrites shared memory while the
 * walker runs, as a hostile driver would.
 */
#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include <linux/virtio_config.h>
#include <linux/virtio_ring.h>
#include <uvnet/virtqueue.h>

#include "fuzz_mem.h"
#include "fuzz_ring.h"

_Static_assert(FZ_MEM_MAX_PIECES >= FZ_MAX_PIECES + 2, "the pieces and two edge pages");

#define IOV_MAX_FZ 256
#define PK_AVAIL (1u << VRING_PACKED_DESC_F_AVAIL)
#define PK_USED (1u << VRING_PACKED_DESC_F_USED)

struct fz {
	bool packed;
	unsigned num;
	struct fz_mem mem; /* the pieces, then the edge pages */
	uint8_t *ring;
	size_t ring_size;
	struct uvn_vq_layout lay;
	const uint8_t *script;
	size_t script_len, script_pos;
	bool toctou;
};

static uint8_t take8(struct fz *f)
{
	return f->script_pos < f->script_len ? f->script[f->script_pos++] : 0;
}

/* A hostile driver: rewrite one byte of the ring or of guest memory. */
static void mutate(struct fz *f)
{
	uint16_t where;
	uint8_t v;

	if (f->script_pos + 3 > f->script_len)
		return;
	where = (uint16_t)(take8(f) | take8(f) << 8);
	v = take8(f);
	if (!(where & 0x8000)) {
		f->ring[where % f->ring_size] = v;
		return;
	}
	uint64_t off = where & 0x7fff, total = 0;

	for (unsigned i = 0; i < f->mem.npc; i++)
		total += f->mem.pc[i].len;
	off %= total;
	for (unsigned i = 0; i < f->mem.npc; i++) {
		if (off < f->mem.pc[i].len) {
			f->mem.pc[i].host[off] = v;
			return;
		}
		off -= f->mem.pc[i].len;
	}
}

/* The translate hook: with FZ_F_TOCTOU every translation mutates. */
static void on_xlate(void *ctx)
{
	struct fz *f = ctx;

	if (f->toctou)
		mutate(f);
}

/* The pieces of guest memory, from *@d. */
static bool setup_pieces(struct fz *f, const struct fz_hdr *h, const uint8_t **d, size_t *n)
{
	uint64_t gpa = FZ_GPA_BASE;
	unsigned np = h->npieces % (FZ_MAX_PIECES + 1);

	for (unsigned i = 0; i < np && *n >= 3; i++) {
		uint64_t len = (uint64_t)((*d)[0] | (*d)[1] << 8) % FZ_MAX_PIECE_LEN + 1;
		uint8_t kind = (*d)[2];

		*d += 3;
		*n -= 3;
		if ((kind & FZ_PIECE_MAPPED) && !fz_mem_add(&f->mem, gpa, len))
			return false;
		gpa += len;
	}
	if (!f->mem.npc && !fz_mem_add(&f->mem, FZ_GPA_BASE, 4096))
		return false;
	if (h->flags & FZ_F_EDGES) {
		/* The first and last pages: addr + len must not wrap into page 0. */
		if (!fz_mem_add(&f->mem, 0, 4096) || !fz_mem_add(&f->mem, UINT64_MAX - 4095, 4096))
			return false;
	}
	return true;
}

/* The memory blob covers the pieces' guest-physical range in order. */
static void fill_memory(struct fz *f, const struct fz_hdr *h, const uint8_t **d, size_t *n)
{
	size_t mlen = h->mem_len < *n ? h->mem_len : *n;

	for (unsigned i = 0; i < f->mem.npc; i++) {
		const struct fz_piece *p = &f->mem.pc[i];
		uint64_t off = p->gpa - FZ_GPA_BASE;

		if (p->gpa >= FZ_GPA_BASE && off < mlen)
			memcpy(p->host, *d + off, mlen - off < p->len ? mlen - off : p->len);
	}
	*d += mlen;
	*n -= mlen;
}

/* The ring's area, kept across inputs: room for the largest ring. */
static struct fz_area ring_area;

static size_t ring_cap(bool packed)
{
	struct uvn_vq_layout l;

	CHECK(uvn_vq_layout(packed, packed ? 0x8000 : 1u << 15, &l) == 0);
	return l.size;
}

static bool setup_ring(struct fz *f, const struct fz_hdr *h, const uint8_t **d, size_t *n)
{
	size_t rlen = h->ring_len < *n ? h->ring_len : *n, copy;

	f->num = f->packed ? (h->qsize & 0x7fffu) + 1 : 1u << (h->qsize & 15);
	if (uvn_vq_layout(f->packed, f->num, &f->lay))
		return false;
	/* The ring ends at a guard page, the bytes before it poisoned. */
	f->ring = fz_area_get(&ring_area, ring_cap(f->packed), f->lay.size, 64);
	if (!f->ring)
		return false;
	f->ring_size = f->lay.size;
	copy = rlen < f->ring_size ? rlen : f->ring_size;
	memcpy(f->ring, *d, copy);
	memset(f->ring + copy, 0, f->ring_size - copy);
	*d += rlen;
	*n -= rlen;
	if (f->packed) {
		struct vring_packed_desc_event *e = (void *)(f->ring + f->lay.driver);

		e->flags = htole16(h->drv_flags);
		e->off_wrap = htole16(h->drv_event);
	} else {
		struct vring_avail *a = (void *)(f->ring + f->lay.driver);

		a->flags = htole16(h->drv_flags);
		a->idx = htole16(h->avail_idx);
		a->ring[f->num] = htole16(h->drv_event);
	}
	return true;
}

static struct uvn_vq_dev *create_dev(struct fz *f, const struct fz_hdr *h)
{
	struct uvn_vq_dev_cfg cfg = {
		.num = f->num,
		.features = (f->packed ? 1ULL << VIRTIO_F_RING_PACKED : 0) |
			    (h->flags & FZ_F_INDIRECT ? 1ULL << VIRTIO_RING_F_INDIRECT_DESC : 0) |
			    (h->flags & FZ_F_IN_ORDER ? 1ULL << VIRTIO_F_IN_ORDER : 0) |
			    (h->flags & FZ_F_EVENT_IDX ? 1ULL << VIRTIO_RING_F_EVENT_IDX : 0),
		.desc = f->ring + f->lay.desc,
		.driver = f->ring + f->lay.driver,
		.device = f->ring + f->lay.device,
		.xlate = fz_mem_xlate,
		.xlate_ctx = &f->mem,
		.avail_idx = f->packed ? (uint16_t)(h->avail_start % f->num) : h->avail_start,
		.avail_wrap = h->avail_idx & 1,
		.used_idx = f->packed ? (uint16_t)(h->used_start % f->num) : h->used_start,
		.used_wrap = h->avail_idx & 2,
	};
	struct uvn_vq_dev *vq;

	CHECK(uvn_vq_dev_create(&cfg, &vq) == 0);
	if (h->flags & FZ_F_BATCH)
		uvn_vq_dev_set_batch_used(vq, true);
	return vq;
}

/* An error: counted once, and the queue stays broken without reads. */
static void check_broken(struct fz *f, struct uvn_vq_dev *vq, int err, unsigned iov_max,
			 struct iovec *iov)
{
	const struct uvn_vq_stats *st = uvn_vq_dev_stats(vq);
	struct uvn_vq_chain ch;
	uint64_t sum = 0;
	unsigned calls;

	CHECK(err < 0 && -err < UVN_VQ_E_INVAL);
	CHECK(uvn_vq_dev_error(vq) == err);
	for (int k = 0; k < UVN_VQ_E__COUNT; k++)
		sum += st->err[k];
	CHECK(sum == 1 && st->err[UVN_VQ_ERR_SLOT(-err)] == 1);
	f->toctou = false;
	calls = f->mem.xlate_calls;
	CHECK(uvn_vq_dev_pop(vq, &ch, iov, iov_max) == err);
	CHECK(uvn_vq_dev_avail(vq) == err);
	CHECK(!uvn_vq_dev_flush(vq));
	CHECK(f->mem.xlate_calls == calls);
	CHECK(st->err[UVN_VQ_ERR_SLOT(-err)] == 1);
}

static bool same_chain(const struct uvn_vq_chain *a, const struct iovec *ia,
		       const struct uvn_vq_chain *b, const struct iovec *ib)
{
	if (memcmp(a, b, sizeof(*a)))
		return false;
	for (unsigned k = 0; k < a->nout + a->nin; k++) {
		if (ia[k].iov_base != ib[k].iov_base || ia[k].iov_len != ib[k].iov_len)
			return false;
	}
	return true;
}

/* The device's avail position moves by exactly the chain popped. */
static void check_advance(const struct fz *f, uint16_t before, uint16_t after,
			  const struct uvn_vq_chain *ch)
{
	if (!f->packed) {
		CHECK(after == (uint16_t)(before + 1));
		return;
	}
	unsigned pos = (before & 0x7fff) + ch->ndesc;
	bool wrap = before >> 15;

	if (pos >= f->num) {
		pos -= f->num;
		wrap = !wrap;
	}
	CHECK(after == (pos | (unsigned)wrap << 15));
}

/* One pop, checked. @return 1 popped, 0 none, -1 the queue broke. */
static int pop_one(struct fz *f, struct uvn_vq_dev *vq, const struct fz_hdr *h,
		   struct iovec *iov)
{
	static struct iovec iov2[IOV_MAX_FZ];
	uint16_t before = uvn_vq_dev_avail_state(vq);
	struct uvn_vq_chain ch, ch2;
	int ret = uvn_vq_dev_pop(vq, &ch, iov, h->iov_max);

	if (ret == -UVN_VQ_E_IOV_FULL) {
		/* A legal chain longer than our array: not taken, the queue
		 * runs; it stays next, so this round ends here. */
		CHECK(!uvn_vq_dev_error(vq));
		CHECK(uvn_vq_dev_avail_state(vq) == before);
		return 0;
	}
	if (ret < 0) {
		check_broken(f, vq, ret, h->iov_max, iov);
		return -1;
	}
	CHECK(ret == 0 || ret == 1);
	if (!ret)
		return 0;
	fz_check_chain(&f->mem, f->num, &ch, iov, h->iov_max);
	check_advance(f, before, uvn_vq_dev_avail_state(vq), &ch);
	if ((h->flags & FZ_F_UNPOP) && !f->toctou) {
		uvn_vq_dev_unpop(vq, &ch);
		CHECK(uvn_vq_dev_avail_state(vq) == before);
		CHECK(uvn_vq_dev_pop(vq, &ch2, iov2, h->iov_max) == 1);
		CHECK(same_chain(&ch, iov, &ch2, iov2));
	}
	uvn_vq_dev_push(vq, &ch, fz_use_chain(&ch, iov));
	return 1;
}

/* Later rounds: the driver makes more available (split: moves avail->idx;
 * packed: re-marks descriptors from the device's position available). */
static void driver_round(struct fz *f, struct uvn_vq_dev *vq)
{
	uint8_t delta = take8(f);

	if (!f->packed) {
		struct vring_avail *a = (void *)(f->ring + f->lay.driver);

		a->idx = htole16((uint16_t)(le16toh(a->idx) + delta % (f->num + 2)));
		return;
	}
	uint16_t st = uvn_vq_dev_avail_state(vq);
	unsigned pos = st & 0x7fff;
	bool wrap = st >> 15;

	for (unsigned k = 0; k < delta % (f->num + 1); k++) {
		struct vring_packed_desc *d = (void *)(f->ring + f->lay.desc + 16 * pos);
		uint16_t fl = le16toh(d->flags) & ~(PK_AVAIL | PK_USED);

		d->flags = htole16((uint16_t)(fl | (wrap ? PK_AVAIL : PK_USED)));
		if (++pos == f->num) {
			pos = 0;
			wrap = !wrap;
		}
	}
}

/* FZ_VERBOSE=1: say what each input did (to check seeds). */
static bool verbose(void)
{
	static int v = -1;

	if (v < 0)
		v = getenv("FZ_VERBOSE") != NULL;
	return v;
}

static void run(struct fz *f, const struct fz_hdr *h)
{
	static struct iovec iov[IOV_MAX_FZ];
	struct uvn_vq_dev *vq = create_dev(f, h);
	unsigned rounds = 1 + h->rounds % 8;
	uint64_t popped = 0;

	for (unsigned r = 0; r < rounds; r++) {
		int ret = 0;

		if (r)
			driver_round(f, vq);
		for (unsigned i = 0; i < 64; i++) {
			ret = pop_one(f, vq, h, iov);
			if (ret <= 0)
				break;
			popped++;
			if (take8(f) & 1)
				uvn_vq_dev_flush(vq);
		}
		if (ret < 0) {
			if (verbose())
				fprintf(stderr, "round %u: %s after %llu chains\n", r,
					uvn_vq_strerror(uvn_vq_dev_error(vq)),
					(unsigned long long)popped);
			break;
		}
		if (verbose())
			fprintf(stderr, "round %u: %llu chains\n", r, (unsigned long long)popped);
		uvn_vq_dev_flush(vq);
		CHECK(uvn_vq_dev_stats(vq)->bufs == popped);
		CHECK(uvn_vq_dev_stats(vq)->used == popped);
		if (r & 1)
			uvn_vq_dev_disable_notify(vq);
		else
			(void)uvn_vq_dev_enable_notify(vq);
	}
	uvn_vq_dev_destroy(vq);
}

int fz_run(const uint8_t *data, size_t size, bool packed)
{
	struct fz f = { .packed = packed };
	struct fz_hdr h;

	f.mem.on_xlate = on_xlate;
	f.mem.on_xlate_ctx = &f;
	if (size < FZ_HDR_SIZE)
		return 0;
	fz_hdr_get(&h, data);
	data += FZ_HDR_SIZE;
	size -= FZ_HDR_SIZE;
	if (setup_pieces(&f, &h, &data, &size) && setup_ring(&f, &h, &data, &size)) {
		fill_memory(&f, &h, &data, &size);
		f.script = data;
		f.script_len = size;
		f.toctou = h.flags & FZ_F_TOCTOU;
		run(&f, &h);
	}
	fz_mem_free(&f.mem);
	fz_area_put(&ring_area);
	return 0;
}
