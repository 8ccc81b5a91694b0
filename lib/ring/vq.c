/* SPDX-License-Identifier: MIT */
/*
 * Queue creation, layout, errors, statistics, and the dispatch from the
 * public API to the split or packed half.
 */
#include <errno.h>
#include <stdlib.h>

#include "inflight.h"
#include "util/abi.h"
#include "vq.h"

#define CACHE_LINE 64

/* By slot (UVN_VQ_ERR_SLOT()); OK is slot 0. */
#define E(e) [UVN_VQ_ERR_SLOT(e)]
static const char *const errstr[UVN_VQ_E__COUNT] = {
	[0] = "ok",
	E(UVN_VQ_E_HEAD_RANGE) = "head index out of range",
	E(UVN_VQ_E_NEXT_RANGE) = "next index out of range",
	E(UVN_VQ_E_LOOP) = "descriptor chain longer than the ring (loop)",
	E(UVN_VQ_E_INDIRECT_LEN) = "indirect table length invalid",
	E(UVN_VQ_E_INDIRECT_MAP) = "indirect table not in mapped memory",
	E(UVN_VQ_E_INDIRECT_NESTED) = "nested indirect descriptor",
	E(UVN_VQ_E_INDIRECT_NEXT) = "INDIRECT together with NEXT",
	E(UVN_VQ_E_WRITE_ORDER) = "readable descriptor after a writable one",
	E(UVN_VQ_E_UNMAPPED) = "buffer not in mapped memory",
	E(UVN_VQ_E_LEN_OVERFLOW) = "chain length overflows 32 bits",
	E(UVN_VQ_E_ZERO_LEN) = "zero-length descriptor",
	E(UVN_VQ_E_AVAIL_IDX) = "avail index moved by more than the queue size",
	E(UVN_VQ_E_IOV_FULL) = "chain needs more iovecs than the caller's array holds",
	E(UVN_VQ_E_INDIRECT_FEATURE) = "indirect descriptor without INDIRECT_DESC",
	E(UVN_VQ_E_USED_ID) = "used id not in flight",
	E(UVN_VQ_E_USED_LEN) = "used length larger than the buffer",
	E(UVN_VQ_E_USED_IDX) = "used index moved past the buffers in flight",
	E(UVN_VQ_E_OVERRUN) = "more ring slots available than the ring has",
	E(UVN_VQ_E_BASE) = "packed ring not at the base the frontend gave (backend restarted?)",
	E(UVN_VQ_E_CHAIN_LONG) = "chain of more buffers than the device takes",
	E(UVN_VQ_E_INVAL) = "invalid argument",
	E(UVN_VQ_E_NOSPC) = "no free descriptors",
	E(UVN_VQ_E_NOMEM) = "out of memory",
};

#undef E

const char *uvn_vq_strerror(int err)
{
	if (err < 0)
		err = -err;
	if (err == UVN_VQ_OK)
		return errstr[0];
	if (err <= UVN_VQ_ERR_BASE || err >= UVN_VQ_E__END)
		return "unknown virtqueue error";
	return errstr[UVN_VQ_ERR_SLOT(err)];
}

#define STAT(f) { #f, offsetof(struct uvn_vq_stats, f) }
#define ERRSTAT(e, n) \
	{ "err_" n, offsetof(struct uvn_vq_stats, err) + UVN_VQ_ERR_SLOT(e) * sizeof(uint64_t) }
const struct uvn_stat_desc uvn_vq_stats_desc[] = {
	STAT(bufs),
	STAT(used),
	STAT(indirect),
	STAT(notify),
	STAT(notify_suppressed),
	ERRSTAT(UVN_VQ_E_HEAD_RANGE, "head_range"),
	ERRSTAT(UVN_VQ_E_NEXT_RANGE, "next_range"),
	ERRSTAT(UVN_VQ_E_LOOP, "loop"),
	ERRSTAT(UVN_VQ_E_INDIRECT_LEN, "indirect_len"),
	ERRSTAT(UVN_VQ_E_INDIRECT_MAP, "indirect_map"),
	ERRSTAT(UVN_VQ_E_INDIRECT_NESTED, "indirect_nested"),
	ERRSTAT(UVN_VQ_E_INDIRECT_NEXT, "indirect_next"),
	ERRSTAT(UVN_VQ_E_WRITE_ORDER, "write_order"),
	ERRSTAT(UVN_VQ_E_UNMAPPED, "unmapped"),
	ERRSTAT(UVN_VQ_E_LEN_OVERFLOW, "len_overflow"),
	ERRSTAT(UVN_VQ_E_ZERO_LEN, "zero_len"),
	ERRSTAT(UVN_VQ_E_AVAIL_IDX, "avail_idx"),
	ERRSTAT(UVN_VQ_E_INDIRECT_FEATURE, "indirect_feature"),
	ERRSTAT(UVN_VQ_E_USED_ID, "used_id"),
	ERRSTAT(UVN_VQ_E_USED_LEN, "used_len"),
	ERRSTAT(UVN_VQ_E_USED_IDX, "used_idx"),
	ERRSTAT(UVN_VQ_E_OVERRUN, "overrun"),
	ERRSTAT(UVN_VQ_E_BASE, "base"),
	ERRSTAT(UVN_VQ_E_CHAIN_LONG, "chain_long"),
	{ NULL, 0 },
};

static size_t align_up(size_t v, size_t a)
{
	return (v + a - 1) & ~(a - 1);
}

int uvn_vq_layout(bool packed, unsigned num, struct uvn_vq_layout *out)
{
	if (num == 0 || num > UVN_VQ_MAX_SIZE)
		return -UVN_VQ_E_INVAL;
	out->desc = 0;
	if (packed) {
		/* The two event areas on their own cache lines: each side writes one. */
		out->driver = align_up(sizeof(struct vring_packed_desc) * num, CACHE_LINE);
		out->device = out->driver + CACHE_LINE;
		out->size = out->device + CACHE_LINE;
		return 0;
	}
	if (num & (num - 1))
		return -UVN_VQ_E_INVAL;
	out->driver = sizeof(struct vring_desc) * num;
	/* avail: flags, idx, ring[num], used_event */
	size_t avail_end = out->driver + sizeof(uint16_t) * (3 + num);
	/* The used ring only needs 4-byte alignment; a cache line keeps it
	 * away from the avail ring the driver writes. */
	out->device = align_up(avail_end, CACHE_LINE);
	/* used: flags, idx, ring[num], avail_event */
	out->size = out->device + sizeof(uint16_t) * 3 + sizeof(struct vring_used_elem) * num;
	return 0;
}

int uvn_vq_drv_fail(struct uvn_vq_drv *vq, int code)
{
	if (!vq->err) {
		vq->err = -code;
		uvn_stat_inc(&vq->st.err[UVN_VQ_ERR_SLOT(code)]);
	}
	return vq->err;
}

int uvn_vq_dev_fail(struct uvn_vq_dev *vq, int code)
{
	if (!vq->err) {
		vq->err = -code;
		uvn_stat_inc(&vq->st.err[UVN_VQ_ERR_SLOT(code)]);
	}
	return vq->err;
}

/* ---------------------------------------------------------------- driver */

int uvn_vq_drv_create(const struct uvn_vq_drv_cfg *cfg, struct uvn_vq_drv **out)
{
	bool packed = uvn_has_feature(cfg->features, VIRTIO_F_RING_PACKED);
	struct uvn_vq_layout lay;
	struct uvn_vq_drv *vq;
	int ret;

	if (!cfg->ring || ((uintptr_t)cfg->ring & 15) || !UVN_RESERVED_ZERO(cfg))
		return -UVN_VQ_E_INVAL;
	ret = uvn_vq_layout(packed, cfg->num, &lay);
	if (ret)
		return ret;
	vq = calloc(1, sizeof(*vq));
	if (!vq)
		return -UVN_VQ_E_NOMEM;
	vq->packed = packed;
	vq->num = (uint16_t)cfg->num; /* 32768 fits */
	vq->event_idx = uvn_has_feature(cfg->features, VIRTIO_RING_F_EVENT_IDX);
	vq->in_order = uvn_has_feature(cfg->features, VIRTIO_F_IN_ORDER);
	vq->indirect = uvn_has_feature(cfg->features, VIRTIO_RING_F_INDIRECT_DESC) &&
		       cfg->indirect_alloc && cfg->indirect_free;
	vq->indirect_alloc = cfg->indirect_alloc;
	vq->indirect_free = cfg->indirect_free;
	vq->indirect_ctx = cfg->indirect_ctx;
	vq->state = calloc(cfg->num, sizeof(*vq->state));
	vq->next = calloc(cfg->num, sizeof(*vq->next));
	vq->order = calloc(cfg->num, sizeof(*vq->order));
	ret = -UVN_VQ_E_NOMEM;
	if (!vq->state || !vq->next || !vq->order)
		goto fail;
	memset(cfg->ring, 0, lay.size);
	ret = packed ? uvn_packed_drv_init(vq, cfg->ring) : uvn_split_drv_init(vq, cfg->ring);
	if (ret)
		goto fail;
	*out = vq;
	return 0;
fail:
	uvn_vq_drv_destroy(vq);
	return ret;
}

void uvn_vq_drv_destroy(struct uvn_vq_drv *vq)
{
	if (!vq)
		return;
	if (vq->state && vq->indirect_free) {
		for (unsigned i = 0; i < vq->num; i++)
			uvn_drv_release_indirect(vq, &vq->state[i]);
	}
	if (vq->packed) {
		free(vq->pk.pend_pos);
		free(vq->pk.pend_flags);
	}
	free(vq->state);
	free(vq->next);
	free(vq->order);
	free(vq);
}

/* Segments the device would reject, or a chain it could not describe. */
static bool bad_chain(const struct uvn_vq_drv *vq, const struct uvn_sg *sg, unsigned nout,
		      unsigned nin)
{
	uint64_t total = 0;

	if (nout > vq->num || nin > vq->num || nout + nin == 0 || nout + nin > vq->num)
		return true;
	for (unsigned k = 0; k < nout + nin; k++) {
		if (sg[k].len == 0)
			return true;
		total += sg[k].len;
	}
	/* Spec: no chain longer than 2^32 bytes in total (we say 2^32 - 1,
	 * as the device's 32-bit lengths do). */
	return total > UINT32_MAX;
}

int uvn_vq_drv_add(struct uvn_vq_drv *vq, const struct uvn_sg *sg, unsigned nout, unsigned nin,
		   void *token, unsigned flags)
{
	unsigned total = nout + nin;
	bool indirect;

	if (UVN_UNLIKELY(vq->err))
		return vq->err;
	if (UVN_UNLIKELY(!token || !sg || bad_chain(vq, sg, nout, nin)))
		return -UVN_VQ_E_INVAL;
	indirect = vq->indirect && total > 1 && !(flags & UVN_VQ_ADD_NO_INDIRECT);
	return vq->packed ? uvn_packed_drv_add(vq, sg, nout, nin, token, indirect)
			  : uvn_split_drv_add(vq, sg, nout, nin, token, indirect);
}

int uvn_vq_drv_add_one(struct uvn_vq_drv *vq, uint64_t addr, uint32_t len, bool writable,
		       void *token)
{
	if (UVN_UNLIKELY(vq->err))
		return vq->err;
	if (UVN_UNLIKELY(!token || !len))
		return -UVN_VQ_E_INVAL;
	if (vq->packed) {
		struct uvn_sg sg = { addr, len };

		return uvn_packed_drv_add(vq, &sg, writable ? 0 : 1, writable ? 1 : 0, token, false);
	}
	return uvn_split_drv_add_one(vq, addr, len, writable, token);
}

int uvn_vq_drv_add_in_n(struct uvn_vq_drv *vq, const uint64_t *addr, void *const *tokens,
			uint32_t len, unsigned n)
{
	unsigned i;

	if (UVN_UNLIKELY(vq->err))
		return vq->err;
	if (UVN_UNLIKELY(!len))
		return -UVN_VQ_E_INVAL;
	for (i = 0; i < n; i++)
		if (UVN_UNLIKELY(!tokens[i]))
			return -UVN_VQ_E_INVAL;
	if (!vq->packed)
		return (int)uvn_split_drv_add_in_n(vq, addr, tokens, len, n);
	for (i = 0; i < n; i++) {
		struct uvn_sg sg = { addr[i], len };

		if (uvn_packed_drv_add(vq, &sg, 0, 1, tokens[i], false))
			break;
	}
	return (int)i;
}

bool uvn_vq_drv_kick_prepare(struct uvn_vq_drv *vq)
{
	if (UVN_UNLIKELY(vq->err))
		return false;
	return vq->packed ? uvn_packed_drv_kick_prepare(vq) : uvn_split_drv_kick_prepare(vq);
}

void uvn_vq_drv_publish(struct uvn_vq_drv *vq)
{
	if (UVN_UNLIKELY(vq->err))
		return;
	if (vq->packed)
		uvn_packed_drv_publish(vq);
	else
		uvn_split_drv_publish(vq);
}

int uvn_vq_drv_get_used(struct uvn_vq_drv *vq, struct uvn_vq_done *out, unsigned max)
{
	if (UVN_UNLIKELY(vq->err))
		return vq->err;
	return vq->packed ? uvn_packed_drv_get_used(vq, out, max)
			  : uvn_split_drv_get_used(vq, out, max);
}

int uvn_vq_drv_reclaim_entries(struct uvn_vq_drv *vq, void **tokens, unsigned max)
{
	struct uvn_vq_done done[32];
	int n = uvn_vq_drv_get_used(vq, done, max < 32 ? max : 32);

	for (int i = 0; i < n; i++)
		tokens[i] = done[i].token;
	return n;
}

int uvn_vq_drv_reclaim(struct uvn_vq_drv *vq, void **tokens, unsigned max)
{
	if (UVN_UNLIKELY(vq->err))
		return vq->err;
	if (!vq->packed && vq->in_order)
		return uvn_split_drv_reclaim_in_order(vq, tokens, max);
	return uvn_vq_drv_reclaim_entries(vq, tokens, max);
}

bool uvn_vq_drv_has_used(struct uvn_vq_drv *vq)
{
	if (UVN_UNLIKELY(vq->err))
		return false;
	return vq->packed ? uvn_packed_drv_has_used(vq) : uvn_split_drv_has_used(vq);
}

void uvn_vq_drv_disable_cb(struct uvn_vq_drv *vq)
{
	if (UVN_UNLIKELY(vq->err))
		return;
	if (vq->packed)
		uvn_packed_drv_disable_cb(vq);
	else
		uvn_split_drv_disable_cb(vq);
}

bool uvn_vq_drv_enable_cb(struct uvn_vq_drv *vq)
{
	if (UVN_UNLIKELY(vq->err))
		return true;
	return vq->packed ? uvn_packed_drv_enable_cb(vq, false) : uvn_split_drv_enable_cb(vq, false);
}

bool uvn_vq_drv_enable_cb_delayed(struct uvn_vq_drv *vq)
{
	if (UVN_UNLIKELY(vq->err))
		return true;
	return vq->packed ? uvn_packed_drv_enable_cb(vq, true) : uvn_split_drv_enable_cb(vq, true);
}

unsigned uvn_vq_drv_num_free(const struct uvn_vq_drv *vq)
{
	return vq->num_free;
}

void *uvn_vq_drv_detach_unused(struct uvn_vq_drv *vq)
{
	return vq->packed ? uvn_packed_drv_detach_unused(vq) : uvn_split_drv_detach_unused(vq);
}

int uvn_vq_drv_error(const struct uvn_vq_drv *vq)
{
	return vq->err;
}

const struct uvn_vq_stats *uvn_vq_drv_stats(const struct uvn_vq_drv *vq)
{
	return &vq->st;
}

uint16_t uvn_vq_drv_avail_state(const struct uvn_vq_drv *vq)
{
	if (vq->packed)
		return (uint16_t)(vq->pk.next_avail | (vq->pk.avail_wrap << 15));
	return vq->split.avail_idx;
}

/* ---------------------------------------------------------------- device */

static bool aligned(const void *p, uintptr_t a)
{
	return ((uintptr_t)p & (a - 1)) == 0;
}

/*
 * The spec's minimum alignments (desc 16; split avail 2, used 4; packed
 * event areas 4). A frontend may send anything; our atomic 16-bit loads
 * and 64-bit descriptor loads need them.
 */
static bool ring_aligned(const struct uvn_vq_dev_cfg *cfg, bool packed)
{
	return aligned(cfg->desc, 16) && aligned(cfg->driver, packed ? 4 : 2) &&
	       aligned(cfg->device, 4);
}

int uvn_vq_dev_create(const struct uvn_vq_dev_cfg *cfg, struct uvn_vq_dev **out)
{
	bool packed = uvn_has_feature(cfg->features, VIRTIO_F_RING_PACKED);
	struct uvn_vq_layout lay;
	struct uvn_vq_dev *vq;
	int ret;

	ret = uvn_vq_layout(packed, cfg->num, &lay);
	if (ret)
		return ret;
	if (!cfg->desc || !cfg->driver || !cfg->device || !cfg->xlate || !UVN_RESERVED_ZERO(cfg))
		return -UVN_VQ_E_INVAL;
	if (!ring_aligned(cfg, packed))
		return -UVN_VQ_E_INVAL;
	if (packed && (cfg->avail_idx >= cfg->num || cfg->used_idx >= cfg->num))
		return -UVN_VQ_E_INVAL;
	vq = calloc(1, sizeof(*vq));
	if (!vq)
		return -UVN_VQ_E_NOMEM;
	vq->packed = packed;
	vq->num = (uint16_t)cfg->num;
	vq->event_idx = uvn_has_feature(cfg->features, VIRTIO_RING_F_EVENT_IDX);
	vq->in_order = uvn_has_feature(cfg->features, VIRTIO_F_IN_ORDER);
	vq->indirect_ok = uvn_has_feature(cfg->features, VIRTIO_RING_F_INDIRECT_DESC);
	vq->xlate = cfg->xlate;
	vq->xlate_ctx = cfg->xlate_ctx;
	if (packed)
		uvn_packed_dev_init(vq, cfg);
	else
		uvn_split_dev_init(vq, cfg);
	*out = vq;
	return 0;
}

void uvn_vq_dev_destroy(struct uvn_vq_dev *vq)
{
	if (!vq)
		return;
	uvn_vq_dev_inflight_detach(vq);
	free(vq);
}

void uvn_vq_dev_set_addrs(struct uvn_vq_dev *vq, void *desc, void *driver, void *device,
			  void *xlate_ctx)
{
	vq->xlate_ctx = xlate_ctx;
	if (vq->packed) {
		vq->pk.desc = desc;
		vq->pk.driver = driver;
		vq->pk.device = device;
	} else {
		vq->split.desc = desc;
		vq->split.avail = driver;
		vq->split.used = device;
	}
}

int uvn_vq_dev_avail(struct uvn_vq_dev *vq)
{
	if (UVN_UNLIKELY(vq->err))
		return vq->err;
	return vq->packed ? uvn_packed_dev_avail(vq) : uvn_split_dev_avail(vq);
}

/* Ring slots a chain occupies until its used entry is published. */
static uint16_t chain_slots(const struct uvn_vq_dev *vq, const struct uvn_vq_chain *ch)
{
	return vq->packed ? ch->ndesc : 1;
}

int uvn_vq_dev_pop(struct uvn_vq_dev *vq, struct uvn_vq_chain *ch, struct iovec *iov,
		   unsigned iov_max)
{
	if (UVN_UNLIKELY(vq->err))
		return vq->err;
	if (!iov)
		iov_max = 0; /* a count-only pop (single-buffer paths store first) */
	return vq->packed ? uvn_packed_dev_pop(vq, ch, iov, iov_max)
			  : uvn_split_dev_pop(vq, ch, iov, iov_max);
}

void uvn_vq_dev_unpop(struct uvn_vq_dev *vq, const struct uvn_vq_chain *ch)
{
	if (UVN_UNLIKELY(vq->err))
		return;
	uvn_stat_set(&vq->st.bufs, vq->st.bufs - 1);
	vq->held = (uint16_t)(vq->held - chain_slots(vq, ch));
	if (!vq->packed) {
		/* One popped again after a restart stays marked, first in line. */
		if (vq->inflight && uvn_inflight_split_unpop(vq->inflight, (uint16_t)ch->id))
			return;
		vq->split.last_avail--;
		return;
	}
	/* Back over the chain's descriptors, flipping the wrap counter when
	 * crossing position 0. */
	if (vq->pk.last_avail >= ch->ndesc) {
		vq->pk.last_avail = (uint16_t)(vq->pk.last_avail - ch->ndesc);
	} else {
		vq->pk.last_avail = (uint16_t)(vq->pk.last_avail + vq->num - ch->ndesc);
		vq->pk.avail_wrap = !vq->pk.avail_wrap;
	}
}

void uvn_vq_dev_push(struct uvn_vq_dev *vq, const struct uvn_vq_chain *ch, uint32_t len)
{
	/* A broken queue's ring is not written any more. */
	if (UVN_UNLIKELY(vq->err))
		return;
	if (vq->packed)
		uvn_packed_dev_push(vq, ch, len);
	else
		uvn_split_dev_push(vq, ch, len);
}

void uvn_vq_dev_set_batch_used(struct uvn_vq_dev *vq, bool on)
{
	/* A batch in progress is closed (staged, not yet published) so that
	 * chains pushed afterwards get their own entries after it. */
	if (vq->batch_used && !on && !vq->err) {
		if (vq->packed)
			uvn_packed_dev_end_batch(vq);
		else
			uvn_split_dev_end_batch(vq);
	}
	vq->batch_used = on && vq->in_order;
}

bool uvn_vq_dev_flush(struct uvn_vq_dev *vq)
{
	if (UVN_UNLIKELY(vq->err))
		return false;
	/* What was pushed is the driver's again once published. */
	vq->held = (uint16_t)(vq->held - vq->pushed);
	vq->pushed = 0;
	return vq->packed ? uvn_packed_dev_flush(vq) : uvn_split_dev_flush(vq);
}

bool uvn_vq_dev_enable_notify(struct uvn_vq_dev *vq)
{
	if (UVN_UNLIKELY(vq->err))
		return true;
	return vq->packed ? uvn_packed_dev_enable_notify(vq) : uvn_split_dev_enable_notify(vq);
}

void uvn_vq_dev_disable_notify(struct uvn_vq_dev *vq)
{
	if (UVN_UNLIKELY(vq->err))
		return;
	if (vq->packed)
		uvn_packed_dev_disable_notify(vq);
	else
		uvn_split_dev_disable_notify(vq);
}

uint16_t uvn_vq_dev_avail_state(const struct uvn_vq_dev *vq)
{
	if (vq->packed)
		return (uint16_t)(vq->pk.last_avail | (vq->pk.avail_wrap << 15));
	return vq->split.last_avail;
}

uint16_t uvn_vq_dev_used_state(const struct uvn_vq_dev *vq)
{
	if (vq->packed)
		return (uint16_t)(vq->pk.used_pos | (vq->pk.used_wrap << 15));
	return vq->split.used_idx;
}

unsigned uvn_vq_dev_num(const struct uvn_vq_dev *vq)
{
	return vq->num;
}

int uvn_vq_dev_error(const struct uvn_vq_dev *vq)
{
	return vq->err;
}

const struct uvn_vq_stats *uvn_vq_dev_stats(const struct uvn_vq_dev *vq)
{
	return &vq->st;
}
