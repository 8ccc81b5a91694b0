/* SPDX-License-Identifier: MIT */
/*
 * The physical limits a two-CPU virtio data path runs into:
 *  - single-core memcpy bandwidth: the device copies every frame once
 *    (guest TX buffer -> its packet, or its packet -> guest RX buffer), so a
 *    stream or pps result is read as a fraction of copying frames of that
 *    size between two rings of 256 buffers on one core;
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
