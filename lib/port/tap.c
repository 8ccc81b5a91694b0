/* SPDX-License-Identifier: MIT */
/*
 * A TAP device as a port: frames carry a 12-byte virtio-net header
 * (IFF_VNET_HDR with TUNSETVNETHDRSZ 12), so offloads cross the boundary
 * unchanged. TUNSETOFFLOAD tells the kernel what we take from it: partial
 * checksums, and TSO4/6 (+ECN) and USO4/6 frames of up to 64 KB when we
 * have big buffers for them; we complete or segment them for destinations
 * that cannot take them. In the other direction the kernel takes any
 * checksum or GSO frame it knows from us; a USO frame for a kernel without
 * USO (before 6.2) is segmented here, straight into the writes.
 *
 * Reads go into a small buffer first and run on into a big one only for a
 * frame longer than the small one, which is then copied down (once, its
 * first small-buffer's worth): small frames stay as cheap as before.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "net/gso.h"
#include "port/port.h"
#include "ring/ring.h"
#include "util/json.h"
#include "util/log.h"

/* Linux 6.2 UAPI; older headers lack them (and older kernels refuse them). */
#ifndef TUN_F_USO4
#define TUN_F_USO4 0x20
#endif
#ifndef TUN_F_USO6
#define TUN_F_USO6 0x40
#endif

/* The port's offload counters (its only queue), for `uvnetd ctl show queues`. */
struct tap_q_stats {
	uint64_t offload_flags;  /* TUN_F_* the kernel accepted (a gauge) */
	uint64_t rx_gso;         /* GSO frames from the kernel, passed on unsegmented */
	uint64_t rx_csum;        /* partial-checksum frames from the kernel */
	uint64_t rx_big;         /* frames longer than a small buffer, read into a big one */
	uint64_t rx_toolong;     /* frames longer than our buffers: dropped */
	uint64_t rx_bad_hdr;     /* the kernel's header failed validation: dropped */
	uint64_t tx_gso;         /* GSO frames written whole (the kernel segments if needed) */
	uint64_t tx_csum;        /* partial-checksum frames written (the kernel completes them) */
	uint64_t tx_gso_sw;      /* GSO frames segmented here for a kernel without their type */
	uint64_t tx_gso_segs;    /* segments written for them */
	uint64_t tx_gso_bad;     /* malformed GSO frames dropped */
	uint64_t tx_err;         /* writes the kernel refused */
};

#define S(f) UVN_STAT(struct tap_q_stats, f)
static const struct uvn_stat_desc tap_q_stats_desc[] = {
	S(offload_flags), S(rx_gso), S(rx_csum), S(rx_big), S(rx_toolong), S(rx_bad_hdr),
	S(tx_gso), S(tx_csum), S(tx_gso_sw), S(tx_gso_segs), S(tx_gso_bad), S(tx_err),
	{ NULL, 0 },
};

struct tap_port {
	struct uvn_port base;
	int fd;
	struct uvn_pkt_pool *small, *big; /* big: NULL when the kernel sends no GSO frames */
	struct uvn_pkt *spare;            /* a big descriptor for the next long frame */
	size_t small_room, big_room;
	uint64_t rx_features;             /* offloads we accepted from the kernel (as virtio bits) */
	bool uso;                         /* the kernel takes GSO_UDP_L4 frames */
	/* Counters (util/stats.h): rx ones have one writer, the worker
	 * polling the TAP; every worker sends without a lock, so tx ones and
	 * drops (both directions) are shared adds. */
	struct uvn_port_stats st;
	struct tap_q_stats qs;
};

/* A read came back with @len frame bytes: keep it in @p, or move it into
 * the spare big descriptor it ran on into. @return the packet. */
static struct uvn_pkt *settle(struct tap_port *t, struct uvn_pkt *p, uint32_t len)
{
	struct uvn_pkt *b = t->spare;

	if (UVN_LIKELY(len <= t->small_room)) {
		uvn_pkt_set_buf(p, len);
		return p;
	}
	t->spare = NULL;
	memcpy(b->buf, p->buf, t->small_room);
	b->vnet = p->vnet;
	uvn_pkt_free(p);
	uvn_pkt_set_buf(b, len);
	uvn_stat_inc(&t->qs.rx_big);
	return b;
}

/* Validate the kernel's header; DATA_VALID is the kernel's to set. */
static bool rx_hdr_ok(struct tap_port *t, struct virtio_net_hdr_v1 *h, uint32_t len)
{
	uint8_t valid = h->flags & VIRTIO_NET_HDR_F_DATA_VALID;
	int err;

	h->flags &= (uint8_t)~VIRTIO_NET_HDR_F_DATA_VALID;
	err = uvn_hdr_check_tx(h, len, t->rx_features);
	h->flags |= valid;
	h->hdr_len = 0;     /* never trusted */
	h->num_buffers = 0;
	if (UVN_UNLIKELY(err)) {
		UVN_LOG_PEER("%s: frame from the kernel: %s", t->base.name, uvn_hdr_strerror(err));
		return false;
	}
	uvn_stat_add(&t->qs.rx_gso, uvn_hdr_is_gso(h));
	uvn_stat_add(&t->qs.rx_csum, uvn_hdr_needs_csum(h) && !uvn_hdr_is_gso(h));
	return true;
}

static unsigned tap_rx(struct uvn_port *port, unsigned q, struct uvn_pkt **pkts, unsigned n)
{
	struct tap_port *t = (struct tap_port *)port;
	unsigned got = 0;

	(void)q;
	while (got < n) {
		struct uvn_pkt *p = uvn_pkt_alloc(t->small);
		struct iovec iov[3];
		size_t room = t->small_room;
		unsigned niov = 2;
		uint32_t len;
		ssize_t r;

		if (!p) {
			uvn_stat_add_shared(&t->st.drops, 1);
			break;
		}
		if (t->big && !t->spare)
			t->spare = uvn_pkt_alloc(t->big);
		iov[0] = (struct iovec){ &p->vnet, UVN_NET_HDR_LEN };
		iov[1] = (struct iovec){ p->buf, t->small_room };
		if (t->spare) {
			iov[2] = (struct iovec){ (char *)t->spare->buf + t->small_room,
						 t->big_room - t->small_room };
			room = t->big_room;
			niov = 3;
		}
		r = readv(t->fd, iov, (int)niov);
		if (r < (ssize_t)(UVN_NET_HDR_LEN + UVN_ETH_HLEN)) {
			uvn_pkt_free(p);
			if (r < 0 && (errno == EAGAIN || errno == EINTR))
				break;
			if (r >= 0) {
				uvn_stat_inc(&t->st.errors);
				continue;
			}
			UVN_LOG_PEER("%s: read: %s", port->name, strerror(errno));
			uvn_stat_inc(&t->st.errors);
			break;
		}
		/* tun reports a frame's whole length even when it cut it to our
		 * buffers; no frame we take fills them exactly. */
		len = (uint32_t)(r - UVN_NET_HDR_LEN);
		if (UVN_UNLIKELY(len >= room)) {
			uvn_pkt_free(p);
			uvn_stat_add_shared(&t->st.drops, 1);
			uvn_stat_inc(&t->qs.rx_toolong);
			continue;
		}
		if (UVN_LIKELY(!p->vnet.flags && !p->vnet.gso_type)) {
			/* Nothing else in such a header means anything: no stale
			 * field goes on with the frame. */
			p->vnet = (struct virtio_net_hdr_v1){ 0 };
		} else if (UVN_UNLIKELY(!rx_hdr_ok(t, &p->vnet, len))) {
			uvn_pkt_free(p);
			uvn_stat_add_shared(&t->st.drops, 1);
			uvn_stat_inc(&t->qs.rx_bad_hdr);
			continue;
		}
		p = settle(t, p, len);
		p->port = port->id;
		uvn_stat_inc(&t->st.rx_packets);
		uvn_stat_add(&t->st.rx_bytes, p->len);
		pkts[got++] = p;
	}
	return got;
}

/* iovecs for bytes [off, off + len) of @p. @return how many */
static unsigned slice(const struct uvn_pkt *p, uint32_t off, uint32_t len, struct iovec *iov)
{
	unsigned n = 0;

	for (unsigned i = 0; i < p->nseg && len; i++) {
		size_t l = p->seg[i].iov_len, c;

		if (off >= l) {
			off -= (uint32_t)l;
			continue;
		}
		c = l - off < len ? l - off : len;
		iov[n++] = (struct iovec){ (char *)p->seg[i].iov_base + off, c };
		len -= (uint32_t)c;
		off = 0;
	}
	return n;
}

static bool tap_write(struct tap_port *t, const struct iovec *iov, unsigned n, uint32_t frame_len)
{
	if (UVN_UNLIKELY(writev(t->fd, iov, (int)n) < 0)) {
		uvn_stat_add_shared(&t->st.drops, 1);
		uvn_stat_add_shared(&t->qs.tx_err, 1);
		return false;
	}
	uvn_stat_add_shared(&t->st.tx_packets, 1);
	uvn_stat_add_shared(&t->st.tx_bytes, frame_len);
	return true;
}

/* A GSO type this kernel does not know: its segments, with partial
 * checksums the kernel completes, one write each. */
static bool tx_segments(struct tap_port *t, const struct uvn_gso *g, const struct uvn_pkt *p)
{
	struct virtio_net_hdr_v1 h;
	uint8_t hdr[UVN_GSO_MAX_HDR];
	struct iovec iov[2 + UVN_PKT_MAX_SEGS];
	bool all = true;

	uvn_gso_seg_vnet(g, true, &h);
	iov[0] = (struct iovec){ &h, UVN_NET_HDR_LEN };
	iov[1] = (struct iovec){ hdr, g->hdr_len };
	uvn_stat_add_shared(&t->qs.tx_gso_sw, 1);
	for (uint32_t i = 0; i < g->nsegs; i++) {
		uint32_t off, len = uvn_gso_seg(g, p, i, true, hdr, &off);
		unsigned n = slice(p, off, len, iov + 2);

		if (tap_write(t, iov, 2 + n, g->hdr_len + len))
			uvn_stat_add_shared(&t->qs.tx_gso_segs, 1);
		else
			all = false;
	}
	return all;
}

static bool tx_one(struct tap_port *t, const struct uvn_pkt *p)
{
	struct virtio_net_hdr_v1 h = p->vnet;
	struct iovec iov[1 + UVN_PKT_MAX_SEGS];
	struct uvn_gso g;
	int err;

	iov[0] = (struct iovec){ &h, UVN_NET_HDR_LEN };
	memcpy(iov + 1, p->seg, p->nseg * sizeof(*iov));
	if (UVN_LIKELY(!uvn_hdr_is_gso(&p->vnet))) {
		h.hdr_len = 0;
		h.num_buffers = 0;
		if (uvn_hdr_needs_csum(&h))
			uvn_stat_add_shared(&t->qs.tx_csum, 1);
		return tap_write(t, iov, 1 + p->nseg, p->len);
	}
	/* The kernel checks GSO frames itself, but we pass on only what we
	 * could have segmented: the same rules at every destination. */
	err = uvn_gso_parse(p, &g);
	if (UVN_UNLIKELY(err)) {
		UVN_LOG_PEER("%s: GSO frame dropped: %s", t->base.name, uvn_gso_strerror(err));
		uvn_stat_add_shared(&t->st.drops, 1);
		uvn_stat_add_shared(&t->qs.tx_gso_bad, 1);
		return false;
	}
	if (UVN_UNLIKELY(g.type == VIRTIO_NET_HDR_GSO_UDP_L4 && !t->uso))
		return tx_segments(t, &g, p);
	uvn_gso_vnet(&g, &h);
	uvn_stat_add_shared(&t->qs.tx_gso, 1);
	return tap_write(t, iov, 1 + p->nseg, p->len);
}

static unsigned tap_tx(struct uvn_port *port, unsigned q, struct uvn_pkt *const *pkts, unsigned n)
{
	struct tap_port *t = (struct tap_port *)port;
	unsigned sent = 0;

	(void)q;
	for (unsigned i = 0; i < n; i++)
		sent += tx_one(t, pkts[i]);
	return sent;
}

static unsigned tap_nqueues(struct uvn_port *port)
{
	(void)port;
	return 1;
}

static void tap_stats(struct uvn_port *port, struct uvn_port_stats *st)
{
	uvn_stats_snapshot(st, &((struct tap_port *)port)->st, sizeof(*st));
}

static bool tap_arm(struct uvn_port *port, unsigned q)
{
	(void)port;
	(void)q;
	return true; /* the fd stays in the loop, level-triggered */
}

static void tap_dump_queues(struct uvn_port *port, FILE *f, bool json, bool *first)
{
	struct tap_port *t = (struct tap_port *)port;

	if (json) {
		fprintf(f, "%s{\"port\":", *first ? "" : ",");
		uvn_json_str(f, port->name);
		fputs(",\"queue\":0,\"dir\":\"tap\",\"dev\":{", f);
		uvn_stats_json(f, &t->qs, tap_q_stats_desc);
		fputs("}}", f);
	} else {
		fprintf(f, "%s queue 0 (offloads 0x%llx)\n  dev:  ", port->name,
			(unsigned long long)uvn_stat_read(&t->qs.offload_flags));
		uvn_stats_print(f, &t->qs, tap_q_stats_desc, 0);
		fputc('\n', f);
	}
	*first = false;
}

static void tap_destroy(struct uvn_port *port)
{
	struct tap_port *t = (struct tap_port *)port;

	if (t->spare)
		uvn_pkt_free(t->spare);
	close(t->fd);
	free(t);
}

/* Event mode: the TAP fd is readable when frames wait (level-triggered). */
static int tap_rx_fd(struct uvn_port *port, unsigned q)
{
	(void)q;
	return ((struct tap_port *)port)->fd;
}

static const struct uvn_port_ops tap_ops = {
	.kind = "tap",
	.rx = tap_rx,
	.tx = tap_tx,
	.nqueues = tap_nqueues,
	.rx_fd = tap_rx_fd,
	.stats = tap_stats,
	.arm = tap_arm,
	.dump_queues = tap_dump_queues,
	.destroy = tap_destroy,
};

static int tap_open(const char *ifname)
{
	struct ifreq ifr = { 0 };
	int hdrsz = UVN_NET_HDR_LEN, fd, le = 1;

	fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR;
	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", ifname);
	if (ioctl(fd, TUNSETIFF, &ifr) || ioctl(fd, TUNSETVNETHDRSZ, &hdrsz) ||
	    ioctl(fd, TUNSETVNETLE, &le)) {
		int e = -errno;

		close(fd);
		return e;
	}
	return fd;
}

/* Up, so frames flow without an `ip link set up` (a TAP moved to another
 * namespace afterwards goes down and is its owner's to bring up). */
static void tap_up(const char *ifname)
{
	struct ifreq ifr = { 0 };
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", ifname);
	if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) ||
	    (!(ifr.ifr_flags & IFF_UP) && (ifr.ifr_flags |= IFF_UP, ioctl(s, SIOCSIFFLAGS, &ifr))))
		UVN_WARN("tap %s: cannot bring it up: %s", ifname, strerror(errno));
	if (s >= 0)
		close(s);
}

/*
 * Offloads we take from the kernel, the most it knows first: tun refuses
 * flags it does not know (EINVAL), so an older kernel gets fewer. GSO
 * frames only with big buffers for them. @return the TUN_F_* set, or -errno
 */
static int tap_offload(int fd, bool gso)
{
	static const unsigned want[] = {
		TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_TSO_ECN | TUN_F_USO4 | TUN_F_USO6,
		TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_TSO_ECN,
		TUN_F_CSUM,
	};
	unsigned i = gso ? 0 : 2;

	for (; i < sizeof(want) / sizeof(want[0]); i++)
		if (!ioctl(fd, TUNSETOFFLOAD, want[i]))
			return (int)want[i];
	return -errno;
}

static uint64_t virtio_bits(unsigned tun)
{
	uint64_t f = 1ull << VIRTIO_NET_F_CSUM;

	if (tun & TUN_F_TSO4)
		f |= 1ull << VIRTIO_NET_F_HOST_TSO4;
	if (tun & TUN_F_TSO6)
		f |= 1ull << VIRTIO_NET_F_HOST_TSO6;
	if (tun & TUN_F_TSO_ECN)
		f |= 1ull << VIRTIO_NET_F_HOST_ECN;
	if (tun & TUN_F_USO4)
		f |= 1ull << VIRTIO_NET_F_HOST_USO;
	return f;
}

int uvn_port_tap_create(const char *ifname, struct uvn_loop *loop, struct uvn_pkt_pool *small,
			struct uvn_pkt_pool *big, struct uvn_port **out)
{
	size_t small_room = uvn_pkt_pool_buf_size(small);
	bool gso = big && uvn_pkt_pool_buf_size(big) > UVN_GSO_MAX_FRAME &&
		   uvn_pkt_pool_buf_size(big) > small_room;
	struct tap_port *t;
	int fd, off;

	(void)loop;
	if (!*ifname || strlen(ifname) >= IFNAMSIZ) {
		UVN_ERR("tap %s: interface names have 1 to %d characters", ifname, IFNAMSIZ - 1);
		return -ENAMETOOLONG;
	}
	fd = tap_open(ifname);
	off = fd < 0 ? fd : tap_offload(fd, gso);
	if (off < 0) {
		UVN_ERR("tap %s: %s", ifname, strerror(-off));
		if (fd >= 0)
			close(fd);
		return off;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		close(fd);
		return -ENOMEM;
	}
	t->base.ops = &tap_ops;
	snprintf(t->base.name, sizeof(t->base.name), "tap:%s", ifname);
	t->fd = fd;
	t->small = small;
	t->small_room = small_room;
	if (off & (TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_USO4)) {
		t->big = big;
		t->big_room = uvn_pkt_pool_buf_size(big);
	}
	t->rx_features = virtio_bits((unsigned)off);
	t->uso = off & TUN_F_USO4;
	t->qs.offload_flags = (unsigned)off;
	tap_up(ifname);
	UVN_INFO("%s: offloads from the kernel: csum%s%s%s%s", t->base.name,
		 off & TUN_F_TSO4 ? " tso4" : "", off & TUN_F_TSO6 ? " tso6" : "",
		 off & TUN_F_TSO_ECN ? " ecn" : "", off & TUN_F_USO4 ? " uso4 uso6" : "");
	*out = &t->base;
	return 0;
}

int uvn_port_tap_fd(const struct uvn_port *p)
{
	return ((const struct tap_port *)p)->fd;
}
