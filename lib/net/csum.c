/* SPDX-License-Identifier: MIT */
/*
 * The Internet checksum. Bytes are summed as big-endian 16-bit words; a
 * segment boundary at an odd offset swaps the following bytes' positions,
 * which the running "odd" state accounts for.
 */
#include "net/csum.h"

static uint64_t add_bytes(uint64_t sum, const uint8_t *p, size_t len, int *odd)
{
	if (*odd && len) {
		sum += *p++;
		len--;
		*odd = 0;
	}
	while (len >= 2) {
		sum += (uint64_t)p[0] << 8 | p[1];
		p += 2;
		len -= 2;
	}
	if (len) {
		sum += (uint64_t)p[0] << 8;
		*odd = 1;
	}
	return sum;
}

static uint16_t fold(uint64_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

uint16_t uvn_csum_iov(const struct iovec *iov, unsigned n, size_t off, size_t len)
{
	uint64_t sum = 0;
	int odd = 0;

	for (unsigned i = 0; i < n && len; i++) {
		size_t l = iov[i].iov_len, c;

		if (off >= l) {
			off -= l;
			continue;
		}
		c = l - off < len ? l - off : len;
		sum = add_bytes(sum, (const uint8_t *)iov[i].iov_base + off, c, &odd);
		len -= c;
		off = 0;
		/* keep the 64-bit accumulator far from overflow on huge frames */
		sum = (sum & 0xffffffff) + (sum >> 32);
	}
	return fold(sum);
}

uint16_t uvn_csum_buf(const void *buf, size_t len)
{
	int odd = 0;

	return fold(add_bytes(0, buf, len, &odd));
}
