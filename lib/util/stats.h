/* SPDX-License-Identifier: MIT */
/*
 * Counters described by {name, offsetof} tables (struct uvn_stat_desc, in
 * <uvnet/virtqueue.h>), printed as text or JSON by one piece of code.
 *
 * Threads: a counter has one writer, the thread that owns what it counts
 * (a queue, a worker), and is read by others while that thread runs
 * (uvnetd's stats timer and `ctl show`). The writer adds with
 * uvn_stat_add(): a plain read of its own value and a relaxed atomic store,
 * on x86 the same loads and stores as `++` with no lock prefix, so the
 * data path pays nothing. Readers on other threads use uvn_stat_read() (or
 * the printers and uvn_stats_snapshot() below): a relaxed atomic load, which
 * never sees a torn value. Counters with several writers need an atomic
 * read-modify-write instead: uvn_stat_add_shared().
 */
#ifndef UVN_UTIL_STATS_H
#define UVN_UTIL_STATS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <uvnet/virtqueue.h>

#define UVN_STAT(type, field) { #field, offsetof(type, field) }

/* Writer (the counter's one owner thread): *c += n. */
static inline void uvn_stat_add(uint64_t *c, uint64_t n)
{
	__atomic_store_n(c, *c + n, __ATOMIC_RELAXED);
}

static inline void uvn_stat_inc(uint64_t *c)
{
	uvn_stat_add(c, 1);
}

/* A counter several threads add to (a port every worker sends on without a
 * lock): an atomic add, lock prefix and all; keep it off per-frame paths
 * that have no system call to hide it behind. */
static inline void uvn_stat_add_shared(uint64_t *c, uint64_t n)
{
	__atomic_fetch_add(c, n, __ATOMIC_RELAXED);
}

/* Writer: a gauge or a count going down (*c = v). */
static inline void uvn_stat_set(uint64_t *c, uint64_t v)
{
	__atomic_store_n(c, v, __ATOMIC_RELAXED);
}

/* Any thread. */
static inline uint64_t uvn_stat_read(const uint64_t *c)
{
	return __atomic_load_n(c, __ATOMIC_RELAXED);
}

static inline uint64_t uvn_stat_get(const void *stats, const struct uvn_stat_desc *d)
{
	return uvn_stat_read((const uint64_t *)((const char *)stats + d->offset));
}

/* Copy a struct of uint64_t counters (@size bytes) another thread updates. */
void uvn_stats_snapshot(void *dst, const void *src, size_t size);

/* Print "name=value" pairs (non-zero only unless @all) separated by spaces. */
void uvn_stats_print(FILE *f, const void *stats, const struct uvn_stat_desc *desc, int all);

/* Print "\"name\":value" pairs separated by commas (no braces). */
void uvn_stats_json(FILE *f, const void *stats, const struct uvn_stat_desc *desc);

#endif
