/* SPDX-License-Identifier: MIT */
/*
 * A TAP port's device and queues (the data path is tap.c): the device is
 * opened multi-queue with a 12-byte little-endian virtio-net header, takes
 * the offloads the kernel accepts, and gets a queue per sender on demand.
 * All of it runs on the control thread, with the data path parked where
 * it changes what the workers use.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/gso.h"
#include "port/tap_port.h"
#include "ring/ring.h"
#include "util/log.h"

/* Packets each queue has for its reads, at most (the pools given to
 * uvn_port_tap_create say their sizes): a burst, forwarded and freed
 * before the next, and a spare big one. */
#define Q_SMALL 1024
#define Q_BIG 64

static void queue_close(struct tap_queue *q)
{
	if (q->spare)
		uvn_pkt_free(q->spare);
	if (q->fd >= 0)
		close(q->fd);
	if (q->own_pools) {
		uvn_pkt_pool_destroy(q->small);
		uvn_pkt_pool_destroy(q->big);
	}
	*q = (struct tap_queue){ .fd = -1 };
}

void uvn_tap_destroy(struct uvn_port *port)
{
	struct tap_port *t = (struct tap_port *)port;

	if (t->loop)
		uvn_timer_stop(t->loop, &t->assign_h);
	for (unsigned i = 0; i < t->nq; i++)
		queue_close(&t->q[i]);
	free(t);
}
/* Open a queue of the device: with @mq, one more of a multi-queue device
 * (or the first, making the device one). @return the fd or -errno */
static int tap_open(const char *ifname, bool mq)
{
	struct ifreq ifr = { 0 };
	int hdrsz = UVN_NET_HDR_LEN, fd, le = 1;

	fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR | (mq ? IFF_MULTI_QUEUE : 0);
	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", ifname);
	if (ioctl(fd, TUNSETIFF, &ifr) || ioctl(fd, TUNSETVNETHDRSZ, &hdrsz) ||
	    ioctl(fd, TUNSETVNETLE, &le)) {
		int e = -errno;

		close(fd);
		return e;
	}
	return fd;
}

/* Queue @q: on @fd, or a new one (@fd < 0), with packets of its own or,
 * with @small set, those (@big with them); @fd is closed on failure.
 * @return 0 or -errno */
static int queue_open(struct tap_port *t, struct tap_queue *q, int fd, struct uvn_pkt_pool *small,
		      struct uvn_pkt_pool *big)
{
	struct uvn_pkt_pool_cfg sc = { .count = t->small_count, .buf_size = t->small_room,
				       .name = "tap" };
	struct uvn_pkt_pool_cfg bc = { .count = t->big_count, .buf_size = t->big_room,
				       .name = "tap-big" };
	int r = fd >= 0 ? fd : tap_open(t->ifname, t->mq);

	*q = (struct tap_queue){ .fd = r, .small = small, .big = t->big_room ? big : NULL };
	atomic_flag_clear(&q->lock);
	if (r < 0)
		return r;
	q->rs.offload_flags = t->offloads;
	if (small)
		return 0;
	q->own_pools = true;
	r = uvn_pkt_pool_create(&sc, &q->small);
	if (!r && t->big_room)
		r = uvn_pkt_pool_create(&bc, &q->big);
	if (r)
		queue_close(q);
	return r;
}

/* One-shot, not light: the daemon gives every port's queues out again
 * after a control event, with the workers parked; the new queues are
 * polled from then on. */
static void on_assign(struct uvn_handler *h, uint32_t events)
{
	struct tap_port *t = h->ctx;

	(void)events;
	uvn_timer_stop(t->loop, h);
}

/*
 * A queue per sender: opened here, on the control thread with the data
 * path parked. The daemon asked for the queue count before telling us the
 * senders, so the new queues wait for its next turn, which assign_h
 * brings at once; until then the kernel may queue frames on them (tx
 * already uses them). Queues are never taken away: a queue whose fd a
 * worker still watches would keep receiving.
 */
void uvn_tap_set_senders(struct uvn_port *port, unsigned n)
{
	struct tap_port *t = (struct tap_port *)port;
	unsigned want = !t->mq ? 1 : n < UVN_PORT_MAX_QUEUES ? n : UVN_PORT_MAX_QUEUES, was = t->nq;
	int r;

	t->senders = n;
	while (t->nq < want) {
		r = queue_open(t, &t->q[t->nq], -1, NULL, NULL);
		if (r) {
			UVN_WARN("%s: queue %u: %s: %u queues for %u senders", port->name, t->nq,
				 strerror(-r), t->nq, n);
			break;
		}
		t->nq++;
	}
	if (t->nq == was || !t->loop || t->assign_h.fd >= 0)
		return;
	t->assign_h = (struct uvn_handler){ .fd = -1, .fn = on_assign, .ctx = t };
	if (uvn_timer_start(t->loop, &t->assign_h, 1, 0))
		UVN_ERR("%s: cannot start the timer that has queues 1-%u polled", port->name,
			t->nq - 1);
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

int uvn_port_tap_set_mtu(struct uvn_port *port, uint32_t mtu)
{
	struct tap_port *t = (struct tap_port *)port;
	struct ifreq ifr = { 0 };
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), r = 0;

	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", t->ifname);
	ifr.ifr_mtu = (int)mtu;
	if (s < 0 || ioctl(s, SIOCSIFMTU, &ifr))
		r = -errno;
	if (s >= 0)
		close(s);
	if (r)
		UVN_ERR("%s: cannot set the device's MTU to %u: %s", port->name, mtu, strerror(-r));
	return r;
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

/* The device's first queue, multi-queue unless someone else made it
 * single-queue (tun then refuses IFF_MULTI_QUEUE with EINVAL), and what
 * it offloads. @return the fd or -errno */
static int open_first(struct tap_port *t, bool gso)
{
	int fd = tap_open(t->ifname, true), off;

	t->mq = fd >= 0;
	if (fd == -EINVAL) {
		fd = tap_open(t->ifname, false);
		if (fd >= 0)
			UVN_WARN("%s: a single-queue device: one queue, shared by the workers",
				 t->base.name);
	}
	if (fd < 0)
		return fd;
	off = tap_offload(fd, gso);
	if (off < 0) {
		close(fd);
		return off;
	}
	t->offloads = (unsigned)off;
	return fd;
}

/* @own: queue 0 too has packets of its own. */
static int tap_create(const char *ifname, struct uvn_loop *loop, struct uvn_pkt_pool *small,
		      struct uvn_pkt_pool *big, bool own, struct uvn_port **out)
{
	size_t small_room = uvn_pkt_pool_buf_size(small);
	bool gso = big && uvn_pkt_pool_buf_size(big) > UVN_GSO_MAX_FRAME &&
		   uvn_pkt_pool_buf_size(big) > small_room;
	struct tap_port *t;
	unsigned off;
	int fd, r;

	if (!*ifname || strlen(ifname) >= IFNAMSIZ) {
		UVN_ERR("tap %s: interface names have 1 to %d characters", ifname, IFNAMSIZ - 1);
		return -ENAMETOOLONG;
	}
	/* its queues' tx halves are cache-line aligned: so must it be */
	t = aligned_alloc(_Alignof(struct tap_port), sizeof(*t));
	if (!t)
		return -ENOMEM;
	memset(t, 0, sizeof(*t));
	t->base.ops = &uvn_tap_ops;
	snprintf(t->base.name, sizeof(t->base.name), "tap:%s", ifname);
	snprintf(t->ifname, sizeof(t->ifname), "%s", ifname);
	t->loop = loop;
	t->assign_h.fd = -1;
	fd = open_first(t, gso);
	if (fd < 0) {
		UVN_ERR("tap %s: %s", ifname, strerror(-fd));
		free(t);
		return fd;
	}
	off = t->offloads;
	t->small_room = small_room;
	t->small_count = uvn_pkt_pool_count(small) < Q_SMALL ? uvn_pkt_pool_count(small) : Q_SMALL;
	if (off & (TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_USO4)) {
		t->big_room = uvn_pkt_pool_buf_size(big);
		t->big_count = uvn_pkt_pool_count(big) < Q_BIG ? uvn_pkt_pool_count(big) : Q_BIG;
	}
	t->rx_features = virtio_bits(off);
	t->uso = off & TUN_F_USO4;
	t->senders = 1;
	/* Queue 0 on the fd we have: a device nobody else holds goes away
	 * with its last fd, and its offloads with it. */
	r = own ? queue_open(t, &t->q[0], fd, NULL, NULL) : queue_open(t, &t->q[0], fd, small, big);
	if (r) {
		UVN_ERR("tap %s: %s", ifname, strerror(-r));
		free(t);
		return r;
	}
	t->nq = 1;
	tap_up(ifname);
	UVN_INFO("%s: offloads from the kernel: csum%s%s%s%s", t->base.name,
		 off & TUN_F_TSO4 ? " tso4" : "", off & TUN_F_TSO6 ? " tso6" : "",
		 off & TUN_F_TSO_ECN ? " ecn" : "", off & TUN_F_USO4 ? " uso4 uso6" : "");
	*out = &t->base;
	return 0;
}

int uvn_port_tap_create(const char *ifname, struct uvn_loop *loop, struct uvn_pkt_pool *small,
			struct uvn_pkt_pool *big, struct uvn_port **out)
{
	return tap_create(ifname, loop, small, big, false, out);
}

int uvn_port_tap_create_own(const char *ifname, struct uvn_loop *loop, struct uvn_pkt_pool *small,
			    struct uvn_pkt_pool *big, struct uvn_port **out)
{
	return tap_create(ifname, loop, small, big, true, out);
}

int uvn_port_tap_fd(const struct uvn_port *p)
{
	return ((const struct tap_port *)p)->q[0].fd;
}
