/* SPDX-License-Identifier: MIT */
/*
 * A vhost-user port's state, shared by its control half (vhost.c: the
 * device's connection and queue events, in uvnetd's loop) and its data-path
 * half (vhost_data.c). The guest's device is a <uvnet/device.h>; the port
 * adds what uvnetd does around it. Port queue q is the guest's queue pair
 * q: rx reads its TX ring (ring 2q+1), tx fills its RX ring (ring 2q).
 */
#ifndef UVN_PORT_VHOST_PORT_H
#define UVN_PORT_VHOST_PORT_H

#include <stdatomic.h>

#include "net/device/filter.h"
#include "net/device/vu_device.h"
#include "port/port.h"
#include "port/qmp.h"
#include "util/loop.h"
#include "vhost_user/backend.h"

struct vhost_port;

/* What the port keeps of a queue beside the device's ring. */
struct vq_slot {
	struct vhost_port *port;
	unsigned qp;                /* queue pair */
	/* guest RX: taken by a sender when the port has fewer queues than senders */
	atomic_flag lock;
	/* frames over the port's mtu=, dropped: written by the queue's one
	 * poller (guest TX) or by its sender, under the lock when shared */
	uint64_t mtu_drops;
	/* frames the guest's receive filter refused (guest RX), written as mtu_drops */
	uint64_t filtered;
};

struct vhost_port {
	struct uvn_port base;
	struct uvn_vhost_port_cfg cfg;
	char path[108];
	char qmp_path[108], nic[64];  /* qmp=, nic= */
	/* What the guest wants to receive: from its control queue (our driver
	 * hands it over) or from QEMU's QMP monitor (qmp=, QEMU keeps it). */
	struct uvn_rx_filter filter;
	struct uvn_qmp *qmp;
	struct uvn_loop *loop;
	struct uvn_port_env env;
	/* The guest's virtio-net device: the socket, the session, the rings. */
	struct uvn_dev *dev;
	struct uvn_vu_backend *be;  /* the device's session, NULL without one */
	struct uvn_handler listen_h, conn_h, retry_h, drain_h;
	struct uvn_handler fault_h; /* the session's guest memory vanished (SIGBUS caught) */
	struct uvn_handler ctrl_h;  /* the control queue's kicks (our copy of its fd),
				     * or with ctrl_polled its poll timer */
	bool ctrl_polled;
	unsigned pairs_on;          /* queue pairs the guest uses (MQ) */
	unsigned pairs_req;         /* the guest's latest VQ_PAIRS_SET, applied by pairs_h */
	struct uvn_handler pairs_h; /* one-shot: pairs_on = pairs_req with the workers parked */
	uint64_t pairs_at;          /* when pairs_on last changed that way (ns) */
	/* vhost-user messages: a budget per window, then conn_h waits for msg_h */
	struct uvn_handler msg_h;
	uint64_t msg_window;        /* start of the current window (ns) */
	unsigned msg_count;         /* messages in it */
	bool conn_paused;           /* conn_h out of the loop until msg_h fires */
	uint64_t throttled;         /* windows that ran out of budget (this connection) */
	/* attaches: a budget per window, then listen_h waits for accept_h */
	struct uvn_handler accept_h;
	uint64_t accept_window;     /* start of the current window (ns) */
	unsigned accepts;           /* attaches in it */
	bool listen_paused;         /* listen_h out of the loop until accept_h fires */
	uint64_t accept_throttled;  /* windows that ran out of budget */
	_Atomic uint64_t refused;   /* frontends refused: one was attached already */
	unsigned senders;           /* data-path threads that transmit here */
	struct vq_slot rx[UVN_PORT_MAX_QUEUES]; /* guest RX rings */
	struct vq_slot tx[UVN_PORT_MAX_QUEUES]; /* guest TX rings */
	struct uvn_port_stats gone; /* counters of queues that stopped */
	_Atomic uint64_t kicks;
	uint64_t discarded;         /* frames of disabled TX rings, dropped */
	uint64_t ctrl_self_kicks;   /* kicks the port gave its own control queue (not counted) */
	_Atomic uint64_t dropped_down; /* frames sent while no queue was ready */
	/* SEND_RARP (after a migration): the control thread sets the MAC, then
	 * rarp_pending; the thread polling rx queue 0 builds the frame and
	 * takes it in as the guest's own. */
	uint8_t rarp_mac[6];
	atomic_bool rarp_pending;
	_Atomic uint64_t rarps;     /* RARP frames injected for the guest */
};

extern const struct uvn_port_ops uvn_vhost_ops;

/* vhost_data.c: add ring @ring's counters to @st (nothing if it is not ready). */
void uvn_vhost_add_q(struct vhost_port *v, struct uvn_port_stats *st, unsigned ring);
/* vhost.c */
void uvn_vhost_destroy(struct uvn_port *port);

#endif
