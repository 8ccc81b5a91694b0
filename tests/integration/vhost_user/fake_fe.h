/* SPDX-License-Identifier: MIT */
/*
 * A scripted vhost-user frontend for tests, in the same process as the
 * backend under test: it writes a request on its end of a socketpair, lets
 * the backend handle it, and reads the reply. Guest memory is a memfd the
 * test maps itself; the test acts as the guest driver with uvn_vq_drv_*.
 */
#ifndef UVN_TEST_FAKE_FE_H
#define UVN_TEST_FAKE_FE_H

#include <stdbool.h>
#include <stdint.h>

#include "vhost_user/backend.h"
#include "vhost_user/msg.h"

#define FE_QUEUES 2
#define FE_MEM_SIZE (2u << 20)
#define FE_RING_OFF(i) ((1u << 20) + (i) * 64 * 1024) /* where ring i lives */

/* What the device layer saw. */
struct fake_dev {
	bool ready[FE_QUEUES + 8];
	unsigned ready_events[FE_QUEUES + 8];  /* queue_ready(true) calls */
	unsigned stop_events[FE_QUEUES + 8];   /* queue_ready(false) calls */
	bool vq_valid_on_stop;                 /* q->vq was still set when told to stop */
	uint64_t features;
	unsigned set_features_calls;
	int refuse_features;
	uint8_t status;
};

struct fe {
	int sock;                   /* frontend end */
	struct uvn_vu_backend *b;
	bool external;              /* b belongs to someone else (fe_attach) */
	struct fake_dev dev;
	int memfd;
	uint8_t *mem;               /* our mapping = the frontend's user addresses */
	uint64_t gpa;               /* guest-physical address of mem[0] */
	uint64_t features;          /* what we negotiate */
	int kick[FE_QUEUES], call[FE_QUEUES];
	unsigned queues;            /* the backend's configuration, for fe_restart */
	uint64_t offered;
};

/* Socketpair + backend with @queues queues offering @features. */
void fe_open(struct fe *f, unsigned queues, uint64_t features);
/* A frontend for a backend someone else created on @sock's peer (a port):
 * fe_send still hands each request to @b directly; fe_close leaves @b alone. */
void fe_attach(struct fe *f, int sock, struct uvn_vu_backend *b, uint64_t features);
/* The backend dies (destroyed as it is: nothing drained) and a new one
 * starts on a new connection; guest memory, eventfds and our negotiated
 * features stay, the device's view starts over. */
void fe_restart(struct fe *f);
/* Destroy the backend (if still alive and ours) and everything of the frontend. */
void fe_close(struct fe *f);

/* Send a request, let the backend handle it. @return what uvn_vu_backend_handle() returned. */
int fe_send(struct fe *f, uint32_t req, uint32_t flags, const void *payload, uint32_t size,
	    const int *fds, unsigned nfds);
/* Read a reply if one is waiting, check its flags and request. @return 1 with it, 0 if none. */
int fe_reply(struct fe *f, uint32_t req, struct uvn_vu_msg *out);
/* Send and expect a u64 reply (GET_* or ack). @return the u64. */
uint64_t fe_get_u64(struct fe *f, uint32_t req, uint32_t flags);
/* Send a request with a u64 payload, asking for an ack. @return the ack value. */
uint64_t fe_set_u64_ack(struct fe *f, uint32_t req, uint64_t v);
/* Send any request asking for an ack (no fds). @return the ack value. */
uint64_t fe_ack(struct fe *f, uint32_t req, const void *payload, uint32_t size);

void fe_set_mem_table(struct fe *f, uint32_t flags);
/* Ring of @num at byte @off of guest memory: NUM, BASE, ADDR, KICK. */
void fe_setup_ring(struct fe *f, unsigned idx, unsigned num, uint64_t off, uint32_t base);
void fe_vring_state(struct fe *f, uint32_t req, unsigned idx, unsigned num);
void fe_vring_fd(struct fe *f, uint32_t req, unsigned idx, int fd);
/* Is ring @idx handed to the device (q->vq set)? */
bool fe_ready(struct fe *f, unsigned idx);
/* QEMU's order up to enabled rings (split, @num entries, rings at 1 MB). */
void fe_negotiate_qemu(struct fe *f, unsigned num);

/* The test as the guest driver of ring @idx (at FE_RING_OFF(idx)). */
struct uvn_vq_drv *fe_driver(struct fe *f, unsigned idx, unsigned num);
/* Guest TX of string @s (at byte @off of guest memory) through ring @idx;
 * the device pops it from the ready queue, checks it, returns it. */
void fe_tx(struct fe *f, struct uvn_vq_drv *drv, unsigned idx, uint64_t off, const char *s);

/* Fds and mappings of this process, to compare before and after. */
int count_fds(void);
/* memfd mappings (guest memory, logs) of this process */
int count_maps(void);

#endif
