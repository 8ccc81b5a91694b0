/* SPDX-License-Identifier: MIT */
/*
 * Ring requests and the ring state machine of vhost-user.rst. A ring is
 * stopped until SET_VRING_KICK starts it and GET_VRING_BASE stops it;
 * independently it is enabled or disabled (SET_VRING_ENABLE; enabled from
 * the start without PROTOCOL_FEATURES). It is *ready* — handed to the
 * device as a struct uvn_vq_dev — while it is started, enabled, not broken
 * and its addresses translate into the current memory table.
 *
 * Ring addresses are frontend virtual addresses, translated through each
 * region's userspace_addr, whole rings including used_event/avail_event.
 * A ring setting that is wrong or out of order breaks that queue only;
 * a queue index out of range drops the connection.
 */
#include <endian.h>
#include <errno.h>
#include <unistd.h>

#include "internal.h"
#include "ring/inflight.h"
#include "util/log.h"

#define VIRTIO_ONLY(f) ((f) & ~((1ull << VHOST_USER_F_PROTOCOL_FEATURES) | (1ull << VHOST_F_LOG_ALL)))

/* A packed ring's base as QEMU sends it for a fresh ring, and again after
 * its backend died: position 0, wrap counter 1, in both halves. */
#define PACKED_BASE_FRESH 0x80008000u

/* lib/ring/packed_dev.c: could the device start at its base in the ring as it is? */
const char *uvn_packed_dev_check_base(struct uvn_vq_dev *vq, bool fresh);

static bool num_ok(bool packed, unsigned num)
{
	return num >= 1 && num <= UVN_VQ_MAX_SIZE && (packed || !(num & (num - 1)));
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* The ring state to return from GET_VRING_BASE and to restart from. */
static uint32_t dev_state(const struct uvn_vu_backend *b, const struct uvn_vu_queue *q)
{
	if (vu_packed(b))
		return uvn_vq_dev_avail_state(q->dev) | (uint32_t)uvn_vq_dev_used_state(q->dev) << 16;
	return uvn_vq_dev_avail_state(q->dev);
}

/*
 * The device half of a ring whose addresses no longer translate: it points
 * into a mapping that is going away, so nothing may use it again. Its
 * state is kept in base, and the ring is set up again from there once it
 * is back in memory (as after GET_VRING_BASE / SET_VRING_KICK).
 */
static void drop_dev(struct uvn_vu_backend *b, struct uvn_vu_queue *q)
{
	if (!q->dev)
		return;
	vu_queue_pause(b, q);
	q->base = dev_state(b, q);
	uvn_vq_dev_inflight_detach(q->dev);
	uvn_vq_dev_destroy(q->dev);
	q->dev = NULL;
}

static int translate(struct uvn_vu_backend *b, struct uvn_vu_queue *q)
{
	const struct vhost_vring_addr *a = &q->addr;
	uint64_t n = q->num, dsz = 16 * n, asz, usz, aal, ual;

	if (!q->addr_set || !b->features_set || !num_ok(vu_packed(b), q->num))
		return -EFAULT;
	if (vu_packed(b)) {
		asz = usz = 4; /* event suppression areas */
		aal = ual = 4;
	} else {
		asz = 4 + 2 * n + 2; /* flags, idx, ring[num], used_event */
		usz = 4 + 8 * n + 2; /* flags, idx, ring[num], avail_event */
		aal = 2;
		ual = 4;
	}
	if ((a->desc_user_addr & 15) || (a->avail_user_addr & (aal - 1)) ||
	    (a->used_user_addr & (ual - 1)))
		return -EFAULT;
	q->desc = uvn_mem_uva(b->mem, a->desc_user_addr, dsz);
	q->driver = uvn_mem_uva(b->mem, a->avail_user_addr, asz);
	q->device = uvn_mem_uva(b->mem, a->used_user_addr, usz);
	if (!q->desc || !q->driver || !q->device) {
		q->desc = q->driver = q->device = NULL;
		return -EFAULT;
	}
	return 0;
}

/*
 * Every pointer a ring keeps into guest memory is set here, in every state
 * of the ring (ready, paused, started but disabled, stopped): either to the
 * current table, or dropped. Called before an old mapping goes away.
 */
int vu_queue_translate(struct uvn_vu_backend *b, struct uvn_vu_queue *q)
{
	q->desc = q->driver = q->device = NULL;
	q->cursor.mem = b->mem;
	q->cursor.hint = 0;
	if (translate(b, q)) {
		drop_dev(b, q);
		return -EFAULT;
	}
	if (q->dev)
		uvn_vq_dev_set_addrs(q->dev, q->desc, q->driver, q->device, &q->cursor);
	return 0;
}

/*
 * A packed ring whose base cannot be right (uvn_packed_dev_check_base()):
 * typically QEMU after we were restarted, which sends the position of its
 * last start again. Chains taken from a wrong position are completed at
 * the wrong place (a hung queue) or are stale (rx data written into a
 * buffer the guest freed), so the ring is set up broken instead: counted
 * here and in the ring's err_base, shown by `show queues` once the
 * queue is served, the port's other queues and the other ports untouched.
 */
static void check_packed_base(struct uvn_vu_backend *b, struct uvn_vu_queue *q, uint32_t base)
{
	const char *why = uvn_packed_dev_check_base(q->dev, base == PACKED_BASE_FRESH);

	if (!why)
		return;
	b->st.err_ring++;
	vu_log(b, UVN_LOG_WARN, "ring %u: packed ring not at its base 0x%x: %s; the queue is "
	       "broken (after a backend restart QEMU cannot say where a packed ring is)", q->idx,
	       base, why);
}

static int create_dev(struct uvn_vu_backend *b, struct uvn_vu_queue *q)
{
	struct uvn_vq_dev_cfg cfg = {
		.num = q->num,
		.features = VIRTIO_ONLY(b->features),
		.desc = q->desc,
		.driver = q->driver,
		.device = q->device,
		.xlate = uvn_mem_xlate,
		.xlate_ctx = &q->cursor,
	};
	uint32_t base = q->base;

	if (vu_packed(b)) {
		cfg.avail_idx = base & 0x7fff;
		cfg.avail_wrap = (base >> 15) & 1;
		/* Newer frontends add the used position and wrap in bits 16-31;
		 * older ones send zeros there, meaning "same as avail" (the ring
		 * was stopped with nothing in flight). */
		cfg.used_idx = base >> 16 ? (base >> 16) & 0x7fff : cfg.avail_idx;
		cfg.used_wrap = base >> 16 ? (base >> 31) & 1 : cfg.avail_wrap;
		if (cfg.avail_idx >= q->num || cfg.used_idx >= q->num)
			return vu_queue_error(b, q, &b->st.err_ring,
					      "ring %u: base 0x%x outside the packed ring of %u",
					      q->idx, base, q->num);
	} else {
		cfg.avail_idx = (uint16_t)base;
		/* The next used index is the one in guest memory, not our own
		 * memory of it: the frontend may have restarted us. */
		cfg.used_idx = le16toh(*(volatile uint16_t *)((uint8_t *)q->device + 2));
		/* Nor can a frontend know where a backend that died had got to:
		 * QEMU sends the used index it read back, DPDK's virtio-user 0
		 * whatever its ring holds. Without an in-flight region, chains
		 * made available and not used are taken again from the used
		 * index (a frame may go out twice; no buffer is used twice or
		 * left behind). With one, vu_inflight_attach() decides. */
		if (cfg.avail_idx != cfg.used_idx && !vu_inflight_tracks(b, q)) {
			vu_log(b, UVN_LOG_INFO, "ring %u: base %u, used index %u: resuming from the used index",
			       q->idx, cfg.avail_idx, cfg.used_idx);
			cfg.avail_idx = cfg.used_idx;
		}
	}
	if (uvn_vq_dev_create(&cfg, &q->dev) < 0) {
		q->dev = NULL;
		return vu_queue_error(b, q, &b->st.err_ring, "ring %u: cannot set up the ring", q->idx);
	}
	/* A restarted backend resumes from the in-flight region, if shared. */
	if (vu_inflight_attach(b, q)) {
		uvn_vq_dev_destroy(q->dev);
		q->dev = NULL;
		return -EINVAL;
	}
	/* A packed ring that resumed from its slice has its positions from
	 * there, not from the base (which the frontend cannot know after we
	 * died); any other (untracked, or a fresh slice that took the base)
	 * is checked against the ring. */
	if (vu_packed(b) && !uvn_vq_dev_inflight_resumed(q->dev))
		check_packed_base(b, q, base);
	return 0;
}

void vu_queue_pause(struct uvn_vu_backend *b, struct uvn_vu_queue *q)
{
	if (q->vq) {
		b->ops->queue_ready(b->ctx, q, false);
		q->vq = NULL;
	}
}

void vu_queue_update(struct uvn_vu_backend *b, struct uvn_vu_queue *q)
{
	bool want = q->started && q->enabled && !q->broken && q->desc;

	if (!want) {
		vu_queue_pause(b, q);
		return;
	}
	if (q->vq || (!q->dev && create_dev(b, q)))
		return;
	q->vq = q->dev;
	b->ops->queue_ready(b->ctx, q, true);
}

void vu_queue_stop(struct uvn_vu_backend *b, struct uvn_vu_queue *q)
{
	/* The device lets go of the ring first, then we read its state. */
	vu_queue_pause(b, q);
	if (q->dev) {
		q->base = dev_state(b, q);
		uvn_vq_dev_inflight_detach(q->dev);
		uvn_vq_dev_destroy(q->dev);
		q->dev = NULL;
	}
	q->started = false;
	q->broken = false;
	close_fd(&q->kick_fd);
}

void vu_pause_all(struct uvn_vu_backend *b)
{
	for (unsigned i = 0; i < b->queue_num; i++)
		vu_queue_pause(b, &b->q[i]);
}

void vu_resume_all(struct uvn_vu_backend *b)
{
	for (unsigned i = 0; i < b->queue_num; i++)
		vu_queue_update(b, &b->q[i]);
}

void vu_mem_changed(struct uvn_vu_backend *b)
{
	for (unsigned i = 0; i < b->queue_num; i++) {
		struct uvn_vu_queue *q = &b->q[i];
		bool had_dev = q->dev != NULL;

		/* Every ring, set up or not: its cursor follows the table too. */
		if (vu_queue_translate(b, q) && q->started)
			vu_log(b, UVN_LOG_WARN, "ring %u is not in the new memory table: paused%s", i,
			       had_dev ? " (set up again from its state when it is back)" : "");
		vu_queue_update(b, q);
	}
}

int vu_h_SET_VRING_NUM(struct uvn_vu_backend *b, struct uvn_vu_msg *m, struct uvn_vu_msg *reply)
{
	struct uvn_vu_queue *q = vu_queue(b, m->p.state.index);
	unsigned num = m->p.state.num;

	(void)reply;
	if (!q)
		return -EPROTO;
	if (q->started)
		return vu_queue_error(b, q, &b->st.err_order, "ring %u: SET_VRING_NUM while started",
				      q->idx);
	if (!num_ok(b->features_set && vu_packed(b), num))
		return vu_queue_error(b, q, &b->st.err_ring,
				      "ring %u: size %u invalid (split: a power of two up to 32768; "
				      "packed: 1 to 32768)", q->idx, num);
	q->num = num;
	q->desc = q->driver = q->device = NULL; /* translated again at start */
	return 0;
}

int vu_h_SET_VRING_ADDR(struct uvn_vu_backend *b, struct uvn_vu_msg *m, struct uvn_vu_msg *reply)
{
	const struct vhost_vring_addr *a = &m->p.addr;
	struct uvn_vu_queue *q = vu_queue(b, a->index);

	(void)reply;
	if (!q)
		return -EPROTO;
	if (a->flags & ~(1u << VHOST_VRING_F_LOG))
		return vu_queue_error(b, q, &b->st.err_ring, "ring %u: unknown address flags 0x%x",
				      q->idx, a->flags);
	if (!b->features_set || !b->mem->n || !q->num)
		return vu_queue_error(b, q, &b->st.err_order, "ring %u: SET_VRING_ADDR before %s",
				      q->idx, !b->features_set ? "SET_FEATURES" :
				      !b->mem->n ? "the memory table" : "SET_VRING_NUM");
	if (!num_ok(vu_packed(b), q->num))
		return vu_queue_error(b, q, &b->st.err_ring, "ring %u: size %u invalid for a %s ring",
				      q->idx, q->num, vu_packed(b) ? "packed" : "split");
	/* Addresses (or the log flag) may change on a running ring. */
	vu_queue_pause(b, q);
	q->addr = *a;
	q->addr_set = true;
	if (vu_queue_translate(b, q)) {
		q->addr_set = false;
		return vu_queue_error(b, q, &b->st.err_ring,
				      "ring %u (size %u): desc 0x%llx avail 0x%llx used 0x%llx are "
				      "misaligned or not wholly in guest memory", q->idx, q->num,
				      (unsigned long long)a->desc_user_addr,
				      (unsigned long long)a->avail_user_addr,
				      (unsigned long long)a->used_user_addr);
	}
	vu_queue_update(b, q);
	return 0;
}

int vu_h_SET_VRING_BASE(struct uvn_vu_backend *b, struct uvn_vu_msg *m, struct uvn_vu_msg *reply)
{
	struct uvn_vu_queue *q = vu_queue(b, m->p.state.index);

	(void)reply;
	if (!q)
		return -EPROTO;
	if (q->started)
		return vu_queue_error(b, q, &b->st.err_order, "ring %u: SET_VRING_BASE while started",
				      q->idx);
	if (b->features_set && !vu_packed(b) && m->p.state.num > UINT16_MAX)
		return vu_queue_error(b, q, &b->st.err_ring, "ring %u: split ring base 0x%x",
				      q->idx, m->p.state.num);
	q->base = m->p.state.num;
	return 0;
}

int vu_h_GET_VRING_BASE(struct uvn_vu_backend *b, struct uvn_vu_msg *m, struct uvn_vu_msg *reply)
{
	struct uvn_vu_queue *q = vu_queue(b, m->p.state.index);

	if (!q)
		return -EPROTO;
	if (!q->started) {
		/* Harmless, but a sign of a confused frontend; it still needs its answer. */
		b->st.err_order++;
		UVN_LOG_PEER("vhost-user %s: ring %u: GET_VRING_BASE on a ring that is not started",
			     b->name, q->idx);
	}
	vu_queue_stop(b, q);
	reply->hdr.size = sizeof(struct vhost_vring_state);
	reply->p.state.index = q->idx;
	reply->p.state.num = q->base;
	return 0;
}

/*
 * SET_VRING_KICK/CALL/ERR: the ring and the fd (or -1 with the NOFD bit).
 * The fd must be an eventfd, made non-blocking here; anything else is
 * refused (closed, that ring broken, @return -EINVAL with *@q set) before
 * the ring changes. @return 0, or -EPROTO (connection error, *@q NULL)
 */
static int fd_request(struct uvn_vu_backend *b, struct uvn_vu_msg *m, const char *what,
		      struct uvn_vu_queue **q, int *fd)
{
	*fd = -1;
	*q = vu_queue(b, (uint32_t)(m->p.u64 & VHOST_USER_VRING_IDX_MASK));
	if (!*q)
		return -EPROTO;
	if (m->p.u64 & VHOST_USER_VRING_NOFD_MASK)
		return 0;
	*fd = uvn_vu_msg_take_fd(m, 0);
	if (vu_peer_eventfd(*fd) == 0)
		return 0;
	close_fd(fd);
	return vu_queue_error(b, *q, &b->st.err_fd_type, "ring %u: the %s fd is not an eventfd",
			      (*q)->idx, what);
}

int vu_h_SET_VRING_KICK(struct uvn_vu_backend *b, struct uvn_vu_msg *m, struct uvn_vu_msg *reply)
{
	struct uvn_vu_queue *q;
	int fd, ret;

	(void)reply;
	ret = fd_request(b, m, "kick", &q, &fd);
	if (ret)
		return ret;
	if (!q->num || !q->addr_set) {
		close_fd(&fd);
		return vu_queue_error(b, q, &b->st.err_order, "ring %u: SET_VRING_KICK before %s",
				      q->idx, !q->num ? "SET_VRING_NUM" : "SET_VRING_ADDR");
	}
	vu_queue_pause(b, q);
	close_fd(&q->kick_fd);
	q->kick_fd = fd;
	q->started = true; /* the kick fd starts the ring */
	if (vu_queue_translate(b, q))
		return vu_queue_error(b, q, &b->st.err_ring,
				      "ring %u: size %u does not fit its addresses in guest memory",
				      q->idx, q->num);
	vu_queue_update(b, q);
	return 0;
}

int vu_h_SET_VRING_CALL(struct uvn_vu_backend *b, struct uvn_vu_msg *m, struct uvn_vu_msg *reply)
{
	struct uvn_vu_queue *q;
	int fd, ret;

	(void)reply;
	/* virtio-user sends this before SET_FEATURES: nothing else is needed. */
	ret = fd_request(b, m, "call", &q, &fd);
	if (ret)
		return ret;
	vu_queue_pause(b, q);
	close_fd(&q->call_fd);
	q->call_fd = fd;
	vu_queue_update(b, q);
	return 0;
}

int vu_h_SET_VRING_ERR(struct uvn_vu_backend *b, struct uvn_vu_msg *m, struct uvn_vu_msg *reply)
{
	struct uvn_vu_queue *q;
	int fd, ret;

	(void)reply;
	ret = fd_request(b, m, "error", &q, &fd);
	if (ret)
		return ret;
	close_fd(&q->err_fd);
	q->err_fd = fd;
	return 0;
}

int vu_h_SET_VRING_ENABLE(struct uvn_vu_backend *b, struct uvn_vu_msg *m, struct uvn_vu_msg *reply)
{
	struct uvn_vu_queue *q = vu_queue(b, m->p.state.index);

	(void)reply;
	if (!q)
		return -EPROTO;
	if (m->p.state.num > 1)
		return vu_queue_error(b, q, &b->st.err_ring, "ring %u: SET_VRING_ENABLE %u", q->idx,
				      m->p.state.num);
	q->enabled = m->p.state.num;
	vu_queue_update(b, q);
	return 0;
}
