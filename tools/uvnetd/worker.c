/* SPDX-License-Identifier: MIT */
/*
 * The data-path threads. Each worker polls the rx queues assigned to it
 * (or sleeps on their kick fds in event mode) and forwards what comes in;
 * it transmits on every port with its id as the queue hint.
 *
 * The control thread (sockets, timers, port state) changes things the
 * workers use only while they are parked: uvnetd_quiesce() raises `pause`
 * with a new generation and waits until every worker has acknowledged that
 * generation from inside its parking loop; uvnetd_resume() lets them go.
 * A worker acknowledges only after reading `pause` (and then the
 * generation) at the top of its loop, before touching any queue, so an
 * acknowledgement means "not in the data path until resumed". After
 * resuming, a worker looks at each of its queues once before sleeping:
 * buffers may have been posted while the queue was being set up.
 *
 * What a guest can keep busy is bounded: a queue gets a budget of bursts
 * per round and, if it has more, waits on its worker's busy list for the
 * next round (handled after an epoll_wait that does not sleep). A round
 * ends, so a worker always answers a pause or a stop within one round.
 *
 * In event mode a worker sleeps on its own dup() of each queue's fd and
 * closes it only after removing it from its epoll set: the port may close
 * or replace its fd at any time (a frontend's SET_VRING_KICK), and a
 * registration removed by a closed number would outlive it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "util/log.h"
#include "util/stats.h"
#include "util/sys.h"
#include "uvnetd.h"

#define BURST UVN_FWD_BURST
#define SMALL_ROOM 2048
/* Bursts one queue may take per round in event mode (poll mode: one).
 * A guest that keeps its ring full gets this much, then waits for the
 * next round like everyone else: it can neither starve the queues beside
 * it nor keep its worker from parking (the CVE-2019-3900 shape). */
#define EVENT_BUDGET 4
/* A limited queue may save up this much credit (10 ms at its rate), or
 * one burst if that is more. */
#define LIMIT_SAVE_PS 10000000000ull
/* How long a worker whose busy queues are all held sleeps, in ms. */
#define HELD_SLEEP_MS 1

static void wake(struct uvnetd_worker *w)
{
	uint64_t one = 1;

	if (w->wake_h.fd >= 0 && write(w->wake_h.fd, &one, sizeof(one)) < 0)
		UVN_DEBUG("worker %u: wake: %s", w->fw.id, strerror(errno));
}

/* Frames queue @s may take now under its port's limit (UINT_MAX: no limit). */
static unsigned allowance(struct uvnetd_src *s)
{
	uint64_t now, cap, n;

	if (!s->cost_ps)
		return UINT_MAX;
	now = uvn_now_ns();
	cap = BURST * s->cost_ps > LIMIT_SAVE_PS ? BURST * s->cost_ps : LIMIT_SAVE_PS;
	if (now - s->last_ns >= cap / 1000)
		s->credit_ps = cap;
	else if ((s->credit_ps += (now - s->last_ns) * 1000) > cap)
		s->credit_ps = cap;
	s->last_ns = now;
	n = s->credit_ps / s->cost_ps;
	return n > UINT_MAX ? UINT_MAX : (unsigned)n;
}

/* Left unread for the limit (counted once per spell) or not. */
static void set_held(struct uvnetd_src *s, bool held)
{
	if (s->held == held)
		return;
	s->w->nheld += held ? 1 : -1u;
	s->held = held;
	if (held)
		atomic_fetch_add_explicit(&s->p->policed, 1, memory_order_relaxed);
}

/* Bring in up to @max frames from queue @s, forwarding them.
 * @return true if @max ran out (the queue may have more) */
static bool drain(struct uvnetd_worker *w, struct uvnetd_src *s, unsigned max)
{
	struct uvn_port *p = s->p;
	struct uvn_pkt *pkts[BURST];

	while (max) {
		unsigned n = p->ops->rx(p, s->q, pkts, max < BURST ? max : BURST);

		if (!n)
			return false;
		max -= n;
		w->moved += n;
		s->credit_ps -= n * s->cost_ps;
		uvn_fwd_burst(&w->d->fwd, &w->fw, p, pkts, n);
		if (p->ops->complete)
			p->ops->complete(p, s->q);
	}
	return true;
}

static void set_busy(struct uvnetd_src *s, bool busy)
{
	if (s->busy != busy)
		s->w->nbusy += busy ? 1 : -1u;
	s->busy = busy;
}

static void set_dozing(struct uvnetd_src *s, bool dozing)
{
	if (s->dozing != dozing)
		s->w->ndozing += dozing ? 1 : -1u;
	s->dozing = dozing;
}

/* Event mode: one round's worth of queue @s. Empty, it sleeps with
 * notifications re-armed; otherwise (budget spent, or frames came while
 * re-arming) it stays on the busy list for the next round, instead of
 * holding this one. */
static void serve(struct uvnetd_src *s)
{
	unsigned max = allowance(s);
	bool more;

	s->served = s->w->round;
	set_busy(s, true);
	set_held(s, !max);
	set_dozing(s, false);
	if (!max)
		return;
	if (max > EVENT_BUDGET * BURST)
		max = EVENT_BUDGET * BURST;
	more = drain(s->w, s, max) || !s->p->ops->arm(s->p, s->q);
	/* Nothing will wake us for a polled queue: it stays on the list. */
	set_busy(s, more || s->polled);
	set_dozing(s, !more && s->polled);
}

static void on_src(struct uvn_handler *h, uint32_t events)
{
	struct uvnetd_src *s = h->ctx;

	(void)events;
	if (s->p->ops->rx_event)
		s->p->ops->rx_event(s->p, s->q);
	if (s->served != s->w->round)
		serve(s);
}

/* The queues still busy from earlier rounds and not served in this one. */
static void serve_busy(struct uvnetd_worker *w)
{
	for (unsigned i = 0; w->nbusy && i < w->nsrcs; i++) {
		struct uvnetd_src *s = &w->srcs[i];

		if (s->busy && s->served != w->round)
			serve(s);
	}
}

static void on_wake(struct uvn_handler *h, uint32_t events)
{
	uint64_t n;

	(void)events;
	if (read(h->fd, &n, sizeof(n)) < 0)
		return;
}

static void poll_round(struct uvnetd_worker *w)
{
	for (unsigned i = 0; i < w->nsrcs; i++) {
		struct uvnetd_src *s = &w->srcs[i];
		unsigned max = allowance(s);

		set_held(s, !max);
		drain(w, s, max < BURST ? max : BURST);
		if (w->d->o.mode == UVN_FWD_TXONLY)
			w->moved += uvn_fwd_generate(&w->d->fwd, &w->fw, s->p);
	}
}

/* Poll mode: the round just ended was busy or idle (uvnetd.h). A count
 * that went backwards (a TSC not in step across CPUs) adds nothing: one
 * wrapped difference would spoil every share read after it. */
static void account(struct uvnetd_worker *w, uint64_t moved_before)
{
	uint64_t now = uvn_cycles();
	int64_t span = (int64_t)(now - w->cycles_mark);

	if (span > 0)
		uvn_stat_add(w->moved != moved_before ? &w->busy_cycles : &w->idle_cycles,
			     (uint64_t)span);
	w->cycles_mark = now;
}

static void park(struct uvnetd_worker *w)
{
	struct uvnetd *d = w->d;

	while (atomic_load(&d->pause) && !atomic_load(&d->stop)) {
		unsigned gen = atomic_load(&d->pause_gen);

		if (atomic_load_explicit(&w->acked, memory_order_relaxed) != gen)
			atomic_store(&w->acked, gen);
		usleep(20);
	}
}

/*
 * Every round is bounded (each queue gets its budget at most once), so
 * `stop` and `pause` are seen within one round whatever the guests do.
 * Event mode sleeps only when no queue is busy.
 */
static void *worker_main(void *arg)
{
	struct uvnetd_worker *w = arg;
	struct uvnetd *d = w->d;
	bool polling = d->o.poll || d->o.mode == UVN_FWD_TXONLY;

	if (w->cpu >= 0 && uvn_pin_thread(w->cpu))
		UVN_WARN("worker %u: cannot pin to CPU %d", w->fw.id, w->cpu);
	w->cycles_mark = uvn_cycles();
	while (!atomic_load(&d->stop)) {
		if (atomic_load(&d->pause)) {
			park(w);
			/* Stopping: the control thread may still be changing
			 * the queues (a stop ends its quiesce early). */
			if (atomic_load(&d->stop))
				break;
			w->cycles_mark = uvn_cycles(); /* parked: neither */
			/* Queues may be new: look at each before sleeping. */
			for (unsigned i = 0; !polling && i < w->nsrcs; i++)
				set_busy(&w->srcs[i], true);
			continue;
		}
		if (polling) {
			uint64_t moved = w->moved;

			poll_round(w);
			account(w, moved);
			continue;
		}
		w->round++;
		uvn_loop_run_once(w->loop, !w->nbusy ? -1
					   : w->nbusy > w->nheld + w->ndozing ? 0 : HELD_SLEEP_MS);
		serve_busy(w);
	}
	return NULL;
}

/* A SIGINT or SIGTERM waiting for the control thread (they are blocked:
 * only its signalfd takes them)? */
static bool stop_pending(void)
{
	sigset_t set;

	return !sigpending(&set) && (sigismember(&set, SIGTERM) == 1 || sigismember(&set, SIGINT) == 1);
}

bool uvnetd_quiesce(struct uvnetd *d)
{
	unsigned gen;

	if (d->park_depth++)
		return d->parked;
	if (!d->nworkers)
		return d->parked = true;
	d->pauses++;
	gen = atomic_fetch_add(&d->pause_gen, 1) + 1;
	/* The generation first: a worker that sees pause reads it after. */
	atomic_store(&d->pause, true);
	for (unsigned i = 0; i < d->nworkers; i++)
		wake(&d->workers[i]);
	/* A sleeping worker takes a wake-up to answer, maybe on this CPU:
	 * spin a little, then give the CPU away while waiting. A worker's
	 * round is bounded, so this ends; should one still not answer, a
	 * signal to stop is not left waiting behind it. */
	for (unsigned i = 0; i < d->nworkers; i++)
		for (unsigned spins = 0; atomic_load(&d->workers[i].acked) != gen; spins++) {
			if (atomic_load(&d->stop))
				return d->parked = false;
			if (spins < 256) {
				uvn_cpu_relax();
				continue;
			}
			sched_yield();
			if (!(spins % 256) && stop_pending())
				atomic_store(&d->stop, true);
		}
	return d->parked = true;
}

void uvnetd_resume(struct uvnetd *d)
{
	if (--d->park_depth)
		return;
	d->parked = false;
	atomic_store(&d->pause, false);
}

/* Stop serving @w's queues: each registration ends before its fd (our own
 * dup) is closed, so it always ends, whatever the port did with its fd. */
static void release_srcs(struct uvnetd_worker *w)
{
	for (unsigned j = 0; j < w->nsrcs; j++)
		uvn_loop_close(w->loop, &w->srcs[j].h);
	w->nsrcs = 0;
	w->nbusy = 0;
	w->nheld = 0;
	w->ndozing = 0;
}

/* Event mode: sleep on queue @s's fd. The port's fd is the port's (a vhost
 * backend closes or replaces a kick fd while handling a message), so the
 * worker registers a dup() of it that only it closes, after removing it. */
static void watch_src(struct uvnetd_src *s, int fd)
{
	int mine = fcntl(fd, F_DUPFD_CLOEXEC, 0);

	if (mine < 0) {
		UVN_ERR("worker %u: %s queue %u: dup: %s", s->w->fw.id, s->p->name, s->q,
			strerror(errno));
		return;
	}
	s->h = (struct uvn_handler){ .fd = mine, .fn = on_src, .ctx = s };
	if (uvn_loop_add(s->w->loop, &s->h, EPOLLIN)) {
		close(mine);
		s->h.fd = -1;
	}
}

/* Queue @s's share of its port's ingress limit (one of @nq queues). */
static void limit_src(struct uvnetd_src *s, unsigned nq)
{
	uint64_t pps = s->p->conf.max_pps / nq;

	if (!s->p->conf.max_pps)
		return;
	s->cost_ps = 1000000000000ull / (pps ? pps : 1);
	s->credit_ps = s->cost_ps * BURST;
	s->last_ns = uvn_now_ns();
}

/* Give every rx queue of every port to a worker, round-robin. Quiesced. */
void uvnetd_assign(struct uvnetd *d)
{
	bool polling = d->o.poll || d->o.mode == UVN_FWD_TXONLY;
	unsigned k = 0;

	for (unsigned i = 0; i < d->nworkers; i++)
		release_srcs(&d->workers[i]);
	for (unsigned i = 0; i < d->fwd.nports; i++) {
		struct uvn_port *p = d->fwd.ports[i];
		unsigned nq;

		if (!p)
			continue;
		nq = p->ops->nqueues(p);
		for (unsigned q = 0; q < nq; q++) {
			struct uvnetd_worker *w = &d->workers[k++ % d->nworkers];
			struct uvnetd_src *s;
			int fd;

			if (w->nsrcs == UVNETD_MAX_SRCS)
				continue;
			s = &w->srcs[w->nsrcs++];
			*s = (struct uvnetd_src){ .p = p, .q = q, .w = w, .h.fd = -1 };
			limit_src(s, nq);
			fd = p->ops->rx_fd ? p->ops->rx_fd(p, q) : -1;
			s->polled = !polling && fd == UVN_PORT_RX_POLL;
			if (!polling && fd >= 0)
				watch_src(s, fd);
		}
		if (p->ops->set_senders)
			p->ops->set_senders(p, d->nworkers);
	}
}

static int worker_init(struct uvnetd *d, struct uvnetd_worker *w, unsigned id, int cpu)
{
	struct uvn_pkt_pool_cfg gen = { .count = 1024, .buf_size = SMALL_ROOM, .name = "txonly" };
	struct uvn_pkt_pool_cfg copy = { .count = 1024, .buf_size = SMALL_ROOM, .name = "copies" };
	int r;

	w->d = d;
	w->fw.id = id;
	w->cpu = cpu;
	w->wake_h.fd = -1;
	r = uvn_loop_create(&w->loop);
	if (!r)
		r = uvn_pkt_pool_create(&gen, &w->fw.gen);
	if (!r)
		r = uvn_pkt_pool_create(&copy, &w->fw.copy);
	if (r)
		return r;
	w->wake_h = (struct uvn_handler){ .fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK),
					  .fn = on_wake, .ctx = w };
	if (w->wake_h.fd < 0)
		return -errno;
	return uvn_loop_add(w->loop, &w->wake_h, EPOLLIN);
}

int uvnetd_workers_start(struct uvnetd *d)
{
	unsigned n = d->o.ncpus ? d->o.ncpus : 1;
	int r;

	d->workers = aligned_alloc(64, n * sizeof(*d->workers));
	if (!d->workers)
		return -ENOMEM;
	memset(d->workers, 0, n * sizeof(*d->workers));
	/* Start parked: the control thread assigns queues first. */
	atomic_store(&d->pause, true);
	for (unsigned i = 0; i < n; i++) {
		r = worker_init(d, &d->workers[i], i, d->o.ncpus ? d->o.cpus[i] : -1);
		if (r)
			return r;
		d->nworkers = i + 1;
	}
	for (unsigned i = 0; i < n; i++) {
		r = -pthread_create(&d->workers[i].thr, NULL, worker_main, &d->workers[i]);
		if (r)
			return r;
		d->workers[i].started = true;
	}
	return 0;
}

void uvnetd_workers_stop(struct uvnetd *d)
{
	atomic_store(&d->stop, true);
	for (unsigned i = 0; i < d->nworkers; i++)
		wake(&d->workers[i]);
	for (unsigned i = 0; i < d->nworkers; i++) {
		struct uvnetd_worker *w = &d->workers[i];

		if (w->started)
			pthread_join(w->thr, NULL);
		release_srcs(w);
		if (w->wake_h.fd >= 0)
			close(w->wake_h.fd);
		uvn_loop_destroy(w->loop);
		uvn_pkt_pool_destroy(w->fw.gen);
		uvn_pkt_pool_destroy(w->fw.copy);
	}
	free(d->workers);
	d->workers = NULL;
	d->nworkers = 0;
}
