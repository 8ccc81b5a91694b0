/* SPDX-License-Identifier: MIT */
/*
 * The switch's forwarding database: (VLAN, MAC address) -> port, learned
 * from source addresses, aged out after a timeout, or set by the operator
 * (static: never aged, never moved by learning). Open addressing with
 * linear probing over a power-of-two table; stale entries are reused in
 * place (removing one would cut the probe runs behind it).
 *
 * Every worker learns and looks up concurrently without a lock: a slot's
 * key is claimed with a compare-and-swap, its port and time are plain
 * atomic stores. A reader racing with a slot being reused for another
 * address may forward one frame by the old port: the switch floods or
 * re-learns on the next one. Learning writes only when something changed
 * (or the entry is a second old), so workers don't bounce its cache line.
 *
 * Port security: a port may have a limit on the addresses learned on it
 * (mac-limit=N). Each port's count is kept as entries change hands; stale
 * entries a port still owns are given up (recounted) at most once a second
 * when the port is at its limit. A port at its limit claims no slot and
 * moves no entry, so it can neither fill the table nor take other ports'
 * addresses. Entries change hands by compare-and-swap, so a count is the
 * entries its port holds; workers learning new addresses on one port at
 * the same moment may take it past its limit by one each.
 */
#ifndef UVN_SWITCH_FDB_H
#define UVN_SWITCH_FDB_H

#include <stdbool.h>
#include <stdatomic.h>
#include <stdint.h>

#define UVN_FDB_NO_PORT 0xffff
#define UVN_FDB_MAX_PORTS 64
#define UVN_FDB_STATIC 1u   /* entry flag */

/* A key: bit 63 set (0 is an empty slot), the VLAN in bits 48..59, the
 * MAC address (48 bits, as uvn_mac_key() makes it) below. */
static inline uint64_t uvn_fdb_key(unsigned vlan, uint64_t mac)
{
	return 1ull << 63 | (uint64_t)(vlan & 0xfff) << 48 | mac;
}

static inline unsigned uvn_fdb_key_vlan(uint64_t key)
{
	return (unsigned)(key >> 48) & 0xfff;
}

static inline uint64_t uvn_fdb_key_mac(uint64_t key)
{
	return key & 0xffffffffffffull;
}

struct uvn_fdb_entry {
	_Atomic uint64_t key;     /* uvn_fdb_key(), 0 = empty slot */
	_Atomic uint64_t seen_ns; /* last time the address was a source */
	_Atomic uint16_t port;    /* UVN_FDB_NO_PORT: deleted, reusable */
	_Atomic uint16_t flags;   /* UVN_FDB_STATIC */
};

/* Per port: the learned (not static) entries it owns, and its limit. */
struct uvn_fdb_port {
	_Atomic uint32_t limit;      /* 0: none */
	_Atomic uint32_t count;
	_Atomic uint64_t recount_ns; /* last time stale entries were given up */
	_Atomic uint64_t limited;    /* new source addresses refused at the limit */
};

struct uvn_fdb {
	struct uvn_fdb_entry *slots;
	unsigned mask;
	uint64_t age_ns;
	/* counters, updated racily by all workers (for display) */
	_Atomic uint64_t learned, moved, aged, full, limited;
	struct uvn_fdb_port port[UVN_FDB_MAX_PORTS];
};

int uvn_fdb_init(struct uvn_fdb *f, unsigned size_pow2, uint64_t age_ns);
void uvn_fdb_fini(struct uvn_fdb *f);

static inline uint64_t uvn_mac_key(const uint8_t *mac)
{
	return (uint64_t)mac[0] << 40 | (uint64_t)mac[1] << 32 | (uint64_t)mac[2] << 24 |
	       (uint64_t)mac[3] << 16 | (uint64_t)mac[4] << 8 | mac[5];
}

static inline bool uvn_mac_is_multicast(const uint8_t *mac)
{
	return mac[0] & 1;
}

/* What learning a source address did. */
enum uvn_fdb_learn_res {
	UVN_FDB_KNOWN,    /* already there, on that port (or static on it) */
	UVN_FDB_LEARNED,  /* a new entry */
	UVN_FDB_MOVED,    /* it was on another port */
	UVN_FDB_PINNED,   /* static on another port: left there */
	UVN_FDB_LIMITED,  /* new to a port at its mac-limit: not learned */
	UVN_FDB_FULL,     /* no room within the probe bound: not learned */
};

/* Remember that @key was seen on @port (< UVN_FDB_MAX_PORTS) at @now. */
enum uvn_fdb_learn_res uvn_fdb_learn(struct uvn_fdb *f, uint64_t key, uint16_t port, uint64_t now);

/* @return the port behind @key, or UVN_FDB_NO_PORT if unknown or aged out. */
uint16_t uvn_fdb_lookup(struct uvn_fdb *f, uint64_t key, uint64_t now);

/* Learned addresses @port may have (0: no limit). */
void uvn_fdb_set_limit(struct uvn_fdb *f, uint16_t port, uint32_t limit);

/* Learned (not static) addresses @port has now, stale ones included
 * until they are given up. */
static inline uint32_t uvn_fdb_port_count(const struct uvn_fdb *f, uint16_t port)
{
	return atomic_load_explicit(&f->port[port].count, memory_order_relaxed);
}

/* A static entry: @key on @port from now on, whatever was learned.
 * @return 0, or -ENOSPC (no room within the probe bound) */
int uvn_fdb_add_static(struct uvn_fdb *f, uint64_t key, uint16_t port, uint64_t now);

/* Forget @key (learned or static). @return 0, or -ENOENT */
int uvn_fdb_del(struct uvn_fdb *f, uint64_t key, uint64_t now);

/* Forget the learned addresses on @port (UVN_FDB_NO_PORT: on every port);
 * with @statics the static ones too. @return entries forgotten */
unsigned uvn_fdb_flush(struct uvn_fdb *f, uint16_t port, bool statics, uint64_t now);

/* Forget every address on @port, static ones too (it went away). */
void uvn_fdb_flush_port(struct uvn_fdb *f, uint16_t port);

/* One live entry, for display. */
struct uvn_fdb_info {
	uint64_t key;
	uint16_t port;
	bool is_static;
	uint64_t age_ns;   /* since last seen (static: since added) */
};

/* Slot @i (0..mask) if it holds a live entry. @return true and @out filled */
bool uvn_fdb_get(const struct uvn_fdb *f, unsigned i, uint64_t now, struct uvn_fdb_info *out);

#endif
