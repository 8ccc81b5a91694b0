/* SPDX-License-Identifier: MIT */
/*
 * The driver process: adds chains of random shapes in sequence order, fills
 * their readable segments with the driver pattern and their writable ones
 * with a canary, publishes in random bursts, and checks every returned
 * buffer: returned once, in order under IN_ORDER, with the used length the
 * device was told to write, the device pattern before it and the canary
 * after it.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cross.h"

struct drv_slot {
	uint64_t seq;
	bool busy;
};

struct drv {
	struct cross_proc p;
	const struct cross_cfg *cfg;
	struct uvn_vq_drv *vq;
	struct cross_tables *tables;
	uint8_t *pool;
	struct drv_slot *slots;
	uint16_t *free;
	unsigned nfree;
	uint64_t next_seq, reclaimed, in_flight;
	uint64_t target;        /* chains to pass: cfg->ops until the time cap */
	double deadline;        /* of the time cap, 0 if none */
};

/* Segment offsets inside a slot: packed with 0..3 byte gaps, which the
 * device must never see (the pattern runs on across segments). */
static void seg_offsets(const struct cross_cfg *cfg, uint64_t seq, const struct cross_shape *s,
			uint32_t off[CROSS_MAX_SEGS])
{
	uint64_t g = cross_key(cfg, seq, 4);
	uint32_t at = 0;

	for (unsigned k = 0; k < s->nout + s->nin; k++) {
		at += (uint32_t)(g >> (2 * k)) & 3;
		off[k] = at;
		at += s->len[k];
	}
}

static void fail_ring(struct drv *d, const char *what, int err)
{
	cross_fail(&d->p, FAIL_RING, "%s: %s (seq %llu, %llu in flight)", what, uvn_vq_strerror(err),
		   (unsigned long long)d->next_seq, (unsigned long long)d->in_flight);
}

/* @return true if the next chain was added, false if the ring is full. */
static bool add_one(struct drv *d)
{
	uint64_t seq = d->next_seq;
	struct uvn_sg sg[CROSS_MAX_SEGS];
	struct cross_shape s;
	uint32_t off[CROSS_MAX_SEGS], in_at = 0, out_at = 0;
	unsigned slot, total, flags = 0;
	uint8_t *base;
	int ret;

	if (!d->nfree || !uvn_vq_drv_num_free(d->vq))
		return false;
	cross_shape(d->cfg, seq, &s);
	total = s.nout + s.nin;
	slot = d->free[--d->nfree];
	base = d->pool + (size_t)slot * CROSS_SLOT_STRIDE;
	seg_offsets(d->cfg, seq, &s, off);
	for (unsigned k = 0; k < total; k++) {
		sg[k].addr = (uint64_t)(uintptr_t)(base + off[k]);
		sg[k].len = s.len[k];
		if (k < s.nout) {
			cross_fill(base + off[k], s.len[k], cross_key(d->cfg, seq, 1), out_at);
			out_at += s.len[k];
		} else {
			cross_fill(base + off[k], s.len[k], cross_key(d->cfg, seq, 3), in_at);
			in_at += s.len[k];
		}
	}
	if (cross_below(&d->p.rng, 8) == 0)
		flags |= UVN_VQ_ADD_NO_INDIRECT;
	ret = uvn_vq_drv_add(d->vq, sg, s.nout, s.nin, &d->slots[slot], flags);
	if (ret == -UVN_VQ_E_NOSPC) {
		d->free[d->nfree++] = (uint16_t)slot;
		return false;
	}
	if (ret)
		fail_ring(d, "add", ret);
	d->slots[slot] = (struct drv_slot){ .seq = seq, .busy = true };
	d->next_seq++;
	d->in_flight++;
	return true;
}

static void publish(struct drv *d)
{
	if (uvn_vq_drv_kick_prepare(d->vq) && d->cfg->mode == MODE_EVENT)
		cross_notify(&d->p);
}

/* Add a random burst, publishing at random points inside it. */
static unsigned add_burst(struct drv *d)
{
	unsigned want = 1 + cross_below(&d->p.rng, 48), n = 0;

	while (n < want && d->next_seq < d->target && !d->p.frozen) {
		if (!add_one(d))
			break;
		n++;
		if (cross_below(&d->p.rng, 8) == 0)
			publish(d);
	}
	if (n && !d->p.frozen)
		publish(d);
	return n;
}

/* Check the writable segments: device pattern up to @len, canary after. */
static void check_written(struct drv *d, uint64_t seq, const struct cross_shape *s,
			  const uint8_t *base, uint32_t len)
{
	uint32_t off[CROSS_MAX_SEGS], at = 0;

	seg_offsets(d->cfg, seq, s, off);
	for (unsigned k = s->nout; k < s->nout + s->nin; k++) {
		uint32_t l = s->len[k], w = at < len ? (len - at < l ? len - at : l) : 0;
		long bad = cross_check(base + off[k], w, cross_key(d->cfg, seq, 2), at);

		if (bad < 0)
			bad = cross_check(base + off[k] + w, l - w, cross_key(d->cfg, seq, 3), at + w);
		if (bad >= 0)
			cross_fail(&d->p, FAIL_CHECK,
				   "seq %llu: writable byte %ld wrong (used len %u of %u): %s",
				   (unsigned long long)seq, bad, len, s->in_len,
				   (uint32_t)bad < len ? "device data missing" : "written past used len");
		at += l;
	}
}

static void check_done(struct drv *d, const struct uvn_vq_done *done)
{
	struct drv_slot *sl = done->token;
	size_t i = (size_t)(sl - d->slots);
	struct cross_shape s;

	if (sl < d->slots || i >= d->cfg->num || !sl->busy)
		cross_fail(&d->p, FAIL_CHECK, "token %p returned but not in flight", done->token);
	if (d->cfg->order != ORDER_ANY && sl->seq != d->reclaimed)
		cross_fail(&d->p, FAIL_CHECK, "IN_ORDER: seq %llu returned, %llu expected",
			   (unsigned long long)sl->seq, (unsigned long long)d->reclaimed);
	cross_shape(d->cfg, sl->seq, &s);
	if (done->len != s.used_len)
		cross_fail(&d->p, FAIL_CHECK, "seq %llu: used len %u, device wrote %u (of %u)",
			   (unsigned long long)sl->seq, done->len, s.used_len, s.in_len);
	check_written(d, sl->seq, &s, d->pool + i * CROSS_SLOT_STRIDE, done->len);
	sl->busy = false;
	d->free[d->nfree++] = (uint16_t)i;
	d->in_flight--;
	d->reclaimed++;
}

static unsigned reclaim(struct drv *d)
{
	struct uvn_vq_done done[32];
	int n = uvn_vq_drv_get_used(d->vq, done, 1 + cross_below(&d->p.rng, 32));

	if (n < 0)
		fail_ring(d, "get_used", n);
	for (int k = 0; k < n; k++)
		check_done(d, &done[k]);
	if (n)
		atomic_store(&d->p.ctl->side[DRV].progress, d->reclaimed);
	return (unsigned)n;
}

static bool drv_arm(void *arg)
{
	struct drv *d = arg;

	/* Sometimes ask to be woken only when most buffers are back. */
	if (cross_below(&d->p.rng, 4) == 0)
		return uvn_vq_drv_enable_cb_delayed(d->vq);
	return uvn_vq_drv_enable_cb(d->vq);
}

static void drv_disarm(void *arg)
{
	uvn_vq_drv_disable_cb(((struct drv *)arg)->vq);
}

static bool drv_visible(void *arg)
{
	return uvn_vq_drv_has_used(((struct drv *)arg)->vq);
}

static uint64_t drv_outstanding(void *arg)
{
	return ((struct drv *)arg)->in_flight;
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/*
 * CI time is bounded on a shared machine: past the deadline, add nothing
 * more, tell the device how many chains there are, and wake it in case it
 * already sleeps with all of them done. Both sides then finish and check
 * as usual.
 */
static void maybe_cap(struct drv *d, uint64_t iter)
{
	if (!d->deadline || iter % 64 || d->next_seq < CROSS_MIN_OPS || now() < d->deadline)
		return;
	d->deadline = 0;
	d->target = d->next_seq;
	atomic_store(&d->p.ctl->ops_final, d->target);
	if (d->cfg->mode == MODE_EVENT)
		cross_wake(&d->p);
}

static void drv_loop(struct drv *d)
{
	for (uint64_t iter = 0; d->reclaimed < d->target; iter++) {
		unsigned got, added;

		cross_check_abort(&d->p);
		maybe_cap(d, iter);
		got = reclaim(d);
		added = add_burst(d);
		if (d->p.frozen)
			cross_freeze(&d->p);
		if (d->cfg->mode == MODE_POLL)
			continue;
		/* Now and then wait for the device although we could go on. */
		if ((got || added) && cross_below(&d->p.rng, 8))
			continue;
		if (d->in_flight)
			cross_sleep(&d->p, drv_arm, drv_disarm, d);
	}
}

/* Everything came back: the ring must agree that nothing is left. */
static void drv_final_checks(struct drv *d)
{
	struct uvn_vq_done extra;
	int n = uvn_vq_drv_get_used(d->vq, &extra, 1);

	if (n != 0)
		cross_fail(&d->p, FAIL_CHECK, "get_used after the last buffer returned %d", n);
	if (uvn_vq_drv_has_used(d->vq))
		cross_fail(&d->p, FAIL_CHECK, "has_used after the last buffer");
	if (uvn_vq_drv_num_free(d->vq) != d->cfg->num)
		cross_fail(&d->p, FAIL_CHECK, "num_free %u of %u after the last buffer",
			   uvn_vq_drv_num_free(d->vq), d->cfg->num);
	if (uvn_vq_drv_detach_unused(d->vq))
		cross_fail(&d->p, FAIL_CHECK, "detach_unused found a buffer after the last one");
	if (d->tables && cross_tables_busy(d->tables))
		cross_fail(&d->p, FAIL_CHECK, "%u indirect tables never freed",
			   cross_tables_busy(d->tables));
	if (uvn_vq_drv_error(d->vq))
		fail_ring(d, "final", uvn_vq_drv_error(d->vq));
}

static void drv_setup(struct drv *d, struct cross_ctl *ctl)
{
	const struct cross_cfg *cfg = &ctl->cfg;
	struct uvn_vq_drv_cfg vc = {
		.num = cfg->num,
		.features = cross_features(cfg),
		.ring = (uint8_t *)ctl + ctl->ring_off,
	};
	int ret;

	d->cfg = cfg;
	d->target = cfg->ops;
	d->deadline = cfg->cap_ms ? now() + cfg->cap_ms / 1e3 : 0;
	d->p.visible = drv_visible;
	d->p.outstanding = drv_outstanding;
	d->p.arg = d;
	d->p.ring = vc.ring;
	if (cfg->indirect) {
		d->tables = cross_tables_create(&d->p);
		if (!d->tables)
			cross_fail(&d->p, FAIL_SETUP, "out of memory");
		vc.indirect_alloc = cross_table_alloc;
		vc.indirect_free = cross_table_free;
		vc.indirect_ctx = d->tables;
	}
	ret = uvn_vq_drv_create(&vc, &d->vq);
	if (ret)
		cross_fail(&d->p, FAIL_SETUP, "drv_create: %s", uvn_vq_strerror(ret));
	d->pool = (uint8_t *)ctl + ctl->pool_off;
	d->slots = calloc(cfg->num, sizeof(*d->slots));
	d->free = calloc(cfg->num, sizeof(*d->free));
	if (!d->slots || !d->free)
		cross_fail(&d->p, FAIL_SETUP, "out of memory");
	for (unsigned i = 0; i < cfg->num; i++)
		d->free[d->nfree++] = (uint16_t)(cfg->num - 1 - i);
	if (cfg->mode == MODE_POLL)
		uvn_vq_drv_disable_cb(d->vq);
}

void cross_driver_main(struct cross_ctl *ctl, int memfd, int kick_fd, int call_fd)
{
	struct drv d = { 0 };
	struct cross_side *me = &ctl->side[DRV];

	(void)memfd; /* the inherited mapping is ours */
	cross_proc_init(&d.p, ctl, DRV, kick_fd, call_fd);
	drv_setup(&d, ctl);
	atomic_store(&ctl->ready, 1);
	drv_loop(&d);
	drv_final_checks(&d);
	me->stats = *uvn_vq_drv_stats(d.vq);
	me->avail_state = uvn_vq_drv_avail_state(d.vq);
	cross_set_state(&d.p, ST_DONE, 0);
	uvn_vq_drv_destroy(d.vq);
	cross_tables_destroy(d.tables);
	free(d.slots);
	free(d.free);
	exit(0);
}
