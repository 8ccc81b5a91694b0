/* SPDX-License-Identifier: MIT */
/* MAC addresses as people and QEMU write them: aa:bb:cc:dd:ee:ff. */
#ifndef UVN_UTIL_MAC_H
#define UVN_UTIL_MAC_H

#include <errno.h>
#include <stdint.h>

static inline int uvn_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)(c | 0x20);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* @s exactly: six bytes of two hex digits each (either case), joined by
 * colons. @return 0 (into @mac) or -EINVAL */
static inline int uvn_mac_parse(const char *s, uint8_t mac[6])
{
	for (int i = 0; i < 6; i++) {
		int hi = uvn_hexval(*s++), lo = hi < 0 ? -1 : uvn_hexval(*s++);

		if (lo < 0 || *s != (i == 5 ? 0 : ':'))
			return -EINVAL;
		s += i < 5;
		mac[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

#endif
