/* SPDX-License-Identifier: MIT */
/*
 * Notifications both ways and the health of the connection. Kicks go out
 * through the ring's kick eventfd when the backend asks for them (event
 * suppression decides, in the ring); calls come in on the call eventfd,
 * which interrupt-style waiting sleeps on together with the vhost-user
 * socket, so a backend that goes away wakes the sleeper. Polling
 * applications learn the same from the bursts: a queue that makes no
 * progress looks at the socket now and then (a poll() without waiting).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "net/driver/drv.h"

/* Bursts without progress between two looks at the socket. */
#define IDLE_CHECK 1024u

void drv_kick(struct drv_ring *r, uint64_t *kicks, uint64_t *suppressed)
{
	if (r->kick_fd < 0) {
		/* Polling: the backend was given no kick fd, so its request is
		 * not read (a full fence and a miss on its line per burst). */
		uvn_vq_drv_publish(r->vq);
		return;
	}
	if (!uvn_vq_drv_kick_prepare(r->vq)) {
		(*suppressed)++;
		return;
	}
	(*kicks)++;
	if (r->kick_fd >= 0) {
		uint64_t one = 1;

		/* EAGAIN only if the counter would overflow: the backend has a
		 * kick pending anyway. */
		if (write(r->kick_fd, &one, sizeof(one)) < 0)
			(void)0;
	}
}

int uvn_drv_check(struct uvn_drv *d)
{
	struct pollfd p = { .fd = uvn_drv_sock_fd(d), .events = POLLIN };
	int err = drv_err(d);
	char c;
	ssize_t n;

	if (err < 0)
		return err;
	/* Reconnecting: the link thread watches the socket, and a lost backend
	 * is a link down, not the end. */
	if (d->cfg.reconnect)
		return 0;
	if (p.fd < 0 || poll(&p, 1, 0) <= 0)
		return 0;
	if (p.revents & (POLLERR | POLLNVAL))
		return drv_fail(d, -ENOTCONN, "vhost-user socket error: the backend is gone");
	n = recv(p.fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
		return drv_fail(d, -ENOTCONN, "the backend closed the vhost-user connection");
	if (n > 0)
		return drv_fail(d, -EPROTO, "the backend sent a vhost-user message nobody asked for");
	return 0;
}

int drv_idle(struct uvn_drv *d, struct drv_ring *r)
{
	if (UVN_LIKELY(++r->idle < IDLE_CHECK))
		return 0;
	r->idle = 0;
	return uvn_drv_check(d);
}

int drv_ring_error(struct uvn_drv *d, struct drv_ring *r, int vq_err)
{
	char why[160];

	snprintf(why, sizeof(why), "the backend broke virtqueue %u: %s", r->idx,
		 uvn_vq_strerror(vq_err));
	return drv_fail(d, -EPROTO, why);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Sleep until @r has used buffers, the timeout passes or the backend goes. */
static int wait_ring(struct uvn_drv *d, struct drv_ring *r, int timeout_ms, uint64_t *waits,
		     uint64_t *interrupts)
{
	int64_t deadline = now_ms() + (timeout_ms < 0 ? 0 : timeout_ms);
	int err = drv_err(d);

	if (err && (err = drv_gate(d, r)))
		return err;
	if (r->call_fd < 0)
		return -ENOTSUP;
	for (;;) {
		struct pollfd p[2] = {
			{ .fd = r->call_fd, .events = POLLIN },
			{ .fd = d->cfg.reconnect ? -1 : uvn_drv_sock_fd(d), .events = POLLIN },
		};
		int left = timeout_ms < 0 ? -1 : (int)(deadline - now_ms());

		if (uvn_vq_drv_has_used(r->vq))
			return 1;
		if (timeout_ms >= 0 && left <= 0)
			return 0;
		/* Arm; if buffers came meanwhile there is no call to wait for. */
		if (!uvn_vq_drv_enable_cb(r->vq)) {
			uvn_vq_drv_disable_cb(r->vq);
			continue;
		}
		(*waits)++;
		if (poll(p, 2, left) < 0 && errno != EINTR) {
			uvn_vq_drv_disable_cb(r->vq);
			return -errno;
		}
		uvn_vq_drv_disable_cb(r->vq);
		if (p[0].revents & POLLIN) {
			uint64_t v;

			if (read(r->call_fd, &v, sizeof(v)) == sizeof(v))
				(*interrupts)++;
		}
		if (p[1].revents) {
			err = uvn_drv_check(d);
			if (err)
				return err;
		}
		/* The reconnect thread wakes us through the call fd when it needs the ring. */
		if (drv_err(d) && (err = drv_gate(d, r)))
			return err;
		err = uvn_vq_drv_error(r->vq);
		if (err)
			return drv_ring_error(d, r, err);
	}
}

int uvn_rx_wait(struct uvn_drv *d, unsigned q, int timeout_ms)
{
	if (q >= d->pairs)
		return -EINVAL;
	return wait_ring(d, &d->rxq[q].r, timeout_ms, &d->rxq[q].st.waits, &d->rxq[q].st.interrupts);
}

int uvn_tx_wait(struct uvn_drv *d, unsigned q, int timeout_ms)
{
	if (q >= d->pairs)
		return -EINVAL;
	return wait_ring(d, &d->txq[q].r, timeout_ms, &d->txq[q].st.waits, &d->txq[q].st.interrupts);
}

int uvn_rx_fd(struct uvn_drv *d, unsigned q)
{
	if (q >= d->pairs)
		return -EINVAL;
	return d->rxq[q].r.call_fd >= 0 ? d->rxq[q].r.call_fd : -ENOTSUP;
}

bool uvn_rx_arm(struct uvn_drv *d, unsigned q)
{
	if (q >= d->pairs || drv_err(d) < 0)
		return false;
	return uvn_vq_drv_enable_cb(d->rxq[q].r.vq);
}

void uvn_rx_disarm(struct uvn_drv *d, unsigned q)
{
	if (q < d->pairs && drv_err(d) >= 0)
		uvn_vq_drv_disable_cb(d->rxq[q].r.vq);
}
