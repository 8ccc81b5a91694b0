/* SPDX-License-Identifier: MIT */
/*
 * Frames the worker sends. Up to 2 KB a frame lives in a tx pool packet of
 * the driver (header pushed in front of it: one descriptor, the fast path).
 * Larger frames live in the driver's shared application memory, cut into
 * 4 KB segments like an skb's page fragments, and carry a completion
 * (struct uvn_pkt_ubuf) that gives their buffer back once the device used
 * it; above the MTU they go as TCP/IPv4 TSO frames when the backend
 * negotiated HOST_TSO4, as plain jumbo frames otherwise.
 */
#ifndef UVN_PERF_FRAMES_H
#define UVN_PERF_FRAMES_H

#include <stdbool.h>
#include <stdint.h>

#include <uvnet/driver.h>

#include "net/frame.h"
#include "perf.h"

#define WK_SMALL_MAX (2048u - UVN_DRV_HEADROOM)
#define WK_SEG 4096u
#define WK_SEQ_OFF 42u    /* rr: sequence number after the Ethernet/IPv4/UDP headers */

struct wk_frames;

struct wk_slot {
	struct uvn_pkt_ubuf u;          /* first: the completion gets us back */
	struct wk_frames *f;
	uint8_t *buf;
};

struct wk_frames {
	struct uvn_drv *d;
	unsigned size, segs, queues;
	bool big, gso;
	uint8_t dst[6], src[6];
	uint8_t hdr[UVN_FRAME_TCP_HDR]; /* every frame's headers (UDP: the first 42 bytes) */
	uint8_t *mem;                   /* big: slots in the driver's shared memory */
	size_t slot_len, mem_len;
	struct wk_slot *slots;
	struct wk_slot **free;
	unsigned nslots, nfree;
};

/* Application memory the driver must reserve for frames of @size bytes. */
size_t wkf_app_mem(unsigned size);

/*
 * Prepare frames of @size bytes from @src to @dst on every queue of @d:
 * the header template is written into every buffer once, so a sender that
 * writes nothing per frame (pps) still sends well-formed frames.
 */
int wkf_init(struct wk_frames *f, struct uvn_drv *d, const struct pt_cfg *c, unsigned size,
	     const uint8_t dst[6], const uint8_t src[6]);
void wkf_fini(struct wk_frames *f);

/*
 * Up to @n frames for queue @q. @hdr: write the headers (netperf/testpmd
 * style: every frame built); @dirty: write every byte with @fill.
 * @return frames in @pkts (0: everything is in flight)
 */
unsigned wkf_get(struct wk_frames *f, unsigned q, struct uvn_pkt **pkts, unsigned n, bool hdr,
		 bool dirty, uint8_t fill);

/* "none", "tso" or "jumbo" */
const char *wkf_offload(const struct wk_frames *f);

/* Swap a frame's MAC addresses (rr echo). */
void wkf_swap_macs(struct uvn_pkt *p);

#endif
