/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>

#include "switch/fdb.h"

int uvn_fdb_init(struct uvn_fdb *f, unsigned size_pow2, uint64_t age_ns)
{
	if (!size_pow2 || (size_pow2 & (size_pow2 - 1)))
		return -EINVAL;
	f->slots = calloc(size_pow2, sizeof(*f->slots));
	if (!f->slots)
		return -ENOMEM;
	f->mask = size_pow2 - 1;
	f->age_ns = age_ns;
	f->used = 0;
	f->learned = f->moved = f->aged = f->full = 0;
	return 0;
}

void uvn_fdb_fini(struct uvn_fdb *f)
{
	free(f->slots);
	f->slots = NULL;
}

static unsigned hash(uint64_t mac)
{
	mac ^= mac >> 23;
	mac *= 0x2127599bf4325c37ull;
	return (unsigned)(mac ^ (mac >> 47));
}

static bool stale(const struct uvn_fdb *f, const struct uvn_fdb_entry *e, uint64_t now)
{
	return now - e->seen_ns > f->age_ns;
}

/* Probe at most a bounded run so a full table cannot make this slow. */
#define MAX_PROBE 32

void uvn_fdb_learn(struct uvn_fdb *f, uint64_t mac, uint16_t port, uint64_t now)
{
	struct uvn_fdb_entry *reuse = NULL;
	unsigned i = hash(mac);

	for (unsigned n = 0; n < MAX_PROBE; n++, i++) {
		struct uvn_fdb_entry *e = &f->slots[i & f->mask];

		if (e->mac == mac) {
			if (e->port != port)
				f->moved++;
			e->port = port;
			e->seen_ns = now;
			return;
		}
		if (!e->mac) {
			if (!reuse) {
				reuse = e;
				f->used++;
			}
			break;
		}
		if (!reuse && stale(f, e, now)) {
			reuse = e;
			f->aged++;
		}
	}
	if (!reuse) {
		f->full++;
		return;
	}
	reuse->mac = mac;
	reuse->port = port;
	reuse->seen_ns = now;
	f->learned++;
}

uint16_t uvn_fdb_lookup(struct uvn_fdb *f, uint64_t mac, uint64_t now)
{
	unsigned i = hash(mac);

	for (unsigned n = 0; n < MAX_PROBE; n++, i++) {
		struct uvn_fdb_entry *e = &f->slots[i & f->mask];

		if (e->mac == mac)
			return stale(f, e, now) ? UVN_FDB_NO_PORT : e->port;
		if (!e->mac)
			break;
	}
	return UVN_FDB_NO_PORT;
}

void uvn_fdb_flush_port(struct uvn_fdb *f, uint16_t port)
{
	/* Entries are not removed (that would break probe runs): they are made stale. */
	for (unsigned i = 0; i <= f->mask; i++)
		if (f->slots[i].mac && f->slots[i].port == port)
			f->slots[i].seen_ns = 0, f->slots[i].port = UVN_FDB_NO_PORT;
}
