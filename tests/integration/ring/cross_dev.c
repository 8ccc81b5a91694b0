/* SPDX-License-Identifier: MIT */
/*
 * The device process: pops chains (the n-th popped chain is the driver's
 * sequence number n), checks their lengths, the driver pattern in the
 * readable part and the canary in the writable part, holds a random set of
 * them and completes them in random order (in pop order under IN_ORDER),
 * writing the device pattern over the used length, and publishes in random
 * batches.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cross.h"

struct held {
	struct uvn_vq_chain ch;
	uint64_t seq;
	struct iovec iov[CROSS_IOV_MAX];
};

struct dev {
	struct cross_proc p;
	const struct cross_cfg *cfg;
	struct cross_devmap *map;
	struct uvn_vq_dev *vq;
	struct held *store;     /* num entries */
	unsigned *spare, nspare; /* free store entries */
	unsigned *live, live_head, nlive; /* held chains, oldest first (a ring of num) */
	uint64_t popped, completed;
	unsigned staged;
	struct uvn_vq_stats stats; /* of the device halves before the last restart */
};

static void fail_ring(struct dev *d, const char *what, int err)
{
	cross_fail(&d->p, FAIL_RING, "%s: %s (%llu popped, %llu completed)", what,
		   uvn_vq_strerror(err), (unsigned long long)d->popped,
		   (unsigned long long)d->completed);
}

static bool dev_visible(void *arg);

static void check_popped(struct dev *d, const struct held *h)
{
	const struct uvn_vq_chain *ch = &h->ch;
	struct cross_shape s;
	long bad;

	cross_shape(d->cfg, h->seq, &s);
	if (ch->out_len != s.out_len || ch->in_len != s.in_len || ch->nout < s.nout ||
	    ch->nin < s.nin || ch->nout + ch->nin > CROSS_IOV_MAX)
		cross_fail(&d->p, FAIL_CHECK,
			   "seq %llu: chain %u+%u bytes in %u+%u iovecs, expected %u+%u bytes in "
			   "%u+%u segments", (unsigned long long)h->seq, ch->out_len, ch->in_len,
			   ch->nout, ch->nin, s.out_len, s.in_len, s.nout, s.nin);
	bad = cross_iov_check(h->iov, ch->nout, 0, s.out_len, cross_key(d->cfg, h->seq, 1));
	if (bad >= 0)
		cross_fail(&d->p, FAIL_CHECK, "seq %llu: readable byte %ld of %u wrong",
			   (unsigned long long)h->seq, bad, s.out_len);
	bad = cross_iov_check(h->iov + ch->nout, ch->nin, 0, s.in_len, cross_key(d->cfg, h->seq, 3));
	if (bad >= 0)
		cross_fail(&d->p, FAIL_CHECK, "seq %llu: writable byte %ld of %u is not the canary",
			   (unsigned long long)h->seq, bad, s.in_len);
}

/* @return true if a chain was popped (and is now held). */
static bool pop_one(struct dev *d)
{
	struct held *h;
	unsigned e;
	int ret;

	if (!d->nspare) {
		/* All num chains held: the driver cannot have made more available. */
		if (dev_visible(d))
			cross_fail(&d->p, FAIL_CHECK, "more than %u chains in flight", d->cfg->num);
		return false;
	}
	e = d->spare[d->nspare - 1];
	h = &d->store[e];
	ret = uvn_vq_dev_pop(d->vq, &h->ch, h->iov, CROSS_IOV_MAX);
	if (ret < 0)
		fail_ring(d, "pop", ret);
	if (ret == 0)
		return false;
	if (d->popped >= d->cfg->ops)
		cross_fail(&d->p, FAIL_CHECK, "chain popped beyond the %llu the driver adds",
			   (unsigned long long)d->cfg->ops);
	h->seq = d->popped++;
	check_popped(d, h);
	d->nspare--;
	d->live[(d->live_head + d->nlive++) % d->cfg->num] = e;
	return true;
}

static void flush(struct dev *d)
{
	if (!d->staged)
		return;
	d->staged = 0;
	if (uvn_vq_dev_flush(d->vq) && d->cfg->mode == MODE_EVENT)
		cross_notify(&d->p);
	atomic_store(&d->p.ctl->side[DEV].progress, d->completed);
}

/* Complete one held chain: the oldest under IN_ORDER, any otherwise. */
static void complete_one(struct dev *d)
{
	unsigned cap = d->cfg->num, j = 0, e;
	struct cross_shape s;
	struct held *h;

	if (d->cfg->order == ORDER_ANY)
		j = cross_below(&d->p.rng, d->nlive);
	e = d->live[(d->live_head + j) % cap];
	d->live[(d->live_head + j) % cap] = d->live[d->live_head];
	d->live_head = (d->live_head + 1) % cap;
	d->nlive--;
	h = &d->store[e];
	cross_shape(d->cfg, h->seq, &s);
	cross_iov_fill(h->iov + h->ch.nout, h->ch.nin, 0, s.used_len, cross_key(d->cfg, h->seq, 2));
	uvn_vq_dev_push(d->vq, &h->ch, s.used_len);
	d->staged++;
	d->completed++;
	d->spare[d->nspare++] = e;
}

/*
 * Create the device half at a saved state (as uvn_vq_dev_avail_state() and
 * uvn_vq_dev_used_state() return it: an index, or a position | wrap << 15).
 */
static void open_queue(struct dev *d, uint16_t avail, uint16_t used)
{
	const struct cross_cfg *cfg = d->cfg;
	struct uvn_vq_layout lay;
	struct uvn_vq_dev_cfg vc = {
		.num = cfg->num, .features = cross_features(cfg),
		.xlate = cross_xlate, .xlate_ctx = d->map,
		.avail_idx = cfg->packed ? avail & 0x7fff : avail,
		.avail_wrap = cfg->packed && (avail >> 15),
		.used_idx = cfg->packed ? used & 0x7fff : used,
		.used_wrap = cfg->packed && (used >> 15),
	};
	int ret;

	uvn_vq_layout(cfg->packed, cfg->num, &lay);
	vc.desc = d->p.ring + lay.desc;
	vc.driver = d->p.ring + lay.driver;
	vc.device = d->p.ring + lay.device;
	ret = uvn_vq_dev_create(&vc, &d->vq);
	if (ret)
		cross_fail(&d->p, FAIL_SETUP, "dev_create at 0x%x/0x%x: %s", avail, used,
			   uvn_vq_strerror(ret));
	uvn_vq_dev_set_batch_used(d->vq, cfg->order == ORDER_IN_BATCH);
	if (cfg->mode == MODE_POLL)
		uvn_vq_dev_disable_notify(d->vq);
}

static void add_stats(struct uvn_vq_stats *sum, const struct uvn_vq_stats *st)
{
	for (const struct uvn_stat_desc *s = uvn_vq_stats_desc; s->name; s++)
		*(uint64_t *)((char *)sum + s->offset) +=
			*(const uint64_t *)((const char *)st + s->offset);
}

/*
 * Now and then, with nothing held or staged, destroy the device half and
 * create it again from its saved state, as a backend does across
 * GET_VRING_BASE and a reconnect: the run must go on as if nothing happened.
 */
static void maybe_restart(struct dev *d, unsigned one_in)
{
	uint16_t avail, used;

	if (d->nlive || d->staged || d->p.frozen || cross_below(&d->p.rng, one_in))
		return;
	avail = uvn_vq_dev_avail_state(d->vq);
	used = uvn_vq_dev_used_state(d->vq);
	add_stats(&d->stats, uvn_vq_dev_stats(d->vq));
	uvn_vq_dev_destroy(d->vq);
	open_queue(d, avail, used);
	d->p.ctl->side[DEV].restarts++;
}

/* One round: pop a burst, complete some (all if nothing came). */
static bool dev_step(struct dev *d)
{
	unsigned want = 1 + cross_below(&d->p.rng, 48), got = 0, n;

	while (got < want && pop_one(d))
		got++;
	n = got ? cross_below(&d->p.rng, d->nlive + 1) : d->nlive;
	for (unsigned k = 0; k < n && !d->p.frozen; k++) {
		complete_one(d);
		if (cross_below(&d->p.rng, 4) == 0)
			flush(d);
	}
	if (!d->p.frozen)
		flush(d);
	maybe_restart(d, 2048);
	return got != 0;
}

static uint64_t target(struct dev *d)
{
	return atomic_load_explicit(&d->p.ctl->ops_final, memory_order_relaxed);
}

static bool dev_arm(void *arg)
{
	struct dev *d = arg;

	/* After our drain: a time cap announced before the driver's wake-up
	 * is seen here, so we do not sleep past the end of the run. */
	if (d->completed >= atomic_load(&d->p.ctl->ops_final))
		return false;
	return uvn_vq_dev_enable_notify(d->vq);
}

static void dev_disarm(void *arg)
{
	uvn_vq_dev_disable_notify(((struct dev *)arg)->vq);
}

static bool dev_visible(void *arg)
{
	struct dev *d = arg;
	int n = uvn_vq_dev_avail(d->vq);

	if (n < 0)
		fail_ring(d, "avail", n);
	return n > 0;
}

static void dev_loop(struct dev *d)
{
	while (d->completed < target(d)) {
		bool got;

		cross_check_abort(&d->p);
		got = dev_step(d);
		if (d->p.frozen)
			cross_freeze(&d->p);
		if (d->cfg->mode == MODE_EVENT && !got && d->completed < target(d)) {
			/* Restarting just before sleeping tests the re-armed half. */
			maybe_restart(d, 64);
			cross_sleep(&d->p, dev_arm, dev_disarm, d);
		}
	}
	if (uvn_vq_dev_avail(d->vq) != 0)
		cross_fail(&d->p, FAIL_CHECK, "chains available after the last one: %d",
			   uvn_vq_dev_avail(d->vq));
}

static void wait_ready(struct dev *d)
{
	/* The driver zeroes the ring when it creates its half. */
	while (!atomic_load(&d->p.ctl->ready)) {
		cross_check_abort(&d->p);
		poll(NULL, 0, 1);
	}
}

static void dev_setup(struct dev *d, struct cross_ctl *ctl)
{
	const struct cross_cfg *cfg = &ctl->cfg;

	d->cfg = cfg;
	d->p.visible = dev_visible;
	d->p.arg = d;
	d->p.ring = cross_devmap_ptr(d->map, ctl->ring_off);
	d->store = calloc(cfg->num, sizeof(*d->store));
	d->spare = calloc(cfg->num, sizeof(*d->spare));
	d->live = calloc(cfg->num, sizeof(*d->live));
	if (!d->store || !d->spare || !d->live)
		cross_fail(&d->p, FAIL_SETUP, "out of memory");
	for (unsigned i = 0; i < cfg->num; i++)
		d->spare[d->nspare++] = i;
	wait_ready(d);
	/* Both wrap counters start at 1 on a packed ring. */
	open_queue(d, cfg->packed ? 0x8000 : 0, cfg->packed ? 0x8000 : 0);
}

void cross_device_main(struct cross_ctl *inherited, int memfd, int kick_fd, int call_fd)
{
	struct dev d = { 0 };
	struct cross_ctl *ctl;
	struct cross_side *me;

	d.map = cross_devmap_create(memfd, inherited);
	if (!d.map) {
		/* No report possible through the control block we failed to map. */
		perror("ring-cross: device mapping");
		_exit(1);
	}
	/* From here on only the device's own view of the memfd. */
	ctl = cross_devmap_ctl(d.map);
	me = &ctl->side[DEV];
	cross_proc_init(&d.p, ctl, DEV, kick_fd, call_fd);
	dev_setup(&d, ctl);
	dev_loop(&d);
	add_stats(&d.stats, uvn_vq_dev_stats(d.vq));
	me->stats = d.stats;
	me->avail_state = uvn_vq_dev_avail_state(d.vq);
	cross_set_state(&d.p, ST_DONE, 0);
	uvn_vq_dev_destroy(d.vq);
	free(d.store);
	free(d.spare);
	free(d.live);
	cross_devmap_destroy(d.map);
	exit(0);
}
