/* SPDX-License-Identifier: MIT */
/*
 * Writes the seed corpus of the chain-walker fuzzers: rings filled by our
 * own driver half (direct and indirect chains, IN_ORDER, tables across
 * mapping pieces), plus a few deliberately broken ones, in the input format
 * of fuzz_ring.h.
 *
 *   gen_fuzz_corpus <split corpus dir> <packed corpus dir>
 */
#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/virtio_config.h>
#include <linux/virtio_ring.h>
#include <uvnet/virtqueue.h>

#include "fuzz_ring.h"

#define MEM_MAX 65536

struct seed {
	bool packed;
	unsigned num;
	uint8_t flags;
	uint8_t rounds;
	unsigned np;
	uint16_t plen[FZ_MAX_PIECES];
	uint8_t pkind[FZ_MAX_PIECES];
	uint8_t mem[MEM_MAX];
	size_t mem_len;
	uint8_t *ring;
	size_t ring_size;
	uint8_t script[512];
	size_t script_len;
	size_t brk; /* bump allocator, offset into mem */
	uint16_t visible_less; /* split: publish fewer than added (later rounds reveal) */
	struct uvn_vq_drv *drv;
};

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static uint64_t gpa_of(size_t off)
{
	return FZ_GPA_BASE + off;
}

static void *table_alloc(void *ctx, unsigned n, uint64_t *addr)
{
	struct seed *s = ctx;
	size_t off = (s->brk + 15) & ~(size_t)15;

	if (off + 16 * n > s->mem_len)
		return NULL;
	s->brk = off + 16 * n;
	*addr = gpa_of(off);
	return s->mem + off;
}

static void table_free(void *ctx, void *table, unsigned n)
{
	(void)ctx;
	(void)table;
	(void)n;
}

static void begin(struct seed *s, bool packed, unsigned num, uint8_t flags,
		  const uint16_t *plen, const uint8_t *pkind, unsigned np)
{
	uint64_t feat = (packed ? 1ULL << VIRTIO_F_RING_PACKED : 0) |
			(flags & FZ_F_INDIRECT ? 1ULL << VIRTIO_RING_F_INDIRECT_DESC : 0) |
			(flags & FZ_F_IN_ORDER ? 1ULL << VIRTIO_F_IN_ORDER : 0) |
			(flags & FZ_F_EVENT_IDX ? 1ULL << VIRTIO_RING_F_EVENT_IDX : 0);
	struct uvn_vq_layout lay;
	void *ring = NULL;

	memset(s, 0, sizeof(*s));
	s->packed = packed;
	s->num = num;
	s->flags = flags;
	s->np = np;
	for (unsigned i = 0; i < np; i++) {
		s->plen[i] = plen[i];
		s->pkind[i] = pkind[i];
		s->mem_len += plen[i];
	}
	if (uvn_vq_layout(packed, num, &lay) || posix_memalign(&ring, 64, lay.size))
		die("layout");
	s->ring = ring;
	s->ring_size = lay.size;
	struct uvn_vq_drv_cfg cfg = {
		.num = num, .features = feat, .ring = ring,
		.indirect_alloc = table_alloc, .indirect_free = table_free, .indirect_ctx = s,
	};

	if (uvn_vq_drv_create(&cfg, &s->drv))
		die("driver");
}

/* A buffer of @len bytes at @off in guest memory, filled with a pattern. */
static struct uvn_sg buf(struct seed *s, size_t off, uint32_t len)
{
	for (uint32_t i = 0; i < len && off + i < s->mem_len; i++)
		s->mem[off + i] = (uint8_t)(off + i);
	return (struct uvn_sg){ .addr = gpa_of(off), .len = len };
}

static void add(struct seed *s, const struct uvn_sg *sg, unsigned nout, unsigned nin)
{
	static int token;
	int ret = uvn_vq_drv_add(s->drv, sg, nout, nin, &token, 0);

	if (ret) {
		fprintf(stderr, "add: %s\n", uvn_vq_strerror(ret));
		exit(1);
	}
}

static unsigned log2u(unsigned v)
{
	unsigned l = 0;

	while ((1u << l) < v)
		l++;
	return l;
}

static void put16(FILE *fp, uint16_t v)
{
	fputc(v & 0xff, fp);
	fputc(v >> 8, fp);
}

static void finish(struct seed *s, const char *dir, const char *name)
{
	uint8_t hdr[FZ_HDR_SIZE];
	char path[512];
	FILE *fp;

	uvn_vq_drv_kick_prepare(s->drv);
	struct fz_hdr h = {
		.flags = s->flags,
		.iov_max = 64,
		.qsize = (uint16_t)(s->packed ? s->num - 1 : log2u(s->num)),
		.avail_idx = s->packed ? 3 : (uint16_t)(uvn_vq_drv_avail_state(s->drv) - s->visible_less),
		.rounds = s->rounds,
		.npieces = (uint8_t)s->np,
		.ring_len = (uint16_t)s->ring_size,
		.mem_len = (uint16_t)s->mem_len,
	};

	fz_hdr_put(&h, hdr);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fp = fopen(path, "wb");
	if (!fp)
		die(path);
	fwrite(hdr, 1, sizeof(hdr), fp);
	for (unsigned i = 0; i < s->np; i++) {
		put16(fp, (uint16_t)(s->plen[i] - 1)); /* the fuzzer adds 1 */
		fputc(s->pkind[i], fp);
	}
	fwrite(s->ring, 1, s->ring_size, fp);
	fwrite(s->mem, 1, s->mem_len, fp);
	fwrite(s->script, 1, s->script_len, fp);
	fclose(fp);
	uvn_vq_drv_destroy(s->drv);
	free(s->ring);
}

static const uint16_t one_piece[1] = { 4096 };
static const uint8_t mapped[4] = { FZ_PIECE_MAPPED, FZ_PIECE_MAPPED, FZ_PIECE_MAPPED,
				   FZ_PIECE_MAPPED };

static void basic_chains(struct seed *s)
{
	struct uvn_sg sg[3];

	sg[0] = buf(s, 0, 64);
	add(s, sg, 1, 0);
	sg[0] = buf(s, 64, 32);
	sg[1] = buf(s, 128, 100);
	add(s, sg, 1, 1);
	sg[0] = buf(s, 256, 12);
	sg[1] = buf(s, 300, 1500);
	sg[2] = buf(s, 1900, 200);
	add(s, sg, 2, 1);
	s->brk = 2200;
}

static void seed_basic(bool packed, const char *dir)
{
	struct seed s;

	begin(&s, packed, 8, 0, one_piece, mapped, 1);
	basic_chains(&s);
	finish(&s, dir, "basic");
}

static void seed_unpop(bool packed, const char *dir)
{
	struct seed s;

	begin(&s, packed, packed ? 7 : 8, FZ_F_UNPOP, one_piece, mapped, 1);
	basic_chains(&s);
	finish(&s, dir, "unpop");
}

/* Indirect tables, the last one across two mapping pieces. */
static void seed_indirect(bool packed, const char *dir)
{
	const uint16_t pl[2] = { 4096, 4096 };
	struct uvn_sg sg[3];
	struct seed s;

	begin(&s, packed, 4, FZ_F_INDIRECT, pl, mapped, 2);
	s.brk = 3000;
	sg[0] = buf(&s, 0, 14);
	sg[1] = buf(&s, 100, 600);
	sg[2] = buf(&s, 800, 700);
	add(&s, sg, 1, 2);
	add(&s, sg, 2, 1);
	s.brk = 4096 - 24;
	add(&s, sg, 3, 0);
	finish(&s, dir, "indirect");
}

/* A buffer across two adjacent pieces, then one in a hole. */
static void seed_pieces(bool packed, const char *dir)
{
	const uint16_t pl[4] = { 2048, 256, 2048, 2048 };
	const uint8_t pk[4] = { FZ_PIECE_MAPPED, 0, FZ_PIECE_MAPPED, FZ_PIECE_MAPPED };
	struct uvn_sg sg[2];
	struct seed s;

	begin(&s, packed, 8, 0, pl, pk, 4);
	sg[0] = buf(&s, 100, 40);
	sg[1] = buf(&s, 2304 + 2000, 100); /* crosses into the fourth piece */
	add(&s, sg, 1, 1);
	sg[0] = buf(&s, 2048 + 16, 32);    /* in the hole */
	add(&s, sg, 0, 1);
	finish(&s, dir, "pieces");
}

static void seed_in_order(bool packed, const char *dir)
{
	struct uvn_sg sg[2];
	struct seed s;

	begin(&s, packed, 16, FZ_F_IN_ORDER | FZ_F_BATCH | FZ_F_EVENT_IDX | FZ_F_INDIRECT,
	      one_piece, mapped, 1);
	s.brk = 3072;
	for (unsigned i = 0; i < 6; i++) {
		sg[0] = buf(&s, 200 * i, 50);
		sg[1] = buf(&s, 200 * i + 64, 100);
		add(&s, sg, i % 2, 1 + (i % 3 == 0));
	}
	finish(&s, dir, "in_order");
}

/* Translations rewrite the descriptors: every third byte a ring offset. */
static void seed_toctou(bool packed, const char *dir)
{
	struct seed s;

	begin(&s, packed, 8, FZ_F_TOCTOU, one_piece, mapped, 1);
	basic_chains(&s);
	for (unsigned i = 0; i < 40; i++) {
		uint16_t where = (uint16_t)(i * 7 % 128);

		s.script[s.script_len++] = (uint8_t)where;
		s.script[s.script_len++] = (uint8_t)(where >> 8);
		s.script[s.script_len++] = (uint8_t)(0xff - i);
	}
	finish(&s, dir, "toctou");
}

/* A descriptor whose end wraps past 2^64 into the mapped first page. */
static void seed_edges(bool packed, const char *dir)
{
	struct uvn_sg sg[1];
	struct seed s;

	begin(&s, packed, 4, FZ_F_EDGES, one_piece, mapped, 1);
	sg[0] = buf(&s, 0, 16);
	add(&s, sg, 1, 0);
	uint64_t top = htole64(UINT64_MAX - 7);

	memcpy(s.ring, &top, 8); /* descriptor 0's address */
	finish(&s, dir, "edges");
}

/* Broken on purpose: split, a chain looping back to its head; packed, a
 * buffer id past the queue size. */
static void seed_broken(bool packed, const char *dir)
{
	struct uvn_sg sg[2];
	struct seed s;

	begin(&s, packed, 4, 0, one_piece, mapped, 1);
	sg[0] = buf(&s, 0, 16);
	sg[1] = buf(&s, 64, 16);
	add(&s, sg, 2, 0);
	if (packed) {
		struct vring_packed_desc *d = (void *)s.ring;

		d[1].id = htole16(9);
	} else {
		struct vring_desc *d = (void *)s.ring;

		d[1].flags = htole16(VRING_DESC_F_NEXT);
		d[1].next = htole16(0);
	}
	finish(&s, dir, packed ? "bad_id" : "loop");
}

static void seed_big(bool packed, const char *dir)
{
	struct uvn_sg sg[3];
	struct seed s;

	begin(&s, packed, packed ? 255 : 256, FZ_F_INDIRECT | FZ_F_EVENT_IDX, one_piece, mapped, 1);
	s.brk = 2048;
	for (unsigned i = 0; i < 40; i++) {
		unsigned n = 1 + i % 3;

		unsigned nout = i % (n + 1);

		for (unsigned k = 0; k < n; k++)
			sg[k] = buf(&s, (i * 37 + k * 11) % 1900, 1 + (i * 13 + k) % 120);
		add(&s, sg, nout, n - nout);
	}
	finish(&s, dir, "big");
}

/* Several rounds: split publishes two chains at a time, packed relaps. */
static void seed_rounds(bool packed, const char *dir)
{
	struct uvn_sg sg[2];
	struct seed s;

	begin(&s, packed, 4, FZ_F_EVENT_IDX | FZ_F_INDIRECT, one_piece, mapped, 1);
	s.rounds = 4;
	s.brk = 2048;
	for (unsigned i = 0; i < 4; i++) {
		sg[0] = buf(&s, 300 * i, 20);
		sg[1] = buf(&s, 300 * i + 100, 80);
		add(&s, sg, 1, 1);
	}
	if (!packed)
		s.visible_less = 2;
	for (unsigned i = 0; i < 16; i++)
		s.script[s.script_len++] = (uint8_t)(i % 3 == 2 ? 2 : i);
	finish(&s, dir, "rounds");
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s <split corpus dir> <packed corpus dir>\n", argv[0]);
		return 2;
	}
	for (int p = 0; p < 2; p++) {
		const char *dir = argv[1 + p];

		seed_basic(p, dir);
		seed_unpop(p, dir);
		seed_indirect(p, dir);
		seed_pieces(p, dir);
		seed_in_order(p, dir);
		seed_toctou(p, dir);
		seed_edges(p, dir);
		seed_broken(p, dir);
		seed_big(p, dir);
		seed_rounds(p, dir);
	}
	return 0;
}
