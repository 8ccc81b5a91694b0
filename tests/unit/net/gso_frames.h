/* SPDX-License-Identifier: MIT */
/*
 * Test helper: GSO frames as a sender's stack builds them (TCPv4/v6,
 * UDP for USO, optional VLAN tag, IPv4 and TCP options, NEEDS_CSUM with
 * the pseudo-header sum in the checksum field), and a checker for the
 * segments made from them, with its own reference checksum (not
 * lib/net/csum.c, so the two check each other).
 */
#ifndef UVN_TEST_GSO_FRAMES_H
#define UVN_TEST_GSO_FRAMES_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <endian.h>

#include <linux/virtio_net.h>

#include "net/hdr.h"

struct tf_opts {
	bool ipv6, udp, vlan;
	unsigned ip_opt_words;  /* IPv4 options, 4-byte words */
	unsigned tcp_opt_words; /* TCP options, 4-byte words */
	uint8_t tcp_flags;      /* 0: ACK|PSH */
	uint16_t mss;
	uint16_t ip_id;
	uint32_t seq;
	uint8_t seed;           /* payload pattern */
	const uint8_t *addrs;   /* IPv4 source and destination (8 bytes), or NULL: 198.18.0.1 -> .2 */
	const uint8_t *macs;    /* destination and source MAC (12 bytes), or NULL */
	uint16_t dport;         /* 0: 5201 */
};

struct tf_layout {
	uint32_t l3, l4, hdr_len, len;
};

static inline uint32_t tf_sum(const uint8_t *p, uint32_t len)
{
	uint32_t s = 0;

	for (uint32_t i = 0; i + 1 < len; i += 2)
		s += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (len & 1)
		s += (uint32_t)p[len - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return s;
}

static inline uint32_t tf_add(uint32_t a, uint32_t b)
{
	a += b;
	while (a >> 16)
		a = (a & 0xffff) + (a >> 16);
	return a;
}

static inline void tf_put16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline uint16_t tf_get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t tf_get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Pseudo-header sum of the frame at @f for an L4 length @l4len. */
static inline uint32_t tf_pseudo(const uint8_t *f, const struct tf_layout *l, bool ipv6, uint8_t proto,
				 uint32_t l4len)
{
	uint32_t s = ipv6 ? tf_sum(f + l->l3 + 8, 32) : tf_sum(f + l->l3 + 12, 8);

	return tf_add(tf_add(s, proto), l4len);
}

/* Build the frame into @f; @return its layout; @h gets the sender's header. */
static inline struct tf_layout tf_build(uint8_t *f, uint32_t payload, const struct tf_opts *o,
					struct virtio_net_hdr_v1 *h)
{
	struct tf_layout l;
	uint32_t l4hdr = o->udp ? 8 : 20 + 4 * o->tcp_opt_words, ihl = 20 + 4 * o->ip_opt_words;
	uint8_t proto = o->udp ? 17 : 6, *ip, *th;

	memcpy(f, o->macs ? o->macs : (const uint8_t *)"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01", 12);
	l.l3 = 14;
	if (o->vlan) {
		tf_put16(f + 12, 0x8100);
		tf_put16(f + 14, 42);
		l.l3 = 18;
	}
	tf_put16(f + l.l3 - 2, o->ipv6 ? 0x86dd : 0x0800);
	ip = f + l.l3;
	if (o->ipv6) {
		ihl = 40;
		memset(ip, 0, 40);
		ip[0] = 0x60;
		ip[1] = 0x0a; /* traffic class / flow label bits, copied as they are */
		ip[6] = proto;
		ip[7] = 64;
		for (int i = 0; i < 16; i++) {
			ip[8 + i] = (uint8_t)(0x20 + i);
			ip[24 + i] = (uint8_t)(0x40 + i);
		}
	} else {
		memset(ip, 0, ihl);
		ip[0] = (uint8_t)(0x40 | ihl / 4);
		tf_put16(ip + 4, o->ip_id);
		ip[6] = 0x40; /* DF */
		ip[8] = 64;
		ip[9] = proto;
		memcpy(ip + 12, o->addrs ? o->addrs : (const uint8_t *)"\xc6\x12\x00\x01\xc6\x12\x00\x02", 8);
		for (uint32_t i = 20; i < ihl; i++)
			ip[i] = 1; /* NOP options */
	}
	l.l4 = l.l3 + ihl;
	l.hdr_len = l.l4 + l4hdr;
	l.len = l.hdr_len + payload;
	if (o->ipv6)
		tf_put16(ip + 4, l.len - l.l3 - 40);
	else
		tf_put16(ip + 2, l.len - l.l3);
	th = f + l.l4;
	memset(th, 0, l4hdr);
	tf_put16(th, 40000);
	tf_put16(th + 2, o->dport ? o->dport : 5201);
	if (o->udp) {
		tf_put16(th + 4, l.len - l.l4);
	} else {
		th[4] = (uint8_t)(o->seq >> 24);
		th[5] = (uint8_t)(o->seq >> 16);
		th[6] = (uint8_t)(o->seq >> 8);
		th[7] = (uint8_t)o->seq;
		th[12] = (uint8_t)((l4hdr / 4) << 4);
		th[13] = o->tcp_flags ? o->tcp_flags : 0x18;
		tf_put16(th + 14, 512);
		for (uint32_t i = 20; i < l4hdr; i++)
			th[i] = 1;
	}
	for (uint32_t i = 0; i < payload; i++)
		f[l.hdr_len + i] = (uint8_t)(o->seed + i * 13 + (i >> 8));
	if (!o->ipv6)
		tf_put16(ip + 10, ~tf_sum(ip, ihl) & 0xffff);
	tf_put16(th + (o->udp ? 6 : 16), tf_pseudo(f, &l, o->ipv6, proto, l.len - l.l4));
	memset(h, 0, sizeof(*h));
	h->flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	h->gso_type = o->udp ? VIRTIO_NET_HDR_GSO_UDP_L4
			     : o->ipv6 ? VIRTIO_NET_HDR_GSO_TCPV6 : VIRTIO_NET_HDR_GSO_TCPV4;
	h->gso_size = htole16(o->mss);
	h->csum_start = htole16((uint16_t)l.l4);
	h->csum_offset = htole16(o->udp ? 6 : 16);
	return l;
}

/*
 * Check segment @i of @n (frame @s, @slen bytes) against the original frame
 * @f: headers as expected, payload its slice, checksums valid (with
 * @partial: the pseudo-header sum, which completing makes valid).
 * @return NULL, or what is wrong
 */
static inline const char *tf_check_seg(const uint8_t *s, uint32_t slen, const uint8_t *f,
				       const struct tf_layout *l, const struct tf_opts *o, uint32_t i,
				       uint32_t n, bool partial)
{
	uint32_t off = l->hdr_len + i * o->mss, plen = l->len - off < o->mss ? l->len - off : o->mss;
	uint32_t l4len = slen - l->l4, co = o->udp ? 6 : 16, sum;
	const uint8_t *ip = s + l->l3, *th = s + l->l4;
	uint8_t flags = o->tcp_flags ? o->tcp_flags : 0x18;

	if (slen != l->hdr_len + plen)
		return "segment length";
	if (memcmp(s, f, l->l3))
		return "Ethernet header";
	if (memcmp(s + l->hdr_len, f + off, plen))
		return "payload";
	if (o->ipv6) {
		if (tf_get16(ip + 4) != slen - l->l3 - 40 || memcmp(ip, f + l->l3, 4) ||
		    memcmp(ip + 6, f + l->l3 + 6, 34))
			return "IPv6 header";
	} else {
		uint32_t ihl = l->l4 - l->l3;

		if (tf_get16(ip + 2) != slen - l->l3)
			return "IPv4 total length";
		if (tf_get16(ip + 4) != (uint16_t)(o->ip_id + i))
			return "IPv4 ID";
		if (tf_sum(ip, ihl) != 0xffff)
			return "IPv4 header checksum";
		if (memcmp(ip + 6, f + l->l3 + 6, 4) || memcmp(ip + 12, f + l->l3 + 12, ihl - 12))
			return "IPv4 header";
	}
	if (o->udp) {
		if (tf_get16(th + 4) != l4len)
			return "UDP length";
	} else {
		uint8_t want = flags;

		if (i + 1 < n)
			want &= (uint8_t)~0x09; /* FIN, PSH on the last only */
		if (i > 0)
			want &= (uint8_t)~0x80; /* CWR on the first only */
		if (tf_get32(th + 4) != o->seq + i * o->mss)
			return "TCP sequence";
		if (th[13] != want)
			return "TCP flags";
		if (memcmp(th + 14, f + l->l4 + 14, 2) || memcmp(th + 18, f + l->l4 + 18, l->hdr_len - l->l4 - 18))
			return "TCP header";
	}
	sum = tf_pseudo(s, l, o->ipv6, o->udp ? 17 : 6, l4len);
	if (partial) {
		if (tf_get16(th + co) != sum)
			return "partial checksum is not the pseudo-header sum";
	} else if (tf_add(sum, tf_sum(th, l4len)) != 0xffff) {
		return "L4 checksum";
	}
	return NULL;
}

#endif
