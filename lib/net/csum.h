/* SPDX-License-Identifier: MIT */
/* The Internet checksum (RFC 1071) over scattered data. */
#ifndef UVN_NET_CSUM_H
#define UVN_NET_CSUM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* Ones-complement sum of @len bytes at offset @off of the iovecs, folded to 16 bits. */
uint16_t uvn_csum_iov(const struct iovec *iov, unsigned n, size_t off, size_t len);

/* Ones-complement sum of a flat buffer, folded to 16 bits (network byte order sum). */
uint16_t uvn_csum_buf(const void *buf, size_t len);

#endif
