/* SPDX-License-Identifier: MIT */
/*
 * A hostile vhost-user frontend and an honest pair, for uvnetd's isolation
 * tests (test_hostile.sh runs them against a live uvnetd):
 *
 *   hostile kickswap SOCK SECS   start the TX ring with kick eventfd k1,
 *                                replace it by k2, switch the ring to NOFD,
 *                                then keep writing to k1 and k2 (the fds
 *                                uvnetd closed while a worker watched them)
 *   hostile fulltx SOCK SECS     keep the TX ring full: avail->idx =
 *                                used->idx + num, over and over
 *   hostile polled SOCK SECS     a TX ring without a kick fd (NOFD: poll
 *                                me), never kicked, 64 frames out at a time
 *   hostile honest SOCK_B SOCK_C SECS
 *                                two honest drivers: B broadcasts, C must
 *                                receive throughout (no gap of a second),
 *                                else exit 1
 *   hostile exact SOCK_B SOCK_C SECS
 *                                the same, and every frame uvnetd took from
 *                                B reaches C once and in order (numbered),
 *                                else exit 1; prints "ready" once both are up
 *   hostile filter SOCK_B SOCK_C
 *                                C (a port with queues=2: a control queue)
 *                                sets its MAC and leaves promiscuous mode;
 *                                B sends frames to C's MAC and to a MAC
 *                                nobody has (both flooded): C must get
 *                                exactly its own; promiscuous again, every
 *                                one, else exit 1
 *   hostile filter-polled SOCK_B SOCK_C
 *                                the same, C's control queue without a kick
 *                                fd (NOFD: poll me): its commands must be
 *                                answered all the same
 *
 * The hostile modes print "ready" once the attack runs, and stop after SECS
 * (a bound, in case nobody kills them).
 */
#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <linux/virtio_config.h>
#include <linux/virtio_ring.h>
#include <uvnet/driver.h>

#include "mem/mem.h"
#include "net/driver/drv.h"
#include "vhost_user/frontend.h"
#include "vhost_user/proto.h"

/* The largest ring: uvnetd takes the longest to empty it, so the guest
 * keeps it full even when it loses its CPU for a few milliseconds. */
#define NUM 32768u
#define MEM_SIZE (4u << 20)
#define RING_OFF(i) ((i) * 0x110000u) /* desc, +512 KB avail, +768 KB used */
#define AVAIL_OFF 0x80000u
#define USED_OFF 0xc0000u
#define BUF_OFF 0x240000u
#define HDR_LEN 12 /* virtio-net header, VERSION_1 */
#define FRAME_LEN 60
#define BIG_FRAME_LEN 65000

static const uint8_t mac_a[6] = { 0x02, 0, 0, 0, 0, 0xaa };
static const uint8_t mac_b[6] = { 0x02, 0, 0, 0, 0, 0xbb };
static const uint8_t mac_c[6] = { 0x02, 0, 0, 0, 0, 0xcc };

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void die(const char *what, int err)
{
	fprintf(stderr, "hostile: %s: %s\n", what, strerror(err < 0 ? -err : err));
	exit(1);
}

static void check(int r, const char *what)
{
	if (r)
		die(what, r);
}

struct guest {
	struct uvn_vu_fe *fe;
	uint8_t *mem;
	int kick[2], call[2];
};

static void kick(int fd)
{
	uint64_t one = 1;

	if (write(fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		die("kick", errno);
}

static void ring_start(struct guest *g, unsigned idx)
{
	uint64_t base = (uint64_t)(uintptr_t)g->mem + RING_OFF(idx);

	check(uvn_vu_fe_set_vring_num(g->fe, idx, NUM), "SET_VRING_NUM");
	check(uvn_vu_fe_set_vring_base(g->fe, idx, 0), "SET_VRING_BASE");
	check(uvn_vu_fe_set_vring_addr(g->fe, idx, base, base + AVAIL_OFF, base + USED_OFF),
	      "SET_VRING_ADDR");
	check(uvn_vu_fe_set_vring_call(g->fe, idx, g->call[idx]), "SET_VRING_CALL");
	check(uvn_vu_fe_set_vring_kick(g->fe, idx, g->kick[idx]), "SET_VRING_KICK");
}

/* Connect as a plain VERSION_1 split-ring guest: ring 0 (its RX) with no
 * buffers, ring 1 (its TX) with every descriptor the same full-size frame
 * from A to A (uvnetd learns A and filters them: nothing reaches B or C). */
static void guest_open(struct guest *g, const char *path)
{
	struct uvn_vu_fe_cfg cfg = { .path = path, .timeout_ms = 5000, .name = "hostile" };
	struct uvn_mem_region_desc region;
	struct vring_desc *desc;
	uint64_t offered;
	unsigned pairs;
	int memfd;

	memfd = memfd_create("hostile", MFD_CLOEXEC);
	if (memfd < 0 || ftruncate(memfd, MEM_SIZE))
		die("memfd", errno);
	g->mem = mmap(NULL, MEM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (g->mem == MAP_FAILED)
		die("mmap", errno);
	for (unsigned i = 0; i < 2; i++) {
		g->kick[i] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		g->call[i] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (g->kick[i] < 0 || g->call[i] < 0)
			die("eventfd", errno);
	}
	desc = (struct vring_desc *)(g->mem + RING_OFF(1));
	memcpy(g->mem + BUF_OFF + HDR_LEN, mac_a, 6);
	memcpy(g->mem + BUF_OFF + HDR_LEN + 6, mac_a, 6);
	g->mem[BUF_OFF + HDR_LEN + 12] = 0x88;
	g->mem[BUF_OFF + HDR_LEN + 13] = 0xb5;
	for (unsigned i = 0; i < NUM; i++) {
		desc[i].addr = htole64(BUF_OFF);
		desc[i].len = htole32(HDR_LEN + BIG_FRAME_LEN);
	}
	check(uvn_vu_fe_connect(&cfg, &g->fe), "connect");
	check(uvn_vu_fe_set_owner(g->fe), "SET_OWNER");
	check(uvn_vu_fe_negotiate(g->fe, 1ull << VHOST_USER_PROTOCOL_F_REPLY_ACK, &offered, &pairs),
	      "negotiate");
	check(uvn_vu_fe_set_features(g->fe, offered & (1ull << VIRTIO_F_VERSION_1)), "SET_FEATURES");
	region = (struct uvn_mem_region_desc){ .gpa = 0, .size = MEM_SIZE,
					       .uva = (uint64_t)(uintptr_t)g->mem };
	check(uvn_vu_fe_set_mem(g->fe, &region, &memfd, 1), "SET_MEM_TABLE");
	close(memfd);
	ring_start(g, 0);
	ring_start(g, 1);
	check(uvn_vu_fe_set_vring_enable(g->fe, 0, true), "SET_VRING_ENABLE");
	check(uvn_vu_fe_set_vring_enable(g->fe, 1, true), "SET_VRING_ENABLE");
}

static void ready(void)
{
	printf("ready\n");
	fflush(stdout);
}

/* Finding 4: the kick fds uvnetd closed stay open here; writing to them
 * must reach nothing (no handler, no worker). */
static int kickswap(const char *path, unsigned secs)
{
	struct guest g;
	int k2 = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	uint64_t end = now_ms() + secs * 1000ull;

	if (k2 < 0)
		die("eventfd", errno);
	guest_open(&g, path);
	usleep(100000); /* the workers watch k1 now */
	check(uvn_vu_fe_set_vring_kick(g.fe, 1, k2), "SET_VRING_KICK k2");
	usleep(100000);
	check(uvn_vu_fe_set_vring_kick(g.fe, 1, -1), "SET_VRING_KICK NOFD");
	usleep(100000);
	ready();
	while (now_ms() < end && !uvn_vu_fe_check(g.fe)) {
		kick(g.kick[1]);
		kick(k2);
		usleep(5000);
	}
	return 0;
}

/* Offer TX descriptors (each one frame) until @n are out: every one
 * uvnetd handed back since is offered again. @return false if none was. */
static bool offer(struct guest *g, uint16_t *next, unsigned n)
{
	struct vring_avail *avail = (struct vring_avail *)(g->mem + RING_OFF(1) + AVAIL_OFF);
	struct vring_used *used = (struct vring_used *)(g->mem + RING_OFF(1) + USED_OFF);
	uint16_t target = (uint16_t)(le16toh(__atomic_load_n(&used->idx, __ATOMIC_ACQUIRE)) + n);

	if (*next == target)
		return false;
	for (; *next != target; (*next)++)
		avail->ring[*next % NUM] = htole16(*next % NUM);
	/* The entries before the index that exposes them. */
	__atomic_store_n(&avail->idx, htole16(*next), __ATOMIC_RELEASE);
	return true;
}

/* Finding 5: a ring that is never empty. Every descriptor carries one
 * frame; whatever uvnetd hands back is offered again at once. */
static int fulltx(const char *path, unsigned secs)
{
	struct guest g;
	struct vring_used *used;
	uint64_t end = now_ms() + secs * 1000ull;
	uint16_t next = 0;
	bool said = false;

	guest_open(&g, path);
	used = (struct vring_used *)(g.mem + RING_OFF(1) + USED_OFF);
	while (now_ms() < end) {
		if (!offer(&g, &next, NUM))
			continue;
		/* A kick only when asked for: no syscall slows the refill. */
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (!(le16toh(__atomic_load_n(&used->flags, __ATOMIC_ACQUIRE)) & VRING_USED_F_NO_NOTIFY))
			kick(g.kick[1]);
		if (!said) {
			ready();
			said = true;
		}
	}
	return 0;
}

/* A frontend that polls: its TX ring has no kick fd (NOFD), which asks
 * the backend to poll it too, and is never kicked. 64 frames at a time. */
static int polled(const char *path, unsigned secs)
{
	struct guest g;
	uint64_t end = now_ms() + secs * 1000ull;
	uint16_t next = 0;

	guest_open(&g, path);
	check(uvn_vu_fe_set_vring_kick(g.fe, 1, -1), "SET_VRING_KICK NOFD");
	ready();
	while (now_ms() < end && !uvn_vu_fe_check(g.fe)) {
		offer(&g, &next, 64);
		usleep(1000);
	}
	return 0;
}

static struct uvn_drv *honest_open(const char *path, const uint8_t mac[6])
{
	struct uvn_drv_cfg cfg;
	struct uvn_drv *d;

	uvn_drv_cfg_init(&cfg);
	cfg.path = path;
	cfg.queue_size = 256;
	cfg.no_huge = true;
	memcpy(cfg.mac, mac, 6);
	cfg.mac_set = true;
	check(uvn_drv_open(&cfg, &d), path);
	return d;
}

/* B's frames: broadcast, numbered at offset 14. */
static void fill(struct uvn_pkt **pkts, unsigned k, uint32_t *seq)
{
	for (unsigned i = 0; i < k; i++) {
		uint8_t *f = pkts[i]->seg[0].iov_base;

		memset(f, 0, FRAME_LEN);
		memset(f, 0xff, 6);
		memcpy(f + 6, mac_b, 6);
		f[12] = 0x88;
		f[13] = 0xb5;
		memcpy(f + 14, &seq[0], 4);
		seq[0]++;
	}
}

struct tally {
	uint64_t got, bad;    /* from B; out of order or repeated */
	uint32_t next;        /* the number expected next */
	uint64_t last, gap;   /* ms: last frame, longest gap */
};

static void take(struct uvn_drv *c, struct tally *t)
{
	struct uvn_pkt *pkts[32];
	int n = uvn_rx_burst(c, 0, pkts, 32);

	if (n < 0)
		die("C: rx", n);
	for (int i = 0; i < n; i++) {
		const uint8_t *f = pkts[i]->seg[0].iov_base;
		uint32_t seq;

		if (!memcmp(f + 6, mac_b, 6)) {
			memcpy(&seq, f + 14, 4);
			t->bad += seq != t->next;
			t->next = seq + 1;
			t->got++;
		}
		uvn_pkt_free(pkts[i]);
	}
	if (n > 0)
		t->last = now_ms();
	if (now_ms() - t->last > t->gap)
		t->gap = now_ms() - t->last;
}

/* Frames in flight from B to C at most, in exact mode: a quarter of C's
 * RX ring of 256 (the driver refills it in bursts). */
#define EXACT_WINDOW 64

/* B broadcasts small frames; C counts those from B. Fails on any error,
 * on a second without a frame, or on too few frames overall; @exact: also
 * on a frame B sent that C did not get once, in order. */
static int honest(const char *path_b, const char *path_c, unsigned secs, bool exact)
{
	struct uvn_drv *b = honest_open(path_b, mac_b), *c = honest_open(path_c, mac_c);
	uint64_t start = now_ms(), end = start + secs * 1000ull, sent = 0;
	struct tally t = { .last = start };
	struct uvn_pkt *pkts[8];
	uint32_t seq = 0;

	printf("ready\n");
	fflush(stdout);
	while (now_ms() < end) {
		/* @exact: at most EXACT_WINDOW frames between B and C, so C's RX
		 * ring always has room for all of them (a switch drops frames
		 * for a full RX ring, counted: not what is tested here). */
		uint64_t room = exact ? EXACT_WINDOW - (sent - t.got) : 8;
		unsigned k = uvn_drv_tx_alloc(b, 0, pkts, room < 8 ? (unsigned)room : 8, FRAME_LEN);
		int n;

		fill(pkts, k, &seq);
		n = k ? uvn_tx_burst(b, 0, pkts, k) : 0;
		if (n < 0)
			die("B: tx", n);
		sent += (unsigned)n;
		/* Not taken: numbers reused, as if never sent. */
		seq -= k - (unsigned)n;
		for (unsigned i = (unsigned)n; i < k; i++)
			uvn_pkt_free(pkts[i]);
		take(c, &t);
		usleep(1000);
	}
	/* What uvnetd took comes out within a moment. */
	for (uint64_t stop = now_ms() + 500; exact && t.got < sent && now_ms() < stop;)
		take(c, &t);
	printf("honest: %llu frames B -> C of %llu sent in %u s, %llu out of order, longest gap %llu ms\n",
	       (unsigned long long)t.got, (unsigned long long)sent, secs, (unsigned long long)t.bad,
	       (unsigned long long)t.gap);
	uvn_drv_close(b);
	uvn_drv_close(c);
	if (t.got < 100 || t.gap >= 1000)
		return 1;
	return exact && (t.got != sent || t.bad) ? 1 : 0;
}

/* What C has from B: to @dst (@got) or to anything else (@other). */
static void sort_rx(struct uvn_drv *c, const uint8_t dst[6], unsigned *got, unsigned *other)
{
	struct uvn_pkt *pkts[32];
	int m = uvn_rx_burst(c, 0, pkts, 32);

	if (m < 0)
		die("C: rx", m);
	for (int i = 0; i < m; i++) {
		const uint8_t *f = pkts[i]->seg[0].iov_base;

		if (!memcmp(f + 6, mac_b, 6))
			*(memcmp(f, dst, 6) ? other : got) += 1;
		uvn_pkt_free(pkts[i]);
	}
}

/* B sends @n frames to @dst; C takes what comes. @return frames C got for @dst */
static unsigned send_to(struct uvn_drv *b, struct uvn_drv *c, const uint8_t dst[6], unsigned n)
{
	struct uvn_pkt *pkts[32];
	unsigned sent = 0, got = 0, other = 0;

	while (sent < n) {
		unsigned k = uvn_drv_tx_alloc(b, 0, pkts, n - sent < 8 ? n - sent : 8, FRAME_LEN);
		int r;

		for (unsigned i = 0; i < k; i++) {
			uint8_t *f = pkts[i]->seg[0].iov_base;

			memset(f, 0, FRAME_LEN);
			memcpy(f, dst, 6);
			memcpy(f + 6, mac_b, 6);
			f[12] = 0x88;
			f[13] = 0xb5;
		}
		r = k ? uvn_tx_burst(b, 0, pkts, k) : 0;
		if (r < 0)
			die("B: tx", r);
		for (unsigned i = (unsigned)r; i < k; i++)
			uvn_pkt_free(pkts[i]);
		sent += (unsigned)r;
		usleep(1000);
		sort_rx(c, dst, &got, &other);
	}
	for (uint64_t stop = now_ms() + 300; now_ms() < stop;)
		sort_rx(c, dst, &got, &other);
	if (other)
		die("C: frames of another round arrived", EPROTO);
	return got;
}

/* The guest's receive filter, set through its control queue, applied. */
static int filter(const char *path_b, const char *path_c, bool polled)
{
	static const uint8_t nobody[6] = { 0x02, 0, 0, 0, 0, 0x99 };
	struct uvn_drv *b = honest_open(path_b, mac_b), *c;
	struct uvn_drv_cfg cfg;
	unsigned own, others, promisc;

	uvn_drv_cfg_init(&cfg);
	cfg.path = path_c;
	cfg.queue_size = 256;
	cfg.queue_pairs = 2;
	cfg.no_huge = true;
	memcpy(cfg.mac, mac_c, 6);
	cfg.mac_set = true;
	check(uvn_drv_open(&cfg, &c), path_c);
	/* C's kicks then reach nobody: its eventfd is no longer uvnetd's */
	if (polled)
		check(uvn_vu_fe_set_vring_kick(c->fe, c->ctrl.idx, -1), "C: control queue NOFD");
	check(uvn_drv_set_promisc(c, false), "C: promiscuous off");
	own = send_to(b, c, mac_c, 200);
	others = send_to(b, c, nobody, 200);
	check(uvn_drv_set_promisc(c, true), "C: promiscuous on");
	promisc = send_to(b, c, nobody, 200);
	printf("filter: C got %u of 200 to its MAC, %u of 200 to another, promiscuous %u of 200\n",
	       own, others, promisc);
	uvn_drv_close(b);
	uvn_drv_close(c);
	return own == 200 && others == 0 && promisc == 200 ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "kickswap"))
		return kickswap(argv[2], (unsigned)atoi(argv[3]));
	if (argc == 4 && !strcmp(argv[1], "fulltx"))
		return fulltx(argv[2], (unsigned)atoi(argv[3]));
	if (argc == 4 && !strcmp(argv[1], "polled"))
		return polled(argv[2], (unsigned)atoi(argv[3]));
	if (argc == 4 && !strcmp(argv[1], "filter"))
		return filter(argv[2], argv[3], false);
	if (argc == 4 && !strcmp(argv[1], "filter-polled"))
		return filter(argv[2], argv[3], true);
	if (argc == 5 && (!strcmp(argv[1], "honest") || !strcmp(argv[1], "exact")))
		return honest(argv[2], argv[3], (unsigned)atoi(argv[4]), argv[1][0] == 'e');
	fprintf(stderr, "usage: hostile kickswap|fulltx SOCK SECS | honest|exact SOCK_B SOCK_C SECS"
		" | filter|filter-polled SOCK_B SOCK_C\n");
	return 2;
}
