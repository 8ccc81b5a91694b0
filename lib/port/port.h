/* SPDX-License-Identifier: MIT */
/*
 * uvnetd's ports behind one ops struct. A port has queues; rx brings frames
 * in from the port (a guest's TX ring, a TAP device), tx sends frames out to
 * it (a guest's RX ring). The forwarding engine only ever sees this.
 */
#ifndef UVN_PORT_PORT_H
#define UVN_PORT_PORT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <uvnet/pkt.h>

#include "util/stats.h"

#define UVN_PORT_MAX_QUEUES 16

struct uvn_port;
struct uvn_loop;

/* Per-port counters, summed over queues. */
struct uvn_port_stats {
	uint64_t rx_packets, rx_bytes;   /* frames in from the port (over its MTU too) */
	uint64_t tx_packets, tx_bytes;   /* frames out to the port */
	uint64_t drops;                  /* frames lost at this port (no room, too big, no descriptor) */
	uint64_t errors;                 /* peer violations (bad headers, broken rings, bad messages,
	                                    a second frontend on a socket) */
	uint64_t kicks;                  /* notifications received from the peer */
	uint64_t calls;                  /* notifications sent to the peer */
	uint64_t calls_suppressed;       /* notifications the peer's event suppression spared */
	uint64_t mtu_drops;              /* frames over the port's mtu=, either way (also in drops) */
	uint64_t guest_filtered;         /* frames out the guest's receive filter refused (not drops) */
};

extern const struct uvn_stat_desc uvn_port_stats_desc[];

/* rx_fd of a queue that runs without an fd: a vhost-user ring whose
 * frontend gave no kick fd (VHOST_USER_VRING_NOFD_MASK), which the
 * protocol says means "poll this ring". */
#define UVN_PORT_RX_POLL (-2)

struct uvn_port_ops {
	const char *kind;
	/* Frames in from queue @q. @return packets stored in @pkts (caller owns them). */
	unsigned (*rx)(struct uvn_port *p, unsigned q, struct uvn_pkt **pkts, unsigned n);
	/* Frames out. @sender is the calling data-path thread's id: the port
	 * maps it onto one of its queues (locking the queue only when it has
	 * fewer queues than senders). The packets stay the caller's.
	 * @return frames sent */
	unsigned (*tx)(struct uvn_port *p, unsigned sender, struct uvn_pkt *const *pkts, unsigned n);
	/* Queues ready for traffic right now (0 while a guest is not connected). */
	unsigned (*nqueues)(struct uvn_port *p);
	/* Optional, event mode: an fd that is readable when rx queue @q has
	 * frames (-1: none, the queue does not run; UVN_PORT_RX_POLL: it runs
	 * with nothing to wait on, poll it), and what to do with it before
	 * draining the queue. */
	int (*rx_fd)(struct uvn_port *p, unsigned q);
	void (*rx_event)(struct uvn_port *p, unsigned q);
	/* Optional: @n data-path threads will send on this port. */
	void (*set_senders)(struct uvn_port *p, unsigned n);
	/* Fill @st with the port's counters. */
	void (*stats)(struct uvn_port *p, struct uvn_port_stats *st);
	/* Event mode: re-arm notifications for queue @q; false if frames are
	 * already waiting (poll again before sleeping). */
	bool (*arm)(struct uvn_port *p, unsigned q);
	/* Optional: the frames rx returned from queue @q were forwarded and
	 * freed; hand back what they borrowed (zero-copy). */
	void (*complete)(struct uvn_port *p, unsigned q);
	/* Optional: print each queue's counters, as text lines or as JSON
	 * objects, a comma before each but the very first (*first, shared
	 * across ports) (for `uvnetd ctl show queues`). */
	void (*dump_queues)(struct uvn_port *p, FILE *f, bool json, bool *first);
	void (*destroy)(struct uvn_port *p);
};

/* Names a user gives (name=NAME): printable, no space or comma. */
#define UVN_PORT_NAME_MAX 63

/* A port's MTU (mtu=N): the largest L3 payload of a frame, as on Linux. */
#define UVN_PORT_MTU_MIN 68
#define UVN_PORT_MTU_MAX 9702

#define UVN_VLAN_MAX 4094

/*
 * A port's place in the VLANs, as OVS has it:
 *  - an access port (vlan=N): frames come in untagged and are put in VLAN N,
 *    frames of VLAN N go out untagged; tagged frames coming in are dropped;
 *  - a trunk port (trunks=A:B-C): tagged frames of the listed VLANs pass
 *    both ways, tagged; untagged frames are VLAN 0 and pass untagged;
 *  - neither (the default): a trunk of every VLAN.
 */
struct uvn_port_vlans {
	uint16_t tag;              /* access port's VLAN (1..UVN_VLAN_MAX), 0: not one */
	bool trunk;                /* trunks= given: only @allowed pass */
	uint64_t allowed[64];      /* trunk: bit v of the 4096 set when VLAN v passes */
};

/* What a port spec sets besides its kind and name (the OPTS of uvn_port_create). */
struct uvn_port_conf {
	uint64_t max_pps;          /* ingress limit: frames/s taken from the port, 0: none */
	uint32_t mtu;              /* frames over it dropped and counted, 0: not set (no limit) */
	uint32_t mac_limit;        /* addresses the switch learns on the port, 0: no limit */
	struct uvn_port_vlans vlan;
};

static inline bool uvn_port_vlan_allowed(const struct uvn_port_vlans *v, unsigned vid)
{
	return !v->trunk || (v->allowed[vid / 64] >> (vid % 64) & 1);
}

struct uvn_port {
	const struct uvn_port_ops *ops;
	char name[128];       /* name=NAME, or the spec's kind and path: vhost-user:PATH, tap:IF */
	uint16_t id;          /* index in the daemon's port table */
	uint8_t mac[6];       /* our own MAC for frames we generate (txonly) */
	struct uvn_port_conf conf; /* mtu=, vlan=, trunks=, mac-limit=, max-kpps= */
	_Atomic uint64_t policed; /* times a queue was left unread for the limit */
};

/*
 * What every port of a daemon shares. Threads: the control path (sockets,
 * timers, port state) runs on the loop's thread while every data-path
 * thread is parked; rx queue q of a port is polled by one data-path thread
 * at a time; tx is called by several (see tx).
 */
struct uvn_port_env {
	struct uvn_loop *loop;             /* control fds: sockets, timers */
	struct uvn_pkt_pool *small, *big;  /* TAP rx packets (one thread polls a TAP) */
	bool poll_mode;                    /* busy-poll: ask guests not to kick */
	int zerocopy;                      /* enum uvn_zc_mode */
	uint32_t zc_min;                   /* auto: frames shorter are copied */
	unsigned zc_max_held;              /* chains one queue may hold (0: half the ring) */
	/* The vhost-user sockets listened on, unless the spec says otherwise
	 * (group=, mode=): their group and mode (false: as created, root's
	 * and the umask's). */
	bool set_gid, set_mode;
	gid_t sock_gid;
	unsigned sock_mode;
};

/*
 * Create ports from their command-line specification:
 *   vhost-user:PATH[,client][,queues=N][,group=G][,mode=M][,OPTS]   tap:IFNAME[,OPTS]
 * OPTS (any kind): name=NAME (default: the spec up to its first comma),
 * max-kpps=N, mtu=N, vlan=N, trunks=LIST, mac-limit=N (struct uvn_port_conf;
 * LIST: VLANs and ranges joined by colons, 10:20:100-199; vlan= and trunks=
 * exclude each other). max-kpps limits the frames taken in from the port (thousands per second,
 * spread evenly over its queues); frames over the limit wait in the peer's
 * ring (the guest sees a slower link), they are not read and dropped.
 * qmp=PATH[,nic=ID] (vhost-user): the guest's receive filter, which QEMU
 * keeps, is read from QEMU's QMP socket at PATH (port/qmp.h) and applied
 * to the frames sent to the guest.
 * max-mem=SIZE[K|M|G|T] (vhost-user): the bytes of the guest's files (its
 * memory, dirty log, in-flight region) the session maps at most; default
 * the machine's physical memory.
 * group= (a name or number) and mode= (octal) set the listening socket's
 * group and permissions, over the env's; a socket that cannot be given
 * them refuses the port (not with client: there is no socket of ours).
 * @return 0 or -errno, with a message logged.
 */
int uvn_port_create(const char *spec, const struct uvn_port_env *env, struct uvn_port **out);
/* The name the port @spec would have, into @name (@n bytes), without
 * creating it. Quiet. @return 0, or -EINVAL if @spec does not parse */
int uvn_port_spec_name(const char *spec, char *name, size_t n);
/* The OPTS of @spec into @conf, without creating the port. Quiet.
 * @return 0, or -EINVAL if @spec does not parse */
int uvn_port_spec_conf(const char *spec, struct uvn_port_conf *conf);
/* A socket's group: a group name or a number; its mode: octal, up to 0777.
 * @return 0, or -EINVAL (no such group, not a mode) */
int uvn_port_parse_group(const char *s, gid_t *gid);
int uvn_port_parse_mode(const char *s, unsigned *mode);
/* Would @name do as a name=NAME? */
bool uvn_port_name_ok(const char *name);

/* A vhost-user port: a guest's virtio-net device. */
struct uvn_vhost_port_cfg {
	const char *path;     /* socket */
	bool client;          /* connect (and reconnect) instead of listening */
	unsigned queues;      /* queue pairs offered */
	const char *qmp;      /* QEMU's QMP socket: follow the guest's receive filter there */
	const char *nic;      /* ... of this NIC (QEMU's device id), NULL: the only one */
	uint64_t max_mem;     /* bytes of the guest's files mapped at most, 0: physical memory */
};
int uvn_port_vhost_create(const struct uvn_vhost_port_cfg *cfg, const struct uvn_port_env *env,
			  struct uvn_port **out);

/* Change the zero-copy mode of every queue of a vhost-user port (idle queues only). */
void uvn_port_vhost_set_zerocopy(struct uvn_port *p, int mode);

/*
 * A TAP device (created if it does not exist, brought up), one queue
 * (IFF_MULTI_QUEUE) to start with and one per sender after set_senders,
 * up to UVN_PORT_MAX_QUEUES: each data-path thread then reads and writes
 * a queue of its own. Queue 0 reads into @small and @big (@big NULL: no
 * GSO frames from the kernel), the others into packets of their own like
 * them (their sizes and, at most, their counts). @loop (may be NULL) gets
 * the timer that has the queues given out again once there are more.
 */
int uvn_port_tap_create(const char *ifname, struct uvn_loop *loop, struct uvn_pkt_pool *small,
			struct uvn_pkt_pool *big, struct uvn_port **out);
/* The same with packets of its own for queue 0 too (what uvn_port_create
 * makes): pools are single-threaded, and the TAP ports of a daemon are
 * polled by different threads. */
int uvn_port_tap_create_own(const char *ifname, struct uvn_loop *loop, struct uvn_pkt_pool *small,
			    struct uvn_pkt_pool *big, struct uvn_port **out);
/* Queue 0's fd. */
int uvn_port_tap_fd(const struct uvn_port *p);
/* Set the TAP device's MTU (SIOCSIFMTU). @return 0 or -errno, logged */
int uvn_port_tap_set_mtu(struct uvn_port *p, uint32_t mtu);

/*
 * The MTU on the data path (mtu.c). A frame fits @mtu when its L3 bytes do:
 * its length less the Ethernet header (18 bytes when it carries a VLAN
 * tag); a GSO frame when each of its segments does (its L3 and L4 headers
 * plus gso_size).
 */
bool uvn_port_mtu_fits(const struct uvn_pkt *p, uint32_t mtu);
/* Keep the frames of @pkts that fit, in order; free the others and add
 * them to *@dropped (uvn_stat_add: the caller's thread owns it).
 * @return frames kept */
unsigned uvn_port_mtu_filter(uint32_t mtu, struct uvn_pkt **pkts, unsigned n, uint64_t *dropped);
/* The same for frames that stay the caller's: those that fit into @out,
 * nothing freed. @return frames in @out */
unsigned uvn_port_mtu_select(uint32_t mtu, struct uvn_pkt *const *pkts, unsigned n,
			     struct uvn_pkt **out, uint64_t *dropped);

#endif
