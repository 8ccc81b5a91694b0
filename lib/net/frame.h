/* SPDX-License-Identifier: MIT */
/*
 * Frames for benchmarks and tests, one builder for every generator
 * (uvnetd's txonly, uvnet-perf, the driver benchmark): Ethernet, IPv4 from
 * 198.18.0.1 to 198.18.0.2 (RFC 2544's benchmarking range), then UDP, or
 * the TCP header of a TSO frame whose checksum field holds the
 * pseudo-header sum that NEEDS_CSUM asks for. The IPv4 header checksum is
 * left 0: a generator that writes headers per frame need not pay for it,
 * one that caches them sums them once (uvn_frame_ipv4_csum()).
 */
#ifndef UVN_NET_FRAME_H
#define UVN_NET_FRAME_H

#include <stdint.h>

#define UVN_FRAME_UDP_HDR 42u /* Ethernet + IPv4 + UDP */
#define UVN_FRAME_TCP_HDR 54u /* Ethernet + IPv4 + TCP */

struct uvn_frame_addr {
	const uint8_t *dst, *src; /* MAC addresses, 6 bytes each */
	uint16_t sport, dport;
};

/* The headers of a UDP frame of @size bytes (>= UVN_FRAME_UDP_HDR) at @b. */
void uvn_frame_udp4(uint8_t *b, const struct uvn_frame_addr *a, uint32_t size);
/* The headers of a TCP frame of @size bytes (>= UVN_FRAME_TCP_HDR) at @b:
 * ACK and PSH, don't fragment, its checksum the pseudo-header sum. */
void uvn_frame_tcp4(uint8_t *b, const struct uvn_frame_addr *a, uint32_t size);
/* Fill in the IPv4 header checksum of the frame at @b. */
void uvn_frame_ipv4_csum(uint8_t *b);

#endif
