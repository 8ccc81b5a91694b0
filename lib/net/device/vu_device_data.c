/* SPDX-License-Identifier: MIT */
/*
 * <uvnet/device.h>, the queues' side: what the application calls on a ring
 * once it is ready (vu_device.c sets rings up and tears them down): the
 * data path, the control queue, emptying disabled rings, zero-copy and the
 * counters, and the accessors of vu_device.h.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "net/device/vu_device.h"
#include "ring/ring.h"

/* ------------------------------------------------------------ data path */

bool uvn_dev_pair_ready(const struct uvn_dev *d, unsigned q)
{
	return q < d->cfg.queue_pairs && d->rx[q].vu && d->tx[q].vu;
}

unsigned uvn_dev_rx_burst(struct uvn_dev *d, unsigned q, struct uvn_pkt **pkts, unsigned n)
{
	struct dev_ring *s = &d->tx[q];

	if (UVN_UNLIKELY(q >= d->cfg.queue_pairs || !s->vu))
		return 0;
	return uvn_netdev_tx(&s->nq, s->small, s->big, pkts, n);
}

void uvn_dev_rx_done(struct uvn_dev *d, unsigned q)
{
	if (q < d->cfg.queue_pairs && d->tx[q].vu)
		uvn_netdev_tx_complete(&d->tx[q].nq);
}

unsigned uvn_dev_tx_burst(struct uvn_dev *d, unsigned q, struct uvn_pkt *const *pkts, unsigned n)
{
	struct dev_ring *s = &d->rx[q];

	if (UVN_UNLIKELY(q >= d->cfg.queue_pairs || !s->vu))
		return 0;
	return uvn_netdev_rx(&s->nq, pkts, n);
}

struct uvn_pkt_pool *uvn_dev_rx_pool(const struct uvn_dev *d, unsigned q)
{
	return q < d->cfg.queue_pairs ? d->tx[q].small : NULL;
}

int uvn_dev_kick_fd(const struct uvn_dev *d, unsigned q)
{
	return q < d->cfg.queue_pairs && d->tx[q].vu ? d->tx[q].vu->kick_fd : -1;
}

uint64_t uvn_dev_kicked(struct uvn_dev *d, unsigned q)
{
	struct dev_ring *s = &d->tx[q];
	uint64_t n;

	if (q >= d->cfg.queue_pairs || !s->vu)
		return 0;
	if (read(s->vu->kick_fd, &n, sizeof(n)) != sizeof(n))
		n = 0;
	uvn_vq_dev_disable_notify(s->nq.vq);
	dev_log_ring(s);
	return n;
}

static bool arm(struct dev_ring *s)
{
	bool armed;

	if (!s->vu || s->nq.broken)
		return true;
	armed = uvn_vq_dev_enable_notify(s->nq.vq);
	dev_log_ring(s);
	return armed;
}

bool uvn_dev_arm(struct uvn_dev *d, unsigned q)
{
	return q >= d->cfg.queue_pairs || arm(&d->tx[q]);
}

/* ------------------------------------------------------- control queue */

int uvn_dev_ctrl_fd(const struct uvn_dev *d)
{
	return d->ctrl.vu ? d->ctrl.vu->kick_fd : -1;
}

static int set_pairs(void *ctx, unsigned pairs)
{
	struct uvn_dev *d = ctx;

	if (pairs > d->cfg.queue_pairs)
		return -EINVAL;
	return d->cfg.ops && d->cfg.ops->set_pairs ? d->cfg.ops->set_pairs(d->cfg.ctx, pairs) : 0;
}

int uvn_dev_ctrl(struct uvn_dev *d)
{
	struct dev_ring *s = &d->ctrl;

	if (!s->vu)
		return -ENODEV;
	if (uvn_netdev_q_broken(&s->nq))
		return -EPROTO;
	return (int)uvn_netdev_ctrl(&s->nq, set_pairs, d);
}

bool uvn_dev_ctrl_arm(struct uvn_dev *d)
{
	return arm(&d->ctrl);
}

/* ----------------------------------------------------- disabled rings */

/*
 * vhost-user: a started but disabled TX ring is still processed, its
 * frames dropped (a guest turning queue pairs off may leave frames there
 * and would time out waiting for them). @budget bounds the chains per
 * ring, so a guest that keeps refilling its ring cannot keep the control
 * thread here.
 */
static unsigned discard(struct uvn_dev *d, struct uvn_vu_queue *q, struct uvn_vq_dev *dev,
			unsigned budget)
{
	unsigned num = uvn_vq_dev_num(dev), n = 0, staged = 0;
	struct uvn_vq_chain ch;
	bool notify = false;

	/* Popped without iovecs: the chain is checked and taken, not translated,
	 * so one of any legal length goes back too (with an array it would be
	 * IOV_FULL and stay, stopping the drain there). */
	while (n < budget && uvn_vq_dev_pop(dev, &ch, NULL, 0) > 0) {
		uvn_vq_dev_push(dev, &ch, 0);
		n++;
		/* Published before the staged chains could outnumber the ring. */
		if (++staged == num) {
			notify |= uvn_vq_dev_flush(dev);
			staged = 0;
		}
	}
	if (staged)
		notify |= uvn_vq_dev_flush(dev);
	/* The used entries are guest memory we wrote: a migration under way
	 * must send them again (logged after the last flush). */
	if (n)
		uvn_vu_log_used(d->be, q);
	if (notify)
		uvn_vu_queue_notify(q);
	return n;
}

unsigned uvn_dev_discard_disabled(struct uvn_dev *d, unsigned budget)
{
	unsigned n = 0;

	for (unsigned i = 0; d->be && i < d->cfg.queue_pairs; i++) {
		struct uvn_vu_queue *q = uvn_vu_backend_queue(d->be, 2 * i + 1);
		/* The backend says which rings are safe to touch: not one whose
		 * memory went away with a new table. */
		struct uvn_vq_dev *dev = q ? uvn_vu_queue_idle_dev(q) : NULL;

		if (dev)
			n += discard(d, q, dev, budget);
	}
	return n;
}

/* ---------------------------------------------------- zero-copy, stats */

int uvn_dev_set_zerocopy(struct uvn_dev *d, enum uvn_dev_zc mode, uint32_t min_len,
			 unsigned max_held)
{
	if ((unsigned)mode > UVN_DEV_ZC_AUTO)
		return -EINVAL;
	d->cfg.zerocopy = mode;
	d->cfg.zc_min = min_len;
	d->cfg.zc_max_held = max_held;
	for (unsigned i = 0; i < d->cfg.queue_pairs; i++)
		if (d->tx[i].vu)
			uvn_netdev_q_set_zerocopy(&d->tx[i].nq, (enum uvn_zc_mode)mode, min_len,
						  max_held, d->tx[i].ext);
	return 0;
}

/* Called beside the ring's thread: its counters are read atomically. */
int uvn_dev_queue_stats(const struct uvn_dev *d, unsigned ring, struct uvn_dev_q_stats *out)
{
	const struct dev_ring *s = dev_ring_at(d, ring);
	struct uvn_netdev_q_stats q;

	if (!s)
		return -EINVAL;
	if (!s->vu)
		return -ENODEV;
	uvn_stats_snapshot(&q, &s->nq.st, sizeof(q));
	memset(out, 0, sizeof(*out));
	out->packets = q.packets;
	out->bytes = q.bytes;
	out->drops = q.drop_nobuf + q.drop_toobig + q.drop_nopkt + q.drop_long + q.drop_offload +
		     q.drop_gso_hdr + q.drop_gso_len + q.drop_gso_size + q.drop_csum + q.drop_mtu;
	out->drop_nobuf = q.drop_nobuf;
	out->errors = q.err_short + q.err_hdr + q.err_toolong + q.err_format + q.err_ring +
		      q.ctrl_err;
	out->ctrl_cmds = q.ctrl_cmds;
	out->calls = q.notify;
	out->calls_suppressed = uvn_stat_read(&uvn_vq_dev_stats(s->nq.vq)->notify_suppressed) -
				s->suppressed_base;
	out->zc_packets = q.zc_packets;
	out->broken = uvn_netdev_q_broken(&s->nq) || s->vu->broken;
	return 0;
}

/* ------------------------------------------------------------ internal */

struct uvn_netdev_q *uvn_dev_netq(struct uvn_dev *d, unsigned ring)
{
	struct dev_ring *s = dev_ring_at(d, ring);

	return s && s->vu ? &s->nq : NULL;
}

const struct uvn_netdev_q *uvn_dev_netq_const(const struct uvn_dev *d, unsigned ring)
{
	return uvn_dev_netq((struct uvn_dev *)d, ring);
}

struct uvn_vu_queue *uvn_dev_vu_queue(const struct uvn_dev *d, unsigned ring)
{
	struct dev_ring *s = dev_ring_at(d, ring);

	return s ? s->vu : NULL;
}

struct uvn_vu_backend *uvn_dev_backend(const struct uvn_dev *d)
{
	return d->be;
}

void uvn_dev_set_rx_filter(struct uvn_dev *d, struct uvn_rx_filter *f)
{
	d->filter = f;
}
