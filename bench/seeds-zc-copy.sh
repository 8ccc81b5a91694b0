#!/bin/bash
# The copy pattern of zero-copy guest TX with --dirty, without uvnetd
# (docs/seeds.md, "Why zero-copy loses with --dirty"): a thread on CPU 1
# writes a 64 KB frame (the sending guest) and reads 43 receive buffers (the
# receiving guest); then CPU 0 copies the frame into the buffers, either
# straight in 1536-byte pieces (zero-copy: the guest's buffers into the other
# guest's) or through a local 64 KB buffer first (copy mode), alternating
# frame by frame. Prints the median (p10, p90) time per frame of each.
#
# Usage: bench/seeds-zc-copy.sh [--clean] [--slots N] [--memfd] [--dst-offset B] [--dst-stride B]
#   --clean        the source is not rewritten before each copy
#   --slots N      the sender cycles through N frames (default 1)
#   --memfd        the source is a shared memory file mapping, as guest memory is
#   --dst-offset, --dst-stride   where the receive buffers lie (default 0, 2048)
# Needs a C compiler; builds into a temporary directory.
set -euo pipefail
DIRTY=1 SLOTS=1 MEMFD=0 DOFF=0 DSTRIDE=2048
while (($#)); do
	case $1 in
	--clean) DIRTY=0; shift ;;
	--slots) SLOTS=$2; shift 2 ;;
	--memfd) MEMFD=1; shift ;;
	--dst-offset) DOFF=$2; shift 2 ;;
	--dst-stride) DSTRIDE=$2; shift 2 ;;
	-h | --help) sed -n '2,16p' "$0"; exit 0 ;;
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

#define FRAME 65536u
#define PIECE 1536u
#define NPIECE ((FRAME + PIECE - 1) / PIECE)
#define ITERS 3000

static uint8_t *src, *dst, *loc;
static size_t dst_len, dst_off, dst_stride = 2048;
static int dirty = 1, nslot = 1;
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

static void pieces(const uint8_t *from)
{
	for (unsigned p = 0; p < NPIECE; p++) {
		size_t o = (size_t)p * PIECE, l = FRAME - o < PIECE ? FRAME - o : PIECE;

		memcpy(dst + dst_off + p * dst_stride, from + o, l);
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
	static const char *const name[2] = { "direct, 1536-B pieces (zero-copy)",
					     "via a local buffer (copy mode)" };
	unsigned n[2] = { 0, 0 };
	size_t src_len;
	pthread_t th;

	if (argc > 5) {
		dirty = atoi(argv[1]);
		nslot = atoi(argv[2]) > 0 ? atoi(argv[2]) : 1;
		dst_off = strtoul(argv[4], NULL, 0);
		dst_stride = strtoul(argv[5], NULL, 0);
	}
	src_len = (size_t)nslot * FRAME;
	dst_len = dst_off + NPIECE * (dst_stride > PIECE ? dst_stride : PIECE);
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
			memcpy(loc, s, FRAME);
			pieces(loc);
		} else {
			pieces(s);
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
${CC:-cc} -O2 -Wall -Wextra -pthread -o "$WORK/zc_copy" "$WORK/zc_copy.c"
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1 /proc/loadavg): dirty=$DIRTY slots=$SLOTS memfd=$MEMFD dst offset $DOFF stride $DSTRIDE"
"$WORK/zc_copy" "$DIRTY" "$SLOTS" "$MEMFD" "$DOFF" "$DSTRIDE"
