/* SPDX-License-Identifier: MIT */
/*
 * A TAP port's state, shared by its two halves: tap.c (the data path and
 * its counters) and tap_setup.c (the device, its queues and offloads).
 * Internal to lib/port.
 */
#ifndef UVN_PORT_TAP_PORT_H
#define UVN_PORT_TAP_PORT_H

#include <linux/if.h>
#include <linux/if_tun.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "port/port.h"
#include "util/loop.h"

/* Linux 6.2 UAPI; older headers lack them (and older kernels refuse them). */
#ifndef TUN_F_USO4
#define TUN_F_USO4 0x20
#endif
#ifndef TUN_F_USO6
#define TUN_F_USO6 0x40
#endif

/* A queue's counters for `uvnetd ctl show queues`, and the port's summed:
 * written by the thread that polls the queue. */
struct tap_rx_stats {
	uint64_t offload_flags;  /* TUN_F_* the kernel accepted (a gauge) */
	uint64_t rx_packets, rx_bytes;
	uint64_t rx_drops;       /* no packet to read into, too long, bad header, over the MTU */
	uint64_t rx_errors;      /* reads that failed or were shorter than a frame */
	uint64_t rx_mtu_drops;   /* frames over the port's mtu= */
	uint64_t rx_gso;         /* GSO frames from the kernel, passed on unsegmented */
	uint64_t rx_csum;        /* partial-checksum frames from the kernel */
	uint64_t rx_big;         /* frames longer than a small buffer, read into a big one */
	uint64_t rx_toolong;     /* frames longer than our buffers: dropped */
	uint64_t rx_bad_hdr;     /* the kernel's header failed validation: dropped */
};

/* Written by the queue's sender (under the queue's lock when shared). */
struct tap_tx_stats {
	uint64_t tx_packets, tx_bytes;
	uint64_t tx_drops;       /* refused writes, malformed GSO frames, over the MTU */
	uint64_t tx_mtu_drops;   /* frames over the port's mtu= */
	uint64_t tx_gso;         /* GSO frames written whole (the kernel segments if needed) */
	uint64_t tx_csum;        /* partial-checksum frames written (the kernel completes them) */
	uint64_t tx_gso_sw;      /* GSO frames segmented here for a kernel without their type */
	uint64_t tx_gso_segs;    /* segments written for them */
	uint64_t tx_gso_bad;     /* malformed GSO frames dropped */
	uint64_t tx_err;         /* writes the kernel refused */
};

struct tap_queue {
	int fd;
	/* rx: its poller's */
	struct uvn_pkt_pool *small, *big; /* big: NULL when the kernel sends no GSO frames */
	bool own_pools;                   /* not the creator's (queue 0 may have those) */
	struct uvn_pkt *spare;            /* a big descriptor for the next long frame */
	struct tap_rx_stats rs;
	/* tx: its sender's, apart from the poller's lines */
	_Alignas(64) atomic_flag lock;    /* taken when senders share the queue */
	struct tap_tx_stats ts;
};

struct tap_port {
	struct uvn_port base;
	char ifname[IFNAMSIZ];
	struct uvn_loop *loop;            /* control thread's, may be NULL */
	struct uvn_handler assign_h;      /* one-shot: new queues, to be given out */
	size_t small_room, big_room;      /* big_room 0: no GSO frames from the kernel */
	unsigned small_count, big_count;  /* each queue's packets */
	uint64_t rx_features;             /* offloads we accepted from the kernel (as virtio bits) */
	unsigned offloads;                /* the same as TUN_F_* */
	bool uso;                         /* the kernel takes GSO_UDP_L4 frames */
	bool mq;                          /* the device is multi-queue */
	/* Changed on the control thread with the data path parked. */
	unsigned senders;
	unsigned nq;
	struct tap_queue q[UVN_PORT_MAX_QUEUES];
};

extern const struct uvn_port_ops uvn_tap_ops;

/* tap_setup.c: what the ops table needs from the lifecycle half. */
void uvn_tap_set_senders(struct uvn_port *port, unsigned n);
void uvn_tap_destroy(struct uvn_port *port);

#endif
