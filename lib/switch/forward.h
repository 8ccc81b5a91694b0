/* SPDX-License-Identifier: MIT */
/*
 * What uvnetd does with a burst of frames that came in on a port:
 *  switch   - L2 learning switch with VLANs: learn (VLAN, source), forward
 *             known unicast, flood unknown, broadcast and multicast to
 *             every other port of the frame's VLAN;
 *  loopback - each frame back out of the port it came from, MACs swapped
 *             (testpmd's macswap);
 *  sink     - read every byte of each frame, count and drop: a receiver
 *             that gets the payload, as netperf's does, so a stream
 *             measured against it moves bytes (zero-copy would otherwise
 *             hand it frames nobody ever reads);
 *  txonly   - frames generated into every port (uvn_fwd_generate);
 *  rxonly   - count and drop, the payload unread (testpmd's rxonly): a
 *             descriptor rate, not a byte rate.
 */
#ifndef UVN_SWITCH_FORWARD_H
#define UVN_SWITCH_FORWARD_H

#include "port/port.h"
#include "switch/fdb.h"

#include <stdatomic.h>

#define UVN_FWD_MAX_PORTS UVN_FDB_MAX_PORTS

enum uvn_fwd_mode {
	UVN_FWD_SWITCH, UVN_FWD_LOOPBACK, UVN_FWD_SINK, UVN_FWD_TXONLY, UVN_FWD_RXONLY
};

struct uvn_fwd_stats {
	uint64_t forwarded;  /* frames handed to an output port */
	uint64_t flooded;    /* frames sent to every other port */
	uint64_t filtered;   /* destination behind the input port */
	uint64_t sunk;       /* sink and rxonly drops */
	uint64_t generated;  /* txonly frames delivered to a port */
	uint64_t vlan_dropped;  /* ingress: tagged on an access port, VLAN not trunked, runt tag */
	uint64_t limit_dropped; /* new source on a port at its mac-limit */
	uint64_t tag_failed;    /* egress: a tag could not be added or removed (offsets, segments) */
};

#define UVN_FWD_BURST 32

/*
 * VLANs (switch mode), each port as its conf.vlan says (port.h):
 *  - ingress: a frame's VLAN is its access port's, or on a trunk its
 *    802.1Q tag's VID (dropped, counted, if the port does not trunk it),
 *    VLAN 0 when untagged. A tagged frame on an access port is dropped.
 *    A priority tag (VID 0) is no VLAN: such a frame is taken as untagged
 *    (on an access port too) and keeps its priority only if it leaves
 *    tagged. Only TPID 0x8100 is a tag (0x88a8 frames are untagged ones).
 *  - the FDB is keyed by (VLAN, MAC); floods reach the ports of the VLAN
 *    (access ports of it; trunks of it; VLAN 0: every trunk);
 *  - egress: untagged on an access port and for VLAN 0, tagged otherwise.
 *    A frame is never written: a tag added or removed is a view of it
 *    with a new first segment (the worker's), the virtio-net header's
 *    csum_start and hdr_len moved by the 4 bytes.
 * With every port a trunk of all (the default) the only cost is one test
 * of each frame's type for a tag.
 */
/* Is @p a port of VLAN @vlan (0: untagged frames on trunks)? */
static inline bool uvn_fwd_port_in_vlan(const struct uvn_port *p, unsigned vlan)
{
	const struct uvn_port_vlans *v = &p->conf.vlan;

	if (v->tag)
		return v->tag == vlan;
	return !vlan || uvn_port_vlan_allowed(v, vlan);
}

struct uvn_fwd_port_stats {
	_Atomic uint64_t vlan_dropped; /* frames refused at ingress by the port's VLANs */
};

/* Shared by every data-path thread; the FDB is lock-free. */
struct uvn_fwd {
	enum uvn_fwd_mode mode;
	struct uvn_port *ports[UVN_FWD_MAX_PORTS]; /* NULL: a free slot */
	unsigned nports;
	bool vlans;                  /* some port is an access port or trunks a list */
	struct uvn_fwd_port_stats port_st[UVN_FWD_MAX_PORTS];
	struct uvn_fdb fdb;
	uint32_t txonly_size;
	uint64_t txonly_count;       /* frames to deliver in all, 0: no end */
	_Atomic uint64_t gen_left;   /* of txonly_count, not delivered yet */
};

/*
 * One data-path thread's part: its id is the tx queue hint it uses on every
 * port (ports map it onto their queues), its pools and scratch lists are
 * its own, its counters are summed for display.
 */
struct uvn_fwd_worker {
	unsigned id;
	struct uvn_pkt_pool *gen;   /* txonly frames */
	struct uvn_pkt_pool *copy;  /* loopback: copies of borrowed frames */
	struct uvn_fwd_out {        /* not references: the burst's frames are freed after */
		struct uvn_pkt *pkts[UVN_FWD_BURST];
		unsigned n;
	} out[UVN_FWD_MAX_PORTS];
	struct uvn_fwd_view {       /* a frame tagged or untagged for some ports: a new */
		struct uvn_pkt pkt; /* first segment, then the frame's bytes; never freed */
		uint8_t hdr[20];
	} views[2 * UVN_FWD_BURST];
	unsigned nviews;
	struct uvn_fwd_tpl {        /* txonly: the headers last built, and for what */
		const struct uvn_port *port;
		uint8_t mac[6];
		uint32_t size;
		uint8_t hdr[42];        /* Ethernet + IPv4 + UDP */
	} tpl;
	struct uvn_fwd_stats st;    /* written by this worker alone (uvn_stat_add) */
	uint64_t sink_sum;          /* sink: the bytes read, summed (so the reads happen) */
};

/* Add @w's counters to @sum; from any thread, while @w runs. */
void uvn_fwd_stats_add(struct uvn_fwd_stats *sum, const struct uvn_fwd_worker *w);

int uvn_fwd_init(struct uvn_fwd *f, enum uvn_fwd_mode mode, uint32_t txonly_size);
void uvn_fwd_fini(struct uvn_fwd *f);
/* Ports live in slots (p->id): a removed port leaves a hole that the next
 * one added fills; `nports` is one past the last slot in use. Both only
 * while no data-path thread forwards. */
int uvn_fwd_add_port(struct uvn_fwd *f, struct uvn_port *p);
/* Forget @p and what was learned on it. */
void uvn_fwd_del_port(struct uvn_fwd *f, struct uvn_port *p);

/* Forward @n (<= UVN_FWD_BURST) frames that came in on port @in; frees them all. */
void uvn_fwd_burst(struct uvn_fwd *f, struct uvn_fwd_worker *w, struct uvn_port *in,
		   struct uvn_pkt **pkts, unsigned n);

/* txonly: send one burst of generated frames to @p. @return frames sent. */
unsigned uvn_fwd_generate(struct uvn_fwd *f, struct uvn_fwd_worker *w, struct uvn_port *p);

/* A port went away: forget what was learned on it. */
void uvn_fwd_port_down(struct uvn_fwd *f, struct uvn_port *p);

#endif
