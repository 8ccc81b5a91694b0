/* SPDX-License-Identifier: MIT */
/*
 * Attacks through the session: memory taken away under a disabled ring
 * (stale-ring), fds that block (blocking-fd) or that uvnetd closed but we
 * keep (kick-fd-swap), memory shrunk after mapping (memfd-shrink), and a
 * memory table of 32 sparse 1 TB regions (sparse-mem).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hfe.h"

#define TB (1ull << 40)

static void post_frames(struct hfe *h, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		hfe_split_post(&h->tx, (uint16_t)(h->tx.avail_idx % h->tx.num), (uintptr_t)h->frame,
			       HFE_FRAME_LEN, false);
	hfe_kick(&h->tx);
}

static void watch(struct hfe *h)
{
	if (!h->note && !hfe_alive(h))
		h->note = "connection closed by uvnetd";
}

/* --------------------------------------------------------------- stale-ring */

/*
 * Start, enable, then disable the TX ring (uvnetd now empties it on its
 * own every 100 ms), and replace the memory table with one that does not
 * hold the ring (finding 2). Then put everything back and do it again.
 */
int attack_stale_ring(struct hfe *h, const struct hfe_opts *o, double end)
{
	unsigned num = o->qsize ? o->qsize : 64;
	struct uvn_mem_region_desc a, b;
	int fd_b, r = hfe_start(h, o->path, 0, 8u << 20, num);
	void *mem_b;

	if (r)
		return r;
	fd_b = memfd_create("uvnet-hostile-b", MFD_CLOEXEC);
	if (fd_b < 0 || ftruncate(fd_b, 1 << 20))
		return -errno;
	mem_b = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_SHARED, fd_b, 0);
	if (mem_b == MAP_FAILED)
		return -errno;
	a = (struct uvn_mem_region_desc){ .gpa = (uintptr_t)h->mem, .size = h->mem_len,
					  .uva = (uintptr_t)h->mem };
	b = (struct uvn_mem_region_desc){ .gpa = (uintptr_t)mem_b, .size = 1 << 20,
					  .uva = (uintptr_t)mem_b };
	for (bool first = true; hfe_running(end) && hfe_alive(h); first = false) {
		if (!first) {
			uint32_t b0 = 0, b1 = 0;

			hfe_count(h, uvn_vu_fe_get_vring_base(h->fe, 0, &b0));
			hfe_count(h, uvn_vu_fe_get_vring_base(h->fe, 1, &b1));
			hfe_count(h, uvn_vu_fe_set_mem(h->fe, &a, &h->memfd, 1));
			hfe_count(h, hfe_ring_describe(h, &h->rx, b0));
			hfe_count(h, hfe_ring_describe(h, &h->tx, b1));
			hfe_count(h, hfe_enable(h, &h->rx, true));
			hfe_count(h, hfe_enable(h, &h->tx, true));
		}
		post_frames(h, 4);
		hfe_sleep_ms(20);
		hfe_count(h, hfe_enable(h, &h->tx, false));
		post_frames(h, 4); /* for uvnetd's own emptying of the disabled ring */
		hfe_sleep_ms(150);
		hfe_count(h, uvn_vu_fe_set_mem(h->fe, &b, &fd_b, 1));
		h->ops++;
		hfe_sleep_ms(250); /* two or three rounds of emptying, through the old mapping */
	}
	watch(h);
	close(fd_b);
	return 0;
}

/* -------------------------------------------------------------- blocking-fd */

/* A pipe whose buffer is full, left blocking. */
static int full_pipe(int p[2])
{
	static char junk[4096];

	if (pipe2(p, O_CLOEXEC | O_NONBLOCK))
		return -errno;
	while (write(p[1], junk, sizeof(junk)) > 0)
		;
	/* The file status flags belong to the open file: uvnetd's copy blocks too. */
	if (fcntl(p[1], F_SETFL, 0))
		return -errno;
	return 0;
}

/*
 * A full blocking pipe as every ring's call fd and error fd (finding 3):
 * the first used buffer makes uvnetd signal it, the first queue error
 * makes it report it. Both are provoked: TX frames, then a
 * SET_VRING_ENABLE with num 2.
 */
int attack_blocking_fd(struct hfe *h, const struct hfe_opts *o, double end)
{
	int p[2], r = hfe_start(h, o->path, 0, 8u << 20, o->qsize ? o->qsize : 256);
	double t_err;

	if (!r)
		r = full_pipe(p);
	if (r)
		return r;
	for (unsigned i = 0; i < 2; i++) {
		hfe_raw_fd(h, VHOST_USER_SET_VRING_ERR, i, p[1]);
		hfe_raw_fd(h, VHOST_USER_SET_VRING_CALL, i, p[1]);
	}
	t_err = hfe_now() + 1.0;
	while (hfe_running(end)) {
		if (t_err && hfe_now() > t_err) {
			t_err = 0;
			/* A queue error: uvnetd writes the error fd (on its control path). */
			r = hfe_raw_state(h, VHOST_USER_SET_VRING_ENABLE, 1, 2);
			hfe_log("SET_VRING_ENABLE 2 on ring 1: %s", r == -EIO ? "NACK" :
				r ? strerror(-r) : "acked");
		}
		if (hfe_alive(h))
			post_frames(h, 1);
		watch(h);
		h->ops++;
		hfe_sleep_ms(5);
	}
	/* p[0] stays open until exit: a writer blocked in uvnetd stays blocked. */
	return 0;
}

/* ------------------------------------------------------------- kick-fd-swap */

#define OLD_KICKS 16

/*
 * Replace the TX kick fd, then go NOFD (polling), and keep writing the
 * eventfds uvnetd was given before: it closed its copies, but a closed
 * number cannot leave an epoll set, and we hold the open files (finding 4).
 */
int attack_kick_fd_swap(struct hfe *h, const struct hfe_opts *o, double end)
{
	int old[OLD_KICKS], nold = 0, r;

	r = hfe_start(h, o->path, 0, 8u << 20, o->qsize ? o->qsize : 256);
	if (r)
		return r;
	while (hfe_running(end) && hfe_alive(h)) {
		int k = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		uint64_t one = 1;

		if (k < 0)
			return -errno;
		if (nold == OLD_KICKS) {
			close(old[0]);
			memmove(old, old + 1, sizeof(old[0]) * (OLD_KICKS - 1));
			nold--;
		}
		old[nold++] = h->tx.kick;
		h->tx.kick = k;
		hfe_count(h, uvn_vu_fe_set_vring_kick(h->fe, 1, k));
		post_frames(h, 1);
		hfe_count(h, uvn_vu_fe_set_vring_kick(h->fe, 1, -1));
		for (int i = 0; i < nold; i++)
			if (write(old[i], &one, sizeof(one)) < 0)
				h->errs++;
		if (write(k, &one, sizeof(one)) < 0)
			h->errs++;
		h->ops++;
		hfe_sleep_ms(20);
	}
	watch(h);
	for (int i = 0; i < nold; i++)
		close(old[i]);
	return 0;
}

/* ------------------------------------------------------------- memfd-shrink */

/* Set up, post TX frames and RX buffers, then ftruncate the memfd to 0 and
 * keep kicking (finding 6). Our own memory is gone too: from here on
 * nothing here touches it. */
int attack_memfd_shrink(struct hfe *h, const struct hfe_opts *o, double end)
{
	unsigned num = o->qsize ? o->qsize : 256;
	int r = hfe_start(h, o->path, 0, 8u << 20, num);

	if (r)
		return r;
	post_frames(h, num / 2);
	hfe_sleep_ms(200);
	if (ftruncate(h->memfd, 0))
		return -errno;
	post_frames(h, 0); /* only the kick: the ring is gone */
	while (hfe_running(end)) {
		hfe_kick(&h->tx);
		hfe_kick(&h->rx);
		watch(h);
		h->ops++;
		hfe_sleep_ms(5);
	}
	return 0;
}

/* --------------------------------------------------------------- sparse-mem */

/*
 * 32 regions of 1 TB each, 2 TB apart, all from one sparse memfd (32 TB of
 * file, a few pages ever written): uvnetd must refuse the table or map it
 * without touching it. RX buffers are spread over the regions, TX frames
 * come from the first one.
 */
int attack_sparse_mem(struct hfe *h, const struct hfe_opts *o, double end)
{
	static struct uvn_mem_region_desc reg[32];
	static int fds[32];
	uint64_t proto = HFE_F(VHOST_USER_PROTOCOL_F_REPLY_ACK) |
			 HFE_F(VHOST_USER_PROTOCOL_F_CONFIGURE_MEM_SLOTS);
	unsigned num = o->qsize ? o->qsize : 256, n = 32;
	/* We map only the start of region 0, all we ever touch (rings, TX
	 * frames): the other addresses are numbers to uvnetd, and a 1 TB
	 * mapping of our own fails where address space is short (TSan). */
	int r = hfe_open(h, o->path, 0, proto, 64u << 20, true);

	if (r)
		return r;
	if (!(h->proto & HFE_F(VHOST_USER_PROTOCOL_F_CONFIGURE_MEM_SLOTS))) {
		h->note = "no CONFIGURE_MEM_SLOTS: 8 regions (SET_MEM_TABLE)";
		n = 8;
	}
	if (ftruncate(h->memfd, (off_t)(n * TB)))
		return -errno;
	for (unsigned i = 0; i < n; i++) {
		uint64_t at = (uintptr_t)h->mem + i * 2 * TB;

		reg[i] = (struct uvn_mem_region_desc){ .gpa = at, .size = TB, .uva = at,
						       .mmap_offset = i * TB };
		fds[i] = h->memfd;
	}
	r = hfe_count(h, uvn_vu_fe_set_mem(h->fe, reg, fds, n));
	hfe_log("%u regions of 1 TB: %s", n, r == -EIO ? "refused (NACK)" : r ? strerror(-r) : "accepted");
	if (r) {
		h->note = r == -EIO ? "memory table refused" : "memory table: connection lost";
		while (hfe_running(end)) {
			watch(h);
			hfe_sleep_ms(50);
		}
		return 0;
	}
	r = hfe_pair(h, num, 0, true);
	if (r)
		return r;
	/* RX buffers in the other 31 regions, one page each at most. */
	for (unsigned i = 0; i < num; i++) {
		unsigned k = 1 + i % (n - 1);
		uint64_t off = ((uint64_t)i * 7919 * 4096) % (TB - 4096);

		hfe_split_post(&h->rx, (uint16_t)i, reg[k].gpa + off, HFE_RXBUF, true);
	}
	hfe_kick(&h->rx);
	while (hfe_running(end)) {
		if (hfe_alive(h))
			post_frames(h, 16);
		watch(h);
		h->ops++;
		hfe_sleep_ms(10);
	}
	return 0;
}

/* ---------------------------------------------------------------- msg-flood */

/*
 * vhost-user messages as fast as uvnetd answers them: GET_FEATURES, which
 * changes nothing, over and over. uvnetd handles every message with its
 * workers parked, so the rate it reads them at is what it costs the others.
 */
int attack_msg_flood(struct hfe *h, const struct hfe_opts *o, double end)
{
	int r = hfe_start(h, o->path, 0, 8u << 20, o->qsize ? o->qsize : 256);
	uint64_t f;

	if (r)
		return r;
	while (hfe_running(end) && hfe_alive(h)) {
		hfe_count(h, uvn_vu_fe_get_u64(h->fe, VHOST_USER_GET_FEATURES, &f));
		h->ops++;
	}
	return 0;
}
