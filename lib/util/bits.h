/* SPDX-License-Identifier: MIT */
/*
 * Feature bits, as every layer tests them: virtio device features,
 * vhost-user protocol features, backend features. One helper for all.
 */
#ifndef UVN_UTIL_BITS_H
#define UVN_UTIL_BITS_H

#include <stdbool.h>
#include <stdint.h>

/* Bit @bit (0..63) of @features. */
static inline bool uvn_has_feature(uint64_t features, unsigned bit)
{
	return (features >> bit) & 1;
}

#endif
