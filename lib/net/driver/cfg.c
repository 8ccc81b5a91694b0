/* SPDX-License-Identifier: MIT */
/* The driver's configuration: defaults and the "key=value,..." parser for tools. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/virtio_config.h>
#include <linux/virtio_net.h>
#include <linux/virtio_ring.h>

#include "net/driver/drv.h"

void uvn_drv_cfg_init(struct uvn_drv_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->queue_pairs = 1;
	cfg->queue_size = 256;
	cfg->ring = UVN_RING_SPLIT;
	cfg->rx_mode = UVN_RX_AUTO;
	cfg->features_extra = 1ull << VIRTIO_NET_F_CSUM | 1ull << VIRTIO_NET_F_GUEST_CSUM;
	cfg->mtu = 1500;
	cfg->timeout_ms = 5000;
	cfg->deferred_alloc = true;
	cfg->mrg_sizing = UVN_MRG_HDR_MTU;
	cfg->desc_cache = true;
	cfg->desc_cache_thr = 4;
	cfg->tx_free_thresh = 32;
	cfg->app_mem_bytes = 4u << 20;
}

static int parse_bool(const char *v, bool *out)
{
	static const char *const yes[] = { "1", "on", "yes", "true" };
	static const char *const no[] = { "0", "off", "no", "false" };

	for (unsigned i = 0; i < 4; i++) {
		if (!strcmp(v, yes[i])) {
			*out = true;
			return 0;
		}
		if (!strcmp(v, no[i])) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

static int parse_uint(const char *v, unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long n;

	if (!*v || *v == '-')
		return -EINVAL;
	errno = 0;
	n = strtoul(v, &end, 0);
	if (errno || *end || n > max)
		return -EINVAL;
	*out = n;
	return 0;
}

static int parse_enum(const char *v, const char *const *names, unsigned n, unsigned *out)
{
	for (unsigned i = 0; i < n; i++) {
		if (!strcmp(v, names[i])) {
			*out = i;
			return 0;
		}
	}
	return -EINVAL;
}

static int parse_mac(const char *v, uint8_t mac[6])
{
	unsigned b[6];
	char tail;

	if (sscanf(v, "%x:%x:%x:%x:%x:%x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &tail) != 6)
		return -EINVAL;
	for (unsigned i = 0; i < 6; i++) {
		if (b[i] > 0xff)
			return -EINVAL;
		mac[i] = (uint8_t)b[i];
	}
	return 0;
}

/* Feature switches: "name=0" puts the bit in features_off, "name=1" takes it out. */
static const struct {
	const char *key;
	unsigned bit;
} feature_keys[] = {
	{ "mrg_rxbuf", VIRTIO_NET_F_MRG_RXBUF },
	{ "indirect", VIRTIO_RING_F_INDIRECT_DESC },
	{ "in_order", VIRTIO_F_IN_ORDER },
	{ "event_idx", VIRTIO_RING_F_EVENT_IDX },
	{ "ctrl_vq", VIRTIO_NET_F_CTRL_VQ },
	{ "csum", VIRTIO_NET_F_CSUM },
	{ "guest_csum", VIRTIO_NET_F_GUEST_CSUM },
};

static int apply(struct uvn_drv_cfg *cfg, char *key, char *v)
{
	static const char *const rings[] = { "split", "packed" };
	static const char *const modes[] = { "auto", "small", "big", "mergeable" };
	static const char *const sizing[] = { "hdr_mtu", "ewma", "mtu_only" };
	unsigned long n;
	unsigned e;
	bool b;

	for (unsigned i = 0; i < sizeof(feature_keys) / sizeof(feature_keys[0]); i++) {
		if (strcmp(key, feature_keys[i].key))
			continue;
		if (parse_bool(v, &b))
			return -EINVAL;
		if (b)
			cfg->features_off &= ~(1ull << feature_keys[i].bit);
		else
			cfg->features_off |= 1ull << feature_keys[i].bit;
		return 0;
	}
#define BOOL(name, field) if (!strcmp(key, name)) return parse_bool(v, &cfg->field)
#define UINT(name, field, max)                                  \
	if (!strcmp(key, name)) {                               \
		if (parse_uint(v, max, &n))                     \
			return -EINVAL;                         \
		cfg->field = (unsigned)n;                       \
		return 0;                                       \
	}
	if (!strcmp(key, "path")) {
		cfg->path = v;
		return 0;
	}
	BOOL("server", server);
	BOOL("poll", poll);
	BOOL("no_huge", no_huge);
	BOOL("deferred_alloc", deferred_alloc);
	BOOL("desc_cache", desc_cache);
	BOOL("reconnect", reconnect);
	if (!strcmp(key, "inflight")) {
		if (parse_bool(v, &b))
			return -EINVAL;
		cfg->no_inflight = !b;
		return 0;
	}
	UINT("queues", queue_pairs, UVN_DRV_MAX_QUEUE_PAIRS);
	UINT("queue_size", queue_size, UVN_VQ_MAX_SIZE);
	UINT("mtu", mtu, 65535);
	UINT("timeout_ms", timeout_ms, 3600000);
	UINT("rx_pkts", rx_pkts, 1u << 20);
	UINT("tx_pkts", tx_pkts, 1u << 20);
	UINT("desc_cache_thr", desc_cache_thr, UVN_DRV_DESC_CACHE_MAX);
	UINT("tx_free_thresh", tx_free_thresh, UVN_VQ_MAX_SIZE);
#undef BOOL
#undef UINT
	if (!strcmp(key, "ring")) {
		if (parse_enum(v, rings, 2, &e))
			return -EINVAL;
		cfg->ring = (enum uvn_ring_layout)e;
		return 0;
	}
	if (!strcmp(key, "packed")) {
		if (parse_bool(v, &b))
			return -EINVAL;
		cfg->ring = b ? UVN_RING_PACKED : UVN_RING_SPLIT;
		return 0;
	}
	if (!strcmp(key, "rx_mode")) {
		if (parse_enum(v, modes, 4, &e))
			return -EINVAL;
		cfg->rx_mode = (enum uvn_rx_mode)e;
		return 0;
	}
	if (!strcmp(key, "mrg_sizing")) {
		if (parse_enum(v, sizing, 3, &e))
			return -EINVAL;
		cfg->mrg_sizing = (enum uvn_mrg_sizing)e;
		return 0;
	}
	if (!strcmp(key, "mac")) {
		if (parse_mac(v, cfg->mac))
			return -EINVAL;
		cfg->mac_set = true;
		return 0;
	}
	if (!strcmp(key, "app_mem_bytes")) {
		if (parse_uint(v, 1ul << 34, &n))
			return -EINVAL;
		cfg->app_mem_bytes = n;
		return 0;
	}
	if (!strcmp(key, "rx_buf_bytes")) {
		if (parse_uint(v, 1ul << 34, &n))
			return -EINVAL;
		cfg->rx_buf_bytes = n;
		return 0;
	}
	return -EINVAL;
}

int uvn_drv_cfg_parse(struct uvn_drv_cfg *cfg, char *spec, const char **err)
{
	char *save = NULL;

	for (char *item = strtok_r(spec, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(item, '=');
		int r = -EINVAL;

		if (eq && eq != item) {
			*eq = 0;
			r = apply(cfg, item, eq + 1);
			if (r)
				*eq = '=';
		}
		if (r) {
			if (err)
				*err = item;
			return r;
		}
	}
	return 0;
}
