/* SPDX-License-Identifier: MIT */
/*
 * The fixture of the device-side net tests: a netdev queue over a ring
 * pair (tq_pair(): the guest's driver half and our device half in one
 * process, buffers given as host pointers) and the packet pools the
 * device takes packets from.
 */
#ifndef UVN_TEST_NETDEV_FIX_H
#define UVN_TEST_NETDEV_FIX_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "net/device/netdev.h"
#include "ring_test.h"

struct ndf_cfg {
	unsigned num;         /* ring entries */
	uint64_t features;
	bool tx;              /* the device reads the ring (guest tx, control queue) */
	unsigned small;       /* packets of small_size bytes (0: no pool) */
	uint32_t small_size;  /* 0: 2048 */
	unsigned big;         /* packets of 64 KB + 64 bytes (0: no pool) */
	unsigned ext;         /* descriptor-only packets, for zero copy (0: no pool) */
};

struct ndf {
	struct tq ring;
	struct uvn_netdev_q q;
	struct uvn_pkt_pool *small, *big, *ext;
	struct ndf_cfg cfg;
	int notified;         /* q.notify calls */
};

/* Set up @f; q.notify counts into f->notified. */
void ndf_init(struct ndf *f, const struct ndf_cfg *cfg);
/* Check that every packet is back in its pool, then free it all. */
void ndf_fini(struct ndf *f);

#endif
