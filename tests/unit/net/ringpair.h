/* SPDX-License-Identifier: MIT */
/*
 * Test helper: a driver half and a device half over the same memory in one
 * process (addresses are our own pointers, translated one to one).
 */
#ifndef UVN_TEST_RINGPAIR_H
#define UVN_TEST_RINGPAIR_H

#include <stdint.h>
#include <stdlib.h>

#include <uvnet/virtqueue.h>

struct ringpair {
	void *mem;
	struct uvn_vq_drv *drv;
	struct uvn_vq_dev *dev;
};

static void *rp_xlate(void *ctx, uint64_t addr, uint64_t *len)
{
	(void)ctx;
	(void)len;
	return (void *)(uintptr_t)addr;
}

/* @xlate translates the device half's buffer addresses (a test may hook it
 * to act between a pop's reads and its use of the buffers). */
static inline int ringpair_init_xlate(struct ringpair *rp, unsigned num, uint64_t features,
				      uvn_xlate_fn xlate)
{
	bool packed = features & (1ull << VIRTIO_F_RING_PACKED);
	struct uvn_vq_layout l;
	int r = uvn_vq_layout(packed, num, &l);

	if (r)
		return r;
	rp->mem = aligned_alloc(64, (l.size + 63) & ~(size_t)63);
	struct uvn_vq_drv_cfg dc = { .num = num, .features = features, .ring = rp->mem };
	r = uvn_vq_drv_create(&dc, &rp->drv);
	if (r)
		return r;
	struct uvn_vq_dev_cfg vc = {
		.num = num, .features = features, .desc = rp->mem,
		.driver = (char *)rp->mem + l.driver, .device = (char *)rp->mem + l.device,
		.xlate = xlate, .avail_wrap = true, .used_wrap = true,
	};
	return uvn_vq_dev_create(&vc, &rp->dev);
}

static inline int ringpair_init(struct ringpair *rp, unsigned num, uint64_t features)
{
	return ringpair_init_xlate(rp, num, features, rp_xlate);
}

static inline void ringpair_fini(struct ringpair *rp)
{
	uvn_vq_dev_destroy(rp->dev);
	uvn_vq_drv_destroy(rp->drv);
	free(rp->mem);
}

static inline struct uvn_sg rp_sg(const void *p, uint32_t len)
{
	return (struct uvn_sg){ (uint64_t)(uintptr_t)p, len };
}

#endif
