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

#define RELAXED memory_order_relaxed
#define REFRESH_NS 1000000000ull

/* Acquire: the port written before this time is read after it. */
static bool stale(const struct uvn_fdb *f, struct uvn_fdb_entry *e, uint64_t now)
{
	return now - atomic_load_explicit(&e->seen_ns, memory_order_acquire) > f->age_ns;
}

/* The port, then the time that makes the entry fresh (release). */
static void fill(struct uvn_fdb_entry *e, uint16_t port, uint64_t now)
{
	atomic_store_explicit(&e->port, port, RELAXED);
	atomic_store_explicit(&e->seen_ns, now, memory_order_release);
}

/* Probe at most a bounded run so a full table cannot make this slow. */
#define MAX_PROBE 32

void uvn_fdb_learn(struct uvn_fdb *f, uint64_t mac, uint16_t port, uint64_t now)
{
	unsigned i = hash(mac);

	for (unsigned n = 0; n < MAX_PROBE; n++, i++) {
		struct uvn_fdb_entry *e = &f->slots[i & f->mask];
		uint64_t cur = atomic_load_explicit(&e->mac, memory_order_acquire);

		if (cur == mac) {
			if (atomic_load_explicit(&e->port, RELAXED) != port) {
				atomic_fetch_add_explicit(&f->moved, 1, RELAXED);
				fill(e, port, now);
			} else if (now - atomic_load_explicit(&e->seen_ns, RELAXED) > REFRESH_NS) {
				atomic_store_explicit(&e->seen_ns, now, RELAXED);
			}
			return;
		}
		if (cur && !stale(f, e, now))
			continue;
		/* Claim an empty or stale slot. Until fill() a reader finds the
		 * address with the old, stale time: unknown, so it floods. */
		if (atomic_compare_exchange_strong_explicit(&e->mac, &cur, mac, memory_order_acq_rel,
							    memory_order_acquire)) {
			fill(e, port, now);
			atomic_fetch_add_explicit(&f->learned, 1, RELAXED);
			if (cur)
				atomic_fetch_add_explicit(&f->aged, 1, RELAXED);
			return;
		}
		if (cur == mac)
			return; /* another worker learned it just now */
		if (!cur)
			break;
	}
	atomic_fetch_add_explicit(&f->full, 1, RELAXED);
}

uint16_t uvn_fdb_lookup(struct uvn_fdb *f, uint64_t mac, uint64_t now)
{
	unsigned i = hash(mac);

	for (unsigned n = 0; n < MAX_PROBE; n++, i++) {
		struct uvn_fdb_entry *e = &f->slots[i & f->mask];
		uint64_t cur = atomic_load_explicit(&e->mac, memory_order_acquire);

		if (cur == mac)
			return stale(f, e, now) ? UVN_FDB_NO_PORT
						: atomic_load_explicit(&e->port, RELAXED);
		if (!cur)
			break;
	}
	return UVN_FDB_NO_PORT;
}

void uvn_fdb_flush_port(struct uvn_fdb *f, uint16_t port)
{
	/* Entries stay (removing them would break probe runs): they are
	 * pointed nowhere, and reused once stale. */
	for (unsigned i = 0; i <= f->mask; i++) {
		struct uvn_fdb_entry *e = &f->slots[i];

		if (atomic_load_explicit(&e->mac, RELAXED) &&
		    atomic_load_explicit(&e->port, RELAXED) == port) {
			atomic_store_explicit(&e->port, UVN_FDB_NO_PORT, RELAXED);
			atomic_store_explicit(&e->seen_ns, 0, RELAXED);
		}
	}
}
