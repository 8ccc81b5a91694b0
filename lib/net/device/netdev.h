/* SPDX-License-Identifier: MIT */
/*
 * The virtio-net device's data path over device-half rings: guest TX chains
 * become packets (tx.c), packets are written into guest RX buffers (rx.c),
 * and the control queue is answered (ctrl.c). The transport (vhost-user)
 * owns the rings and is reached through callbacks: notify the driver, and
 * dirty-log guest writes while a migration runs.
 */
#ifndef UVN_NET_DEVICE_NETDEV_H
#define UVN_NET_DEVICE_NETDEV_H

#include <stdbool.h>
#include <stdint.h>

#include <uvnet/pkt.h>
#include <uvnet/virtqueue.h>

#include "net/hdr.h"
#include "util/stats.h"

/* Largest frame a guest may send: a 64 KB IP packet (IPv6: 40 + 65535) with a
 * VLAN-tagged Ethernet header; the big pools hold it. */
#define UVN_NETDEV_MAX_FRAME 65600u
/* iovecs per chain a frame may use: far more than a virtio-net driver's
 * chains (Linux: up to MAX_SKB_FRAGS + 2), with room for splits. Longer
 * chains, up to the ring's cap (UVN_VQ_MAX_CHAIN_IOV), are legal but
 * dropped, counted (drop_long); longer than that break the ring. */
#define UVN_NETDEV_MAX_IOV 256u
/* Such over-long chains dropped per call (tx, rx or control): each costs a
 * walk of up to UVN_VQ_MAX_CHAIN_IOV buffers, so a guest posting nothing
 * else cannot make one call long. The rest wait for the next call. */
#define UVN_NETDEV_LONG_DROPS 2u
/* Packets per burst. */
#define UVN_NETDEV_BURST 32u

/* Written by the queue's thread alone (uvn_stat_add, util/stats.h); other
 * threads read them with uvn_stats_snapshot() or the printers. */
struct uvn_netdev_q_stats {
	uint64_t packets;      /* frames delivered (rx: into the guest; tx: out of the guest) */
	uint64_t bytes;
	uint64_t bursts;       /* calls that moved at least one frame */
	uint64_t empty;        /* tx calls that found no chain: in poll mode the idle polls.
				* A count, not a time: an empty poll costs a few ns and a burst
				* microseconds; the poller's busy cycles say which side is slower */
	uint64_t drop_nobuf;   /* rx: no guest buffers posted (or not enough for the frame) */
	uint64_t drop_toobig;  /* rx: frame larger than the chain the guest posted (no MRG_RXBUF) */
	uint64_t drop_nopkt;   /* tx: no packet descriptor free (the chain waits) */
	uint64_t drop_long;    /* tx, rx: a legal chain of more than UVN_NETDEV_MAX_IOV
				* buffers, given back unused (control: ctrl_err) */
	uint64_t err_short;    /* tx: chain not longer than the header (CVE-2022-2132) */
	uint64_t err_hdr;      /* tx: invalid virtio-net header (flags, csum range, gso) */
	uint64_t err_toolong;  /* tx: frame longer than UVN_NETDEV_MAX_FRAME */
	uint64_t err_format;   /* writable tx or readable rx descriptors: queue broken */
	uint64_t err_ring;     /* the ring reported a driver violation: queue broken */
	uint64_t drop_offload; /* rx: GSO type we cannot segment, or not the frame's protocol */
	uint64_t csum_sw;      /* rx: checksums completed in software (frames and segments) */
	uint64_t ctrl_cmds;    /* control commands answered */
	uint64_t ctrl_err;     /* control commands refused or malformed */
	uint64_t notify;       /* driver notifications sent */
	/* zero-copy tx (uvn_netdev_q_set_zerocopy) */
	uint64_t zc_packets;   /* frames handed on in the guest's own buffers */
	uint64_t zc_copied;    /* frames copied while zero-copy was on */
	uint64_t zc_fb_small;  /* ... because they were below the size threshold */
	uint64_t zc_fb_segs;   /* ... because they had more segments than a packet holds */
	uint64_t zc_fb_held;   /* ... because too many chains were held already */
	uint64_t zc_fb_nopkt;  /* ... because no packet descriptor was free */
	uint64_t zc_held;      /* chains held now (a gauge) */
	uint64_t zc_held_peak; /* most chains held at once */
	/* rx offloads (net/gso.h): passed on, or done in software for the guest */
	uint64_t gso_pass;     /* rx: GSO frames passed to the guest unsegmented */
	uint64_t csum_pass;    /* rx: partial-checksum frames passed as they are (GUEST_CSUM) */
	uint64_t gso_sw;       /* rx: GSO frames segmented in software (some segments went in) */
	uint64_t gso_segs;     /* rx: segments of those delivered */
	uint64_t drop_gso_hdr; /* rx: GSO frame whose headers are malformed or truncated */
	uint64_t drop_gso_len; /* rx: GSO frame whose IP length lies */
	uint64_t drop_gso_size;/* rx: GSO frame with gso_size 0 or out of range, or with
				* segments over the MTU */
	uint64_t drop_csum;    /* rx: csum_start/csum_offset not the L4 checksum, or out of range */
	uint64_t drop_mtu;     /* rx: frame without GSO over the MTU (uvn_netdev_q_set_mtu) */
};

extern const struct uvn_stat_desc uvn_netdev_q_stats_desc[];

enum uvn_zc_mode { UVN_ZC_OFF, UVN_ZC_ON, UVN_ZC_AUTO };

struct uvn_netdev_zc;
struct uvn_rx_filter;

struct uvn_netdev_q {
	struct uvn_vq_dev *vq;
	uint64_t features;         /* negotiated virtio features */
	bool mrg_rxbuf;            /* rx: VIRTIO_NET_F_MRG_RXBUF */
	bool guest_csum;           /* rx: the guest accepts NEEDS_CSUM frames */
	bool broken;               /* a driver violation stopped the queue (set with
				    * uvn_netdev_q_set_broken; other threads read it
				    * with uvn_netdev_q_broken) */
	int ring_err;              /* the ring's error when err_ring was counted (written
				    * before broken; read after uvn_netdev_q_broken) */
	void (*notify)(void *ctx); /* interrupt the driver */
	void *notify_ctx;
	/* Dirty logging while a migration runs; NULL otherwise. */
	void (*log_write)(void *ctx, const void *va, size_t len);
	void (*log_used)(void *ctx);
	void *log_ctx;
	struct uvn_netdev_zc *zc;  /* zero-copy tx state, NULL when off */
	/* Control queue: the device's receive filter its commands set
	 * (NULL: acknowledged only). Set after uvn_netdev_q_init. */
	struct uvn_rx_filter *filter;
	/* rx: frames over this MTU (L3 bytes; GSO frames by their segments)
	 * are not delivered, 0: no limit. Judged on the bytes the delivery
	 * writes: a check before it (the port's mtu=) read bytes a zero-copy
	 * sender may have rewritten since. Set with uvn_netdev_q_set_mtu. */
	uint32_t mtu;
	uint32_t plain_max;        /* rx: longest frame that fits mtu whatever its header */
	unsigned long_left;        /* over-long chains this call may still drop */
	struct iovec iov[UVN_NETDEV_MAX_IOV];
	struct uvn_netdev_q_stats st;
};

/* The queue's thread stops it (@ring_err: the ring's error, or 0);
 * `uvnetd ctl show` reads the flag beside it, then ring_err. */
static inline void uvn_netdev_q_set_broken(struct uvn_netdev_q *q, int ring_err)
{
	if (ring_err)
		q->ring_err = ring_err;
	__atomic_store_n(&q->broken, true, __ATOMIC_RELEASE);
}

/* From any thread: is the queue stopped? If so, ring_err may be read. */
static inline bool uvn_netdev_q_broken(const struct uvn_netdev_q *q)
{
	return __atomic_load_n(&q->broken, __ATOMIC_ACQUIRE);
}

/*
 * Prepare a queue over @vq with the negotiated @features; @tx for a queue
 * the device reads (guest TX or control), whose used lengths do not matter,
 * so IN_ORDER lets one used entry complete a burst.
 */
void uvn_netdev_q_init(struct uvn_netdev_q *q, struct uvn_vq_dev *vq, uint64_t features, bool tx);

/* rx: deliver only frames that fit an MTU of @mtu L3 bytes (0: any). */
void uvn_netdev_q_set_mtu(struct uvn_netdev_q *q, uint32_t mtu);

/*
 * Zero-copy for a guest TX queue (docs/seeds.md, 001 and 004): frames are handed on as
 * packets whose segments point into the guest's buffers; each chain goes
 * back to the guest only when the last packet referring to it is freed
 * (a uvn_pkt_ubuf completion), in ring order when IN_ORDER was negotiated.
 * UVN_ZC_AUTO copies frames shorter than @min_len (copying them is
 * cheaper); every mode copies when more than @max_held chains are held
 * or a frame has more segments than a packet can hold, so a destination
 * that keeps packets cannot starve the guest's ring. Packets come from
 * @ext, a pool of descriptors without data rooms. Call with the queue idle.
 * @return 0, or -ENOMEM
 */
int uvn_netdev_q_set_zerocopy(struct uvn_netdev_q *q, enum uvn_zc_mode mode, uint32_t min_len,
			      unsigned max_held, struct uvn_pkt_pool *ext);

/*
 * Publish chains whose packets were freed since the last call (zero-copy),
 * notifying the driver if it asked. Call after forwarding each burst.
 */
void uvn_netdev_tx_complete(struct uvn_netdev_q *q);

/* Release what the queue allocated (zero-copy state); nothing may be held. */
void uvn_netdev_q_fini(struct uvn_netdev_q *q);

/*
 * Guest TX: turn up to @n chains into packets copied into descriptors from
 * @small (frames that fit its data room) or @big, validate their headers,
 * and return the chains to the guest. Bad chains are dropped and counted.
 * @return packets stored in @pkts (the caller owns them)
 */
unsigned uvn_netdev_tx(struct uvn_netdev_q *q, struct uvn_pkt_pool *small,
		       struct uvn_pkt_pool *big, struct uvn_pkt **pkts, unsigned n);

/*
 * Guest RX: write up to @n packets into the guest's buffers (mergeable or
 * one chain per packet), completing checksums the guest cannot. The
 * packets stay the caller's. Packets that do not fit are counted as drops.
 * @return packets delivered
 */
unsigned uvn_netdev_rx(struct uvn_netdev_q *q, struct uvn_pkt *const *pkts, unsigned n);

/*
 * Publish what tx/rx pushed and notify the driver if it asked. tx and rx
 * call it at the end of each burst.
 */
void uvn_netdev_q_flush(struct uvn_netdev_q *q);

/*
 * Answer every pending control-queue command (VIRTIO_NET_CTRL_*): MQ pairs
 * through @set_pairs, rx mode and MAC tables acknowledged.
 * @return commands answered
 */
unsigned uvn_netdev_ctrl(struct uvn_netdev_q *q, int (*set_pairs)(void *ctx, unsigned pairs),
			 void *ctx);

#endif
