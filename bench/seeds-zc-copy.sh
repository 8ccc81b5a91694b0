#!/bin/bash
# The copy pattern of zero-copy guest TX with --dirty, without uvnetd
# (docs/seeds.md, "Why zero-copy loses with --dirty"): a thread on CPU 1
# writes a 64 KB frame (the sending guest) and reads the receive buffers (the
# receiving guest); then CPU 0 copies the frame into the buffers, either
# straight (zero-copy: the guest's buffers into the other guest's) or through
# a local 64 KB buffer first (copy mode), alternating frame by frame. Prints
# the median (p10, p90) time per frame of each. The defaults are 43 buffers
# of 1536 bytes; copies under 2112 bytes never use REP MOVSB.
# uvnet-perf's pair as the seeds suite runs it is
#   --piece 4096 --hdr 12 --seg 4096 --dst-stride 4096
# (B's adaptive buffers of 4 KB, the first starting with the 12-byte
# virtio-net header; A's 64 KB frame in 4 KB segments, which split the
# direct copy: each buffer gets 12 bytes, then 4084 bytes to buffer + 12).
#
# Usage: bench/seeds-zc-copy.sh [--clean] [--slots N] [--memfd] [--dst-offset B] [--dst-stride B]
#            [--piece B] [--hdr B] [--seg B] [--uvn-copy]
#   --clean        the source is not rewritten before each copy
#   --slots N      the sender cycles through N frames (default 1)
#   --memfd        the source is a shared memory file mapping, as guest memory is
#   --dst-offset, --dst-stride   where the receive buffers lie (default 0, 2048)
#   --piece B      bytes per receive buffer (default 1536)
#   --hdr B        header bytes at the start of the first buffer (default 0)
#   --seg B        the sender's segments: a direct copy splits at their ends (default 65536)
#   --uvn-copy     copy with uvn_copy() (lib/net/copy.h) instead of memcpy
# Needs a C compiler; builds into a temporary directory.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
DIRTY=1 SLOTS=1 MEMFD=0 DOFF=0 DSTRIDE=2048 PIECE=1536 HDR=0 SEG=65536 UVNCOPY=0
while (($#)); do
	case $1 in
	--clean) DIRTY=0; shift ;;
	--slots) SLOTS=$2; shift 2 ;;
	--memfd) MEMFD=1; shift ;;
	--dst-offset) DOFF=$2; shift 2 ;;
	--dst-stride) DSTRIDE=$2; shift 2 ;;
	--piece) PIECE=$2; shift 2 ;;
	--hdr) HDR=$2; shift 2 ;;
	--seg) SEG=$2; shift 2 ;;
	--uvn-copy) UVNCOPY=1; shift ;;
	-h | --help) sed -n '2,26p' "$0"; exit 0 ;;
	*) echo "unknown option $1" >&2; exit 2 ;;
	esac
done
WORK=$(mktemp -d /tmp/uvn-zc-copy.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
cat >"$WORK/zc_copy.c" <<'C'
/* The copy of zero-copy guest TX with --dirty, without uvnetd (bench/seeds-zc-copy.sh). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "net/copy.h"

#define FRAME 65536u
#define ITERS 3000

static uint8_t *src, *dst, *loc;
static size_t dst_len, dst_off, dst_stride = 2048, piece = 1536, hdr, seg = FRAME, npiece;
static int dirty = 1, nslot = 1, use_uvn;
static atomic_int turn, cur; /* turn 0: CPU 1 prepares; 1: CPU 0 copies */
static volatile uint64_t sink;

static void pin(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	pthread_setaffinity_np(pthread_self(), sizeof(s), &s);
}

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The two guests on CPU 1: the sender writes the frame, the receiver read its buffers. */
static void *guests(void *arg)
{
	(void)arg;
	pin(1);
	for (int i = 0; i < ITERS; i++) {
		uint64_t s = 0, v;

		while (atomic_load(&turn) != 0)
			;
		if (dirty)
			memset(src + (size_t)(i % nslot) * FRAME, i, FRAME);
		atomic_store(&cur, i % nslot);
		for (size_t k = 0; k + 8 <= dst_len; k += 8) {
			memcpy(&v, dst + k, 8);
			s += v;
		}
		sink += s;
		atomic_store(&turn, 1);
	}
	return NULL;
}

/* memcpy, or with --uvn-copy uvnetd's copy. */
static void cp(uint8_t *to, const uint8_t *from, size_t l)
{
	if (use_uvn)
		uvn_copy(to, from, l);
	else
		memcpy(to, from, l);
}

/* Frame bytes [o, o + l) to @to, split where the source's segments of @sl end. */
static void copy_segs(uint8_t *to, const uint8_t *from, size_t o, size_t l, size_t sl)
{
	while (l) {
		size_t c = sl - o % sl < l ? sl - o % sl : l;

		cp(to, from + o, c);
		to += c;
		o += c;
		l -= c;
	}
}

/* The frame into the receive buffers: the first after its header. */
static void pieces(const uint8_t *from, size_t sl)
{
	size_t o = 0;

	for (size_t p = 0; o < FRAME; p++) {
		size_t at = p ? 0 : hdr, l = piece - at < FRAME - o ? piece - at : FRAME - o;

		copy_segs(dst + dst_off + p * dst_stride + at, from, o, l, sl);
		o += l;
	}
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	static uint64_t t[2][ITERS];
	static const char *const name[2] = { "direct into the buffers (zero-copy)",
					     "via a local buffer (copy mode)" };
	unsigned n[2] = { 0, 0 };
	size_t src_len;
	pthread_t th;

	if (argc > 9) {
		dirty = atoi(argv[1]);
		nslot = atoi(argv[2]) > 0 ? atoi(argv[2]) : 1;
		dst_off = strtoul(argv[4], NULL, 0);
		dst_stride = strtoul(argv[5], NULL, 0);
		piece = strtoul(argv[6], NULL, 0);
		hdr = strtoul(argv[7], NULL, 0);
		seg = strtoul(argv[8], NULL, 0);
		use_uvn = argc > 9 && atoi(argv[9]);
		if (!piece || hdr >= piece || !seg)
			return 2;
	}
	npiece = (FRAME + hdr + piece - 1) / piece;
	src_len = (size_t)nslot * FRAME;
	dst_len = dst_off + npiece * (dst_stride > piece ? dst_stride : piece);
	if (argc > 3 && atoi(argv[3])) {
		int fd = memfd_create("guest", 0);

		if (fd < 0 || ftruncate(fd, (off_t)src_len))
			return 1;
		src = mmap(NULL, src_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (src == MAP_FAILED)
			return 1;
	} else {
		src = aligned_alloc(4096, src_len);
	}
	dst = aligned_alloc(4096, (dst_len + 4095) & ~(size_t)4095);
	loc = aligned_alloc(4096, FRAME);
	if (!src || !dst || !loc)
		return 1;
	memset(src, 1, src_len);
	memset(dst, 1, dst_len);
	memset(loc, 1, FRAME);
	pin(0);
	pthread_create(&th, NULL, guests, NULL);
	for (int i = 0; i < ITERS; i++) {
		int m = i & 1;
		const uint8_t *s;
		uint64_t t0;

		while (atomic_load(&turn) != 1)
			;
		s = src + (size_t)atomic_load(&cur) * FRAME;
		t0 = now_ns();
		if (m) {
			copy_segs(loc, s, 0, FRAME, seg);
			pieces(loc, FRAME);
		} else {
			pieces(s, seg);
		}
		t[m][n[m]++] = now_ns() - t0;
		atomic_store(&turn, 0);
	}
	pthread_join(th, NULL);
	for (int m = 0; m < 2; m++) {
		qsort(t[m], n[m], sizeof(t[m][0]), cmp);
		printf("%s: median %.1f us (p10 %.1f, p90 %.1f) per 64 KB frame\n", name[m],
		       t[m][n[m] / 2] / 1e3, t[m][n[m] / 10] / 1e3, t[m][n[m] * 9 / 10] / 1e3);
	}
	return 0;
}
C
${CC:-cc} -O2 -Wall -Wextra -pthread -I "$HERE/../lib" -o "$WORK/zc_copy" "$WORK/zc_copy.c"
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1 /proc/loadavg): dirty=$DIRTY slots=$SLOTS memfd=$MEMFD dst offset $DOFF stride $DSTRIDE piece $PIECE hdr $HDR seg $SEG uvn_copy $UVNCOPY${GLIBC_TUNABLES:+ ($GLIBC_TUNABLES)}"
"$WORK/zc_copy" "$DIRTY" "$SLOTS" "$MEMFD" "$DOFF" "$DSTRIDE" "$PIECE" "$HDR" "$SEG" "$UVNCOPY"
