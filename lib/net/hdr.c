/* SPDX-License-Identifier: MIT */
#include <endian.h>

#include "net/hdr.h"
#include "util/bits.h"

static const char *const errstr[UVN_HDR_E__COUNT] = {
	[UVN_HDR_OK] = "ok",
	[UVN_HDR_E_FLAGS] = "header flags not allowed from the driver",
	[UVN_HDR_E_CSUM_FEAT] = "NEEDS_CSUM without VIRTIO_NET_F_CSUM",
	[UVN_HDR_E_CSUM_RANGE] = "checksum offset beyond the frame",
	[UVN_HDR_E_GSO_TYPE] = "GSO type not negotiated",
	[UVN_HDR_E_GSO_SIZE] = "GSO without segment size or checksum offload",
};

const char *uvn_hdr_strerror(int err)
{
	return err >= 0 && err < UVN_HDR_E__COUNT ? errstr[err] : "unknown header error";
}

static int check_gso(const struct virtio_net_hdr_v1 *h, uint64_t f)
{
	uint8_t type = h->gso_type & (uint8_t)~VIRTIO_NET_HDR_GSO_ECN;
	bool ok;

	if (type == VIRTIO_NET_HDR_GSO_NONE)
		return (h->gso_type & VIRTIO_NET_HDR_GSO_ECN) ? UVN_HDR_E_GSO_TYPE : UVN_HDR_OK;
	switch (type) {
	case VIRTIO_NET_HDR_GSO_TCPV4: ok = uvn_has_feature(f, VIRTIO_NET_F_HOST_TSO4); break;
	case VIRTIO_NET_HDR_GSO_TCPV6: ok = uvn_has_feature(f, VIRTIO_NET_F_HOST_TSO6); break;
	case VIRTIO_NET_HDR_GSO_UDP: ok = uvn_has_feature(f, VIRTIO_NET_F_HOST_UFO); break;
	case VIRTIO_NET_HDR_GSO_UDP_L4: ok = uvn_has_feature(f, VIRTIO_NET_F_HOST_USO); break;
	default: ok = false; break;
	}
	if (!ok)
		return UVN_HDR_E_GSO_TYPE;
	if ((h->gso_type & VIRTIO_NET_HDR_GSO_ECN) && !uvn_has_feature(f, VIRTIO_NET_F_HOST_ECN))
		return UVN_HDR_E_GSO_TYPE;
	/* Segmenting needs a segment size and per-segment checksums. */
	if (!le16toh(h->gso_size) || !uvn_hdr_needs_csum(h))
		return UVN_HDR_E_GSO_SIZE;
	return UVN_HDR_OK;
}

int uvn_hdr_check_tx(const struct virtio_net_hdr_v1 *h, uint32_t frame_len, uint64_t features)
{
	if (h->flags & ~VIRTIO_NET_HDR_F_NEEDS_CSUM)
		return UVN_HDR_E_FLAGS;
	if (uvn_hdr_needs_csum(h)) {
		if (!uvn_has_feature(features, VIRTIO_NET_F_CSUM))
			return UVN_HDR_E_CSUM_FEAT;
		/* CVE-2024-11614: both fields are the driver's. */
		if ((uint32_t)le16toh(h->csum_start) + le16toh(h->csum_offset) + 2 > frame_len)
			return UVN_HDR_E_CSUM_RANGE;
	}
	return check_gso(h, features);
}
