/* SPDX-License-Identifier: MIT */
/*
 * Software offloads. A GSO frame is one set of headers followed by a long
 * payload; segment i repeats the headers with the lengths, IPv4 ID, TCP
 * sequence and flags of its own slice (what Linux's tcp_gso_segment() and
 * __udp_gso_segment() do for an skb), and gets its own checksums.
 */
#include <endian.h>
#include <linux/if_ether.h>
#include <netinet/in.h>
#include <string.h>

#include "net/csum.h"
#include "net/gso.h"
#include "util/bits.h"

#define TCP_CSUM_OFF 16
#define UDP_CSUM_OFF 6
#define TCP_FIN 0x01
#define TCP_PSH 0x08
#define TCP_CWR 0x80

static const char *const errstr[UVN_GSO_E__COUNT] = {
	[UVN_GSO_OK] = "ok",
	[UVN_GSO_E_TYPE] = "GSO type unsupported or not the frame's protocol",
	[UVN_GSO_E_HDR] = "GSO frame headers malformed or truncated",
	[UVN_GSO_E_LEN] = "IP length disagrees with the frame",
	[UVN_GSO_E_CSUM] = "checksum offsets not the L4 checksum",
	[UVN_GSO_E_SIZE] = "GSO segment size 0 or out of range",
};

const char *uvn_gso_strerror(int err)
{
	return err >= 0 && err < UVN_GSO_E__COUNT ? errstr[err] : "unknown GSO error";
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

/* Ones-complement addition of folded sums. */
static uint32_t add(uint32_t a, uint32_t b)
{
	uint64_t s = (uint64_t)a + b;

	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint32_t)s;
}

/* Network layer: IPv4 or IPv6 without extension headers. Sets l4_off,
 * ipv6 and the pseudo-header sum; @return the L4 protocol or -err. */
static int parse_l3(struct uvn_gso *g, uint32_t have, uint32_t frame_len, uint16_t ethertype)
{
	const uint8_t *ip = g->hdr + g->l3_off;
	uint32_t l3 = g->l3_off;

	if (ethertype == ETH_P_IP) {
		uint32_t ihl;

		if (g->type == VIRTIO_NET_HDR_GSO_TCPV6)
			return -UVN_GSO_E_TYPE;
		if (have < l3 + 20 || ip[0] >> 4 != 4)
			return -UVN_GSO_E_HDR;
		ihl = (ip[0] & 0xfu) * 4;
		if (ihl < 20 || l3 + ihl > have)
			return -UVN_GSO_E_HDR;
		if (get16(ip + 2) != frame_len - l3)
			return -UVN_GSO_E_LEN;
		if (get16(ip + 6) & 0x3fff) /* MF or a fragment offset: not a whole datagram */
			return -UVN_GSO_E_HDR;
		g->ipv6 = false;
		g->l4_off = (uint16_t)(l3 + ihl);
		g->pseudo = add(uvn_csum_buf(ip + 12, 8), ip[9]);
		return ip[9];
	}
	if (ethertype == ETH_P_IPV6) {
		if (g->type == VIRTIO_NET_HDR_GSO_TCPV4)
			return -UVN_GSO_E_TYPE;
		if (have < l3 + 40 || ip[0] >> 4 != 6)
			return -UVN_GSO_E_HDR;
		/* A jumbogram (length 0) or a length that lies. */
		if (get16(ip + 4) != frame_len - l3 - 40)
			return -UVN_GSO_E_LEN;
		g->ipv6 = true;
		g->l4_off = (uint16_t)(l3 + 40);
		g->pseudo = add(uvn_csum_buf(ip + 8, 32), ip[6]);
		/* Extension headers are not followed: the next header must be L4. */
		return ip[6];
	}
	return -UVN_GSO_E_TYPE;
}

/* Transport layer; @return its header length and the checksum offset, or -err. */
static int parse_l4(struct uvn_gso *g, uint32_t have, int proto, uint16_t *csum_off)
{
	const uint8_t *l4 = g->hdr + g->l4_off;
	uint32_t len;

	if (g->type == VIRTIO_NET_HDR_GSO_UDP_L4) {
		if (proto != IPPROTO_UDP)
			return -UVN_GSO_E_TYPE;
		if ((uint32_t)g->l4_off + 8 > have)
			return -UVN_GSO_E_HDR;
		*csum_off = UDP_CSUM_OFF;
		g->cwr = false;
		return 8;
	}
	if (proto != IPPROTO_TCP)
		return -UVN_GSO_E_TYPE;
	if ((uint32_t)g->l4_off + 20 > have)
		return -UVN_GSO_E_HDR;
	len = (uint32_t)(l4[12] >> 4) * 4;
	if (len < 20 || g->l4_off + len > have)
		return -UVN_GSO_E_HDR;
	*csum_off = TCP_CSUM_OFF;
	g->cwr = l4[13] & TCP_CWR;
	return (int)len;
}

int uvn_gso_parse(const struct uvn_pkt *p, struct uvn_gso *g)
{
	const struct virtio_net_hdr_v1 *h = &p->vnet;
	uint32_t have = p->len < UVN_GSO_MAX_HDR ? p->len : UVN_GSO_MAX_HDR;
	uint16_t ethertype, csum_off = 0;
	int proto, l4len;

	g->type = h->gso_type & (uint8_t)~VIRTIO_NET_HDR_GSO_ECN;
	if (g->type != VIRTIO_NET_HDR_GSO_TCPV4 && g->type != VIRTIO_NET_HDR_GSO_TCPV6 &&
	    g->type != VIRTIO_NET_HDR_GSO_UDP_L4)
		return UVN_GSO_E_TYPE;
	if (!uvn_hdr_needs_csum(h))
		return UVN_GSO_E_CSUM;
	g->mss = le16toh(h->gso_size);
	if (!g->mss)
		return UVN_GSO_E_SIZE;
	/* One copy of the headers; nothing below reads the frame again. */
	if (have < UVN_ETH_HLEN || uvn_pkt_read(p, 0, g->hdr, have) != have)
		return UVN_GSO_E_HDR;
	ethertype = get16(g->hdr + 12);
	g->l3_off = UVN_ETH_HLEN;
	if (ethertype == ETH_P_8021Q || ethertype == ETH_P_8021AD) {
		if (have < UVN_ETH_HLEN + 4)
			return UVN_GSO_E_HDR;
		ethertype = get16(g->hdr + 16);
		g->l3_off += 4;
	}
	proto = parse_l3(g, have, p->len, ethertype);
	if (proto < 0)
		return -proto;
	l4len = parse_l4(g, have, proto, &csum_off);
	if (l4len < 0)
		return -l4len;
	/* The header the sender asked for must be the L4 checksum we found. */
	if (le16toh(h->csum_start) != g->l4_off || le16toh(h->csum_offset) != csum_off)
		return UVN_GSO_E_CSUM;
	g->hdr_len = (uint16_t)(g->l4_off + l4len);
	g->payload = p->len - g->hdr_len;
	/* Every segment must be an IP packet (IPv6: a payload) of at most 64 KB. */
	if ((uint32_t)g->hdr_len - g->l4_off + g->mss + (g->ipv6 ? 0 : g->l4_off - g->l3_off) > 65535)
		return UVN_GSO_E_SIZE;
	g->nsegs = g->payload ? (g->payload + g->mss - 1) / g->mss : 1;
	if (g->nsegs > UVN_GSO_MAX_SEGS)
		return UVN_GSO_E_SIZE;
	return UVN_GSO_OK;
}

/*
 * Virtio-net, "Processing of Incoming Packets": the device MUST NOT set a
 * GSO type the driver did not negotiate. The feature bits say which IP
 * version each may carry (GUEST_USO4: "USOv4 packets"), so an IPv6 UDP_L4
 * frame needs GUEST_USO6 even where the MUST NOT names both bits; a TCP
 * frame that needs segmenting with ECN set goes only to a driver with
 * GUEST_ECN; and every GSO type depends on GUEST_CSUM (its frames carry a
 * partial checksum).
 */
bool uvn_gso_type_ok(uint64_t features, uint8_t gso_type, unsigned ip_version)
{
	uint8_t type = gso_type & (uint8_t)~VIRTIO_NET_HDR_GSO_ECN;
	bool ecn = gso_type & VIRTIO_NET_HDR_GSO_ECN, ok;

	if (gso_type == VIRTIO_NET_HDR_GSO_NONE)
		return true;
	if ((ip_version != 4 && ip_version != 6) ||
	    !uvn_has_feature(features, VIRTIO_NET_F_GUEST_CSUM))
		return false;
	switch (type) {
	case VIRTIO_NET_HDR_GSO_TCPV4:
		ok = ip_version == 4 && uvn_has_feature(features, VIRTIO_NET_F_GUEST_TSO4);
		break;
	case VIRTIO_NET_HDR_GSO_TCPV6:
		ok = ip_version == 6 && uvn_has_feature(features, VIRTIO_NET_F_GUEST_TSO6);
		break;
	case VIRTIO_NET_HDR_GSO_UDP:
		ok = !ecn && uvn_has_feature(features, VIRTIO_NET_F_GUEST_UFO);
		break;
	case VIRTIO_NET_HDR_GSO_UDP_L4:
		ok = !ecn && uvn_has_feature(features, ip_version == 6 ? VIRTIO_NET_F_GUEST_USO6
								       : VIRTIO_NET_F_GUEST_USO4);
		break;
	default:
		return false; /* ECN without a type, or unknown */
	}
	return ok && (!ecn || uvn_has_feature(features, VIRTIO_NET_F_GUEST_ECN));
}

unsigned uvn_gso_ip_version(const uint8_t *frame, uint32_t len)
{
	uint16_t et;

	if (len < UVN_ETH_HLEN)
		return 0;
	et = get16(frame + 12);
	if (et == ETH_P_8021Q || et == ETH_P_8021AD) {
		if (len < UVN_ETH_HLEN + 4)
			return 0;
		et = get16(frame + 16);
	}
	return et == ETH_P_IP ? 4 : et == ETH_P_IPV6 ? 6 : 0;
}

bool uvn_gso_fits_mtu(const struct uvn_gso *g, uint32_t len, uint32_t mtu)
{
	return len <= mtu + UVN_ETH_HLEN || (uint32_t)(g->hdr_len - g->l3_off) + g->mss <= mtu;
}

bool uvn_eth_fits_mtu(const uint8_t *eth, uint32_t len, uint32_t mtu)
{
	uint16_t type = get16(eth + 12);
	bool tagged = type == ETH_P_8021Q || type == ETH_P_8021AD;

	return len <= mtu + UVN_ETH_HLEN + (tagged ? 4 : 0);
}

bool uvn_gso_guest_ok(const struct uvn_gso *g, uint64_t features)
{
	return uvn_gso_type_ok(features, (uint8_t)(g->type | (g->cwr ? VIRTIO_NET_HDR_GSO_ECN : 0)),
			       g->ipv6 ? 6 : 4);
}

static uint16_t csum_off(const struct uvn_gso *g)
{
	return g->type == VIRTIO_NET_HDR_GSO_UDP_L4 ? UDP_CSUM_OFF : TCP_CSUM_OFF;
}

void uvn_gso_vnet(const struct uvn_gso *g, struct virtio_net_hdr_v1 *h)
{
	memset(h, 0, sizeof(*h));
	h->flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	h->gso_type = (uint8_t)(g->type | (g->cwr ? VIRTIO_NET_HDR_GSO_ECN : 0));
	h->hdr_len = htole16(g->hdr_len);
	h->gso_size = htole16(g->mss);
	h->csum_start = htole16(g->l4_off);
	h->csum_offset = htole16(csum_off(g));
}

void uvn_gso_seg_vnet(const struct uvn_gso *g, bool partial, struct virtio_net_hdr_v1 *h)
{
	memset(h, 0, sizeof(*h));
	if (partial) {
		h->flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
		h->csum_start = htole16(g->l4_off);
		h->csum_offset = htole16(csum_off(g));
	}
}

uint32_t uvn_gso_seg(const struct uvn_gso *g, const struct uvn_pkt *p, uint32_t i, bool partial,
		     uint8_t *out, uint32_t *off)
{
	uint32_t done = i * g->mss;
	uint32_t len = g->payload - done < g->mss ? g->payload - done : g->mss;
	uint32_t l4_len = g->hdr_len - g->l4_off + len, sum;
	uint8_t *ip = out + g->l3_off, *l4 = out + g->l4_off;
	uint16_t co = csum_off(g), c;

	memcpy(out, g->hdr, g->hdr_len);
	if (g->ipv6) {
		put16(ip + 4, (uint16_t)(g->hdr_len - g->l3_off - 40 + len));
	} else {
		put16(ip + 2, (uint16_t)(g->hdr_len - g->l3_off + len));
		put16(ip + 4, (uint16_t)(get16(ip + 4) + i));
		put16(ip + 10, 0);
		put16(ip + 10, (uint16_t)~uvn_csum_buf(ip, g->l4_off - g->l3_off));
	}
	if (g->type == VIRTIO_NET_HDR_GSO_UDP_L4) {
		put16(l4 + 4, (uint16_t)l4_len);
	} else {
		uint8_t flags = l4[13];

		put32(l4 + 4, get32(l4 + 4) + done);
		if (i + 1 < g->nsegs)
			flags &= (uint8_t)~(TCP_FIN | TCP_PSH);
		if (i > 0)
			flags &= (uint8_t)~TCP_CWR;
		l4[13] = flags;
	}
	/* IPv4 pseudo header: 16-bit length; IPv6: 32-bit, the same sum for < 64 KB. */
	sum = add(g->pseudo, l4_len);
	if (partial) {
		put16(l4 + co, (uint16_t)sum);
	} else {
		put16(l4 + co, 0);
		sum = add(sum, uvn_csum_buf(l4, g->hdr_len - g->l4_off));
		sum = add(sum, uvn_csum_iov(p->seg, p->nseg, g->hdr_len + done, len));
		c = (uint16_t)~sum;
		/* UDP: a computed 0 is sent as all ones (0 means "no checksum"). */
		if (!c && g->type == VIRTIO_NET_HDR_GSO_UDP_L4)
			c = 0xffff;
		put16(l4 + co, c);
	}
	*off = g->hdr_len + done;
	return len;
}

int uvn_gso_csum(const struct uvn_pkt *p, uint32_t *pos, uint8_t out[2])
{
	uint32_t start = le16toh(p->vnet.csum_start);
	uint16_t c;

	*pos = start + le16toh(p->vnet.csum_offset);
	if (*pos + 2 > p->len)
		return UVN_GSO_E_CSUM;
	/* The field holds the pseudo-header sum: sum it with the rest. */
	c = (uint16_t)~uvn_csum_iov(p->seg, p->nseg, start, p->len - start);
	if (!c)
		c = 0xffff;
	out[0] = (uint8_t)(c >> 8);
	out[1] = (uint8_t)c;
	return 0;
}
