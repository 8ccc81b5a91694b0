/* SPDX-License-Identifier: MIT */
/*
 * Public structs a program fills end in reserved words, room for later
 * fields (include/uvnet/). They must be zero: a later release can then
 * give a word a meaning whose zero is today's behaviour, and a program
 * that left garbage there learns it now, not then.
 */
#ifndef UVN_UTIL_ABI_H
#define UVN_UTIL_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

static inline bool uvn_reserved_zero(const uint64_t *r, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (r[i])
			return false;
	return true;
}

/* Is @cfg's reserved[] all zero? */
#define UVN_RESERVED_ZERO(cfg) \
	uvn_reserved_zero((cfg)->reserved, sizeof((cfg)->reserved) / sizeof((cfg)->reserved[0]))

#endif
