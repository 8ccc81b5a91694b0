/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "util/log.h"
#include "util/loop.h"

#define MAX_EVENTS 64

struct uvn_loop {
	int epfd;
	struct epoll_event ev[MAX_EVENTS];
	int nev, cur; /* the round being dispatched */
	_Atomic uint64_t del_failed, stray;
};

int uvn_loop_create(struct uvn_loop **out)
{
	struct uvn_loop *l = calloc(1, sizeof(*l));

	if (!l)
		return -ENOMEM;
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0) {
		int e = -errno;

		free(l);
		return e;
	}
	*out = l;
	return 0;
}

void uvn_loop_destroy(struct uvn_loop *l)
{
	if (!l)
		return;
	close(l->epfd);
	free(l);
}

int uvn_loop_add(struct uvn_loop *l, struct uvn_handler *h, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = h };

	/* A registration without a handler would be called as NULL. */
	if (!h->fn || h->fd < 0)
		return -EINVAL;
	return epoll_ctl(l->epfd, EPOLL_CTL_ADD, h->fd, &ev) ? -errno : 0;
}

int uvn_loop_del(struct uvn_loop *l, struct uvn_handler *h)
{
	int r = 0;

	if (h->fd >= 0 && epoll_ctl(l->epfd, EPOLL_CTL_DEL, h->fd, NULL)) {
		/* The registration may outlive this call (fd closed or its
		 * number reused before the removal): a bug in the caller. */
		r = -errno;
		atomic_fetch_add_explicit(&l->del_failed, 1, memory_order_relaxed);
		UVN_WARN("event loop: cannot stop watching fd %d: %s", h->fd, strerror(-r));
	}
	/* Forget events of this round that still point at it. */
	for (int i = l->cur; i < l->nev; i++)
		if (l->ev[i].data.ptr == h)
			l->ev[i].data.ptr = NULL;
	return r;
}

void uvn_loop_stats(struct uvn_loop *l, struct uvn_loop_stats *st)
{
	st->del_failed = atomic_load_explicit(&l->del_failed, memory_order_relaxed);
	st->stray = atomic_load_explicit(&l->stray, memory_order_relaxed);
}

int uvn_loop_wait(struct uvn_loop *l, int timeout_ms)
{
	int n = epoll_wait(l->epfd, l->ev, MAX_EVENTS, timeout_ms);

	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	l->nev = n;
	l->cur = 0;
	return n;
}

int uvn_loop_run_once(struct uvn_loop *l, int timeout_ms)
{
	int n = uvn_loop_wait(l, timeout_ms);

	return n <= 0 ? n : uvn_loop_dispatch(l);
}

bool uvn_loop_ready_light(const struct uvn_loop *l)
{
	for (int i = 0; i < l->nev; i++) {
		const struct uvn_handler *h = l->ev[i].data.ptr;

		if (h && !h->light)
			return false;
	}
	return true;
}

int uvn_loop_dispatch(struct uvn_loop *l)
{
	int ran = 0;

	for (l->cur = 0; l->cur < l->nev; l->cur++) {
		struct uvn_handler *h = l->ev[l->cur].data.ptr;

		if (!h)
			continue;
		if (!h->fn) { /* a registration that outlived its handler */
			atomic_fetch_add_explicit(&l->stray, 1, memory_order_relaxed);
			continue;
		}
		h->fn(h, l->ev[l->cur].events);
		ran++;
	}
	l->nev = 0;
	l->cur = 0;
	return ran;
}

int uvn_timer_start(struct uvn_loop *l, struct uvn_handler *h, uint64_t first_ns, uint64_t period_ns)
{
	struct itimerspec its = {
		.it_value = { (time_t)(first_ns / 1000000000u), (long)(first_ns % 1000000000u) },
		.it_interval = { (time_t)(period_ns / 1000000000u), (long)(period_ns % 1000000000u) },
	};
	int r;

	if (!first_ns)
		its.it_value.tv_nsec = 1; /* zero would disarm */
	h->fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (h->fd < 0)
		return -errno;
	if (timerfd_settime(h->fd, 0, &its, NULL) || (r = uvn_loop_add(l, h, EPOLLIN))) {
		r = -errno;
		close(h->fd);
		h->fd = -1;
		return r;
	}
	return 0;
}

void uvn_loop_close(struct uvn_loop *l, struct uvn_handler *h)
{
	if (h->fd < 0)
		return;
	uvn_loop_del(l, h);
	close(h->fd);
	h->fd = -1;
}

void uvn_timer_stop(struct uvn_loop *l, struct uvn_handler *h)
{
	uvn_loop_close(l, h);
}

uint64_t uvn_timer_ack(struct uvn_handler *h)
{
	uint64_t n = 0;

	if (read(h->fd, &n, sizeof(n)) != sizeof(n))
		return 0;
	return n;
}
