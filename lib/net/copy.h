/* SPDX-License-Identifier: MIT */
/*
 * A copy of guest-sized bytes (kilobytes) that keeps off the slow case of
 * REP MOVSB. glibc before 2.39 copies 2112 B .. 1 MB with REP MOVSB on
 * CPUs that report FSRM, and on AMD Zen 3/4 REP MOVSB runs 25-30 times
 * slower when (dst - src) mod 4096 is 1..15, and 2.5 times slower at
 * 16..31 (glibc bug 30994; bench/memcpy-alias.sh). Guest buffers put that
 * case on the hot path: a receive buffer starts with the 12-byte
 * virtio-net header, so a frame whose source lies at a page offset is
 * copied to a page offset 12 bytes further (docs/seeds.md, "Why zero-copy
 * loses with --dirty": 16 such copies per 64 KB frame). Such a copy goes
 * to memcpy in chunks short enough for glibc's vector loop, which does
 * not care where its ends lie. Any other copy is one memcpy.
 */
#ifndef UVN_NET_COPY_H
#define UVN_NET_COPY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Below glibc's smallest default REP MOVSB threshold (2112 B, with FSRM). */
#define UVN_COPY_CHUNK 2048u
/* (dst - src) mod 4096 below this (and not 0) is the slow distance. */
#define UVN_COPY_NEAR 64u

static inline void uvn_copy(void *dst, const void *src, size_t len)
{
	size_t dist = (size_t)(((uintptr_t)dst - (uintptr_t)src) & 4095u);

	if (len > UVN_COPY_CHUNK && dist - 1 < UVN_COPY_NEAR - 1) {
		size_t c = UVN_COPY_CHUNK;

		/* A length the compiler knows would be inlined as REP MOVSQ,
		 * as slow at these distances: let it not know. */
		__asm__("" : "+r"(c));
		while (len > c) {
			memcpy(dst, src, c);
			dst = (char *)dst + c;
			src = (const char *)src + c;
			len -= c;
		}
	}
	memcpy(dst, src, len);
}

#endif
