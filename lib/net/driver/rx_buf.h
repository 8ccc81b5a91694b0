/* SPDX-License-Identifier: MIT */
/*
 * What the receive refill takes from the packet library beyond <uvnet/pkt.h>:
 * internal to libuvnet (hidden symbols), the driver being the one user.
 */
#ifndef UVN_NET_DRIVER_RX_BUF_H
#define UVN_NET_DRIVER_RX_BUF_H

#include <uvnet/pkt.h>

/* lib/pkt/frag.c: carve @n fragments as uvn_frag_alloc() would, in one go.
 * @return fragments stored in @out (fewer than @n: no page was free) */
unsigned uvn_frag_alloc_n(struct uvn_frag_pool *fp, size_t size, size_t align, void **out,
			  unsigned n);

#endif
