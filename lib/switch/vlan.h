/* SPDX-License-Identifier: MIT */
/* The switch's VLAN path (vlan.c), for forward.c's switch loop. */
#ifndef UVN_SWITCH_VLAN_H
#define UVN_SWITCH_VLAN_H

#include <endian.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <linux/if_ether.h>

#include "switch/forward.h"

/* Does the Ethernet header @mac (14 bytes) carry an 802.1Q tag? */
static inline bool uvn_fwd_has_tag(const uint8_t *mac)
{
	uint16_t type;

	memcpy(&type, mac + 12, sizeof(type)); /* one load, one compare */
	return type == htobe16(ETH_P_8021Q);
}

/*
 * A frame through the VLAN path: its VLAN from the input port and its tag,
 * learning and lookup by (VLAN, MAC), and to each output port as it needs
 * it (w->out). @mac: the frame's Ethernet header as read once. @return
 * true if @p is to be freed after the burst, false if it was dropped (the
 * caller frees it now). Out of line: the loop of a switch without VLANs
 * stays small.
 */
bool uvn_fwd_switch_vlan(struct uvn_fwd *f, struct uvn_fwd_worker *w, struct uvn_port *in,
			 struct uvn_pkt *p, const uint8_t *mac, uint64_t now);

#endif
