/* SPDX-License-Identifier: MIT */
/*
 * A TAP device as a port: frames carry a 12-byte virtio-net header
 * (IFF_VNET_HDR with TUNSETVNETHDRSZ 12), so checksum offload crosses the
 * boundary unchanged; TUNSETOFFLOAD tells the kernel which offloads we take.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include "net/hdr.h"
#include "port/port.h"
#include "ring/ring.h"
#include "util/log.h"

struct tap_port {
	struct uvn_port base;
	int fd;
	struct uvn_pkt_pool *pool;
	uint64_t rx_features;       /* offloads we accepted from the kernel (as virtio bits) */
	struct uvn_port_stats st;
};

static unsigned tap_rx(struct uvn_port *port, unsigned q, struct uvn_pkt **pkts, unsigned n)
{
	struct tap_port *t = (struct tap_port *)port;
	size_t room = uvn_pkt_pool_buf_size(t->pool);
	unsigned got = 0;

	(void)q;
	while (got < n) {
		struct uvn_pkt *p = uvn_pkt_alloc(t->pool);
		struct iovec iov[2];
		ssize_t r;

		if (!p) {
			t->st.drops++;
			break;
		}
		iov[0] = (struct iovec){ &p->vnet, UVN_NET_HDR_LEN };
		iov[1] = (struct iovec){ p->buf, room };
		r = readv(t->fd, iov, 2);
		if (r < (ssize_t)(UVN_NET_HDR_LEN + UVN_ETH_HLEN)) {
			uvn_pkt_free(p);
			if (r < 0 && (errno == EAGAIN || errno == EINTR))
				break;
			if (r >= 0) {
				t->st.errors++;
				continue;
			}
			UVN_LOG_PEER("%s: read: %s", port->name, strerror(errno));
			t->st.errors++;
			break;
		}
		/* Frames longer than our buffers come back cut to its size. */
		if ((size_t)r == UVN_NET_HDR_LEN + room ||
		    uvn_hdr_check_tx(&p->vnet, (uint32_t)(r - UVN_NET_HDR_LEN), t->rx_features)) {
			uvn_pkt_free(p);
			t->st.drops++;
			continue;
		}
		uvn_pkt_set_buf(p, (uint32_t)(r - UVN_NET_HDR_LEN));
		p->vnet.hdr_len = 0;
		p->port = port->id;
		t->st.rx_packets++;
		t->st.rx_bytes += p->len;
		pkts[got++] = p;
	}
	return got;
}

static unsigned tap_tx(struct uvn_port *port, unsigned q, struct uvn_pkt *const *pkts, unsigned n)
{
	struct tap_port *t = (struct tap_port *)port;
	unsigned sent = 0;

	(void)q;
	for (unsigned i = 0; i < n; i++) {
		const struct uvn_pkt *p = pkts[i];
		struct virtio_net_hdr_v1 h = p->vnet;
		struct iovec iov[1 + UVN_PKT_MAX_SEGS];

		h.num_buffers = 0;
		iov[0] = (struct iovec){ &h, UVN_NET_HDR_LEN };
		memcpy(iov + 1, p->seg, p->nseg * sizeof(*iov));
		if (writev(t->fd, iov, 1 + p->nseg) < 0) {
			t->st.drops++;
			continue;
		}
		sent++;
		t->st.tx_packets++;
		t->st.tx_bytes += p->len;
	}
	return sent;
}

static unsigned tap_nqueues(struct uvn_port *port)
{
	(void)port;
	return 1;
}

static void tap_stats(struct uvn_port *port, struct uvn_port_stats *st)
{
	*st = ((struct tap_port *)port)->st;
}

static bool tap_arm(struct uvn_port *port, unsigned q)
{
	(void)port;
	(void)q;
	return true; /* the fd stays in the loop, level-triggered */
}

static void tap_destroy(struct uvn_port *port)
{
	struct tap_port *t = (struct tap_port *)port;

	close(t->fd);
	free(t);
}

static const struct uvn_port_ops tap_ops = {
	.kind = "tap",
	.rx = tap_rx,
	.tx = tap_tx,
	.nqueues = tap_nqueues,
	.stats = tap_stats,
	.arm = tap_arm,
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
	    ioctl(fd, TUNSETVNETLE, &le) ||
	    /* We take partial checksums: the device completes them for guests that cannot. */
	    ioctl(fd, TUNSETOFFLOAD, TUN_F_CSUM)) {
		int e = -errno;

		close(fd);
		return e;
	}
	return fd;
}

int uvn_port_tap_create(const char *ifname, struct uvn_loop *loop, struct uvn_pkt_pool *small,
			struct uvn_pkt_pool *big, struct uvn_port **out)
{
	struct tap_port *t;
	int fd;

	(void)loop;
	(void)big;
	fd = tap_open(ifname);
	if (fd < 0) {
		UVN_ERR("tap %s: %s", ifname, strerror(-fd));
		return fd;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		close(fd);
		return -ENOMEM;
	}
	t->base.ops = &tap_ops;
	snprintf(t->base.name, sizeof(t->base.name), "tap:%s", ifname);
	t->fd = fd;
	t->pool = small;
	t->rx_features = 1ull << VIRTIO_NET_F_CSUM;
	*out = &t->base;
	return 0;
}

int uvn_port_tap_fd(const struct uvn_port *p)
{
	return ((const struct tap_port *)p)->fd;
}
