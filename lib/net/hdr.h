/* SPDX-License-Identifier: MIT */
/*
 * The virtio-net header (VERSION_1: 12 bytes, struct virtio_net_hdr_v1):
 * validation of what a driver sends, and the offload decisions when a
 * frame crosses to a destination with other features.
 */
#ifndef UVN_NET_HDR_H
#define UVN_NET_HDR_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <linux/virtio_net.h>

#define UVN_NET_HDR_LEN ((unsigned)sizeof(struct virtio_net_hdr_v1))
#define UVN_ETH_HLEN 14u

_Static_assert(sizeof(struct virtio_net_hdr_v1) == 12, "VERSION_1 header is 12 bytes");

/*
 * UDP segmentation (USO) is VIRTIO 1.2 and Linux 6.2; older UAPI headers
 * (Debian 12's) lack its numbers. Values from the spec, only when missing.
 */
#ifndef VIRTIO_NET_HDR_GSO_UDP_L4
#define VIRTIO_NET_HDR_GSO_UDP_L4 5
#endif
#ifndef VIRTIO_NET_F_GUEST_USO4
#define VIRTIO_NET_F_GUEST_USO4 54
#endif
#ifndef VIRTIO_NET_F_GUEST_USO6
#define VIRTIO_NET_F_GUEST_USO6 55
#endif
#ifndef VIRTIO_NET_F_HOST_USO
#define VIRTIO_NET_F_HOST_USO 56
#endif

enum uvn_hdr_err {
	UVN_HDR_OK = 0,
	UVN_HDR_E_FLAGS,      /* flags the driver may not set */
	UVN_HDR_E_CSUM_FEAT,  /* NEEDS_CSUM without VIRTIO_NET_F_CSUM */
	UVN_HDR_E_CSUM_RANGE, /* csum_start + csum_offset + 2 beyond the frame */
	UVN_HDR_E_GSO_TYPE,   /* gso type not negotiated (or unknown) */
	UVN_HDR_E_GSO_SIZE,   /* gso without a segment size or without NEEDS_CSUM */
	UVN_HDR_E__COUNT
};

const char *uvn_hdr_strerror(int err);

/*
 * Check a header a driver sent with a frame of @frame_len bytes, against the
 * negotiated @features. hdr_len is never trusted (not checked, not used).
 * @return UVN_HDR_OK or an enum uvn_hdr_err
 */
int uvn_hdr_check_tx(const struct virtio_net_hdr_v1 *h, uint32_t frame_len, uint64_t features);

/* Does this header ask for a checksum to be completed? */
static inline bool uvn_hdr_needs_csum(const struct virtio_net_hdr_v1 *h)
{
	return h->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM;
}

/* Is this a GSO frame? */
static inline bool uvn_hdr_is_gso(const struct virtio_net_hdr_v1 *h)
{
	return (h->gso_type & ~VIRTIO_NET_HDR_GSO_ECN) != VIRTIO_NET_HDR_GSO_NONE;
}

/*
 * Store a header into a buffer the other side will read, only where the
 * buffer does not hold those bytes already. Buffers are recycled, and a
 * header is mostly the same lap after lap (twelve zeros on a plain TX
 * frame, num_buffers 1 on RX): left unwritten, its cache line stays shared
 * and the reader on the other CPU finds it in its own cache instead of
 * fetching it from ours (DPDK's virtio and vhost do the same). The reader
 * sees the same bytes either way; if it rewrote the buffer after handing
 * it over, what it reads back is its own doing.
 */
static inline void uvn_hdr_store(void *dst, const void *h, unsigned len)
{
	if (memcmp(dst, h, len))
		memcpy(dst, h, len);
}

#endif
