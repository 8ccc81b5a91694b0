/* SPDX-License-Identifier: MIT */
/*
 * The switch's forwarding database: MAC address -> port, learned from
 * source addresses, aged out after a timeout. Open addressing with linear
 * probing over a power-of-two table; stale entries are reused in place.
 *
 * Every worker learns and looks up concurrently without a lock: a slot's
 * address is claimed with a compare-and-swap, its port and time are plain
 * atomic stores. A reader racing with a slot being reused for another
 * address may forward one frame by the old port: the switch floods or
 * re-learns on the next one. Learning writes only when something changed
 * (or the entry is a second old), so workers don't bounce its cache line.
 */
#ifndef UVN_SWITCH_FDB_H
#define UVN_SWITCH_FDB_H

#include <stdbool.h>
#include <stdatomic.h>
#include <stdint.h>

#define UVN_FDB_NO_PORT 0xffff

struct uvn_fdb_entry {
	_Atomic uint64_t mac;     /* 48-bit address, 0 = empty slot */
	_Atomic uint64_t seen_ns; /* last time the address was a source */
	_Atomic uint16_t port;
};

struct uvn_fdb {
	struct uvn_fdb_entry *slots;
	unsigned mask;
	uint64_t age_ns;
	/* counters, updated racily by all workers (for display) */
	_Atomic uint64_t learned, moved, aged, full;
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

/* Remember that @mac was seen on @port at @now. */
void uvn_fdb_learn(struct uvn_fdb *f, uint64_t mac, uint16_t port, uint64_t now);

/* @return the port behind @mac, or UVN_FDB_NO_PORT if unknown or aged out. */
uint16_t uvn_fdb_lookup(struct uvn_fdb *f, uint64_t mac, uint64_t now);

/* Forget every address on @port (it went away). */
void uvn_fdb_flush_port(struct uvn_fdb *f, uint16_t port);

#endif
