/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the driver half's used-ring reader (get_used, reclaim,
 * has_used, enable_cb, detach_unused) against a hostile device that writes
 * the device side of the ring at will: used index, ids and lengths (split),
 * ids, lengths and AVAIL/USED flags (packed). The ring is one exact-size
 * allocation and so is each indirect table. Every token must come back at
 * most once, only if it was added, with a used length no larger than its
 * writable part; an indirect table is freed once; a violation breaks the
 * queue and every later call reports it. Only published chains can come
 * back: a used element naming a chain added since the last publish breaks
 * the queue. As long as only the well-behaved device has written the ring,
 * the queue must not break. Every input starts from the same state
 * (FZ_REPEAT=1 checks it: fuzz_repeat.h).
 *
 * Input:
 *   [0] flags: packed, IN_ORDER, EVENT_IDX, INDIRECT_DESC (bit 0..3)
 *   [1] size: packed num = 1 + v; split num = 1 << (v % 9)
 *   ops, one byte each, op = b & 7, arg = b >> 3, some with operands:
 *     ADD      1 + (arg & 3) chains of 1 + (arg >> 2) segments (the first
 *              readable, the rest writable; bit 4 of arg: all writable)
 *     KICK     publish (kick_prepare, or publish if arg & 1)
 *     USED     operands slot, le32 id, le32 len: split used->ring[slot];
 *              packed desc[slot] id and len, flags from arg (AVAIL, USED,
 *              WRITE)
 *     IDX      operand le16: split used->idx = v; packed: desc[v % num]
 *              made used with the current wrap (arg & 1: the other)
 *     GET      get_used up to 1 + arg
 *     RECLAIM  reclaim up to 1 + arg
 *     CB       arg % 4: has_used, enable_cb, enable_cb_delayed, disable_cb
 *     DEVICE   a device completes the oldest 1 + arg chains (split: the next
 *              used entries; packed: in ring order); well-behaved as long
 *              as it completes published chains only
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

#define MAX_NUM 256u
#define MAX_TABLES 4096u
#define SEG_LEN 100u
#define PK_AVAIL (1u << VRING_PACKED_DESC_F_AVAIL)
#define PK_USED (1u << VRING_PACKED_DESC_F_USED)

enum { OP_ADD, OP_KICK, OP_USED, OP_IDX, OP_GET, OP_RECLAIM, OP_CB, OP_DEVICE };

struct token {
	bool in_flight;
	uint32_t in_len;
	uint16_t head; /* split head / packed first position, for DEVICE */
	uint16_t ndesc;
};

struct table {
	void *p;
	unsigned n;
};

struct du {
	bool packed;
	unsigned num;
	uint8_t *ring;
	struct uvn_vq_layout lay;
	struct uvn_vq_drv *drv;
	const uint8_t *in;
	size_t left;
	struct token *tok; /* MAX_NUM * 4 */
	unsigned ntok;
	/* the oldest tokens not yet completed by DEVICE, in add order */
	unsigned *fifo;    /* MAX_NUM * 4 */
	unsigned fifo_head, fifo_tail;
	unsigned fifo_pub; /* fifo entries before this one are published */
	bool hostile;      /* USED or IDX wrote the device's side */
	/* device: next used slot (split: index; packed: position and wrap) */
	uint16_t dev_used;
	bool dev_wrap;
	uint16_t drv_pos; /* packed: where the next chain starts */
	struct table *tables; /* MAX_TABLES */
	unsigned ntables, tables_hw; /* in use; ever used (the rest still zero) */
};

static uint8_t take8(struct du *d)
{
	if (!d->left)
		return 0;
	d->left--;
	return *d->in++;
}

static uint16_t take16(struct du *d)
{
	uint16_t lo = take8(d);

	return (uint16_t)(lo | take8(d) << 8);
}

static uint32_t take32(struct du *d)
{
	uint32_t lo = take16(d);

	return lo | (uint32_t)take16(d) << 16;
}

static void *table_alloc(void *ctx, unsigned n, uint64_t *addr)
{
	struct du *d = ctx;
	void *p;

	if (d->ntables == MAX_TABLES || !(p = malloc(16u * n)))
		return NULL;
	d->tables[d->ntables++] = (struct table){ p, n };
	if (d->ntables > d->tables_hw)
		d->tables_hw = d->ntables;
	*addr = (uint64_t)(uintptr_t)p;
	return p;
}

static void table_free(void *ctx, void *table, unsigned n)
{
	struct du *d = ctx;

	for (unsigned i = 0; i < d->ntables; i++) {
		if (d->tables[i].p == table) {
			CHECK(d->tables[i].n == n);
			free(table);
			d->tables[i] = d->tables[--d->ntables];
			return;
		}
	}
	CHECK(!"indirect table freed twice or never allocated");
}

/* A token the driver gave back: one we added, in flight, length in range. */
static void returned(struct du *d, void *t, uint32_t len, bool check_len)
{
	struct token *k = t;

	CHECK(k >= d->tok && k < d->tok + d->ntok);
	CHECK(k->in_flight);
	if (check_len)
		CHECK(len <= k->in_len);
	k->in_flight = false;
}

static void op_add(struct du *d, unsigned arg)
{
	static uint8_t mem[SEG_LEN]; /* never touched: the device is simulated */
	unsigned chains = 1 + (arg & 3), nseg = 1 + ((arg >> 2) & 3);
	bool all_in = arg & 16;

	for (unsigned c = 0; c < chains && d->ntok < MAX_NUM * 4; c++) {
		struct uvn_sg sg[4];
		unsigned nout = all_in ? 0 : 1;
		struct token *k = &d->tok[d->ntok];
		uint16_t pos = d->packed ? d->drv_pos : 0;
		int r;

		for (unsigned i = 0; i < nseg; i++)
			sg[i] = (struct uvn_sg){ (uint64_t)(uintptr_t)mem, SEG_LEN };
		if (nout > nseg)
			nout = nseg;
		r = uvn_vq_drv_add(d->drv, sg, nout, nseg - nout, k, 0);
		if (r == -UVN_VQ_E_NOSPC || r == -UVN_VQ_E_INVAL) /* full; more segments than num */
			return;
		if (r) {
			CHECK(r == uvn_vq_drv_error(d->drv));
			return;
		}
		k->in_flight = true;
		k->in_len = (nseg - nout) * SEG_LEN;
		k->head = pos;
		d->ntok++;
		d->fifo[d->fifo_tail++ % (MAX_NUM * 4)] = (unsigned)(k - d->tok);
		if (d->packed) {
			/* Direct or one indirect descriptor: find out from the state. */
			uint16_t next = (uint16_t)(uvn_vq_drv_avail_state(d->drv) & 0x7fff);

			k->ndesc = (uint16_t)((next + d->num - pos) % d->num);
			if (!k->ndesc)
				k->ndesc = (uint16_t)d->num;
			d->drv_pos = next;
		}
	}
}

static void op_used(struct du *d, unsigned arg)
{
	uint16_t slot = take16(d);
	uint32_t id = take32(d), len = take32(d);

	if (d->packed) {
		struct vring_packed_desc *x =
			(struct vring_packed_desc *)(d->ring + d->lay.desc) + slot % d->num;

		x->id = htole16((uint16_t)id);
		x->len = htole32(len);
		x->flags = htole16((uint16_t)((arg & 1 ? PK_AVAIL : 0) | (arg & 2 ? PK_USED : 0) |
					      (arg & 4 ? VRING_DESC_F_WRITE : 0)));
		return;
	}
	struct vring_used *u = (void *)(d->ring + d->lay.device);

	u->ring[slot % d->num].id = htole32(id);
	u->ring[slot % d->num].len = htole32(len);
}

static void op_idx(struct du *d, unsigned arg)
{
	uint16_t v = take16(d);

	if (d->packed) {
		struct vring_packed_desc *x =
			(struct vring_packed_desc *)(d->ring + d->lay.desc) + v % d->num;
		bool w = d->dev_wrap ^ (arg & 1);

		__atomic_store_n(&x->flags, htole16(w ? PK_AVAIL | PK_USED : 0), __ATOMIC_RELEASE);
		return;
	}
	struct vring_used *u = (void *)(d->ring + d->lay.device);

	__atomic_store_n(&u->idx, htole16(v), __ATOMIC_RELEASE);
}

/* A device completing the oldest chains, in order, published or not. */
static void op_device(struct du *d, unsigned arg)
{
	for (unsigned c = 0; c <= arg && d->fifo_head != d->fifo_tail; c++) {
		struct token *k;

		/* Not published yet: the driver must refuse it. */
		if (d->fifo_head >= d->fifo_pub)
			d->hostile = true;
		k = &d->tok[d->fifo[d->fifo_head++ % (MAX_NUM * 4)]];
		if (d->packed) {
			struct vring_packed_desc *x =
				(struct vring_packed_desc *)(d->ring + d->lay.desc) + d->dev_used;
			/* The id the driver wrote in the chain's last descriptor. */
			uint16_t id = le16toh(((struct vring_packed_desc *)(d->ring + d->lay.desc))
					     [(k->head + k->ndesc - 1) % d->num].id);
			x->id = htole16(id);
			x->len = htole32(k->in_len);
			__atomic_store_n(&x->flags,
					 htole16(d->dev_wrap ? PK_AVAIL | PK_USED : 0),
					 __ATOMIC_RELEASE);
			d->dev_used = (uint16_t)(d->dev_used + k->ndesc);
			if (d->dev_used >= d->num) {
				d->dev_used = (uint16_t)(d->dev_used - d->num);
				d->dev_wrap = !d->dev_wrap;
			}
		} else {
			struct vring_used *u = (void *)(d->ring + d->lay.device);
			struct vring_avail *a = (void *)(d->ring + d->lay.driver);
			uint16_t head = le16toh(a->ring[d->dev_used % d->num]);

			u->ring[d->dev_used % d->num].id = htole32(head);
			u->ring[d->dev_used % d->num].len = htole32(k->in_len);
			d->dev_used++;
			__atomic_store_n(&u->idx, htole16(d->dev_used), __ATOMIC_RELEASE);
		}
	}
}

static void op_get(struct du *d, unsigned arg, bool reclaim)
{
	struct uvn_vq_done done[32];
	void *tokens[32];
	unsigned max = 1 + arg;
	int n = reclaim ? uvn_vq_drv_reclaim(d->drv, tokens, max)
			: uvn_vq_drv_get_used(d->drv, done, max);

	if (n < 0) {
		CHECK(n == uvn_vq_drv_error(d->drv));
		return;
	}
	CHECK((unsigned)n <= max);
	for (int i = 0; i < n; i++) {
		if (reclaim)
			returned(d, tokens[i], 0, false);
		else
			returned(d, done[i].token, done[i].len, true);
	}
}

static void run(struct du *d)
{
	while (d->left) {
		uint8_t b = take8(d);
		unsigned arg = b >> 3;

		switch (b & 7) {
		case OP_ADD: op_add(d, arg); break;
		case OP_KICK:
			d->fifo_pub = d->fifo_tail;
			if (arg & 1)
				uvn_vq_drv_publish(d->drv);
			else
				(void)uvn_vq_drv_kick_prepare(d->drv);
			break;
		case OP_USED: d->hostile = true; op_used(d, arg); break;
		case OP_IDX: d->hostile = true; op_idx(d, arg); break;
		case OP_GET: op_get(d, arg, false); break;
		case OP_RECLAIM: op_get(d, arg, true); break;
		case OP_CB:
			switch (arg & 3) {
			case 0: (void)uvn_vq_drv_has_used(d->drv); break;
			case 1: (void)uvn_vq_drv_enable_cb(d->drv); break;
			case 2: (void)uvn_vq_drv_enable_cb_delayed(d->drv); break;
			default: uvn_vq_drv_disable_cb(d->drv); break;
			}
			break;
		default: op_device(d, arg); break;
		}
		CHECK(d->hostile || !uvn_vq_drv_error(d->drv));
		if (uvn_vq_drv_error(d->drv)) {
			/* Broken: every later call says so, and nothing comes back. */
			struct uvn_vq_done done[4];
			int err = uvn_vq_drv_error(d->drv);

			CHECK(err < 0 && -err < UVN_VQ_E_INVAL);
			CHECK(uvn_vq_drv_get_used(d->drv, done, 4) == err);
			CHECK(!uvn_vq_drv_has_used(d->drv));
			break;
		}
	}
	/* Teardown: what is still in flight comes back once, by detach. */
	for (void *t; (t = uvn_vq_drv_detach_unused(d->drv));)
		returned(d, t, 0, false);
	if (!uvn_vq_drv_error(d->drv))
		for (unsigned i = 0; i < d->ntok; i++)
			CHECK(!d->tok[i].in_flight);
}

/*
 * The arrays are kept from one input to the next and zeroed only where the
 * last input wrote them (zeroing 80 KB per input was a good part of a
 * short one's time): every input starts from the same all-zero state.
 */
static void reset(struct du *d)
{
	static struct token tok[MAX_NUM * 4];
	static unsigned fifo[MAX_NUM * 4];
	static struct table tables[MAX_TABLES];

	if (d->tok) {
		/* tokens and fifo entries are written only below ntok */
		memset(tok, 0, d->ntok * sizeof(*tok));
		memset(fifo, 0, d->ntok * sizeof(*fifo));
		memset(tables, 0, d->tables_hw * sizeof(*tables));
	}
	memset(d, 0, sizeof(*d));
	d->tok = tok;
	d->fifo = fifo;
	d->tables = tables;
}

/* How an input ended, to compare two runs of it (FZ_REPEAT). */
struct outcome {
	struct uvn_vq_stats st;
	uint64_t tok_hash; /* (not the ring: it holds the tables' addresses) */
	int32_t err;
	uint32_t ntok, ntables, hostile;
};

static void run_input(const uint8_t *data, size_t size, void *out)
{
	static struct du d;
	struct uvn_vq_drv_cfg cfg = { 0 };
	struct outcome *o = out;

	reset(&d);
	d.packed = data[0] & 1;
	d.num = d.packed ? 1u + data[1] : 1u << (data[1] % 9);
	if (uvn_vq_layout(d.packed, d.num, &d.lay))
		return;
	/* Exact size: a read past the ring lands in ASan's redzone. */
	CHECK(posix_memalign((void **)&d.ring, 16, d.lay.size) == 0);
	memset(d.ring, 0, d.lay.size);
	cfg.num = d.num;
	cfg.ring = d.ring;
	cfg.features = 1ull << VIRTIO_F_VERSION_1 |
		       (d.packed ? 1ull << VIRTIO_F_RING_PACKED : 0) |
		       (data[0] & 2 ? 1ull << VIRTIO_F_IN_ORDER : 0) |
		       (data[0] & 4 ? 1ull << VIRTIO_RING_F_EVENT_IDX : 0) |
		       (data[0] & 8 ? 1ull << VIRTIO_RING_F_INDIRECT_DESC : 0);
	cfg.indirect_alloc = table_alloc;
	cfg.indirect_free = table_free;
	cfg.indirect_ctx = &d;
	CHECK(uvn_vq_drv_create(&cfg, &d.drv) == 0);
	d.dev_wrap = true;
	d.in = data + 2;
	d.left = size - 2;
	run(&d);
	if (o) {
		o->st = *uvn_vq_drv_stats(d.drv);
		o->err = uvn_vq_drv_error(d.drv);
		o->tok_hash = fz_hash(d.tok, d.ntok * sizeof(*d.tok), FZ_HASH_SEED);
		o->ntok = d.ntok;
		o->ntables = d.ntables;
		o->hostile = d.hostile;
	}
	uvn_vq_drv_destroy(d.drv);
	/* Tables of a broken queue are forgotten, not leaked by the driver. */
	for (unsigned i = 0; i < d.ntables; i++)
		free(d.tables[i].p);
	free(d.ring);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct outcome a, b;

	if (size < 2)
		return 0;
	fz_run_checked(run_input, data, size, &a, &b, sizeof(a));
	return 0;
}
