/* SPDX-License-Identifier: MIT */
/*
 * vhost-user frontend: the protocol's requests, each one message through
 * uvn_vu_fe_request() (frontend.c), whose reply is validated before this
 * file reads a byte of it.
 */
#include <errno.h>
#include <string.h>

#include "frontend_int.h"
#include "util/bits.h"
#include "util/log.h"

int uvn_vu_fe_set_owner(struct uvn_vu_fe *fe)
{
	struct uvn_vu_msg m;

	uvn_vu_msg_init(&m, VHOST_USER_SET_OWNER, VHOST_USER_VERSION, 0);
	return uvn_vu_fe_request(fe, &m, NULL);
}

int uvn_vu_fe_negotiate(struct uvn_vu_fe *fe, uint64_t proto_want, uint64_t *offered,
			unsigned *queue_pairs)
{
	uint64_t pf = 0, qn = 1;
	int r;

	r = uvn_vu_fe_get_u64(fe, VHOST_USER_GET_FEATURES, &fe->offered);
	if (r)
		return r;
	*offered = fe->offered;
	*queue_pairs = 1;
	if (!uvn_has_feature(fe->offered, VHOST_USER_F_PROTOCOL_FEATURES))
		return 0;
	r = uvn_vu_fe_get_u64(fe, VHOST_USER_GET_PROTOCOL_FEATURES, &pf);
	if (r)
		return r;
	pf &= proto_want;
	/* Acks are asked for only once the backend knows it must give them. */
	r = uvn_vu_fe_set_u64(fe, VHOST_USER_SET_PROTOCOL_FEATURES, pf);
	if (r)
		return r;
	fe->proto = pf;
	if (uvn_has_feature(pf, VHOST_USER_PROTOCOL_F_MQ)) {
		r = uvn_vu_fe_get_u64(fe, VHOST_USER_GET_QUEUE_NUM, &qn);
		if (r)
			return r;
		if (qn == 0 || qn > 0x8000)
			return vu_fe_fail(fe, -EPROTO, "GET_QUEUE_NUM says %llu queue pairs",
				       (unsigned long long)qn);
	}
	*queue_pairs = (unsigned)qn;
	return 0;
}

int uvn_vu_fe_set_features(struct uvn_vu_fe *fe, uint64_t features)
{
	int r;

	if (uvn_has_feature(fe->offered, VHOST_USER_F_PROTOCOL_FEATURES))
		features |= 1ull << VHOST_USER_F_PROTOCOL_FEATURES;
	if (features & ~fe->offered)
		return -EINVAL;
	r = uvn_vu_fe_set_u64(fe, VHOST_USER_SET_FEATURES, features);
	if (!r)
		fe->features = features;
	return r;
}

static void put_region(struct uvn_vu_region *out, const struct uvn_mem_region_desc *d)
{
	out->guest_phys_addr = d->gpa;
	out->memory_size = d->size;
	out->userspace_addr = d->uva;
	out->mmap_offset = d->mmap_offset;
}

int uvn_vu_fe_set_mem(struct uvn_vu_fe *fe, const struct uvn_mem_region_desc *regions,
		      const int *fds, unsigned n)
{
	struct uvn_vu_msg m;
	int r;

	if (n == 0)
		return -EINVAL;
	if (uvn_has_feature(fe->proto, VHOST_USER_PROTOCOL_F_CONFIGURE_MEM_SLOTS)) {
		uint64_t slots;

		r = uvn_vu_fe_get_u64(fe, VHOST_USER_GET_MAX_MEM_SLOTS, &slots);
		if (r)
			return r;
		if (slots < n)
			return -ENOSPC;
		for (unsigned i = 0; i < n; i++) {
			uvn_vu_msg_init(&m, VHOST_USER_ADD_MEM_REG, VHOST_USER_VERSION,
					sizeof(struct uvn_vu_mem_reg));
			put_region(&m.p.mem_reg.region, &regions[i]);
			m.fds[0] = fds[i];
			m.nfds = 1;
			r = uvn_vu_fe_request(fe, &m, NULL);
			if (r)
				return r;
		}
		return 0;
	}
	if (n > VHOST_MEMORY_BASELINE_NREGIONS)
		return -ENOSPC;
	uvn_vu_msg_init(&m, VHOST_USER_SET_MEM_TABLE, VHOST_USER_VERSION,
			(uint32_t)(UVN_VU_MEMORY_HDR_SIZE + n * sizeof(struct uvn_vu_region)));
	m.p.memory.nregions = n;
	for (unsigned i = 0; i < n; i++) {
		put_region(&m.p.memory.regions[i], &regions[i]);
		m.fds[i] = fds[i];
	}
	m.nfds = n;
	return uvn_vu_fe_request(fe, &m, NULL);
}

static int set_state(struct uvn_vu_fe *fe, uint32_t request, unsigned idx, unsigned num)
{
	struct uvn_vu_msg m;

	uvn_vu_msg_init(&m, request, VHOST_USER_VERSION, sizeof(struct vhost_vring_state));
	m.p.state.index = idx;
	m.p.state.num = num;
	return uvn_vu_fe_request(fe, &m, NULL);
}

int uvn_vu_fe_set_vring_num(struct uvn_vu_fe *fe, unsigned idx, unsigned num)
{
	return set_state(fe, VHOST_USER_SET_VRING_NUM, idx, num);
}

int uvn_vu_fe_set_vring_base(struct uvn_vu_fe *fe, unsigned idx, unsigned base)
{
	return set_state(fe, VHOST_USER_SET_VRING_BASE, idx, base);
}

int uvn_vu_fe_set_vring_enable(struct uvn_vu_fe *fe, unsigned idx, bool on)
{
	if (!uvn_has_feature(fe->features, VHOST_USER_F_PROTOCOL_FEATURES))
		return 0;
	return set_state(fe, VHOST_USER_SET_VRING_ENABLE, idx, on);
}

int uvn_vu_fe_set_vring_addr(struct uvn_vu_fe *fe, unsigned idx, uint64_t desc, uint64_t avail,
			     uint64_t used)
{
	struct uvn_vu_msg m;

	uvn_vu_msg_init(&m, VHOST_USER_SET_VRING_ADDR, VHOST_USER_VERSION,
			sizeof(struct vhost_vring_addr));
	m.p.addr.index = idx;
	m.p.addr.desc_user_addr = desc;
	m.p.addr.avail_user_addr = avail;
	m.p.addr.used_user_addr = used;
	/* Dirty logging is never offered to be used: no log address. */
	m.p.addr.log_guest_addr = 0;
	m.p.addr.flags = 0;
	return uvn_vu_fe_request(fe, &m, NULL);
}

static int set_vring_fd(struct uvn_vu_fe *fe, uint32_t request, unsigned idx, int fd)
{
	struct uvn_vu_msg m;

	if (idx > VHOST_USER_VRING_IDX_MASK)
		return -EINVAL;
	uvn_vu_msg_init(&m, request, VHOST_USER_VERSION, sizeof(uint64_t));
	m.p.u64 = idx;
	if (fd < 0) {
		m.p.u64 |= VHOST_USER_VRING_NOFD_MASK;
	} else {
		m.fds[0] = fd;
		m.nfds = 1;
	}
	return uvn_vu_fe_request(fe, &m, NULL);
}

int uvn_vu_fe_set_vring_kick(struct uvn_vu_fe *fe, unsigned idx, int fd)
{
	return set_vring_fd(fe, VHOST_USER_SET_VRING_KICK, idx, fd);
}

int uvn_vu_fe_set_vring_call(struct uvn_vu_fe *fe, unsigned idx, int fd)
{
	return set_vring_fd(fe, VHOST_USER_SET_VRING_CALL, idx, fd);
}

int uvn_vu_fe_get_vring_base(struct uvn_vu_fe *fe, unsigned idx, uint32_t *base)
{
	struct uvn_vu_msg m, reply;
	int r;

	uvn_vu_msg_init(&m, VHOST_USER_GET_VRING_BASE, VHOST_USER_VERSION,
			sizeof(struct vhost_vring_state));
	m.p.state.index = idx;
	r = uvn_vu_fe_request(fe, &m, &reply);
	if (r)
		return r;
	if (reply.p.state.index != idx) {
		fe->st.err_reply++;
		return vu_fe_fail(fe, -EPROTO, "GET_VRING_BASE for ring %u answered for ring %u", idx,
			       reply.p.state.index);
	}
	*base = reply.p.state.num;
	return 0;
}

int uvn_vu_fe_get_inflight(struct uvn_vu_fe *fe, unsigned num_queues, unsigned queue_size,
			   struct uvn_vu_inflight *out, int *fd)
{
	struct uvn_vu_msg m, reply;
	int r;

	*fd = -1;
	if (!uvn_has_feature(fe->proto, VHOST_USER_PROTOCOL_F_INFLIGHT_SHMFD))
		return -ENOTSUP;
	if (num_queues == 0 || num_queues > UINT16_MAX || queue_size == 0 || queue_size > UINT16_MAX)
		return -EINVAL;
	uvn_vu_msg_init(&m, VHOST_USER_GET_INFLIGHT_FD, VHOST_USER_VERSION,
			sizeof(struct uvn_vu_inflight));
	m.p.inflight = (struct uvn_vu_inflight){ .num_queues = (uint16_t)num_queues,
						 .queue_size = (uint16_t)queue_size };
	r = uvn_vu_fe_request(fe, &m, &reply);
	if (r)
		return r;
	/* The reply check let an fd through only with a size: no size, no region. */
	if (!reply.p.inflight.mmap_size)
		return -EIO;
	*out = reply.p.inflight;
	*fd = reply.fds[0];
	return 0;
}

int uvn_vu_fe_set_inflight(struct uvn_vu_fe *fe, const struct uvn_vu_inflight *desc, int fd)
{
	struct uvn_vu_msg m;

	if (!uvn_has_feature(fe->proto, VHOST_USER_PROTOCOL_F_INFLIGHT_SHMFD))
		return -ENOTSUP;
	if (fd < 0)
		return -EBADF;
	uvn_vu_msg_init(&m, VHOST_USER_SET_INFLIGHT_FD, VHOST_USER_VERSION,
			sizeof(struct uvn_vu_inflight));
	m.p.inflight = *desc;
	m.fds[0] = fd;
	m.nfds = 1;
	return uvn_vu_fe_request(fe, &m, NULL);
}

int uvn_vu_fe_set_status(struct uvn_vu_fe *fe, uint8_t status)
{
	uint64_t got;
	int r;

	if (!uvn_has_feature(fe->proto, VHOST_USER_PROTOCOL_F_STATUS))
		return 0;
	r = uvn_vu_fe_set_u64(fe, VHOST_USER_SET_STATUS, status);
	if (r)
		return r;
	r = uvn_vu_fe_get_u64(fe, VHOST_USER_GET_STATUS, &got);
	if (r)
		return r;
	/* The device clears FEATURES_OK when it refuses the features. */
	if ((got & status) != status)
		return -EIO;
	return 0;
}
