/* SPDX-License-Identifier: MIT */
/* The netdev queue fixture (see netdev_fix.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "netdev_fix.h"

static void on_notify(void *ctx)
{
	((struct ndf *)ctx)->notified++;
}

static struct uvn_pkt_pool *pool(unsigned count, size_t size)
{
	struct uvn_pkt_pool_cfg c = { .count = count, .buf_size = size };
	struct uvn_pkt_pool *p = NULL;

	if (count)
		assert_int_equal(uvn_pkt_pool_create(&c, &p), 0);
	return p;
}

void ndf_init(struct ndf *f, const struct ndf_cfg *cfg)
{
	f->cfg = *cfg;
	tq_pair(&f->ring, cfg->num, cfg->features);
	uvn_netdev_q_init(&f->q, f->ring.dev, cfg->features, cfg->tx);
	f->q.notify = on_notify;
	f->q.notify_ctx = f;
	f->small = pool(cfg->small, cfg->small_size ? cfg->small_size : 2048);
	f->big = pool(cfg->big, 65536 + 64);
	f->ext = pool(cfg->ext, 0);
}

static void pool_done(struct uvn_pkt_pool *p, unsigned count)
{
	if (!p)
		return;
	assert_int_equal(uvn_pkt_pool_avail(p), count);
	uvn_pkt_pool_destroy(p);
}

void ndf_fini(struct ndf *f)
{
	uvn_netdev_q_fini(&f->q);
	pool_done(f->small, f->cfg.small);
	pool_done(f->big, f->cfg.big);
	pool_done(f->ext, f->cfg.ext);
	tq_teardown(&f->ring);
}
