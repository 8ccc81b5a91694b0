/* SPDX-License-Identifier: MIT */
/* Scatter-gather copies between flat buffers and iovec arrays. */
#ifndef UVN_NET_IOV_H
#define UVN_NET_IOV_H

#include <stddef.h>
#include <string.h>
#include <sys/uio.h>

#include "net/copy.h"

/* Copy @len bytes at offset @off of the iovecs into @dst. @return bytes copied. */
static inline size_t uvn_iov_to_buf(const struct iovec *iov, unsigned n, size_t off, void *dst,
				    size_t len)
{
	size_t done = 0;

	for (unsigned i = 0; i < n && done < len; i++) {
		size_t l = iov[i].iov_len, c;

		if (off >= l) {
			off -= l;
			continue;
		}
		c = l - off < len - done ? l - off : len - done;
		uvn_copy((char *)dst + done, (const char *)iov[i].iov_base + off, c);
		done += c;
		off = 0;
	}
	return done;
}

/* Copy @len bytes from @src into the iovecs at offset @off. @return bytes copied. */
static inline size_t uvn_buf_to_iov(const struct iovec *iov, unsigned n, size_t off, const void *src,
				    size_t len)
{
	size_t done = 0;

	for (unsigned i = 0; i < n && done < len; i++) {
		size_t l = iov[i].iov_len, c;

		if (off >= l) {
			off -= l;
			continue;
		}
		c = l - off < len - done ? l - off : len - done;
		uvn_copy((char *)iov[i].iov_base + off, (const char *)src + done, c);
		done += c;
		off = 0;
	}
	return done;
}

/* Copy @len bytes from iovecs @src (from @soff) to iovecs @dst (from @doff). */
static inline size_t uvn_iov_to_iov(const struct iovec *dst, unsigned nd, size_t doff,
				    const struct iovec *src, unsigned ns, size_t soff, size_t len)
{
	unsigned di = 0, si = 0;
	size_t done = 0;

	while (di < nd && doff >= dst[di].iov_len)
		doff -= dst[di++].iov_len;
	while (si < ns && soff >= src[si].iov_len)
		soff -= src[si++].iov_len;
	while (done < len && di < nd && si < ns) {
		size_t dl = dst[di].iov_len - doff, sl = src[si].iov_len - soff;
		size_t c = dl < sl ? dl : sl;

		if (c > len - done)
			c = len - done;
		uvn_copy((char *)dst[di].iov_base + doff, (const char *)src[si].iov_base + soff, c);
		done += c;
		doff += c;
		soff += c;
		if (doff == dst[di].iov_len) {
			di++;
			doff = 0;
		}
		if (soff == src[si].iov_len) {
			si++;
			soff = 0;
		}
	}
	return done;
}

#endif
