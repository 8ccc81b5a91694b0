/* SPDX-License-Identifier: MIT */
/*
 * Offloads done in software, for a destination that lacks them: TCP
 * segmentation (TSOv4/v6, with ECN), UDP segmentation (USO) and completing
 * a partial checksum.
 *
 * The frame's headers were written by whoever sent it (a guest, the TAP's
 * kernel): uvn_gso_parse() copies them once into struct uvn_gso, checks
 * every length against the frame and against the virtio-net header, and
 * everything after works on that copy only. Segments are described, not
 * allocated: uvn_gso_seg() builds one segment's headers into the caller's
 * buffer and says which bytes of the frame are its payload, so the caller
 * writes the segment straight into its destination (a guest's RX buffers,
 * a writev() to a TAP) without an intermediate packet or copy.
 */
#ifndef UVN_NET_GSO_H
#define UVN_NET_GSO_H

#include <stdbool.h>
#include <stdint.h>

#include <uvnet/pkt.h>

#include "net/hdr.h"

/* Headers we replicate: Ethernet + one VLAN tag + IPv4 with options + TCP with options (138). */
#define UVN_GSO_MAX_HDR 144u
/* Segments per frame: a 64 KB frame cut at 64 bytes. Bounds the work one frame can cause. */
#define UVN_GSO_MAX_SEGS 1024u
/* Largest GSO frame: Ethernet + VLAN + IPv6 header + 65535 bytes of IPv6 payload. */
#define UVN_GSO_MAX_FRAME (UVN_ETH_HLEN + 4u + 40u + 65535u)

enum uvn_gso_err {
	UVN_GSO_OK = 0,
	UVN_GSO_E_TYPE, /* gso type we cannot segment (UFO, unknown), or not the frame's protocol */
	UVN_GSO_E_HDR,  /* Ethernet/IP/TCP/UDP header malformed, truncated or unsupported */
	UVN_GSO_E_LEN,  /* IP length disagrees with the frame length */
	UVN_GSO_E_CSUM, /* no NEEDS_CSUM, or csum_start/csum_offset not the L4 checksum */
	UVN_GSO_E_SIZE, /* gso_size 0, a segment larger than an IP packet, or too many segments */
	UVN_GSO_E__COUNT
};

/* A parsed, validated GSO frame. */
struct uvn_gso {
	uint8_t hdr[UVN_GSO_MAX_HDR]; /* the frame's headers, copied once */
	uint16_t hdr_len;             /* Ethernet .. end of the TCP/UDP header */
	uint16_t l3_off, l4_off;
	uint16_t mss;                 /* payload bytes per segment */
	uint8_t type;                 /* VIRTIO_NET_HDR_GSO_TCPV4, _TCPV6 or _UDP_L4 */
	bool ipv6;
	bool cwr;                     /* TCP CWR set: an ECN frame (CWR goes on the first segment only) */
	uint32_t payload;             /* bytes after the headers */
	uint32_t nsegs;
	uint32_t pseudo;              /* pseudo-header sum without the length */
};

const char *uvn_gso_strerror(int err);

/*
 * Parse and validate the GSO frame @p (p->vnet has a GSO type; hdr_len is
 * never read). @return UVN_GSO_OK with @g filled, or an enum uvn_gso_err
 */
int uvn_gso_parse(const struct uvn_pkt *p, struct uvn_gso *g);

/*
 * Does each segment of the parsed GSO frame @g (@len bytes with its
 * Ethernet header) fit an MTU of @mtu L3 bytes: its L3 and L4 headers plus
 * gso_size? A frame short enough to go unsegmented fits as it is. Linux's
 * rule for a forwarded GSO packet (skb_gso_validate_network_len()).
 */
bool uvn_gso_fits_mtu(const struct uvn_gso *g, uint32_t len, uint32_t mtu);

/*
 * Does a frame without GSO, @len bytes whose Ethernet header is @eth (14
 * bytes), fit an MTU of @mtu L3 bytes? An 802.1Q or 802.1ad tag adds 4
 * bytes, as on a Linux bridge port (is_skb_forwardable() allows VLAN_HLEN
 * beyond mtu + hard_header_len).
 */
bool uvn_eth_fits_mtu(const uint8_t *eth, uint32_t len, uint32_t mtu);

/*
 * May a driver that negotiated @features receive a frame of @gso_type (the
 * ECN bit included) carrying IP version @ip_version (4 or 6) unsegmented?
 * The one answer for both sides: the device before it passes a GSO frame
 * on (uvn_gso_guest_ok()), our driver when it checks what a device wrote.
 * GSO_NONE is always allowed; anything else needs GUEST_CSUM and its bit.
 */
bool uvn_gso_type_ok(uint64_t features, uint8_t gso_type, unsigned ip_version);

/* The IP version of an Ethernet frame (one VLAN tag skipped): 4, 6, or 0 (neither, or too short). */
unsigned uvn_gso_ip_version(const uint8_t *frame, uint32_t len);

/* May a guest with @features receive this frame unsegmented? */
bool uvn_gso_guest_ok(const struct uvn_gso *g, uint64_t features);

/* The virtio-net header that passes the frame on unsegmented (hdr_len exact, ECN set from CWR). */
void uvn_gso_vnet(const struct uvn_gso *g, struct virtio_net_hdr_v1 *h);

/*
 * Segment @i (< g->nsegs) of @p: its headers (g->hdr_len bytes) into @out,
 * with IP lengths, IPv4 ID and header checksum, TCP sequence and flags or
 * UDP length. The L4 checksum is complete, or with @partial the
 * pseudo-header sum for a destination that completes it (see
 * uvn_gso_seg_vnet()). Its payload is bytes [*off, *off + return) of @p.
 * @return payload bytes of the segment
 */
uint32_t uvn_gso_seg(const struct uvn_gso *g, const struct uvn_pkt *p, uint32_t i, bool partial,
		     uint8_t *out, uint32_t *off);

/* The virtio-net header of a segment made with @partial. */
void uvn_gso_seg_vnet(const struct uvn_gso *g, bool partial, struct virtio_net_hdr_v1 *h);

/*
 * Complete the partial checksum of the non-GSO frame @p (NEEDS_CSUM): the
 * two bytes that go at frame offset *@pos, in @out; @p is not changed.
 * @return 0, or UVN_GSO_E_CSUM if csum_start/csum_offset are out of range
 */
int uvn_gso_csum(const struct uvn_pkt *p, uint32_t *pos, uint8_t out[2]);

#endif
