/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "net/csum.h"
#include "net/frame.h"

static void put16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* Ethernet and IPv4 for an IP packet of @size - 14 bytes (at most 65535). */
static void l2_l3(uint8_t *b, const struct uvn_frame_addr *a, uint32_t size, uint8_t proto)
{
	uint32_t ip_len = size - 14 > 65535 ? 65535 : size - 14;

	memcpy(b, a->dst, 6);
	memcpy(b + 6, a->src, 6);
	b[12] = 0x08;
	b[13] = 0x00;
	memset(b + 14, 0, 20);
	b[14] = 0x45;
	put16(b + 16, ip_len);
	b[20] = proto == 6 ? 0x40 : 0; /* TCP: don't fragment */
	b[22] = 64;
	b[23] = proto;
	memcpy(b + 26, "\xc6\x12\x00\x01\xc6\x12\x00\x02", 8); /* 198.18.0.1 -> .2 */
	put16(b + 34, a->sport);
	put16(b + 36, a->dport);
}

void uvn_frame_udp4(uint8_t *b, const struct uvn_frame_addr *a, uint32_t size)
{
	l2_l3(b, a, size, 17);
	put16(b + 38, ((uint32_t)b[16] << 8 | b[17]) - 20);
	b[40] = b[41] = 0; /* no UDP checksum */
}

void uvn_frame_tcp4(uint8_t *b, const struct uvn_frame_addr *a, uint32_t size)
{
	uint8_t *th = b + 34;
	uint32_t sum;

	l2_l3(b, a, size, 6);
	memset(th + 4, 0, 16);
	th[12] = 5 << 4; /* data offset: 20 bytes */
	th[13] = 0x18;   /* ACK, PSH */
	put16(th + 14, 0xffff);
	sum = uvn_csum_buf(b + 26, 8) + 6u + (((uint32_t)b[16] << 8 | b[17]) - 20);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	put16(th + 16, sum);
}

void uvn_frame_ipv4_csum(uint8_t *b)
{
	b[24] = b[25] = 0;
	put16(b + 24, (uint16_t)~uvn_csum_buf(b + 14, 20));
}
