/* SPDX-License-Identifier: MIT */
/*
 * Dirty-page logging for live migration. The frontend shares a bitmap
 * (SET_LOG_BASE, an fd with LOG_SHMFD): bit n stands for guest-physical
 * page n (4 KB). While LOG_ALL is set every device write into guest memory
 * sets its pages' bits with an atomic OR (the frontend clears bits
 * concurrently), and rings with VHOST_VRING_F_LOG log their used ring at
 * log_guest_addr.
 */
#include <errno.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

void vu_log_release(struct uvn_vu_dirty_log *log)
{
	uvn_mem_unmap_guarded(log->map, log->map_len);
	log->map = NULL;
	log->bits = NULL;
	log->size = 0;
}

static int map_log(struct uvn_vu_backend *b, const struct uvn_vu_log *l, int fd)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), off, delta, len;
	struct stat st;
	void *p;
	int ret;

	if (l->mmap_size == 0 || l->mmap_offset + l->mmap_size < l->mmap_offset)
		return vu_conn_error(b, &b->st.err_log, "dirty log: size 0x%llx offset 0x%llx invalid",
				     (unsigned long long)l->mmap_size,
				     (unsigned long long)l->mmap_offset);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    l->mmap_offset + l->mmap_size > (uint64_t)st.st_size)
		return vu_conn_error(b, &b->st.err_log,
				     "dirty log: the fd is not a file of at least offset + size bytes");
	off = l->mmap_offset & ~(page - 1);
	delta = l->mmap_offset - off;
	len = (delta + l->mmap_size + page - 1) & ~(page - 1);
	if (len > SIZE_MAX || !vu_map_fits(b, VU_MAP_LOG, len))
		return vu_conn_error(b, &b->st.err_log,
				     "dirty log of 0x%llx bytes: more than the session may map (0x%llx)",
				     (unsigned long long)l->mmap_size, (unsigned long long)b->max_mem);
	/* Guarded: the frontend may shrink the log's file later. */
	ret = uvn_mem_map_guarded(fd, off, (size_t)len, &b->guard, &p);
	/* Without the log a migration would silently lose our writes: drop. */
	if (ret)
		return vu_conn_error(b, &b->st.err_log, "dirty log: cannot map it shared and writable");
	vu_pause_all(b);
	vu_log_release(&b->log);
	b->log.map = p;
	b->log.map_len = (size_t)len;
	b->log.bits = (uint8_t *)p + delta;
	b->log.size = l->mmap_size;
	vu_resume_all(b);
	return 0;
}

int vu_h_SET_LOG_BASE(struct uvn_vu_backend *b, struct uvn_vu_msg *m, struct uvn_vu_msg *reply)
{
	int fd = uvn_vu_msg_take_fd(m, 0);
	int ret = map_log(b, &m->p.log, fd);

	close(fd);
	/* With LOG_SHMFD the frontend waits for this reply; 0 = done. */
	reply->hdr.size = sizeof(uint64_t);
	reply->p.u64 = ret ? 1 : 0;
	return ret;
}

int vu_h_SET_LOG_FD(struct uvn_vu_backend *b, struct uvn_vu_msg *m, struct uvn_vu_msg *reply)
{
	int fd = uvn_vu_msg_take_fd(m, 0);

	(void)reply;
	/* Written on the data path after logging: an eventfd, non-blocking. */
	if (vu_peer_eventfd(fd)) {
		close(fd);
		return vu_req_error(b, &b->st.err_fd_type, "SET_LOG_FD: the fd is not an eventfd");
	}
	vu_pause_all(b);
	if (b->log.fd >= 0)
		close(b->log.fd);
	b->log.fd = fd;
	vu_resume_all(b);
	return 0;
}

static inline bool logging(const struct uvn_vu_backend *b)
{
	return b->log.bits && uvn_has_feature(b->features, VHOST_F_LOG_ALL);
}

static void mark(struct uvn_vu_dirty_log *log, uint64_t gpa, uint64_t len)
{
	uint64_t first = gpa / VHOST_LOG_PAGE, last;

	if (len == 0)
		return;
	last = gpa + (len - 1) < gpa ? UINT64_MAX / VHOST_LOG_PAGE : (gpa + len - 1) / VHOST_LOG_PAGE;
	for (uint64_t pg = first; pg <= last; pg++) {
		/* The frontend sized the log to cover its memory: past it there
		 * is nothing to mark. */
		if (pg / 8 >= log->size)
			return;
		/* Release: the data written before is visible no later than its bit. */
		atomic_fetch_or_explicit((_Atomic uint8_t *)&log->bits[pg / 8], (uint8_t)(1u << (pg % 8)),
					 memory_order_release);
	}
}

bool uvn_vu_backend_logging(const struct uvn_vu_backend *b)
{
	return logging(b);
}

void uvn_vu_log_write(struct uvn_vu_backend *b, const void *va, size_t len)
{
	const uint8_t *p = va;

	if (!logging(b))
		return;
	while (len) {
		uint64_t gpa, avail, n;

		if (uvn_mem_va_to_gpa(b->mem, p, &gpa, &avail))
			return;
		n = len < avail ? len : avail;
		mark(&b->log, gpa, n);
		p += n;
		len -= n;
	}
}

void uvn_vu_log_used(struct uvn_vu_backend *b, struct uvn_vu_queue *q)
{
	uint64_t one = 1;

	if (!logging(b) || !(q->addr.flags & (1u << VHOST_VRING_F_LOG)) || !q->desc)
		return;
	if (vu_packed(b)) {
		/* The device writes used descriptors into the descriptor ring. */
		uvn_vu_log_write(b, q->desc, 16 * (size_t)q->num);
		mark(&b->log, q->addr.log_guest_addr, 4);
	} else {
		mark(&b->log, q->addr.log_guest_addr, 4 + 8 * (uint64_t)q->num + 2);
	}
	/* Non-blocking (vu_peer_eventfd); best effort: the log itself is what matters. */
	if (b->log.fd >= 0 && write(b->log.fd, &one, sizeof(one)) != sizeof(one))
		return;
}
