/* SPDX-License-Identifier: MIT */
/*
 * The physical limits a two-CPU virtio data path runs into:
 *  - single-core memcpy bandwidth: the device copies every frame once
 *    (guest TX buffer -> its packet, or its packet -> guest RX buffer), so a
 *    stream or pps result is read as a fraction of copying frames of that
 *    size between two rings of 256 buffers on one core (warm: the rings
 *    are reused, in cache as far as they fit, as a device's own recycled
 *    buffers are);
 *  - cold memcpy (--suite limits only): the same with source and
 *    destination far larger than the last-level cache, the floor of a
 *    copy of guest buffers that no cache holds (CPU per byte is read
 *    against it);
 *  - the cache-line round trip between the two CPUs: a request/response
 *    needs at least one (the request's index line to the device, the
 *    response's back), so rr transactions/s are read against 1/RTT. On the
 *    shared machines this was written on the round trip flips between two
 *    regimes (~60 ns and ~340 ns) for seconds at a time: every table
 *    records which one it ran in.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"
#include "proc.h"

#define RING 256
#define FAR_NS 150.0

static struct pt_limits cached;

const struct pt_limits *pt_limits_cached(void)
{
	return cached.valid ? &cached : NULL;
}

void pt_limits_set(const struct pt_limits *l)
{
	cached = *l;
}

/* Above this the other CPU was not there for us: it runs someone else too. */
#define CONTENDED_NS 2000.0

const char *pt_regime(double rtt_ns)
{
	return rtt_ns < FAR_NS ? "near" : rtt_ns < CONTENDED_NS ? "far" : "contended";
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/* ------------------------------------------------------------ memcpy */

struct copy_job {
	int cpu;
	size_t size;
	double secs;
	double gbps;
};

static void *copy_thread(void *arg)
{
	struct copy_job *j = arg;
	size_t stride = (j->size + 63) / 64 * 64;
	uint8_t *src = aligned_alloc(64, stride * RING), *dst = aligned_alloc(64, stride * RING);
	uint64_t bytes = 0, t0, t;
	volatile uint8_t sink = 0;

	if (!src || !dst)
		goto out;
	pin(j->cpu);
	memset(src, 1, stride * RING);
	memset(dst, 2, stride * RING);
	/* Untimed first, a quarter as long: fresh memory copies slowly for a
	 * while here (see cold_warm()), not only on its first touch. */
	t0 = pt_now_ns();
	do {
		for (unsigned i = 0; i < RING; i++)
			memcpy(dst + i * stride, src + i * stride, j->size);
	} while (pt_now_ns() - t0 < (uint64_t)(j->secs * 0.25e9));
	t0 = pt_now_ns();
	do {
		for (unsigned i = 0; i < RING; i++)
			memcpy(dst + i * stride, src + i * stride, j->size);
		sink ^= dst[(bytes / j->size) % RING * stride];
		bytes += (uint64_t)j->size * RING;
		t = pt_now_ns();
	} while (t - t0 < (uint64_t)(j->secs * 1e9));
	j->gbps = (double)bytes * 8 / (double)(t - t0);
	(void)sink;
out:
	free(src);
	free(dst);
	return NULL;
}

static double copy_gbps(int cpu, size_t size, double secs)
{
	struct copy_job j = { cpu, size, secs, NAN };
	pthread_t t;

	if (pthread_create(&t, NULL, copy_thread, &j))
		return NAN;
	pthread_join(t, NULL);
	return j.gbps;
}

/* ------------------------------------------------------- cold memcpy */
/*
 * The copy a device makes of guest buffers that are in no cache: a guest's
 * buffers were written long ago or by its own CPU and evicted since, and
 * the buffers they are copied into are as cold. Source and destination are
 * each COLD_LLC_TIMES the last-level cache, walked in order a frame at a
 * time (frames up to 2 KB in 2 KB slots, larger ones back to back, as
 * guest buffers lie): the walk comes round only after everything it
 * touched was evicted, and the prefetchers see the streams a guest's
 * buffers would show them. Plain 4 KB pages, as a guest's memfd memory.
 */
#define COLD_LLC_TIMES 8u
#define COLD_MIN_BUF (128ul << 20)
#define COLD_MAX_BUF (1ul << 30)
#define LLC_GUESS (64ul << 20)
#define COLD_WINDOWS 5u

/* The largest cache of @cpu (sysfs), or 0 if it says nothing. */
static size_t llc_bytes(int cpu)
{
	size_t best = 0;
	unsigned best_level = 0;

	for (unsigned i = 0; i < 8; i++) {
		char path[96], buf[32];
		unsigned level = 0;
		unsigned long kb = 0;
		FILE *f;

		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/cache/index%u/level", cpu, i);
		f = fopen(path, "r");
		if (!f)
			break;
		if (fscanf(f, "%u", &level) != 1)
			level = 0;
		fclose(f);
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/cache/index%u/size", cpu, i);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f))
			kb = strtoul(buf, NULL, 10) * (strchr(buf, 'M') ? 1024 : 1);
		fclose(f);
		if (level >= best_level && kb) {
			best_level = level;
			best = kb << 10;
		}
	}
	return best;
}

struct cold_job {
	int cpu;
	double secs;
	struct pt_limits *l;
};

/* Copy frames of @size from @src to @dst at *pos onwards for @secs; *pos moves on. */
static double cold_walk(uint8_t *src, uint8_t *dst, size_t buf, size_t *pos, size_t size,
			double secs)
{
	size_t slot = size <= 2048 ? 2048 : size, n = buf / slot, i = (*pos + slot - 1) / slot % n;
	uint64_t bytes = 0, t0 = pt_now_ns(), t;

	do {
		for (unsigned k = 0; k < 64; k++) {
			memcpy(dst + i * slot, src + i * slot, size);
			i = i + 1 == n ? 0 : i + 1;
		}
		bytes += 64 * (uint64_t)size;
		t = pt_now_ns();
	} while (t - t0 < (uint64_t)(secs * 1e9));
	*pos = i * slot;
	return (double)bytes * 8 / (double)(t - t0);
}

/*
 * Windows of the three sizes in turn, each walk going on where the last
 * one stopped (all ahead of it untouched for a whole lap): a size's value
 * is the median of its windows, so a burst of someone else's memory
 * traffic on the shared machine moves one window, not the row.
 */
static void cold_rows(uint8_t *src, uint8_t *dst, struct pt_limits *l, double secs)
{
	double w[3][COLD_WINDOWS], lo, hi;
	size_t pos = 0;

	for (unsigned k = 0; k < COLD_WINDOWS; k++)
		for (unsigned i = 0; i < 3; i++)
			w[i][k] = cold_walk(src, dst, l->cold_buf, &pos, (size_t)l->cold_sizes[i],
					    secs / 3 / COLD_WINDOWS);
	for (unsigned i = 0; i < 3; i++)
		pt_median(w[i], COLD_WINDOWS, &l->cold_gbps[i], &lo, &hi);
}

/*
 * Before anything is timed: every page of both buffers written (a fresh
 * mapping's first touch is a fault in the guest, and where the host backs
 * guest memory lazily one in the host too), then untimed laps until two in
 * a row take the same time within COLD_SETTLE (at most COLD_WARM_LAPS, or
 * COLD_WARM_NS). On the AMD host of issue 16 fresh memory copied slowly
 * for a while, not only on its first touch: with two fixed laps, one run
 * in five gave a cold copy of 0.6 Gb/s against 20-45.
 */
#define COLD_WARM_LAPS 8u
#define COLD_WARM_NS 4000000000ull
#define COLD_SETTLE 1.1

static void cold_warm(uint8_t *src, uint8_t *dst, size_t buf)
{
	uint64_t start = pt_now_ns(), prev = 0;

	for (size_t k = 0; k < buf; k += 4096)
		dst[k] = 0;
	/* Frames unlike each other: no page the same as another. */
	for (size_t k = 0; k < buf / 8; k++)
		((uint64_t *)src)[k] = k * 0x9e3779b97f4a7c15ull;
	for (unsigned lap = 0; lap < COLD_WARM_LAPS; lap++) {
		uint64_t t0 = pt_now_ns(), dt;

		memcpy(dst, src, buf);
		dt = pt_now_ns() - t0;
		if (prev && (double)dt < COLD_SETTLE * (double)prev &&
		    (double)prev < COLD_SETTLE * (double)dt)
			break;
		prev = dt;
		if (pt_now_ns() - start > COLD_WARM_NS)
			break;
	}
}

static void *cold_thread(void *arg)
{
	struct cold_job *j = arg;
	struct pt_limits *l = j->l;
	uint8_t *src, *dst;

	pin(j->cpu);
	src = aligned_alloc(4096, l->cold_buf);
	dst = aligned_alloc(4096, l->cold_buf);
	if (src && dst) {
		cold_warm(src, dst, l->cold_buf);
		cold_rows(src, dst, l, j->secs);
	}
	free(src);
	free(dst);
	return NULL;
}

int pt_limits_cold(int cpu, double secs, struct pt_limits *l)
{
	static const double sizes[3] = { 1518, 16384, 65536 };
	struct cold_job j = { cpu, secs, l };
	size_t llc = llc_bytes(cpu);
	pthread_t t;

	l->llc = llc;
	l->cold_buf = (llc ? llc : LLC_GUESS) * COLD_LLC_TIMES;
	if (l->cold_buf < COLD_MIN_BUF)
		l->cold_buf = COLD_MIN_BUF;
	if (l->cold_buf > COLD_MAX_BUF)
		l->cold_buf = COLD_MAX_BUF;
	l->cold_buf &= ~(size_t)((1u << 20) - 1); /* whole MB: aligned_alloc()'s multiple */
	for (unsigned i = 0; i < 3; i++) {
		l->cold_sizes[i] = sizes[i];
		l->cold_gbps[i] = NAN;
	}
	if (pthread_create(&t, NULL, cold_thread, &j))
		return -1;
	pthread_join(t, NULL);
	return pt_known(l->cold_gbps[0]) ? 0 : -1;
}

/* -------------------------------------------------- cache-line ping-pong */

struct pingpong {
	_Alignas(64) _Atomic unsigned flag;
	_Alignas(64) _Atomic int stop;
	int cpu;
};

static void *pong(void *arg)
{
	struct pingpong *p = arg;
	unsigned v = 1;

	pin(p->cpu);
	while (!atomic_load_explicit(&p->stop, memory_order_relaxed)) {
		if (atomic_load_explicit(&p->flag, memory_order_acquire) == v) {
			atomic_store_explicit(&p->flag, v + 1, memory_order_release);
			v += 2;
		}
	}
	return NULL;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Median of windows of round trips; *min / *max of the windows. */
static double rtt(int a, int b, double secs, double *min, double *max)
{
	struct pingpong *p = aligned_alloc(64, sizeof(*p));
	double w[2048];
	unsigned n = 0, v = 1;
	uint64_t end;
	pthread_t t;
	cpu_set_t saved;

	if (!p)
		return NAN;
	sched_getaffinity(0, sizeof(saved), &saved);
	memset(p, 0, sizeof(*p));
	p->cpu = b;
	*min = *max = NAN;
	if (pthread_create(&t, NULL, pong, p)) {
		free(p);
		return NAN;
	}
	pin(a);
	end = pt_now_ns() + (uint64_t)(secs * 1e9);
	while (n < 2048 && pt_now_ns() < end) {
		uint64_t t0 = pt_now_ns(), t1;
		unsigned k;

		/* 200 round trips a window (short: on a time-shared CPU a trip can
		 * wait a scheduler tick), or give up on a peer that does not run. */
		for (k = 0; k < 200; k++) {
			atomic_store_explicit(&p->flag, v, memory_order_release);
			while (atomic_load_explicit(&p->flag, memory_order_acquire) != v + 1)
				if (pt_now_ns() > end + 100000000ull)
					break;
			if (atomic_load_explicit(&p->flag, memory_order_acquire) != v + 1)
				break;
			v += 2;
		}
		t1 = pt_now_ns();
		if (k)
			w[n++] = (double)(t1 - t0) / k;
		if (k < 200)
			break;
	}
	atomic_store(&p->stop, 1);
	pthread_join(t, NULL);
	free(p);
	/* uvnet-perf's own thread goes back to where it was allowed to run. */
	sched_setaffinity(0, sizeof(saved), &saved);
	if (!n)
		return NAN;
	qsort(w, n, sizeof(w[0]), cmp);
	*min = w[0];
	*max = w[n - 1];
	return w[n / 2];
}

double pt_rtt_probe(int cpu_a, int cpu_b, double secs)
{
	double lo, hi;

	return rtt(cpu_a, cpu_b, secs, &lo, &hi);
}

int pt_limits_measure(int cpu_a, int cpu_b, double secs, struct pt_limits *l)
{
	static const double sizes[3] = { 64, 1518, 65536 };

	memset(l, 0, sizeof(*l));
	for (unsigned i = 0; i < 3; i++) {
		l->cold_gbps[i] = l->cold_sizes[i] = NAN; /* pt_limits_cold()'s */
		l->copy_sizes[i] = sizes[i];
		/* The device's CPU does the copies. */
		l->copy_gbps[i] = copy_gbps(cpu_a, (size_t)sizes[i], secs / 4);
	}
	l->rtt_ns = rtt(cpu_a, cpu_b, secs / 4, &l->rtt_min, &l->rtt_max);
	l->valid = pt_known(l->copy_gbps[0]);
	return l->valid ? 0 : -1;
}

/* The copy bandwidth measured at the size nearest to @size (on a log scale). */
static unsigned nearest(const struct pt_limits *l, unsigned size)
{
	unsigned best = 0;

	for (unsigned i = 1; i < 3; i++)
		if (fabs(log((double)size / l->copy_sizes[i])) <
		    fabs(log((double)size / l->copy_sizes[best])))
			best = i;
	return best;
}

/*
 * Over 100 % a row measured something cheaper than its limit's work: frames
 * nobody read (a descriptor rate), or a read where the limit is a copy.
 * Never silent: r->over_limit makes the reports flag it.
 */
void pt_limits_apply(const struct pt_limits *l, struct pt_result *r)
{
	if (!l || r->status != PT_OK)
		return;
	if (r->cfg.test == PT_RR) {
		if (!pt_known(l->rtt_ns))
			return;
		r->limit_frac = r->tps * l->rtt_ns / 1e9;
		snprintf(r->limit_basis, sizeof(r->limit_basis),
			 "1 cache-line round trip per transaction (%.0f ns)", l->rtt_ns);
	} else {
		unsigned i = nearest(l, r->cfg.size);

		r->limit_frac = r->gbps / l->copy_gbps[i];
		snprintf(r->limit_basis, sizeof(r->limit_basis),
			 "one memcpy per frame (%.0f B frames: %.1f Gb/s on one core)",
			 l->copy_sizes[i], l->copy_gbps[i]);
	}
	r->over_limit = r->limit_frac > 1;
}
