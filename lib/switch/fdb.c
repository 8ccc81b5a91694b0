/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>

#include "switch/fdb.h"

#define RELAXED memory_order_relaxed
#define REFRESH_NS 1000000000ull
/* Probe at most a bounded run so a full table cannot make this slow. */
#define MAX_PROBE 32

int uvn_fdb_init(struct uvn_fdb *f, unsigned size_pow2, uint64_t age_ns)
{
	if (!size_pow2 || (size_pow2 & (size_pow2 - 1)))
		return -EINVAL;
	f->slots = calloc(size_pow2, sizeof(*f->slots));
	if (!f->slots)
		return -ENOMEM;
	/* No slot points at a port until it holds a key. */
	for (unsigned i = 0; i < size_pow2; i++)
		atomic_init(&f->slots[i].port, UVN_FDB_NO_PORT);
	f->mask = size_pow2 - 1;
	f->age_ns = age_ns;
	f->learned = f->moved = f->aged = f->full = f->limited = 0;
	for (unsigned i = 0; i < UVN_FDB_MAX_PORTS; i++)
		f->port[i] = (struct uvn_fdb_port){ 0 };
	return 0;
}

void uvn_fdb_fini(struct uvn_fdb *f)
{
	free(f->slots);
	f->slots = NULL;
}

static unsigned hash(uint64_t key)
{
	key ^= key >> 23;
	key *= 0x2127599bf4325c37ull;
	return (unsigned)(key ^ (key >> 47));
}

static bool is_static(const struct uvn_fdb_entry *e)
{
	return atomic_load_explicit(&e->flags, RELAXED) & UVN_FDB_STATIC;
}

/* More than @span since @then? Signed: each worker reads the clock once a
 * burst, so another may have stored a time a little ahead of our @now; that
 * entry is fresh, not 584 years old. */
static bool older(uint64_t now, uint64_t then, uint64_t span)
{
	return (int64_t)(now - then) > (int64_t)span;
}

/* Aged out or deleted: the slot may be reused. Acquire: the port and flags
 * written before this time are read after it. */
static bool stale(const struct uvn_fdb *f, const struct uvn_fdb_entry *e, uint64_t now)
{
	uint64_t seen = atomic_load_explicit(&e->seen_ns, memory_order_acquire);

	if (atomic_load_explicit(&e->port, RELAXED) == UVN_FDB_NO_PORT)
		return true;
	return !is_static(e) && older(now, seen, f->age_ns);
}

/* After the port (set by whoever won it: a CAS or an exchange, never a
 * plain store that could undo another worker's counted change), the flags
 * and the time that makes the entry fresh (release). */
static void fill(struct uvn_fdb_entry *e, uint16_t flags, uint64_t now)
{
	atomic_store_explicit(&e->flags, flags, RELAXED);
	atomic_store_explicit(&e->seen_ns, now, memory_order_release);
}

static bool counted(uint16_t port, uint16_t flags)
{
	return port < UVN_FDB_MAX_PORTS && !(flags & UVN_FDB_STATIC);
}

/* One learned entry less on @port; never below zero, whatever raced. */
static void count_dec(struct uvn_fdb *f, uint16_t port)
{
	_Atomic uint32_t *c = &f->port[port].count;
	uint32_t v = atomic_load_explicit(c, RELAXED);

	while (v && !atomic_compare_exchange_weak_explicit(c, &v, v - 1, RELAXED, RELAXED))
		;
}

/* The entry stops pointing at its port (it stays in the table: it holds
 * a probe run together) and stops counting against it. */
static bool release(struct uvn_fdb *f, struct uvn_fdb_entry *e, uint16_t port)
{
	uint16_t flags = atomic_load_explicit(&e->flags, RELAXED);

	if (!atomic_compare_exchange_strong_explicit(&e->port, &port, UVN_FDB_NO_PORT, RELAXED,
						     RELAXED))
		return false;
	atomic_store_explicit(&e->flags, 0, RELAXED);
	if (counted(port, flags))
		count_dec(f, port);
	return true;
}

/* Give up the stale entries @port still owns. */
static void recount(struct uvn_fdb *f, uint16_t port, uint64_t now)
{
	for (unsigned i = 0; i <= f->mask; i++) {
		struct uvn_fdb_entry *e = &f->slots[i];

		if (atomic_load_explicit(&e->key, RELAXED) &&
		    atomic_load_explicit(&e->port, RELAXED) == port && stale(f, e, now))
			release(f, e, port);
	}
}

/* May @port own one more learned address? Counts a refusal. */
static bool may_add(struct uvn_fdb *f, uint16_t port, uint64_t now)
{
	struct uvn_fdb_port *p = &f->port[port];
	uint32_t limit = atomic_load_explicit(&p->limit, RELAXED);
	uint64_t last;

	if (!limit || atomic_load_explicit(&p->count, RELAXED) < limit)
		return true;
	/* At the limit: maybe some of its entries aged out. A scan of the
	 * table at most once a second, however fast the port sends. */
	last = atomic_load_explicit(&p->recount_ns, RELAXED);
	if (older(now, last, REFRESH_NS - 1) &&
	    atomic_compare_exchange_strong_explicit(&p->recount_ns, &last, now, RELAXED, RELAXED)) {
		recount(f, port, now);
		if (atomic_load_explicit(&p->count, RELAXED) < limit)
			return true;
	}
	atomic_fetch_add_explicit(&p->limited, 1, RELAXED);
	atomic_fetch_add_explicit(&f->limited, 1, RELAXED);
	return false;
}

/* @key found in @e: refresh it, move it, or keep it where it is pinned. */
static enum uvn_fdb_learn_res update(struct uvn_fdb *f, struct uvn_fdb_entry *e, uint16_t port,
				     uint64_t now)
{
	uint16_t cur = atomic_load_explicit(&e->port, RELAXED);

	/* The common case first: a known address, learned or static. */
	if (cur == port) {
		if (older(now, atomic_load_explicit(&e->seen_ns, RELAXED), REFRESH_NS))
			atomic_store_explicit(&e->seen_ns, now, RELAXED);
		return UVN_FDB_KNOWN;
	}
	if (is_static(e) && cur != UVN_FDB_NO_PORT)
		return UVN_FDB_PINNED;
	if (!may_add(f, port, now))
		return UVN_FDB_LIMITED;
	/* One winner per change of hands: only it moves the counts. A loser
	 * leaves the entry to the other worker's port, for this frame. */
	if (!atomic_compare_exchange_strong_explicit(&e->port, &cur, port, RELAXED, RELAXED))
		return UVN_FDB_KNOWN;
	fill(e, 0, now);
	atomic_fetch_add_explicit(&f->port[port].count, 1, RELAXED);
	if (cur == UVN_FDB_NO_PORT) {
		atomic_fetch_add_explicit(&f->learned, 1, RELAXED);
		return UVN_FDB_LEARNED;
	}
	count_dec(f, cur);
	atomic_fetch_add_explicit(&f->moved, 1, RELAXED);
	return UVN_FDB_MOVED;
}

/*
 * The slot holding @key, or else (*@free set) the first reusable one of
 * its run, or neither (NULL, *@free NULL: the run is full). The whole run
 * is searched before a reusable slot is taken: a stale slot ahead of the
 * key's own must not make a second entry that hides it (a static one).
 */
static struct uvn_fdb_entry *find(struct uvn_fdb *f, uint64_t key, uint64_t now,
				  struct uvn_fdb_entry **free, uint64_t *free_key)
{
	unsigned i = hash(key);

	*free = NULL;
	for (unsigned n = 0; n < MAX_PROBE; n++, i++) {
		struct uvn_fdb_entry *e = &f->slots[i & f->mask];
		uint64_t cur = atomic_load_explicit(&e->key, memory_order_acquire);

		if (cur == key)
			return e;
		if (cur && !stale(f, e, now))
			continue;
		if (!*free) {
			*free = e;
			*free_key = cur;
		}
		if (!cur)
			break; /* the end of the run */
	}
	return NULL;
}

/* Take @e (holding @old, empty or stale) for @key. @return false if
 * another thread took it first. */
static bool claim(struct uvn_fdb *f, struct uvn_fdb_entry *e, uint64_t old, uint64_t key,
		  uint16_t port, uint16_t flags, uint64_t now)
{
	uint16_t was_port;
	uint16_t was_flags;

	if (!atomic_compare_exchange_strong_explicit(&e->key, &old, key, memory_order_acq_rel,
						     memory_order_acquire))
		return false;
	/* Until fill() a reader finds the key with the old, stale time or no
	 * port: unknown, so it floods. The port is exchanged: a worker still
	 * moving the old key's entry has its change counted, once. */
	was_flags = atomic_load_explicit(&e->flags, RELAXED);
	was_port = atomic_exchange_explicit(&e->port, port, RELAXED);
	fill(e, flags, now);
	if (old && counted(was_port, was_flags))
		count_dec(f, was_port);
	if (counted(port, flags))
		atomic_fetch_add_explicit(&f->port[port].count, 1, RELAXED);
	if (old && was_port != UVN_FDB_NO_PORT)
		atomic_fetch_add_explicit(&f->aged, 1, RELAXED);
	return true;
}

/* Out of line: the fast path below stays a leaf with nothing to save. */
__attribute__((noinline)) static enum uvn_fdb_learn_res
learn_slow(struct uvn_fdb *f, uint64_t key, uint16_t port, uint64_t now)
{
	/* Two tries: a slot another worker took between find and claim. */
	for (int tries = 0; tries < 2; tries++) {
		uint64_t old = 0;
		struct uvn_fdb_entry *free, *e = find(f, key, now, &free, &old);

		if (e)
			return update(f, e, port, now);
		if (!free)
			break;
		if (!may_add(f, port, now))
			return UVN_FDB_LIMITED;
		if (claim(f, free, old, key, port, 0, now)) {
			atomic_fetch_add_explicit(&f->learned, 1, RELAXED);
			return UVN_FDB_LEARNED;
		}
	}
	atomic_fetch_add_explicit(&f->full, 1, RELAXED);
	return UVN_FDB_FULL;
}

enum uvn_fdb_learn_res uvn_fdb_learn(struct uvn_fdb *f, uint64_t key, uint16_t port, uint64_t now)
{
	struct uvn_fdb_entry *e = &f->slots[hash(key) & f->mask];

	/* Nearly every frame: a source known on its port, in its home slot. */
	if (__builtin_expect(atomic_load_explicit(&e->key, memory_order_acquire) == key &&
				     atomic_load_explicit(&e->port, RELAXED) == port, 1)) {
		if (older(now, atomic_load_explicit(&e->seen_ns, RELAXED), REFRESH_NS))
			atomic_store_explicit(&e->seen_ns, now, RELAXED);
		return UVN_FDB_KNOWN;
	}
	return learn_slow(f, key, port, now);
}

uint16_t uvn_fdb_lookup(struct uvn_fdb *f, uint64_t key, uint64_t now)
{
	unsigned i = hash(key);

	for (unsigned n = 0; n < MAX_PROBE; n++, i++) {
		struct uvn_fdb_entry *e = &f->slots[i & f->mask];
		uint64_t cur = atomic_load_explicit(&e->key, memory_order_acquire);

		/* A deleted entry's port is UVN_FDB_NO_PORT: only the
		 * time needs a look here, and the flags when it is old. */
		if (cur == key) {
			uint64_t seen = atomic_load_explicit(&e->seen_ns, memory_order_acquire);

			if (!older(now, seen, f->age_ns) || is_static(e))
				return atomic_load_explicit(&e->port, RELAXED);
			return UVN_FDB_NO_PORT;
		}
		if (!cur)
			break;
	}
	return UVN_FDB_NO_PORT;
}

void uvn_fdb_set_limit(struct uvn_fdb *f, uint16_t port, uint32_t limit)
{
	atomic_store_explicit(&f->port[port].limit, limit, RELAXED);
}

int uvn_fdb_add_static(struct uvn_fdb *f, uint64_t key, uint16_t port, uint64_t now)
{
	for (int tries = 0; tries < 2; tries++) {
		uint64_t old = 0;
		struct uvn_fdb_entry *free, *e = find(f, key, now, &free, &old);

		if (e) {
			uint16_t was_flags = atomic_load_explicit(&e->flags, RELAXED);
			uint16_t was = atomic_exchange_explicit(&e->port, port, RELAXED);

			fill(e, UVN_FDB_STATIC, now);
			if (counted(was, was_flags))
				count_dec(f, was);
			return 0;
		}
		if (!free)
			break;
		if (claim(f, free, old, key, port, UVN_FDB_STATIC, now))
			return 0;
	}
	return -ENOSPC;
}

int uvn_fdb_del(struct uvn_fdb *f, uint64_t key, uint64_t now)
{
	uint64_t old;
	struct uvn_fdb_entry *free, *e = find(f, key, now, &free, &old);

	if (!e || stale(f, e, now))
		return -ENOENT;
	return release(f, e, atomic_load_explicit(&e->port, RELAXED)) ? 0 : -ENOENT;
}

unsigned uvn_fdb_flush(struct uvn_fdb *f, uint16_t port, bool statics, uint64_t now)
{
	unsigned n = 0;

	for (unsigned i = 0; i <= f->mask; i++) {
		struct uvn_fdb_entry *e = &f->slots[i];
		uint16_t p = atomic_load_explicit(&e->port, RELAXED);
		bool live;

		if (!atomic_load_explicit(&e->key, RELAXED) || p == UVN_FDB_NO_PORT ||
		    (port != UVN_FDB_NO_PORT && p != port) || (!statics && is_static(e)))
			continue;
		live = !stale(f, e, now);
		n += release(f, e, p) && live;
	}
	return n;
}

void uvn_fdb_flush_port(struct uvn_fdb *f, uint16_t port)
{
	uvn_fdb_flush(f, port, true, 0);
	atomic_store_explicit(&f->port[port].count, 0, RELAXED);
}

bool uvn_fdb_get(const struct uvn_fdb *f, unsigned i, uint64_t now, struct uvn_fdb_info *out)
{
	const struct uvn_fdb_entry *e = &f->slots[i];
	uint64_t key = atomic_load_explicit(&e->key, memory_order_acquire);
	uint64_t seen;

	if (!key || stale(f, e, now))
		return false;
	seen = atomic_load_explicit(&e->seen_ns, RELAXED);
	*out = (struct uvn_fdb_info){
		.key = key,
		.port = atomic_load_explicit(&e->port, RELAXED),
		.is_static = is_static(e),
		.age_ns = now > seen ? now - seen : 0,
	};
	return out->port != UVN_FDB_NO_PORT;
}
