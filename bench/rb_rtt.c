/* SPDX-License-Identifier: MIT */
/*
 * Cross-CPU cache-line round trip: two processes pinned to the benchmark's
 * two CPUs hand one counter back and forth through a shared cache line. A
 * two-CPU ring can never beat this floor, and on shared machines it jumps
 * between regimes (tens vs hundreds of ns), so the benchmark prints it.
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ringbench.h"

#define RTT_MAX_WINDOWS 256

struct rtt_shared {
	_Alignas(64) _Atomic uint64_t ball;   /* odd: the ponger's turn; even: the pinger's */
	_Alignas(64) _Atomic int stop;
	double ns[RTT_MAX_WINDOWS];
};

static _Noreturn void ponger(struct rtt_shared *s, int cpu)
{
	uint64_t want = 1;

	rb_pin(cpu);
	while (!atomic_load_explicit(&s->stop, memory_order_relaxed)) {
		if (atomic_load_explicit(&s->ball, memory_order_acquire) == want) {
			atomic_store_explicit(&s->ball, want + 1, memory_order_release);
			want += 2;
		}
	}
	_exit(0);
}

/* Bounce until @window_s passes; @return ns per round trip. */
static double one_window(struct rtt_shared *s, uint64_t *v, double window_s)
{
	double t0 = rb_now(), t;
	uint64_t rounds = 0;

	do {
		for (int i = 0; i < 256; i++) {
			atomic_store_explicit(&s->ball, *v + 1, memory_order_release);
			while (atomic_load_explicit(&s->ball, memory_order_acquire) != *v + 2)
				;
			*v += 2;
		}
		rounds += 256;
		t = rb_now();
	} while (t - t0 < window_s);
	return (t - t0) * 1e9 / (double)rounds;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int rb_rtt_measure(const int cpus[2], unsigned windows, double window_s, struct rb_rtt *out)
{
	struct rtt_shared *s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE,
				    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t pong, ping;
	int st = 0;

	if (s == MAP_FAILED)
		return -1;
	if (windows > RTT_MAX_WINDOWS)
		windows = RTT_MAX_WINDOWS;
	pong = rb_fork();
	if (pong == 0)
		ponger(s, cpus[1]);
	ping = pong > 0 ? rb_fork() : -1;
	if (ping == 0) {
		uint64_t v = 0;

		rb_pin(cpus[0]);
		for (unsigned w = 0; w < windows; w++)
			s->ns[w] = one_window(s, &v, window_s);
		_exit(0);
	}
	if (ping > 0)
		waitpid(ping, &st, 0);
	atomic_store(&s->stop, 1);
	if (pong > 0)
		waitpid(pong, NULL, 0);
	if (ping <= 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
		munmap(s, sizeof(*s));
		return -1;
	}
	qsort(s->ns, windows, sizeof(double), cmp_double);
	*out = (struct rb_rtt){ .median_ns = s->ns[windows / 2], .min_ns = s->ns[0],
				.max_ns = s->ns[windows - 1], .windows = windows };
	munmap(s, sizeof(*s));
	return 0;
}
