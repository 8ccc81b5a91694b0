#!/bin/bash
# How fast glibc's memcpy is on this CPU against where the source and the
# destination lie in their pages: the cause of zero-copy's --dirty loss
# (docs/seeds.md, "Why zero-copy loses with --dirty"). For each pair of page
# offsets it times copies of SIZE bytes between two buffers in cache, once
# with glibc's own choice (REP MOVSB from 2112 bytes up to 1 MB on this
# glibc) and once with REP MOVSB turned off by the tunable
# glibc.cpu.x86_rep_movsb_threshold (the vector loop), and through uvnet's
# uvn_copy() (lib/net/copy.h: the slow distances in chunks of 2 KB). Prints
# ns per copy and GB/s, medians of 201 batches of 32 copies, on CPU 0.
#
# Usage: bench/memcpy-alias.sh [--size N] [--pairs "SRC:DST ..."]
#   --size N        bytes per copy (default 4084: a 4 KB mergeable buffer past its header)
#   --pairs LIST    page offsets of source and destination (default: aligned,
#                   the destination or the source 12 bytes in, both, and some more)
# Needs a C compiler; builds into a temporary directory.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SIZE=4084 PAIRS="0:0 0:12 12:0 12:12 0:1 0:16 0:32 0:48 0:63 0:64 0:76 0:2048 0:2060 52:0 0:52 64:128"
while (($#)); do
	case $1 in
	--size) SIZE=$2; shift 2 ;;
	--pairs) PAIRS=$2; shift 2 ;;
	-h | --help) sed -n '2,16p' "$0"; exit 0 ;;
	*) echo "unknown option $1" >&2; exit 2 ;;
	esac
done
WORK=$(mktemp -d /tmp/uvn-memcpy-alias.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
cat >"$WORK/alias.c" <<'C'
/* memcpy time against the page offsets of source and destination (bench/memcpy-alias.sh). */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "net/copy.h"

#define BATCH 32
#define NBATCH 201

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void *uvn(void *dst, const void *src, size_t len)
{
	uvn_copy(dst, src, len);
	return dst;
}

/* The copy goes through a pointer the compiler cannot see through. */
static void *(*volatile copy)(void *, const void *, size_t) = memcpy;

int main(int argc, char **argv)
{
	size_t size = strtoul(argv[1], NULL, 0);

	if (getenv("USE_UVN_COPY"))
		copy = uvn;
	uint8_t *a = aligned_alloc(4096, size + 8192), *b = aligned_alloc(4096, size + 8192);
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(0, &s);
	sched_setaffinity(0, sizeof(s), &s);
	if (!a || !b)
		return 1;
	memset(a, 1, size + 8192);
	memset(b, 2, size + 8192);
	for (int i = 2; i < argc; i++) {
		char *end;
		size_t so = strtoul(argv[i], &end, 0) & 4095, doff = strtoul(end + 1, NULL, 0) & 4095;
		const uint8_t *src = a + so;
		uint8_t *dst = b + doff;
		double t[NBATCH];

		for (int k = 0; k < NBATCH; k++) {
			uint64_t t0 = now_ns();

			for (int j = 0; j < BATCH; j++)
				copy(dst, src, size);
			t[k] = (double)(now_ns() - t0) / BATCH;
		}
		qsort(t, NBATCH, sizeof(t[0]), cmp);
		printf("%zu:%zu %zu %9.1f %7.1f\n", so, doff, (doff - so) & 4095, t[NBATCH / 2],
		       size / t[NBATCH / 2]);
	}
	return 0;
}
C
${CC:-cc} -O2 -Wall -Wextra -I "$HERE/../lib" -o "$WORK/alias" "$WORK/alias.c"
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1 /proc/loadavg), $(ldd --version | head -n 1 | awk '{print $NF}'), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
echo "# memcpy of $SIZE B in cache on CPU 0: ns per copy (GB/s), median of 201 batches of 32"
"$WORK/alias" "$SIZE" $PAIRS >"$WORK/glibc"
GLIBC_TUNABLES=glibc.cpu.x86_rep_movsb_threshold=0x10000000 "$WORK/alias" "$SIZE" $PAIRS >"$WORK/vec"
USE_UVN_COPY=1 "$WORK/alias" "$SIZE" $PAIRS >"$WORK/uvn"
printf '%-17s | %-14s | %-25s | %-25s | %s\n' "page offsets" "(dst-src)&4095" "glibc memcpy" "no REP MOVSB (tunable)" "uvn_copy()"
paste "$WORK/glibc" "$WORK/vec" "$WORK/uvn" | awk '{printf "src %-4s dst %-4s | %-14s | %8.1f ns (%5.1f GB/s) | %8.1f ns (%5.1f GB/s) | %8.1f ns (%5.1f GB/s)\n", substr($1, 1, index($1, ":") - 1), substr($1, index($1, ":") + 1), $2, $3, $4, $7, $8, $11, $12}'
