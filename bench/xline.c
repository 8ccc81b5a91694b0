/* SPDX-License-Identifier: MIT */
/*
 * uvnet-xline: what a store into a line another CPU has read costs, and
 * what the ways around it cost the reader. The pattern is uvnetd's guest
 * RX at 64 B: a writer (the switch, CPU 0) writes a 12-byte virtio-net
 * header and a frame into each of a burst of 2 KB buffers of a 256-buffer
 * ring, publishes an index, and fences (the used-index flush); a reader
 * (the guest, CPU 1) waits for the index, reads each buffer's header and
 * frame, and gives the buffers back. Every buffer the writer fills was read
 * by the reader one lap before, so its lines are shared in the reader's
 * cache when the writer's stores reach them.
 *
 * Variants of the writer's stores are run interleaved, round after round,
 * each sample after a cache-line round trip between the two threads (the
 * method of rb_rtt.c, on the threads that then run the sample), so samples
 * can be sorted into the "near" and "far" placements of the vCPUs.
 * Per sample: writer cycles per buffer (the stores, the publish and the
 * fence; not its waits for free buffers), reader cycles per buffer (its
 * loads and the index store; not its waits), and buffers per second.
 *
 *   uvnet-xline [--len 64] [--off 116] [--burst 32] [--rounds 7] [--ms 200]
 *               [--reader-writes 0|1] [--cpus 0,1] [--rtt N]
 *
 * --off is where the header starts in the 2 KB buffer: 116 is DPDK's
 * virtio RX (headroom 128 minus the header, the frame line-aligned), 0 a
 * line-aligned header (frame 12 bytes into the line). --reader-writes 1:
 * the reader also writes 12 bytes over the header it read, as testpmd
 * puts its TX header into the same headroom. --rtt N: print N round trips
 * (ns, each the median of 20 windows) and nothing else, for scripts.
 */
#include <immintrin.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>
#include <cpuid.h>

#define NBUF 256u
#define BUF_SIZE 2048u
#define HDR 12u
#define LINE 64u
#define MAX_BURST 64u
#define MAX_SAMPLES 64u
#define FAR_NS 250.0  /* round trip above this: the far placement (~110 vs ~450 ns here) */

enum cmd { CMD_IDLE, CMD_PING, CMD_RUN, CMD_QUIT };

struct shared {
	_Alignas(64) _Atomic uint32_t widx;   /* buffers published by the writer */
	_Alignas(64) _Atomic uint32_t ridx;   /* buffers given back by the reader */
	_Alignas(64) _Atomic uint64_t ball;   /* round trip */
	_Alignas(64) _Atomic int cmd;
	_Atomic int done;                     /* reader has left CMD_RUN */
	_Atomic int stop;                     /* writer ends the run */
	uint64_t rcyc, rbufs, rsum;           /* the reader's account of a run */
};

static struct shared sh;
static uint8_t *ring;
static uint32_t flen = 64, foff = 116, burst = 32;
static bool rwrite; /* the reader writes a header where it read one (testpmd's TX header) */

static inline uint64_t tsc(void)
{
	return __rdtsc();
}

static void pin(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	if (pthread_setaffinity_np(pthread_self(), sizeof(s), &s)) {
		fprintf(stderr, "xline: cannot pin to CPU %d\n", cpu);
		exit(1);
	}
}

/* ---- the stores ------------------------------------------------------ */

typedef void (*line_fn)(uint8_t *dst, const uint8_t *src);

/* A length the compiler does not know: the copy is glibc's memcpy, as in
 * uvnetd's write_fast(). */
static volatile uint32_t hdr_len_v = HDR;

static void store_plain(uint8_t *dst, const uint8_t *frame, const uint8_t *hdr)
{
	memcpy(dst, hdr, hdr_len_v);
	memcpy(dst + HDR, frame, flen);
}

static void line_sse_nt(uint8_t *d, const uint8_t *s)
{
	for (unsigned i = 0; i < LINE; i += 16)
		_mm_stream_si128((__m128i *)(d + i), _mm_loadu_si128((const __m128i *)(s + i)));
}

__attribute__((target("avx2"))) static void line_avx2(uint8_t *d, const uint8_t *s)
{
	_mm256_store_si256((__m256i *)d, _mm256_loadu_si256((const __m256i *)s));
	_mm256_store_si256((__m256i *)(d + 32), _mm256_loadu_si256((const __m256i *)(s + 32)));
}

__attribute__((target("avx2"))) static void line_avx2_nt(uint8_t *d, const uint8_t *s)
{
	_mm256_stream_si256((__m256i *)d, _mm256_loadu_si256((const __m256i *)s));
	_mm256_stream_si256((__m256i *)(d + 32), _mm256_loadu_si256((const __m256i *)(s + 32)));
}

__attribute__((target("avx512f"))) static void line_avx512(uint8_t *d, const uint8_t *s)
{
	_mm512_store_si512((void *)d, _mm512_loadu_si512((const void *)s));
}

__attribute__((target("movdir64b"))) static void line_movdir64b(uint8_t *d, const uint8_t *s)
{
	_movdir64b(d, s);
}

/*
 * Header and frame with whole lines of the buffer range stored by @fn, the
 * partial lines at its ends by plain stores; nothing outside [dst, dst +
 * HDR + flen) is written. A whole line that holds the header is put
 * together on the stack first; the others come straight from the frame.
 */
static void store_lines(uint8_t *dst, const uint8_t *frame, const uint8_t *hdr, line_fn fn)
{
	uint32_t total = HDR + flen, o = 0;

	while (o < total) {
		uintptr_t a = (uintptr_t)(dst + o);
		uint32_t to_end = LINE - (uint32_t)(a & (LINE - 1));

		if (to_end == LINE && total - o >= LINE) {
			if (o >= HDR) {
				fn(dst + o, frame + (o - HDR));
			} else {
				_Alignas(64) uint8_t line[LINE];

				memcpy(line, hdr + o, HDR - o);
				memcpy(line + (HDR - o), frame, LINE - (HDR - o));
				fn(dst + o, line);
			}
			o += LINE;
		} else {
			uint32_t c = to_end < total - o ? to_end : total - o;

			uint32_t h = o < HDR ? (HDR - o < c ? HDR - o : c) : 0;

			if (h)
				memcpy(dst + o, hdr + o, h);
			if (c > h)
				memcpy(dst + o + h, frame + (o + h - HDR), c - h);
			o += c;
		}
	}
}

static inline void prefetchw(const void *p)
{
	__asm__ volatile("prefetchw %0" : : "m"(*(const char *)p));
}

static inline void pfw_buf(const uint8_t *b)
{
	prefetchw(b);
	prefetchw(b + HDR);
	prefetchw(b + HDR + flen - 1);
}

__attribute__((target("clwb"))) static void clwb_range(uint8_t *b, uint32_t len)
{
	for (uintptr_t a = (uintptr_t)b & ~(uintptr_t)(LINE - 1); a < (uintptr_t)b + len; a += LINE)
		_mm_clwb((void *)a);
}

__attribute__((target("clflushopt"))) static void clflushopt_range(uint8_t *b, uint32_t len)
{
	for (uintptr_t a = (uintptr_t)b & ~(uintptr_t)(LINE - 1); a < (uintptr_t)b + len; a += LINE)
		_mm_clflushopt((void *)a);
}

/* PF_RUN: the first @dist buffers before the stores, then @dist ahead
 * inside the burst (a sliding PREFETCHW in rx.c's write_fast()). */
enum pf { PF_NONE, PF_BURST, PF_AHEAD, PF_RUN };
enum after { AFTER_NONE, AFTER_CLWB, AFTER_CLFLUSHOPT };

struct variant {
	const char *name;
	enum pf pf;
	unsigned dist;        /* PF_AHEAD: buffers ahead */
	line_fn line;         /* NULL: store_plain */
	bool weak;            /* weakly ordered stores: sfence before publish */
	enum after after;
	const char *needs;    /* CPU feature, or NULL */
};

static const struct variant variants[] = {
	{ "plain", PF_NONE, 0, NULL, false, AFTER_NONE, NULL },
	{ "pfw-burst", PF_BURST, 0, NULL, false, AFTER_NONE, "prfchw" },
	{ "pfw-d1", PF_AHEAD, 1, NULL, false, AFTER_NONE, "prfchw" },
	{ "pfw-d4", PF_AHEAD, 4, NULL, false, AFTER_NONE, "prfchw" },
	{ "pfw-d8", PF_AHEAD, 8, NULL, false, AFTER_NONE, "prfchw" },
	{ "pfw-d16", PF_AHEAD, 16, NULL, false, AFTER_NONE, "prfchw" },
	{ "pfw-d32", PF_AHEAD, 32, NULL, false, AFTER_NONE, "prfchw" },
	{ "pfw-run4", PF_RUN, 4, NULL, false, AFTER_NONE, "prfchw" },
	{ "pfw-run8", PF_RUN, 8, NULL, false, AFTER_NONE, "prfchw" },
	{ "nt-sse", PF_NONE, 0, line_sse_nt, true, AFTER_NONE, NULL },
	{ "nt-avx2", PF_NONE, 0, line_avx2_nt, true, AFTER_NONE, "avx2" },
	{ "movdir64b", PF_NONE, 0, line_movdir64b, true, AFTER_NONE, "movdir64b" },
	{ "line-avx2", PF_NONE, 0, line_avx2, false, AFTER_NONE, "avx2" },
	{ "line-avx512", PF_NONE, 0, line_avx512, false, AFTER_NONE, "avx512f" },
	{ "pfw-d8+avx512", PF_AHEAD, 8, line_avx512, false, AFTER_NONE, "avx512f" },
	{ "pfw-burst+clwb", PF_BURST, 0, NULL, false, AFTER_CLWB, "clwb" },
	{ "pfw-burst+clflushopt", PF_BURST, 0, NULL, false, AFTER_CLFLUSHOPT, "clflushopt" },
};
#define NVAR (sizeof(variants) / sizeof(variants[0]))

static bool cpu_has(const char *f)
{
	unsigned a, b, c, d;

	if (!f)
		return true;
	if (!strcmp(f, "prfchw"))
		return __get_cpuid(0x80000001, &a, &b, &c, &d) && (c & bit_PRFCHW);
	if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
		return false;
	if (!strcmp(f, "avx2"))
		return b & bit_AVX2;
	if (!strcmp(f, "avx512f"))
		return b & bit_AVX512F;
	if (!strcmp(f, "clwb"))
		return b & bit_CLWB;
	if (!strcmp(f, "clflushopt"))
		return b & bit_CLFLUSHOPT;
	if (!strcmp(f, "movdir64b"))
		return c & bit_MOVDIR64B;
	return false;
}

static uint8_t *buf_at(uint32_t i)
{
	return ring + (size_t)(i % NBUF) * BUF_SIZE + foff;
}

static void write_one(const struct variant *v, uint8_t *b, const uint8_t *frame,
		      const uint8_t *hdr)
{
	if (v->line)
		store_lines(b, frame, hdr, v->line);
	else
		store_plain(b, frame, hdr);
}

/* One burst at ring position @w: the stores, the publish, the fence. */
static void write_burst(const struct variant *v, uint32_t w, const uint8_t *frame, uint8_t *hdr)
{
	if (v->pf == PF_BURST || v->pf == PF_RUN)
		for (uint32_t i = 0; i < burst && (v->pf == PF_BURST || i < v->dist); i++)
			pfw_buf(buf_at(w + i));
	for (uint32_t i = 0; i < burst; i++) {
		uint8_t *b = buf_at(w + i);

		if (v->pf == PF_AHEAD || (v->pf == PF_RUN && i + v->dist < burst))
			pfw_buf(buf_at(w + i + v->dist));
		hdr[0] = (uint8_t)(w + i); /* a byte that changes: not a store of equal data */
		write_one(v, b, frame, hdr);
	}
	if (v->after == AFTER_CLWB)
		for (uint32_t i = 0; i < burst; i++)
			clwb_range(buf_at(w + i), HDR + flen);
	else if (v->after == AFTER_CLFLUSHOPT)
		for (uint32_t i = 0; i < burst; i++)
			clflushopt_range(buf_at(w + i), HDR + flen);
	/* Weakly ordered stores reach the reader before the index says so. */
	if (v->weak || v->after != AFTER_NONE)
		_mm_sfence();
	atomic_store_explicit(&sh.widx, w + burst, memory_order_release);
	/* uvnetd's flush: a full fence before it reads the guest's used_event. */
	atomic_thread_fence(memory_order_seq_cst);
	(void)atomic_load_explicit(&sh.ridx, memory_order_relaxed);
}

/* ---- the reader -------------------------------------------------------- */

static void reader_run(void)
{
	uint32_t r = atomic_load_explicit(&sh.ridx, memory_order_relaxed);
	uint64_t cyc = 0, n = 0, sum = 0;

	while (!atomic_load_explicit(&sh.stop, memory_order_relaxed)) {
		uint32_t w = atomic_load_explicit(&sh.widx, memory_order_acquire);
		uint64_t t0;

		if (w == r)
			continue;
		t0 = tsc();
		for (; r != w; r++) {
			const uint8_t *b = buf_at(r);
			uint64_t x;

			/* num_buffers, then the frame, as a guest would look at it. */
			sum += (uint16_t)(b[10] | b[11] << 8);
			for (uint32_t o = 0; o + 8 <= flen; o += 8) {
				memcpy(&x, b + HDR + o, 8);
				sum += x;
			}
			if (rwrite)
				memset((uint8_t *)b, 0, HDR);
			n++;
		}
		atomic_store_explicit(&sh.ridx, r, memory_order_release);
		cyc += tsc() - t0;
	}
	sh.rcyc = cyc;
	sh.rbufs = n;
	sh.rsum = sum;
}

static void *reader(void *arg)
{
	uint64_t want = 1;

	pin(*(int *)arg);
	for (;;) {
		int c = atomic_load_explicit(&sh.cmd, memory_order_acquire);

		if (c == CMD_QUIT)
			return NULL;
		if (c == CMD_PING) {
			if (atomic_load_explicit(&sh.ball, memory_order_acquire) == want) {
				atomic_store_explicit(&sh.ball, want + 1, memory_order_release);
				want += 2;
			}
		} else if (c == CMD_RUN) {
			reader_run();
			atomic_store_explicit(&sh.cmd, CMD_IDLE, memory_order_relaxed);
			atomic_store_explicit(&sh.done, 1, memory_order_release);
		}
	}
}

/* ---- the writer (main thread) --------------------------------------------- */

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Median ns of 20 windows of 200 round trips (short windows: a vCPU
 * preempted in one spoils one window only). */
static double rtt_ns(void)
{
	double w[20];
	uint64_t v = atomic_load(&sh.ball);

	atomic_store_explicit(&sh.cmd, CMD_PING, memory_order_release);
	for (int k = 0; k < 20; k++) {
		double t0 = now();

		for (int i = 0; i < 200; i++) {
			atomic_store_explicit(&sh.ball, v + 1, memory_order_release);
			while (atomic_load_explicit(&sh.ball, memory_order_acquire) != v + 2)
				;
			v += 2;
		}
		w[k] = (now() - t0) * 1e9 / 200;
	}
	atomic_store_explicit(&sh.cmd, CMD_IDLE, memory_order_release);
	for (int i = 1; i < 20; i++)
		for (int j = i; j > 0 && w[j] < w[j - 1]; j--) {
			double t = w[j];

			w[j] = w[j - 1];
			w[j - 1] = t;
		}
	return w[10];
}

struct sample {
	double rtt, wcyc, rcyc, mbps;
};

static struct sample run_variant(const struct variant *v, double ms)
{
	uint8_t frame[256], hdr[HDR] = { 0 };
	uint32_t w = atomic_load(&sh.widx);
	uint64_t cyc = 0, n = 0;
	double t0, t;
	struct sample s;

	for (unsigned i = 0; i < sizeof(frame); i++)
		frame[i] = (uint8_t)(i * 7);
	hdr[10] = 1;
	s.rtt = rtt_ns();
	sh.done = 0;
	sh.stop = 0;
	atomic_store_explicit(&sh.cmd, CMD_RUN, memory_order_release);
	t0 = now();
	do {
		for (int k = 0; k < 64; k++) {
			uint64_t c0;

			/* Room for a burst: buffers the reader gave back. */
			while (w + burst - atomic_load_explicit(&sh.ridx, memory_order_acquire) > NBUF)
				;
			c0 = tsc();
			write_burst(v, w, frame, hdr);
			cyc += tsc() - c0;
			w += burst;
			n += burst;
		}
		t = now();
	} while (t - t0 < ms * 1e-3);
	atomic_store_explicit(&sh.stop, 1, memory_order_relaxed);
	while (!atomic_load_explicit(&sh.done, memory_order_acquire))
		;
	s.wcyc = (double)cyc / (double)n;
	s.rcyc = sh.rbufs ? (double)sh.rcyc / (double)sh.rbufs : 0;
	s.mbps = (double)n / (t - t0) * 1e-6;
	return s;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* "median (min-max)" of field @f of the samples in regime @far. */
static void print_stat(const struct sample *s, unsigned n, size_t f, int far)
{
	double v[MAX_SAMPLES];
	unsigned k = 0;

	for (unsigned i = 0; i < n; i++)
		if (far < 0 || (s[i].rtt >= FAR_NS) == far)
			v[k++] = *(const double *)((const char *)&s[i] + f);
	if (!k) {
		printf(" %20s", "-");
		return;
	}
	qsort(v, k, sizeof(double), cmp_d);
	printf(" %7.1f (%5.1f-%5.1f)", v[k / 2], v[0], v[k - 1]);
}

static void usage(void)
{
	fprintf(stderr, "usage: uvnet-xline [--len 8..256] [--off 0..1024] [--burst 1..64]\n"
			"                   [--rounds N] [--ms MS] [--cpus W,R] [--reader-writes 0|1] [--rtt N]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static struct sample smp[NVAR][MAX_SAMPLES];
	unsigned rounds = 7, ns[NVAR] = { 0 }, rtt_only = 0;
	int cpus[2] = { 0, 1 };
	double ms = 200;
	pthread_t th;

	for (int i = 1; i < argc; i++) {
		const char *o = argv[i], *a = i + 1 < argc ? argv[i + 1] : NULL;

		if (!a)
			usage();
		i++;
		if (!strcmp(o, "--len"))
			flen = (uint32_t)atoi(a);
		else if (!strcmp(o, "--off"))
			foff = (uint32_t)atoi(a);
		else if (!strcmp(o, "--burst"))
			burst = (uint32_t)atoi(a);
		else if (!strcmp(o, "--rounds"))
			rounds = (unsigned)atoi(a);
		else if (!strcmp(o, "--ms"))
			ms = atof(a);
		else if (!strcmp(o, "--reader-writes"))
			rwrite = atoi(a) != 0;
		else if (!strcmp(o, "--rtt"))
			rtt_only = (unsigned)atoi(a);
		else if (!strcmp(o, "--cpus"))
			sscanf(a, "%d,%d", &cpus[0], &cpus[1]);
		else
			usage();
	}
	if (flen < 8 || flen > 256 || foff > 1024 || !burst || burst > MAX_BURST ||
	    !rounds || rounds > MAX_SAMPLES || ms <= 0)
		usage();
	ring = aligned_alloc(4096, (size_t)NBUF * BUF_SIZE + 4096);
	if (!ring)
		return 1;
	memset(ring, 0, (size_t)NBUF * BUF_SIZE + 4096);
	pin(cpus[0]);
	if (pthread_create(&th, NULL, reader, &cpus[1]))
		return 1;
	if (rtt_only) {
		/* Only the round trip, @rtt_only times (scripts note the placement). */
		for (unsigned i = 0; i < rtt_only; i++)
			printf("%s%.0f", i ? " " : "", rtt_ns());
		printf("\n");
		atomic_store(&sh.cmd, CMD_QUIT);
		pthread_join(th, NULL);
		return 0;
	}
	printf("# uvnet-xline: frame %u B + %u B header at offset %u of %u x %u B buffers, "
	       "burst %u, %u rounds x %.0f ms, writer CPU %d, reader CPU %d%s\n",
	       flen, HDR, foff, NBUF, BUF_SIZE, burst, rounds, ms, cpus[0], cpus[1],
	       rwrite ? ", the reader writes the header back" : "");
	for (unsigned r = 0; r < rounds; r++) {
		/* Each round starts at another variant: none always follows the same one. */
		for (unsigned k = 0; k < NVAR; k++) {
			unsigned i = (k + r) % NVAR;

			if (!cpu_has(variants[i].needs))
				continue;
			smp[i][ns[i]++] = run_variant(&variants[i], ms);
		}
		fprintf(stderr, "round %u/%u done\n", r + 1, rounds);
	}
	atomic_store(&sh.cmd, CMD_QUIT);
	pthread_join(th, NULL);
	printf("# medians (min-max) over samples; far: round trip >= %.0f ns before the sample\n",
	       FAR_NS);
	for (int far = 0; far < 2; far++) {
		printf("\n## %s samples\n%-20s %4s %20s %20s %20s %20s\n", far ? "far" : "near",
		       "variant", "n", "rtt ns", "writer cyc/buf", "reader cyc/buf", "Mbuf/s");
		for (unsigned i = 0; i < NVAR; i++) {
			unsigned k = 0;

			for (unsigned j = 0; j < ns[i]; j++)
				k += (smp[i][j].rtt >= FAR_NS) == far;
			if (!k)
				continue;
			printf("%-20s %4u", variants[i].name, k);
			print_stat(smp[i], ns[i], offsetof(struct sample, rtt), far);
			print_stat(smp[i], ns[i], offsetof(struct sample, wcyc), far);
			print_stat(smp[i], ns[i], offsetof(struct sample, rcyc), far);
			print_stat(smp[i], ns[i], offsetof(struct sample, mbps), far);
			printf("\n");
		}
	}
	return 0;
}
