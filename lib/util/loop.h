/* SPDX-License-Identifier: MIT */
/*
 * An epoll event loop for control-path work (sockets, timers, signals) and,
 * in event mode, for sleeping on kick eventfds. Handlers are embedded in
 * their owners; removing one while its event is pending in the current
 * round is safe.
 *
 * epoll watches the open file, not the number: a registration ends when
 * its owner removes it (uvn_loop_del, by a number that still names the
 * same file) or when the last copy of the file is closed. So remove before
 * closing, and register only an fd whose lifetime you own (dup() one a
 * peer or another layer may close or replace under you). A removal that
 * fails is logged and counted (uvn_loop_stats): the registration may live
 * on, and its events are dropped once the handler's fn is cleared.
 */
#ifndef UVN_UTIL_LOOP_H
#define UVN_UTIL_LOOP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>

struct uvn_loop;

struct uvn_handler {
	int fd;
	void (*fn)(struct uvn_handler *h, uint32_t events);
	void *ctx;
	/* For a loop owner that stops other threads around control work:
	 * this handler touches nothing they use, it may run beside them. */
	bool light;
};

/* What went wrong with registrations (each loop, since creation). */
struct uvn_loop_stats {
	uint64_t del_failed;  /* uvn_loop_del() whose EPOLL_CTL_DEL failed */
	uint64_t stray;       /* events dropped: their handler has no fn */
};

int uvn_loop_create(struct uvn_loop **out);
void uvn_loop_destroy(struct uvn_loop *l);

/* Watch @h->fd for @events (EPOLLIN...).
 * @return 0, -EINVAL (no fn or no fd: never registered), or -errno */
int uvn_loop_add(struct uvn_loop *l, struct uvn_handler *h, uint32_t events);
/* Stop watching @h (before closing its fd or freeing it). Events of the
 * current round for @h are forgotten even if the removal fails.
 * @return 0 (also for h->fd < 0: nothing registered), or -errno (EBADF:
 * the number was closed; ENOENT: it names another file now), logged and
 * counted */
int uvn_loop_del(struct uvn_loop *l, struct uvn_handler *h);
/* Stop watching @h, then close its fd (h->fd = -1); nothing if h->fd < 0.
 * The one way a handler's fd ends: its registration always goes first. */
void uvn_loop_close(struct uvn_loop *l, struct uvn_handler *h);
/* Copy the loop's counters (any thread: relaxed reads). */
void uvn_loop_stats(struct uvn_loop *l, struct uvn_loop_stats *st);

/* Wait up to @timeout_ms (0: poll, -1: forever) and run ready handlers. @return handlers run. */
int uvn_loop_run_once(struct uvn_loop *l, int timeout_ms);

/* The two halves of uvn_loop_run_once, for a caller that must do
 * something between learning that events are ready and handling them.
 * @return events ready (handled by the next uvn_loop_dispatch) */
int uvn_loop_wait(struct uvn_loop *l, int timeout_ms);
int uvn_loop_dispatch(struct uvn_loop *l);
/* After uvn_loop_wait(): are all ready events for light handlers? */
bool uvn_loop_ready_light(const struct uvn_loop *l);

/* A periodic (or one-shot if @period_ns is 0) timer on a timerfd; h->fd is set. */
int uvn_timer_start(struct uvn_loop *l, struct uvn_handler *h, uint64_t first_ns, uint64_t period_ns);
/* Stop the timer and close its fd (uvn_loop_close). */
void uvn_timer_stop(struct uvn_loop *l, struct uvn_handler *h);
/* Read a timer's expiration count (call from its handler). */
uint64_t uvn_timer_ack(struct uvn_handler *h);

#endif
