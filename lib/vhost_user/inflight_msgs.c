/* SPDX-License-Identifier: MIT */
/*
 * In-flight tracking requests (INFLIGHT_SHMFD). GET_INFLIGHT_FD: the
 * frontend gives the queue count and size; we create a sealed memfd of one
 * slice per queue (lib/ring/inflight.h), map it, and hand it over. The
 * frontend keeps it across our restarts and gives it back with
 * SET_INFLIGHT_FD to the next backend process, which maps it and lets
 * each ring recover from its slice when the ring starts (split and packed
 * rings alike; a packed ring's positions come from its slice then).
 *
 * The region is the frontend's to scribble on: its description is checked
 * like a memory region (size, offset, regular file, within the file, a
 * guarded mapping that survives the file shrinking), its contents when a
 * ring attaches. Either is a counted error that declines the request or
 * breaks that queue. The region changes only while no ring is started, so
 * no tracker ever points into a mapping being replaced.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"
#include "ring/inflight.h"
#include "util/log.h"

static bool any_started(const struct uvn_vu_backend *b)
{
	for (unsigned i = 0; i < b->queue_num; i++)
		if (b->q[i].started)
			return true;
	return false;
}

void vu_inflight_release(struct uvn_vu_backend *b)
{
	uvn_mem_region_unmap(&b->inflight.reg);
	b->inflight.num_queues = 0;
	b->inflight.queue_size = 0;
	b->inflight.slice = 0;
}

/* The description both requests carry. @return the region's size, or 0. */
static uint64_t described_size(const struct uvn_vu_backend *b, const struct uvn_vu_inflight *d)
{
	size_t slice = uvn_inflight_slice_size(d->queue_size);

	if (!slice || d->num_queues == 0 || d->num_queues > b->queue_num)
		return 0;
	return (uint64_t)slice * d->num_queues;
}

/* Checks common to both requests; @return 0 or the vu_req_error() result. */
static int check_request(struct uvn_vu_backend *b, const struct uvn_vu_inflight *d,
			 const char *what)
{
	if (!uvn_has_feature(b->proto, VHOST_USER_PROTOCOL_F_INFLIGHT_SHMFD))
		return vu_req_error(b, &b->st.err_feature, "%s without INFLIGHT_SHMFD", what);
	if (any_started(b))
		return vu_req_error(b, &b->st.err_order, "%s while rings are started", what);
	if (!described_size(b, d))
		return vu_req_error(b, &b->st.err_inflight,
				    "%s: %u queues of %u (we have %u queues, of at most %u)", what,
				    d->num_queues, d->queue_size, b->queue_num, UVN_VQ_MAX_SIZE);
	return 0;
}

/* Map [offset, offset + size) of @fd as the new region, replacing the old. */
static int install(struct uvn_vu_backend *b, const struct uvn_vu_inflight *d, int fd,
		   const char *what)
{
	struct uvn_mem_region_desc rd = { .size = d->mmap_size, .mmap_offset = d->mmap_offset };
	struct uvn_mem_region r;
	int ret;

	/* 64-byte slices hold 8-byte fields: keep them aligned. */
	if (d->mmap_offset & 63)
		return vu_req_error(b, &b->st.err_inflight, "%s: offset 0x%llx not 64-byte aligned",
				    what, (unsigned long long)d->mmap_offset);
	if (!vu_map_fits(b, VU_MAP_INFLIGHT, d->mmap_size))
		return vu_req_error(b, &b->st.err_inflight,
				    "%s of 0x%llx bytes: more than the session may map (0x%llx)", what,
				    (unsigned long long)d->mmap_size, (unsigned long long)b->max_mem);
	ret = uvn_mem_region_map_owned(&rd, fd, &b->guard, &r);
	if (ret)
		return vu_req_error(b, &b->st.err_inflight, "%s (size 0x%llx offset 0x%llx): %s", what,
				    (unsigned long long)d->mmap_size,
				    (unsigned long long)d->mmap_offset, uvn_mem_map_hint(ret));
	vu_inflight_release(b);
	b->inflight.reg = r;
	b->inflight.num_queues = d->num_queues;
	b->inflight.queue_size = d->queue_size;
	b->inflight.slice = uvn_inflight_slice_size(d->queue_size);
	return 0;
}

int vu_h_GET_INFLIGHT_FD(struct uvn_vu_backend *b, struct uvn_vu_msg *m, struct uvn_vu_msg *reply)
{
	struct uvn_vu_inflight d = m->p.inflight;
	int fd, ret;

	/* Always a description back; mmap_size 0 and no fd is "no region". */
	reply->hdr.size = sizeof(reply->p.inflight);
	reply->p.inflight = d;
	reply->p.inflight.mmap_size = 0;
	reply->p.inflight.mmap_offset = 0;
	ret = check_request(b, &d, "GET_INFLIGHT_FD");
	if (ret)
		return ret;
	d.mmap_size = described_size(b, &d);
	d.mmap_offset = 0;
	fd = memfd_create("uvnet-inflight", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return vu_req_error(b, &b->st.err_inflight, "GET_INFLIGHT_FD: memfd: %s",
				    strerror(errno));
	/* Sealed against resizing: whoever holds it next cannot make our
	 * mapping fault. Zero-filled, so every slice starts as version 0. */
	if (ftruncate(fd, (off_t)d.mmap_size) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		close(fd);
		return vu_req_error(b, &b->st.err_inflight, "GET_INFLIGHT_FD: %llu bytes: %s",
				    (unsigned long long)d.mmap_size, strerror(errno));
	}
	ret = install(b, &d, fd, "GET_INFLIGHT_FD");
	if (ret) {
		close(fd);
		return ret;
	}
	reply->p.inflight = d;
	reply->fds[0] = fd; /* closed by the dispatcher once sent */
	reply->nfds = 1;
	vu_log(b, UVN_LOG_DEBUG, "in-flight region: %u queues of %u, %llu bytes", d.num_queues,
	       d.queue_size, (unsigned long long)d.mmap_size);
	return 0;
}

int vu_h_SET_INFLIGHT_FD(struct uvn_vu_backend *b, struct uvn_vu_msg *m, struct uvn_vu_msg *reply)
{
	const struct uvn_vu_inflight *d = &m->p.inflight;
	int fd = uvn_vu_msg_take_fd(m, 0);
	int ret;

	(void)reply;
	ret = check_request(b, d, "SET_INFLIGHT_FD");
	if (!ret && d->mmap_size != described_size(b, d))
		ret = vu_req_error(b, &b->st.err_inflight,
				   "SET_INFLIGHT_FD: size 0x%llx is not %u slices for queues of %u",
				   (unsigned long long)d->mmap_size, d->num_queues, d->queue_size);
	if (!ret)
		ret = install(b, d, fd, "SET_INFLIGHT_FD");
	close(fd); /* the mapping holds the file */
	return ret;
}

bool vu_inflight_tracks(const struct uvn_vu_backend *b, const struct uvn_vu_queue *q)
{
	return b->inflight.reg.map && q->idx < b->inflight.num_queues;
}

int vu_inflight_attach(struct uvn_vu_backend *b, struct uvn_vu_queue *q)
{
	struct uvn_vu_inflight_map *im = &b->inflight;
	int ret;

	if (!vu_inflight_tracks(b, q))
		return 0;
	/* Split or packed: the slice's layout follows the ring's. */
	ret = uvn_vq_dev_inflight_attach(q->dev, im->reg.host + (size_t)q->idx * im->slice,
					 q->num <= im->queue_size ? im->slice : 0);
	if (ret)
		return vu_queue_error(b, q, &b->st.err_inflight, "ring %u (size %u): in-flight region: %s",
				      q->idx, q->num, q->num <= im->queue_size ?
				      uvn_inflight_strerror(ret) : "ring larger than the region's queues");
	if (uvn_vq_dev_inflight_pending(q->dev))
		vu_log(b, UVN_LOG_INFO, "ring %u: %u chains in flight before the restart, popped again",
		       q->idx, uvn_vq_dev_inflight_pending(q->dev));
	return 0;
}
