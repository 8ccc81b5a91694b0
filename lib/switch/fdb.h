/* SPDX-License-Identifier: MIT */
/*
 * The switch's forwarding database: MAC address -> port, learned from
 * source addresses, aged out after a timeout. Open addressing with linear
 * probing over a power-of-two table; stale entries are reused in place.
 */
#ifndef UVN_SWITCH_FDB_H
#define UVN_SWITCH_FDB_H

#include <stdbool.h>
#include <stdint.h>

#define UVN_FDB_NO_PORT 0xffff

struct uvn_fdb_entry {
	uint64_t mac;       /* 48-bit address, 0 = empty slot */
	uint64_t seen_ns;   /* last time the address was a source */
	uint16_t port;
};

struct uvn_fdb {
	struct uvn_fdb_entry *slots;
	unsigned mask;
	uint64_t age_ns;
	unsigned used;
	uint64_t learned, moved, aged, full;
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
