/* SPDX-License-Identifier: MIT */
/*
 * Bringing a driver instance up and down: connect, negotiate, create the
 * one shared arena (its size and allocator are arena.c), create the
 * queues in it, describe them to the backend, fill the rx rings, start.
 * And the way down: stop the rings, take every buffer back, disconnect.
 * Options, statistics and queries are in info.c.
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "net/driver/drv.h"
#include "util/abi.h"
#include "util/log.h"

#define PROTO_WANT (1ull << VHOST_USER_PROTOCOL_F_MQ | 1ull << VHOST_USER_PROTOCOL_F_REPLY_ACK | \
		    1ull << VHOST_USER_PROTOCOL_F_STATUS |                                   \
		    1ull << VHOST_USER_PROTOCOL_F_CONFIGURE_MEM_SLOTS)

#define F(b) (1ull << (b))

/* Offloads that hand the driver frames larger than an MTU frame (and ECN, which needs them). */
#define DRV_GUEST_GSO (F(VIRTIO_NET_F_GUEST_TSO4) | F(VIRTIO_NET_F_GUEST_TSO6) | \
		       F(VIRTIO_NET_F_GUEST_UFO) | F(VIRTIO_NET_F_GUEST_ECN) |    \
		       F(VIRTIO_NET_F_GUEST_USO4) | F(VIRTIO_NET_F_GUEST_USO6))

/* The in-flight region serves only a backend that comes back: without
 * reconnecting it would cost the backend a write per chain for nothing. */
uint64_t drv_proto_want(const struct uvn_drv *d)
{
	/* Packed rings are put right by the driver itself (link.c): a region
	 * a backend also resumed from would have it take chains twice. */
	bool inflight = d->cfg.reconnect && !d->cfg.no_inflight && d->cfg.ring != UVN_RING_PACKED;

	return PROTO_WANT | (inflight ? 1ull << VHOST_USER_PROTOCOL_F_INFLIGHT_SHMFD : 0);
}

int drv_fail(struct uvn_drv *d, int err, const char *why)
{
	int expected = 0;

	/* A pause for a reconnect gives way to the error. */
	while (!atomic_compare_exchange_strong(&d->err, &expected, err))
		if (expected != DRV_PAUSE)
			return expected;
	if (why)
		UVN_ERR("uvnet driver %s: %s", d->path, why);
	return err;
}


/* ------------------------------------------------------------- rings */

int drv_ring_create(struct uvn_drv *d, struct drv_ring *r, unsigned idx, bool fds,
		    bool with_cache, uint64_t *hit, uint64_t *miss)
{
	struct uvn_vq_drv_cfg vc = { .num = d->cfg.queue_size, .features = d->features };
	int ret;

	r->idx = idx;
	r->num = d->cfg.queue_size;
	r->kick_fd = r->call_fd = -1;
	r->mem_len = drv_ring_bytes(d);
	r->mem = uvn_arena_alloc(d->arena, r->mem_len, 4096);
	if (!r->mem)
		return -ENOMEM;
	vc.ring = r->mem;
	if (with_cache && d->indirect) {
		ret = drv_cache_init(&r->cache, d, r->num, hit, miss);
		if (ret)
			return ret;
		vc.indirect_alloc = drv_cache_alloc;
		vc.indirect_free = drv_cache_free;
		vc.indirect_ctx = &r->cache;
	}
	ret = uvn_vq_drv_create(&vc, &r->vq);
	if (ret)
		return ret == -UVN_VQ_E_NOMEM ? -ENOMEM : -EINVAL;
	/* A packed ring's chains are laid out again after a backend restart,
	 * from copies kept from the start (nothing is in flight yet). */
	if (d->cfg.reconnect && d->cfg.ring == UVN_RING_PACKED && uvn_packed_drv_keep(r->vq))
		return -EINVAL;
	r->pk_base = 1u << 15; /* position 0, wrap counter 1 */
	if (fds) {
		r->kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		r->call_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (r->kick_fd < 0 || r->call_fd < 0)
			return -errno;
	}
	return 0;
}

void drv_ring_destroy(struct uvn_drv *d, struct drv_ring *r)
{
	uvn_vq_drv_destroy(r->vq);
	r->vq = NULL;
	if (r->cache.d)
		drv_cache_fini(&r->cache);
	if (r->mem)
		uvn_arena_free(d->arena, r->mem, r->mem_len);
	r->mem = NULL;
	if (r->kick_fd >= 0)
		close(r->kick_fd);
	if (r->call_fd >= 0)
		close(r->call_fd);
	r->kick_fd = r->call_fd = -1;
	free(r->fix_mark);
	free(r->fix_list);
	free(r->fix_keys);
	r->fix_mark = NULL;
	r->fix_list = NULL;
	r->fix_keys = NULL;
}

/* The used index the device published in a split ring (ours to read: no
 * backend runs while the ring is being described). */
static uint16_t split_used_idx(const struct drv_ring *r)
{
	struct uvn_vq_layout l;
	const uint16_t *idx;

	uvn_vq_layout(false, r->num, &l);
	idx = (const uint16_t *)((const char *)r->mem + l.device + 2);
	return le16toh(__atomic_load_n(idx, __ATOMIC_ACQUIRE));
}

/*
 * Describe a ring to the backend and start it. Where the backend starts
 * reading: the ring's beginning at open (packed: wrap counter 1), not where
 * we are now (rx buffers are already posted); after a reconnect, the used
 * index, as QEMU does: the chains from there on are the new backend's to
 * take again (or, with INFLIGHT_SHMFD, it takes the ones its predecessor
 * held first and puts its avail index past them itself). A packed ring has
 * no used index in memory: the position the dead backend's used elements
 * reached, where its chains were laid out again (link.c), both halves of
 * the base alike (nothing held).
 */
static int ring_start(struct uvn_drv *d, struct drv_ring *r)
{
	struct uvn_vq_layout l;
	uint64_t base = drv_addr(r->mem);
	bool packed = d->cfg.ring == UVN_RING_PACKED;
	int ret;

	uvn_vq_layout(packed, r->num, &l);
	ret = uvn_vu_fe_set_vring_num(d->fe, r->idx, r->num);
	if (!ret)
		ret = uvn_vu_fe_set_vring_base(d->fe, r->idx, packed ? r->pk_base : split_used_idx(r));
	if (!ret)
		ret = uvn_vu_fe_set_vring_addr(d->fe, r->idx, base + l.desc, base + l.driver,
					       base + l.device);
	if (!ret)
		ret = uvn_vu_fe_set_vring_call(d->fe, r->idx, r->call_fd);
	if (!ret)
		ret = uvn_vu_fe_set_vring_kick(d->fe, r->idx, r->kick_fd);
	return ret;
}

static void ring_kick(const struct drv_ring *r)
{
	uint64_t one = 1;

	if (r->kick_fd >= 0 && write(r->kick_fd, &one, sizeof(one)) < 0)
		(void)0; /* only at a full counter: a kick is pending anyway */
}

/* Rings one past the highest index we use: the in-flight region's queue count. */
static unsigned ring_count(const struct uvn_drv *d)
{
	return d->has_ctrl ? d->ctrl.idx + 1 : 2 * d->pairs;
}

/*
 * INFLIGHT_SHMFD: the region is asked for once, at the first start, and
 * kept (its fd) for as long as the instance lives; every backend gets it,
 * the first too (as QEMU does), so the one after a crash finds what its
 * predecessor held. A backend that declines gives no region: we run
 * without (the base alone then decides, see driver.h).
 */
static int inflight_setup(struct uvn_drv *d)
{
	int ret;

	if (!(d->proto & F(VHOST_USER_PROTOCOL_F_INFLIGHT_SHMFD)))
		return 0;
	if (d->inflight_fd < 0) {
		ret = uvn_vu_fe_get_inflight(d->fe, ring_count(d), d->cfg.queue_size, &d->inflight,
					     &d->inflight_fd);
		if (ret == -EIO) {
			UVN_WARN("uvnet driver %s: the backend declined GET_INFLIGHT_FD", d->path);
			return 0;
		}
		if (ret)
			return ret;
	}
	ret = uvn_vu_fe_set_inflight(d->fe, &d->inflight, d->inflight_fd);
	if (!ret)
		d->link_st.inflight_sets++; /* under ctrl_lock on a reconnect; no thread at open */
	return ret;
}

/* ----------------------------------------------------------- features */

static int choose_features(struct uvn_drv *d)
{
	const struct uvn_drv_cfg *c = &d->cfg;
	uint64_t off = c->features_off, want;

	if (!(d->offered & F(VIRTIO_F_VERSION_1))) {
		UVN_ERR("uvnet driver %s: the backend does not offer VIRTIO_F_VERSION_1", d->path);
		return -ENOTSUP;
	}
	want = F(VIRTIO_F_VERSION_1) | F(VIRTIO_RING_F_INDIRECT_DESC) | F(VIRTIO_RING_F_EVENT_IDX) |
	       F(VIRTIO_F_IN_ORDER) | F(VIRTIO_NET_F_CTRL_VQ) | F(VIRTIO_NET_F_CTRL_RX) |
	       F(VIRTIO_NET_F_CTRL_MAC_ADDR) | c->features_extra;
	if (c->ring == UVN_RING_PACKED) {
		if (!(d->offered & F(VIRTIO_F_RING_PACKED))) {
			UVN_ERR("uvnet driver %s: packed rings asked for, not offered", d->path);
			return -ENOTSUP;
		}
		want |= F(VIRTIO_F_RING_PACKED);
	}
	switch (c->rx_mode) {
	case UVN_RX_AUTO:
		d->rx_mode = (d->offered & ~off & F(VIRTIO_NET_F_MRG_RXBUF)) ? UVN_RX_MERGEABLE
									    : UVN_RX_SMALL;
		break;
	case UVN_RX_MERGEABLE:
		if (!(d->offered & ~off & F(VIRTIO_NET_F_MRG_RXBUF))) {
			UVN_ERR("uvnet driver %s: mergeable rx asked for, MRG_RXBUF not offered", d->path);
			return -ENOTSUP;
		}
		d->rx_mode = UVN_RX_MERGEABLE;
		break;
	default:
		d->rx_mode = c->rx_mode;
		break;
	}
	if (d->rx_mode == UVN_RX_MERGEABLE)
		want |= F(VIRTIO_NET_F_MRG_RXBUF);
	if (c->queue_pairs > 1)
		want |= F(VIRTIO_NET_F_MQ);
	d->features = d->offered & want & ~off;
	/* Small buffers cannot hold a GSO frame (virtio-net: without MRG_RXBUF
	 * they would have to be 64 KB): the backend segments for us instead. */
	if (d->rx_mode == UVN_RX_SMALL)
		d->features &= ~DRV_GUEST_GSO;
	/* Dependencies (virtio-net: the control queue features need CTRL_VQ). */
	if (!(d->features & F(VIRTIO_NET_F_CTRL_VQ)))
		d->features &= ~(F(VIRTIO_NET_F_CTRL_RX) | F(VIRTIO_NET_F_CTRL_MAC_ADDR) |
				 F(VIRTIO_NET_F_MQ));
	if (c->queue_pairs > 1 && (!(d->features & F(VIRTIO_NET_F_MQ)) ||
				   !(uvn_vu_fe_protocol_features(d->fe) & F(VHOST_USER_PROTOCOL_F_MQ)) ||
				   d->max_pairs < c->queue_pairs)) {
		UVN_ERR("uvnet driver %s: %u queue pairs asked for; the backend offers %s%u",
			d->path, c->queue_pairs,
			d->features & F(VIRTIO_NET_F_MQ) ? "" : "no MQ, ", d->max_pairs);
		return -ENOTSUP;
	}
	d->mrg_rxbuf = d->features & F(VIRTIO_NET_F_MRG_RXBUF);
	d->indirect = d->features & F(VIRTIO_RING_F_INDIRECT_DESC);
	d->has_ctrl = d->features & F(VIRTIO_NET_F_CTRL_VQ);
	d->csum = d->features & F(VIRTIO_NET_F_CSUM);
	d->guest_csum = d->features & F(VIRTIO_NET_F_GUEST_CSUM);
	d->hdr_len = UVN_NET_HDR_LEN;
	return 0;
}

static int check_cfg(const struct uvn_drv_cfg *c)
{
	if (!c->path || !*c->path || c->queue_pairs == 0 ||
	    c->queue_pairs > UVN_DRV_MAX_QUEUE_PAIRS || c->queue_size < 2 ||
	    c->queue_size > UVN_VQ_MAX_SIZE || c->mtu < 68 || c->mtu > 65535 ||
	    c->desc_cache_thr == 0 || c->desc_cache_thr > UVN_DRV_DESC_CACHE_MAX ||
	    (unsigned)c->mrg_sizing > UVN_MRG_MTU_ONLY || (unsigned)c->rx_mode > UVN_RX_MERGEABLE ||
	    (unsigned)c->ring > UVN_RING_PACKED || c->tx_free_thresh > c->queue_size ||
	    !UVN_RESERVED_ZERO(c))
		return -EINVAL;
	if (c->ring == UVN_RING_SPLIT && (c->queue_size & (c->queue_size - 1)))
		return -EINVAL;
	return 0;
}

/* --------------------------------------------------------------- open */

static int create_queues(struct uvn_drv *d)
{
	int ret;

	d->rxq = aligned_alloc(CACHE_LINE, sizeof(*d->rxq) * d->pairs);
	d->txq = aligned_alloc(CACHE_LINE, sizeof(*d->txq) * d->pairs);
	if (!d->rxq || !d->txq)
		return -ENOMEM;
	memset(d->rxq, 0, sizeof(*d->rxq) * d->pairs);
	memset(d->txq, 0, sizeof(*d->txq) * d->pairs);
	for (unsigned q = 0; q < d->pairs; q++) {
		d->rxq[q].r.kick_fd = d->rxq[q].r.call_fd = -1;
		d->txq[q].r.kick_fd = d->txq[q].r.call_fd = -1;
	}
	d->ctrl.kick_fd = d->ctrl.call_fd = -1;
	for (unsigned q = 0; q < d->pairs; q++) {
		d->rxq[q].d = d;
		d->rxq[q].q = q;
		d->txq[q].d = d;
		d->txq[q].q = q;
		ret = drv_ring_create(d, &d->rxq[q].r, 2 * q, !d->cfg.poll, true, &d->rxq[q].st.desc_cache_hit,
				      &d->rxq[q].st.desc_cache_miss);
		if (!ret)
			ret = drv_rxq_init(d, &d->rxq[q]);
		if (!ret)
			ret = drv_ring_create(d, &d->txq[q].r, 2 * q + 1, !d->cfg.poll, true,
					      &d->txq[q].st.desc_cache_hit,
					      &d->txq[q].st.desc_cache_miss);
		if (!ret)
			ret = drv_txq_init(d, &d->txq[q]);
		if (ret)
			return ret;
	}
	if (d->has_ctrl) {
		unsigned idx = 2 * (d->features & F(VIRTIO_NET_F_MQ) ? d->max_pairs : 1);

		ret = drv_ring_create(d, &d->ctrl, idx, true, false, NULL, NULL);
		if (ret)
			return ret;
		d->ctrl_buf = uvn_arena_alloc(d->arena, 4096, 64);
		if (!d->ctrl_buf)
			return -ENOMEM;
	}
	return 0;
}

int drv_start(struct uvn_drv *d, bool resume)
{
	struct uvn_mem_region_desc region;
	int fd = uvn_arena_fd(d->arena), ret;
	uint8_t status = VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER;

	ret = uvn_vu_fe_set_features(d->fe, d->features);
	if (!ret)
		ret = uvn_vu_fe_set_status(d->fe, status | VIRTIO_CONFIG_S_FEATURES_OK);
	if (ret == -EIO) {
		UVN_ERR("uvnet driver %s: the backend refused features 0x%llx", d->path,
			(unsigned long long)d->features);
		return -ENOTSUP;
	}
	uvn_arena_region(d->arena, &region);
	if (!ret)
		ret = uvn_vu_fe_set_mem(d->fe, &region, &fd, 1);
	/* Before any ring starts: the backend attaches each ring's slice then. */
	if (!ret)
		ret = inflight_setup(d);
	for (unsigned q = 0; q < d->pairs && !ret; q++) {
		/* rx buffers are posted before the ring starts: the backend sees
		 * them at once. On a reconnect the queue's thread owns the ring. */
		if (!resume)
			drv_rxq_fill(&d->rxq[q]);
		ret = ring_start(d, &d->rxq[q].r);
		if (!ret)
			ret = ring_start(d, &d->txq[q].r);
	}
	if (!ret && d->has_ctrl)
		ret = ring_start(d, &d->ctrl);
	for (unsigned q = 0; q < d->pairs && !ret; q++) {
		ret = uvn_vu_fe_set_vring_enable(d->fe, d->rxq[q].r.idx, true);
		if (!ret)
			ret = uvn_vu_fe_set_vring_enable(d->fe, d->txq[q].r.idx, true);
	}
	if (!ret && d->has_ctrl)
		ret = uvn_vu_fe_set_vring_enable(d->fe, d->ctrl.idx, true);
	if (!ret)
		ret = uvn_vu_fe_set_status(d->fe, status | VIRTIO_CONFIG_S_FEATURES_OK |
					   VIRTIO_CONFIG_S_DRIVER_OK);
	if (ret)
		return ret;
	/* A backend that missed nothing still learns that buffers wait (after
	 * a reconnect: tx chains queued meanwhile too). */
	for (unsigned q = 0; q < d->pairs; q++) {
		ring_kick(&d->rxq[q].r);
		if (resume)
			ring_kick(&d->txq[q].r);
	}
	if (resume && d->has_ctrl)
		ring_kick(&d->ctrl);
	/* The control state: a new backend knows none of it. */
	if (!resume)
		d->pairs_on = 1;
	if (d->features & F(VIRTIO_NET_F_MQ)) {
		uint16_t n = htole16((uint16_t)(resume ? d->pairs_on : d->pairs));

		ret = drv_ctrl_cmd(d, VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET, &n, sizeof(n));
		if (ret)
			return ret;
	}
	if (!resume)
		d->pairs_on = d->pairs;
	if (d->cfg.mac_set && (d->features & F(VIRTIO_NET_F_CTRL_MAC_ADDR)))
		ret = drv_ctrl_cmd(d, VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_ADDR_SET, d->cfg.mac, 6);
	if (!ret && resume && d->promisc) {
		uint8_t on = 1;

		ret = drv_ctrl_cmd(d, VIRTIO_NET_CTRL_RX, VIRTIO_NET_CTRL_RX_PROMISC, &on, 1);
	}
	return ret;
}

int uvn_drv_open(const struct uvn_drv_cfg *cfg, struct uvn_drv **out)
{
	struct uvn_vu_fe_cfg fc = { .server = cfg->server, .timeout_ms = cfg->timeout_ms };
	struct uvn_drv *d;
	int ret = check_cfg(cfg);

	if (ret)
		return ret;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->cfg = *cfg;
	d->ctrl.kick_fd = d->ctrl.call_fd = -1;
	d->inflight_fd = d->stop_fd = -1;
	atomic_init(&d->sock_fd, -1);
	atomic_init(&d->link_up, false);
	pthread_mutex_init(&d->ctrl_lock, NULL);
	snprintf(d->path, sizeof(d->path), "%s", cfg->path);
	d->cfg.path = d->path;
	if (!d->cfg.rx_pkts)
		d->cfg.rx_pkts = 4 * d->cfg.queue_size;
	if (!d->cfg.tx_pkts)
		d->cfg.tx_pkts = 4 * d->cfg.queue_size;
	d->pairs = cfg->queue_pairs;
	atomic_flag_clear(&d->arena_lock);
	atomic_init(&d->err, 0);
	atomic_init(&d->opt[UVN_OPT_DEFERRED_ALLOC], cfg->deferred_alloc);
	atomic_init(&d->opt[UVN_OPT_MRG_SIZING], cfg->mrg_sizing);
	atomic_init(&d->opt[UVN_OPT_DESC_CACHE], cfg->desc_cache);
	atomic_init(&d->opt[UVN_OPT_DESC_CACHE_THR], cfg->desc_cache_thr);
	atomic_init(&d->opt[UVN_OPT_TX_FREE_THRESH], cfg->tx_free_thresh);
	fc.path = d->path;
	ret = uvn_vu_fe_connect(&fc, &d->fe);
	if (ret) {
		UVN_ERR("uvnet driver %s: %s: %s", d->path, cfg->server ? "no backend connected"
			: "cannot connect", strerror(-ret));
		pthread_mutex_destroy(&d->ctrl_lock);
		free(d);
		return ret;
	}
	atomic_store(&d->sock_fd, uvn_vu_fe_fd(d->fe));
	ret = uvn_vu_fe_set_owner(d->fe);
	if (!ret)
		ret = uvn_vu_fe_negotiate(d->fe, drv_proto_want(d), &d->offered, &d->max_pairs);
	d->proto = uvn_vu_fe_protocol_features(d->fe);
	if (!ret)
		ret = choose_features(d);
	if (!ret)
		ret = uvn_arena_create(drv_arena_bytes(d), cfg->no_huge ? UVN_ARENA_NO_HUGE : 0, &d->arena);
	if (!ret) {
		d->arena_base = uvn_arena_base(d->arena);
		d->arena_size = uvn_arena_size(d->arena);
		ret = create_queues(d);
	}
	if (!ret)
		ret = drv_start(d, false);
	if (!ret) {
		atomic_store(&d->link_up, true);
		if (cfg->reconnect)
			ret = drv_link_start(d);
	}
	if (ret) {
		if (!drv_err(d))
			atomic_store(&d->err, -ENOTCONN);
		uvn_drv_close(d);
		return ret;
	}
	*out = d;
	return 0;
}

/* ------------------------------------------------------------ stop/close */

/* Descriptors between the used (bits 16-31) and avail halves of a packed base. */
static unsigned packed_held(uint32_t base, unsigned num)
{
	unsigned a = base & 0x7fff, u = (base >> 16) & 0x7fff;
	bool aw = base >> 15 & 1, uw = base >> 31 & 1;
	int n = (int)a - (int)u + (aw != uw ? (int)num : 0);

	return n < 0 || (unsigned)n > num ? num : (unsigned)n;
}

static void ring_stop(struct uvn_drv *d, struct drv_ring *r)
{
	uint32_t base;

	if (!r->vq || uvn_vu_fe_error(d->fe) || uvn_vu_fe_get_vring_base(d->fe, r->idx, &base))
		return;
	/* What the backend took and never gave back (split: its avail index
	 * against the used index it published; packed: descriptors from its
	 * used position to its avail position, when it says both). */
	if (d->cfg.ring == UVN_RING_SPLIT)
		d->link_st.held_at_stop += (uint16_t)((uint16_t)base - split_used_idx(r));
	else if (base >> 16)
		d->link_st.held_at_stop += packed_held(base, r->num);
}

void uvn_drv_stop(struct uvn_drv *d)
{
	if (d->stopped)
		return;
	d->stopped = true;
	/* The reconnect thread first: the connection is ours alone from here. */
	drv_link_stop(d);
	atomic_store(&d->link_up, false);
	/* The backend stops using the rings before we take the buffers back. */
	for (unsigned q = 0; d->fe && d->rxq && q < d->pairs; q++) {
		ring_stop(d, &d->rxq[q].r);
		ring_stop(d, &d->txq[q].r);
	}
	if (d->fe && d->has_ctrl)
		ring_stop(d, &d->ctrl);
	drv_fail(d, -ENOTCONN, NULL);
	for (unsigned q = 0; d->rxq && q < d->pairs; q++) {
		if (d->rxq[q].r.vq)
			drv_rxq_drain(&d->rxq[q]);
		if (d->txq[q].r.vq)
			drv_txq_drain(&d->txq[q]);
	}
	if (d->ctrl.vq)
		while (uvn_vq_drv_detach_unused(d->ctrl.vq))
			;
	uvn_vu_fe_destroy(d->fe);
	d->fe = NULL;
	atomic_store(&d->sock_fd, -1);
}

void uvn_drv_close(struct uvn_drv *d)
{
	if (!d)
		return;
	uvn_drv_stop(d);
	for (unsigned q = 0; d->rxq && q < d->pairs; q++) {
		drv_ring_destroy(d, &d->rxq[q].r);
		drv_rxq_fini(&d->rxq[q]);
		drv_ring_destroy(d, &d->txq[q].r);
		drv_txq_fini(&d->txq[q]);
	}
	drv_ring_destroy(d, &d->ctrl);
	free(d->rxq);
	free(d->txq);
	uvn_arena_destroy(d->arena);
	if (d->inflight_fd >= 0)
		close(d->inflight_fd);
	pthread_mutex_destroy(&d->ctrl_lock);
	free(d);
}
