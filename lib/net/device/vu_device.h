/* SPDX-License-Identifier: MIT */
/*
 * The inside of <uvnet/device.h> for uvnet's own users (uvnetd's vhost-user
 * port, the tests): the per-ring netdev queues behind the public counters
 * (`uvnetd ctl show queues` prints them all), the session, and the receive
 * filter the control queue writes. The device object itself is shared by
 * its two files: vu_device.c (sessions, rings starting and stopping) and
 * vu_device_data.c (what runs on a ready ring).
 */
#ifndef UVN_NET_DEVICE_VU_DEVICE_H
#define UVN_NET_DEVICE_VU_DEVICE_H

#include <uvnet/device.h>

#include "net/device/netdev.h"
#include "ring/ring.h"
#include "vhost_user/backend.h"

struct uvn_rx_filter;

struct dev_ring {
	struct uvn_netdev_q nq;
	struct uvn_vu_queue *vu;    /* NULL while not ready */
	struct uvn_dev *dev;
	/* guest TX: made at its first start, kept until the device goes */
	struct uvn_pkt_pool *small, *big, *ext;
	/* The ring's own count of spared notifications when it became ready:
	 * a ring paused and resumed keeps its counters, the device's restart. */
	uint64_t suppressed_base;
};

struct uvn_dev {
	struct uvn_dev_cfg cfg;
	char path[108];
	int lfd;                    /* listening socket, -1 with cfg.client */
	bool has_ctrl;
	struct uvn_vu_backend *be;  /* the session, NULL without one */
	uint64_t features;          /* the frontend's, last set */
	uint32_t mtu;               /* cfg.mtu when the session began */
	struct uvn_rx_filter *filter;
	struct dev_ring rx[UVN_DEV_MAX_QUEUE_PAIRS]; /* guest RX rings */
	struct dev_ring tx[UVN_DEV_MAX_QUEUE_PAIRS]; /* guest TX rings */
	struct dev_ring ctrl;
};

static inline struct dev_ring *dev_ring_at(const struct uvn_dev *d, unsigned ring)
{
	struct uvn_dev *m = (struct uvn_dev *)d;

	if (ring == UVN_DEV_CTRL_RING)
		return d->has_ctrl ? &m->ctrl : NULL;
	if (ring >= 2 * d->cfg.queue_pairs)
		return NULL;
	return ring & 1 ? &m->tx[ring / 2] : &m->rx[ring / 2];
}

/* Turning the guest's notifications on or off writes its ring (used
 * flags, avail_event, the packed device event area): guest memory, so
 * logged after the write while a migration runs. */
static inline void dev_log_ring(struct dev_ring *s)
{
	if (UVN_UNLIKELY(s->nq.log_used != NULL))
		s->nq.log_used(s->nq.log_ctx);
}

/* Ring @ring's netdev queue and vhost-user queue while it is ready, else NULL. */
struct uvn_netdev_q *uvn_dev_netq(struct uvn_dev *d, unsigned ring);
const struct uvn_netdev_q *uvn_dev_netq_const(const struct uvn_dev *d, unsigned ring);
struct uvn_vu_queue *uvn_dev_vu_queue(const struct uvn_dev *d, unsigned ring);

/* The session, NULL without one. */
struct uvn_vu_backend *uvn_dev_backend(const struct uvn_dev *d);

/* The filter the control queue's receive-mode and MAC commands set (NULL:
 * acknowledged only). The owner applies it to what it sends; set it while
 * no session runs. */
void uvn_dev_set_rx_filter(struct uvn_dev *d, struct uvn_rx_filter *f);

#endif
