/* SPDX-License-Identifier: MIT */
/*
 * A port's MTU (mtu=N) on the data path: what fits, and dropping what does
 * not, for frames coming in from the port and going out to it.
 *
 * The MTU counts L3 bytes, as Linux's does: a frame fits when what follows
 * its Ethernet header is at most mtu bytes. The Ethernet header is 14
 * bytes, 18 with an 802.1Q (or 802.1ad) tag, so a tagged frame may be 4
 * bytes longer than an untagged one, as on a Linux bridge port
 * (is_skb_forwardable() allows VLAN_HLEN beyond mtu + hard_header_len).
 *
 * A GSO frame is judged by the segments it stands for, not by its length:
 * VIRTIO_NET_F_MTU's rules (virtio spec, device-types/net) bound frames
 * "with gso_type NONE or ECN" only, and a 64 KB TSO frame on a 1500-byte
 * link is normal. Each segment is the frame's headers (L3 and L4) plus at
 * most gso_size bytes of payload: that must fit the MTU, which is Linux's
 * rule for a forwarded GSO packet (skb_gso_validate_network_len() in
 * ip_forward and ip6_forward). A bridge in Linux does not check GSO
 * frames at all; we do, since a segment over the MTU is a frame over it
 * once segmented, here or by the receiver. A GSO frame too long to fit
 * unsegmented whose headers do not parse cannot be shown to fit: dropped.
 */
#include "net/gso.h"
#include "port/port.h"
#include "ring/ring.h"
#include "util/stats.h"

bool uvn_port_mtu_fits(const struct uvn_pkt *p, uint32_t mtu)
{
	uint8_t eth[UVN_ETH_HLEN];
	struct uvn_gso g;

	if (UVN_LIKELY(p->len <= mtu + UVN_ETH_HLEN))
		return true;
	if (uvn_hdr_is_gso(&p->vnet))
		return uvn_gso_parse(p, &g) == UVN_GSO_OK && uvn_gso_fits_mtu(&g, p->len, mtu);
	return uvn_pkt_read(p, 0, eth, sizeof(eth)) == sizeof(eth) &&
	       uvn_eth_fits_mtu(eth, p->len, mtu);
}

unsigned uvn_port_mtu_filter(uint32_t mtu, struct uvn_pkt **pkts, unsigned n, uint64_t *dropped)
{
	unsigned kept = 0;

	for (unsigned i = 0; i < n; i++) {
		if (uvn_port_mtu_fits(pkts[i], mtu))
			pkts[kept++] = pkts[i];
		else
			uvn_pkt_free(pkts[i]);
	}
	if (kept < n)
		uvn_stat_add(dropped, n - kept);
	return kept;
}

unsigned uvn_port_mtu_select(uint32_t mtu, struct uvn_pkt *const *pkts, unsigned n,
			     struct uvn_pkt **out, uint64_t *dropped)
{
	unsigned kept = 0;

	for (unsigned i = 0; i < n; i++)
		if (uvn_port_mtu_fits(pkts[i], mtu))
			out[kept++] = pkts[i];
	if (kept < n)
		uvn_stat_add(dropped, n - kept);
	return kept;
}
