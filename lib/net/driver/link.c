/* SPDX-License-Identifier: MIT */
/*
 * Reconnecting (uvn_drv_cfg::reconnect): a thread per instance watches the
 * vhost-user socket. When the backend goes away it marks the link down,
 * drops the connection and gets a new one: connects again (client) or
 * listens and accepts again (server), for as long as it takes. On the new
 * connection it checks that the backend offers every feature negotiated
 * before (the rings were laid out for them), then describes the same
 * memory and rings again (drv_start(), resume: each ring's base is its
 * used index) and marks the link up.
 *
 * The queues never stop: their rings stay in our memory, their threads go
 * on posting and reclaiming while nobody serves them, and the new backend
 * starts where the old one left off. So nothing here touches a ring's
 * driver half; the thread reads only the used index the dead backend
 * published, writes only kick eventfds, and sends control commands under
 * ctrl_lock like the application's control thread.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "net/driver/drv.h"
#include "util/log.h"

#define RETRY_MS 10

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

bool uvn_drv_link_up(const struct uvn_drv *d)
{
	return atomic_load_explicit(&d->link_up, memory_order_acquire);
}

void uvn_drv_link_stats(const struct uvn_drv *d, struct uvn_drv_link_stats *out)
{
	pthread_mutex_lock((pthread_mutex_t *)&d->ctrl_lock);
	*out = d->link_st;
	pthread_mutex_unlock((pthread_mutex_t *)&d->ctrl_lock);
}

static void set_link(struct uvn_drv *d, bool up)
{
	atomic_store_explicit(&d->link_up, up, memory_order_release);
	if (d->cfg.link_cb)
		d->cfg.link_cb(d->cfg.link_arg, up);
}

/* Has uvn_drv_stop() asked us to end? (The eventfd stays readable.) */
static bool stopping(const struct uvn_drv *d, int ms)
{
	struct pollfd p = { .fd = d->stop_fd, .events = POLLIN };

	return poll(&p, 1, ms) > 0;
}

static void drop_conn(struct uvn_drv *d)
{
	atomic_store(&d->sock_fd, -1);
	uvn_vu_fe_destroy(d->fe);
	d->fe = NULL;
}

/*
 * The new backend must offer what the rings and buffers were made for: the
 * same virtio features (more is fine: we set the same ones), and the same
 * queue count when it places the control queue (its index follows it).
 * @return 0, -ENOTSUP (fatal), or the connection's error (try again)
 */
static int renegotiate(struct uvn_drv *d)
{
	uint64_t offered, missing, proto;
	unsigned pairs;
	int ret;

	ret = uvn_vu_fe_set_owner(d->fe);
	if (!ret)
		ret = uvn_vu_fe_negotiate(d->fe, drv_proto_want(d), &offered, &pairs);
	if (ret)
		return ret;
	missing = d->features & ~offered;
	if (missing || pairs < d->pairs ||
	    (d->has_ctrl && (d->features & (1ull << VIRTIO_NET_F_MQ)) && pairs != d->max_pairs)) {
		pthread_mutex_lock(&d->ctrl_lock);
		d->link_st.err_features++;
		pthread_mutex_unlock(&d->ctrl_lock);
		UVN_ERR("uvnet driver %s: the backend came back with different features: "
			"0x%llx negotiated, 0x%llx offered (missing 0x%llx), %u queue pairs (were %u)",
			d->path, (unsigned long long)d->features, (unsigned long long)offered,
			(unsigned long long)missing, pairs, d->max_pairs);
		return -ENOTSUP;
	}
	proto = uvn_vu_fe_protocol_features(d->fe);
	if ((d->proto & ~proto) & (1ull << VHOST_USER_PROTOCOL_F_INFLIGHT_SHMFD)) {
		UVN_WARN("uvnet driver %s: the backend no longer offers INFLIGHT_SHMFD: it resumes "
			 "from the used index alone", d->path);
		/* Our region now describes a backend before this one: a later
		 * backend that takes a region gets a fresh one, not what it
		 * would resume from wrongly (chains this one completed). */
		if (d->inflight_fd >= 0) {
			close(d->inflight_fd);
			d->inflight_fd = -1;
		}
	}
	d->proto = proto;
	d->offered = offered;
	return 0;
}

/* Put ring @r right for the next backend (its thread, or ours, see fix_rings()). */
static void fix_ring(struct uvn_drv *d, struct drv_ring *r)
{
	if (d->cfg.ring == UVN_RING_PACKED)
		r->fix_result = uvn_packed_drv_resubmit(r->vq, r->fix_mark, r->fix_keys, &r->pk_base);
	else
		r->fix_result = uvn_split_drv_resubmit(r->vq, r->fix_mark, r->fix_list);
}

int drv_gate(struct uvn_drv *d, struct drv_ring *r)
{
	int err = drv_err(d), req = DRV_FIX_REQ;

	if (err != DRV_PAUSE)
		return err;
	if (atomic_compare_exchange_strong(&r->fix, &req, DRV_FIX_BUSY)) {
		fix_ring(d, r);
		atomic_store_explicit(&r->fix, DRV_FIX_DONE, memory_order_release);
	}
	/* The reconnect thread puts a packed ring right itself when its thread
	 * was late (fix_rings()): not a word of it is touched meanwhile. */
	while (atomic_load_explicit(&r->fix, memory_order_acquire) == DRV_FIX_LINK)
		sched_yield();
	return 0;
}

/* The rings (data rings first), @i < 2 * pairs + has_ctrl. */
static struct drv_ring *ring_at(struct uvn_drv *d, unsigned i)
{
	if (i == 2 * d->pairs)
		return &d->ctrl;
	return i & 1 ? &d->txq[i / 2].r : &d->rxq[i / 2].r;
}

/* @return 0, or -ENOTRECOVERABLE: a packed ring that cannot be resumed */
static int fix_done(struct uvn_drv *d, struct drv_ring *r)
{
	if (r->fix_result > 0)
		d->link_st.resubmitted += (unsigned)r->fix_result;
	else if (r->fix_result < 0) {
		d->link_st.err_resubmit++;
		if (d->cfg.ring == UVN_RING_PACKED) {
			/* No index to fall back on: the next backend would start
			 * at a position nobody knows. */
			UVN_ERR("uvnet driver %s: ring %u: the packed ring the backend left does "
				"not add up; it cannot be resumed", d->path, r->idx);
			return -ENOTRECOVERABLE;
		}
		UVN_WARN("uvnet driver %s: ring %u: the chains the backend left do not add up; "
			 "resuming it from the used index as it is", d->path, r->idx);
	}
	return 0;
}

/*
 * A ring whose thread did not call within timeout_ms. Split: resumed as it
 * is (from the used index). Packed: there is nothing to resume from but
 * its chains laid out again, so we do it, the ring claimed first: a thread
 * that calls meanwhile waits in drv_gate() (one preempted inside a burst
 * for all of timeout_ms would not; the application is told to keep
 * calling, see driver.h). @return true once the ring is done with
 */
static bool fix_late(struct uvn_drv *d, struct drv_ring *r)
{
	int req = DRV_FIX_REQ;
	bool packed = d->cfg.ring == UVN_RING_PACKED;

	if (!atomic_compare_exchange_strong(&r->fix, &req, packed ? DRV_FIX_LINK : DRV_FIX_SKIP))
		return false;
	pthread_mutex_lock(&d->ctrl_lock);
	d->link_st.fix_skipped++;
	pthread_mutex_unlock(&d->ctrl_lock);
	UVN_WARN("uvnet driver %s: ring %u: its thread did not call within %u ms; %s", d->path,
		 r->idx, d->cfg.timeout_ms, packed ? "putting it right here" : "resuming it as it is");
	if (packed) {
		fix_ring(d, r);
		atomic_store_explicit(&r->fix, DRV_FIX_DONE, memory_order_release);
	}
	return true;
}

/*
 * Without an in-flight region both sides kept: put every ring's avail
 * slots right before the new backend starts from the used index (packed
 * rings always: fix_ring()). The data rings are their threads'
 * (drv_gate()): pause the instance and wait for each to call in; the
 * control ring is ours under ctrl_lock.
 * @return 0, the instance's error, or -ENOTRECOVERABLE (a packed ring)
 */
static int fix_rings(struct uvn_drv *d, uint64_t old_proto)
{
	const uint64_t inflight = 1ull << VHOST_USER_PROTOCOL_F_INFLIGHT_SHMFD;
	bool packed = d->cfg.ring == UVN_RING_PACKED;
	unsigned pending;
	uint64_t deadline = now_us() + (uint64_t)d->cfg.timeout_ms * 1000u;
	int expected = 0, ret = 0;

	if (!packed && (old_proto & d->proto & inflight) && d->inflight_fd >= 0)
		return 0;
	if (!packed && (d->features & (1ull << VIRTIO_F_IN_ORDER)))
		return 0;
	for (unsigned i = 0; i < 2 * d->pairs; i++)
		atomic_store(&ring_at(d, i)->fix, DRV_FIX_REQ);
	if (!atomic_compare_exchange_strong(&d->err, &expected, DRV_PAUSE))
		return expected;
	pthread_mutex_lock(&d->ctrl_lock);
	if (d->has_ctrl) {
		fix_ring(d, &d->ctrl);
		ret = fix_done(d, &d->ctrl);
	}
	pthread_mutex_unlock(&d->ctrl_lock);
	/* Threads asleep in uvn_rx_wait()/uvn_tx_wait() wake on their call fd. */
	for (unsigned i = 0; i < 2 * d->pairs; i++) {
		uint64_t one = 1;

		if (ring_at(d, i)->call_fd >= 0 && write(ring_at(d, i)->call_fd, &one, sizeof(one)) < 0)
			(void)0;
	}
	do {
		pending = 0;
		for (unsigned i = 0; i < 2 * d->pairs; i++) {
			int f = atomic_load_explicit(&ring_at(d, i)->fix, memory_order_acquire);

			if (f == DRV_FIX_DONE || f == DRV_FIX_SKIP)
				continue;
			if (f == DRV_FIX_REQ && now_us() > deadline && fix_late(d, ring_at(d, i)))
				continue;
			pending++;
		}
	} while (pending && drv_err(d) == DRV_PAUSE && !stopping(d, 1));
	pthread_mutex_lock(&d->ctrl_lock);
	for (unsigned i = 0; i < 2 * d->pairs; i++)
		if (atomic_load(&ring_at(d, i)->fix) == DRV_FIX_DONE && fix_done(d, ring_at(d, i)))
			ret = -ENOTRECOVERABLE;
	pthread_mutex_unlock(&d->ctrl_lock);
	/* A ring still being put right when we stop finishes on its own:
	 * uvn_drv_stop() takes the rings back only after this thread. */
	expected = DRV_PAUSE;
	if (!atomic_compare_exchange_strong(&d->err, &expected, 0))
		return expected;
	return pending ? -ECANCELED : ret;
}

/* Connect and resume. @return 0 (link up), -ECANCELED (stopping), -ENOTSUP or
 * -EPROTO (fatal) */
static int restore(struct uvn_drv *d)
{
	struct uvn_vu_fe_cfg fc = {
		.path = d->path, .server = d->cfg.server, .timeout_ms = d->cfg.timeout_ms,
		.stop_fd = d->stop_fd,
	};
	uint64_t t0 = now_us(), old_proto;
	int ret;

	for (;;) {
		ret = uvn_vu_fe_connect(&fc, &d->fe);
		if (ret == -ECANCELED)
			return ret;
		if (ret) {
			d->fe = NULL;
			/* Nobody there yet is the normal case; anything else is retried more slowly. */
			if (ret != -ENOENT && ret != -ECONNREFUSED && ret != -ETIMEDOUT &&
			    stopping(d, RETRY_MS))
				return -ECANCELED;
			continue;
		}
		atomic_store(&d->sock_fd, uvn_vu_fe_fd(d->fe));
		old_proto = d->proto;
		ret = renegotiate(d);
		if (!ret)
			ret = fix_rings(d, old_proto);
		if (ret == -ENOTRECOVERABLE) {
			/* What the dead backend left is nonsense: no backend can go on. */
			drop_conn(d);
			return -EPROTO;
		}
		if (!ret) {
			pthread_mutex_lock(&d->ctrl_lock);
			ret = drv_start(d, true);
			pthread_mutex_unlock(&d->ctrl_lock);
		}
		if (!ret)
			break;
		drop_conn(d);
		if (ret == -ENOTSUP || ret == -ECANCELED || drv_err(d) < 0)
			return ret;
		pthread_mutex_lock(&d->ctrl_lock);
		d->link_st.attempts_failed++;
		pthread_mutex_unlock(&d->ctrl_lock);
		UVN_WARN("uvnet driver %s: reconnecting failed (%s), trying again", d->path,
			 strerror(-ret));
		if (stopping(d, RETRY_MS))
			return -ECANCELED;
	}
	pthread_mutex_lock(&d->ctrl_lock);
	d->link_st.reconnects++;
	d->link_st.last_down_us = now_us() - t0;
	pthread_mutex_unlock(&d->ctrl_lock);
	UVN_INFO("uvnet driver %s: the backend is back (%llu ms)", d->path,
		 (unsigned long long)(d->link_st.last_down_us / 1000));
	set_link(d, true);
	return 0;
}

static void *link_main(void *arg)
{
	struct uvn_drv *d = arg;
	int ret;

	for (;;) {
		struct pollfd p[2] = {
			{ .fd = d->stop_fd, .events = POLLIN },
			{ .fd = uvn_vu_fe_fd(d->fe), .events = POLLIN },
		};

		if (poll(p, 2, -1) < 0)
			continue; /* EINTR */
		if (p[0].revents)
			return NULL;
		ret = uvn_vu_fe_check(d->fe);
		if (!ret)
			continue;
		if (ret != -ENOTCONN) {
			/* A backend that speaks unasked is broken, not restarting. */
			drv_fail(d, ret, "the backend broke the vhost-user protocol");
			set_link(d, false);
			return NULL;
		}
		drop_conn(d);
		pthread_mutex_lock(&d->ctrl_lock);
		d->link_st.disconnects++;
		pthread_mutex_unlock(&d->ctrl_lock);
		UVN_WARN("uvnet driver %s: the backend went away; %s", d->path,
			 d->cfg.server ? "waiting for it to connect again" : "connecting again");
		set_link(d, false);
		ret = restore(d);
		if (ret == -ECANCELED)
			return NULL;
		if (ret) {
			drv_fail(d, ret, NULL);
			return NULL;
		}
	}
}

int drv_link_start(struct uvn_drv *d)
{
	int ret;

	/* Scratch for putting each ring right (fix_rings()), made now: the
	 * data path never allocates. */
	for (unsigned i = 0; i < 2 * d->pairs + d->has_ctrl; i++) {
		struct drv_ring *r = ring_at(d, i);

		r->fix_mark = calloc(r->num, 1);
		if (d->cfg.ring == UVN_RING_PACKED)
			r->fix_keys = calloc(r->num, sizeof(*r->fix_keys));
		else
			r->fix_list = calloc(r->num, sizeof(*r->fix_list));
		if (!r->fix_mark || (!r->fix_list && !r->fix_keys))
			return -ENOMEM;
	}

	d->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (d->stop_fd < 0)
		return -errno;
	ret = pthread_create(&d->link_thread, NULL, link_main, d);
	if (ret)
		return -ret;
	d->link_thread_on = true;
	return 0;
}

void drv_link_stop(struct uvn_drv *d)
{
	uint64_t one = 1;

	if (d->link_thread_on) {
		if (write(d->stop_fd, &one, sizeof(one)) < 0)
			(void)0; /* cannot fail for a fresh eventfd */
		pthread_join(d->link_thread, NULL);
		d->link_thread_on = false;
	}
	if (d->stop_fd >= 0)
		close(d->stop_fd);
	d->stop_fd = -1;
}
