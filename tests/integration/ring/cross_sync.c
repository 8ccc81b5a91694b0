/* SPDX-License-Identifier: MIT */
/*
 * Sleeping and waking in event mode, the lost wake-up detector, failure
 * reporting, and the fault injection that proves the detector works.
 *
 * A side goes to sleep like a real driver or device: drain its eventfd,
 * re-enable notifications, re-check the ring, and only then sleep. It
 * publishes what it is doing in shared memory (struct cross_side.state).
 *
 * The detector needs no timing assumption: the wake bound only says when a
 * sleeper looks. It reports a lost wake-up when, within one continuous sleep
 * of the peer, the ring shows work for the sleeper and no notification is
 * pending on the sleeper's eventfd. That cannot happen with a correct ring:
 * the peer published that work while running, and before going to sleep it
 * had decided whether a notification was needed; since we had re-enabled
 * notifications before our re-check (which did not see the work), the ring
 * must have said "notify", and the eventfd write happened before the peer
 * announced its sleep.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "cross.h"

static const char *const side_name[] = { [DRV] = "driver", [DEV] = "device" };
static const char *const state_name[] = {
	[ST_RUNNING] = "running", [ST_ARMING] = "arming", [ST_SLEEPING] = "sleeps",
	[ST_FROZEN] = "dropped a notification and froze", [ST_DONE] = "finished",
};

void cross_proc_init(struct cross_proc *p, struct cross_ctl *ctl, enum cross_side_id side,
		     int kick_fd, int call_fd)
{
	memset(p, 0, sizeof(*p));
	p->ctl = ctl;
	p->cfg = &ctl->cfg;
	p->side = side;
	p->my_fd = side == DRV ? call_fd : kick_fd;
	p->peer_fd = side == DRV ? kick_fd : call_fd;
	p->rng = cross_mix(ctl->cfg.seed, 0x51de + (uint64_t)side);
	p->fault_after = cross_below(&p->rng, 20);
}

void cross_set_state(struct cross_proc *p, enum cross_state st, uint64_t seen)
{
	atomic_store(&p->ctl->side[p->side].state, (uint64_t)st | seen << 8);
}

void cross_fail(struct cross_proc *p, enum cross_fail_kind kind, const char *fmt, ...)
{
	int none = FAIL_NONE;

	if (atomic_compare_exchange_strong(&p->ctl->fail_kind, &none, (int)kind)) {
		char *m = p->ctl->fail_msg;
		size_t cap = sizeof(p->ctl->fail_msg);
		int n = snprintf(m, cap, "%s: ", side_name[p->side]);
		va_list ap;

		va_start(ap, fmt);
		vsnprintf(m + n, cap - (size_t)n, fmt, ap);
		va_end(ap);
	}
	/* The supervisor sees us exit and stops the peer. */
	_exit(1);
}

void cross_check_abort(struct cross_proc *p)
{
	if (atomic_load_explicit(&p->ctl->fail_kind, memory_order_relaxed))
		_exit(2);
}

static bool readable(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, 0) > 0;
}

static void drain(int fd)
{
	eventfd_t v;

	/* Non-blocking: one read takes the whole count, or fails with EAGAIN. */
	(void)eventfd_read(fd, &v);
}

static bool fault_is_mine(const struct cross_proc *p)
{
	return (p->cfg->fault == FAULT_DROP_KICK && p->side == DRV) ||
	       (p->cfg->fault == FAULT_DROP_CALL && p->side == DEV);
}

/*
 * Fault injection: drop this notification if it is provably required — the
 * peer sleeps, and every notification we ever sent was counted before it
 * drained its eventfd (so the eventfd is empty and nothing else wakes it).
 */
static bool inject_drop(struct cross_proc *p)
{
	const struct cross_side *peer = &p->ctl->side[!p->side];
	uint64_t st;

	if (!fault_is_mine(p) || atomic_load(&p->ctl->fault_injected) ||
	    p->notified < p->fault_after)
		return false;
	st = atomic_load(&peer->state);
	if ((st & 0xff) != ST_SLEEPING || (st >> 8) != p->notified)
		return false;
	atomic_store(&p->ctl->fault_injected, 1);
	p->frozen = true;
	return true;
}

void cross_notify(struct cross_proc *p)
{
	if (inject_drop(p))
		return;
	cross_wake(p);
}

void cross_wake(struct cross_proc *p)
{
	if (eventfd_write(p->peer_fd, 1) < 0)
		cross_fail(p, FAIL_SETUP, "eventfd_write: %s", strerror(errno));
	p->notified++;
	atomic_store(&p->ctl->side[p->side].notified, p->notified);
}

static bool asleep(uint64_t st)
{
	unsigned k = st & 0xff;

	return k == ST_SLEEPING || k == ST_FROZEN || k == ST_DONE;
}

/* Called by a sleeper each time the wake bound passes. */
static void stall_check(struct cross_proc *p)
{
	struct cross_side *peer = &p->ctl->side[!p->side];
	uint64_t g1 = atomic_load(&peer->sleeps), s1 = atomic_load(&peer->state), s2, g2;
	bool vis, mine, theirs;
	char dump[200];

	if (!asleep(s1))
		return; /* the peer runs: it will notify us or go to sleep */
	vis = p->visible(p->arg);
	mine = readable(p->my_fd);
	theirs = readable(p->peer_fd);
	s2 = atomic_load(&peer->state);
	g2 = atomic_load(&peer->sleeps);
	/* Only conclusions drawn within one continuous sleep of the peer hold. */
	if (s1 != s2 || g1 != g2 || mine)
		return;
	cross_ring_dump(p->cfg, p->ring, dump, sizeof(dump));
	if (vis)
		cross_fail(p, FAIL_LOST_WAKEUP,
			   "lost wake-up: slept %u ms with %s in the ring while the %s %s, "
			   "and no %s is pending; ring: %s",
			   p->cfg->wake_bound_ms, p->side == DRV ? "used buffers" : "chains available",
			   side_name[!p->side], state_name[s1 & 0xff], p->side == DRV ? "call" : "kick",
			   dump);
	if (p->outstanding && p->outstanding(p->arg) && ((s1 & 0xff) == ST_DONE || !theirs))
		cross_fail(p, FAIL_STALL,
			   "stall: the %s %s, %llu buffers outstanding, none "
			   "visible and no notification pending either way: lost buffers or "
			   "a lost kick; ring: %s",
			   side_name[!p->side], state_name[s1 & 0xff],
			   (unsigned long long)p->outstanding(p->arg), dump);
}

bool cross_sleep(struct cross_proc *p, bool (*arm)(void *), void (*disarm)(void *), void *arg)
{
	struct cross_side *me = &p->ctl->side[p->side], *peer = &p->ctl->side[!p->side];
	/* Read before draining: a notification counted here was written
	 * before, so the drain below consumed it (see inject_drop). */
	uint64_t seen = atomic_load(&peer->notified);

	drain(p->my_fd);
	atomic_fetch_add(&me->sleeps, 1);
	cross_set_state(p, ST_ARMING, seen);
	if (!arm(arg)) {
		cross_set_state(p, ST_RUNNING, 0);
		disarm(arg);
		return false;
	}
	cross_set_state(p, ST_SLEEPING, seen);
	for (;;) {
		struct pollfd pfd = { .fd = p->my_fd, .events = POLLIN };
		int r = poll(&pfd, 1, (int)p->cfg->wake_bound_ms);

		if (r > 0)
			break;
		if (r < 0 && errno != EINTR)
			cross_fail(p, FAIL_SETUP, "poll: %s", strerror(errno));
		if (r == 0)
			me->wake_timeouts++;
		cross_check_abort(p);
		stall_check(p);
	}
	/* Running again before touching the ring (the detector relies on it). */
	cross_set_state(p, ST_RUNNING, 0);
	drain(p->my_fd);
	disarm(arg);
	return true;
}

void cross_freeze(struct cross_proc *p)
{
	cross_set_state(p, ST_FROZEN, 0);
	for (;;) {
		cross_check_abort(p);
		poll(NULL, 0, 50);
	}
}
