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
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "util/log.h"
#include "util/sys.h"
#include "uvnetd.h"

#define BURST UVN_FWD_BURST
#define SMALL_ROOM 2048

static void wake(struct uvnetd_worker *w)
{
	uint64_t one = 1;

	if (w->wake_h.fd >= 0 && write(w->wake_h.fd, &one, sizeof(one)) < 0)
		UVN_DEBUG("worker %u: wake: %s", w->fw.id, strerror(errno));
}

/* Bring in everything queue @q of @p has, forwarding it. */
static unsigned drain(struct uvnetd_worker *w, struct uvn_port *p, unsigned q)
{
	struct uvnetd *d = w->d;
	struct uvn_pkt *pkts[BURST];
	unsigned n, total = 0;

	while ((n = p->ops->rx(p, q, pkts, BURST))) {
		uvn_fwd_burst(&d->fwd, &w->fw, p, pkts, n);
		if (p->ops->complete)
			p->ops->complete(p, q);
		total += n;
		if (d->o.mode == UVN_FWD_TXONLY || d->o.poll)
			break; /* one burst per queue per round: fair to the others */
	}
	return total;
}

/* Event mode: drain until the queue is empty with notifications re-armed. */
static void drain_armed(struct uvnetd_worker *w, struct uvn_port *p, unsigned q)
{
	do
		drain(w, p, q);
	while (!p->ops->arm(p, q));
}

static void on_src(struct uvn_handler *h, uint32_t events)
{
	struct uvnetd_src *s = h->ctx;

	(void)events;
	if (s->p->ops->rx_event)
		s->p->ops->rx_event(s->p, s->q);
	drain_armed(s->w, s->p, s->q);
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

		drain(w, s->p, s->q);
		if (w->d->o.mode == UVN_FWD_TXONLY)
			uvn_fwd_generate(&w->d->fwd, &w->fw, s->p);
	}
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

static void *worker_main(void *arg)
{
	struct uvnetd_worker *w = arg;
	struct uvnetd *d = w->d;
	bool busy = d->o.poll || d->o.mode == UVN_FWD_TXONLY;

	if (w->cpu >= 0 && uvn_pin_thread(w->cpu))
		UVN_WARN("worker %u: cannot pin to CPU %d", w->fw.id, w->cpu);
	while (!atomic_load(&d->stop)) {
		if (atomic_load(&d->pause)) {
			park(w);
			/* Queues may be new: look at each before sleeping. */
			for (unsigned i = 0; !busy && i < w->nsrcs; i++)
				drain_armed(w, w->srcs[i].p, w->srcs[i].q);
			continue;
		}
		if (busy)
			poll_round(w);
		else
			uvn_loop_run_once(w->loop, -1);
	}
	return NULL;
}

void uvnetd_quiesce(struct uvnetd *d)
{
	unsigned gen;

	if (d->park_depth++ || !d->nworkers)
		return;
	d->pauses++;
	gen = atomic_fetch_add(&d->pause_gen, 1) + 1;
	/* The generation first: a worker that sees pause reads it after. */
	atomic_store(&d->pause, true);
	for (unsigned i = 0; i < d->nworkers; i++)
		wake(&d->workers[i]);
	/* A sleeping worker takes a wake-up to answer, maybe on this CPU:
	 * spin a little, then give the CPU away while waiting. */
	for (unsigned i = 0; i < d->nworkers; i++)
		for (unsigned spins = 0;
		     atomic_load(&d->workers[i].acked) != gen && !atomic_load(&d->stop); spins++) {
			if (spins < 256)
				uvn_cpu_relax();
			else
				sched_yield();
		}
}

void uvnetd_resume(struct uvnetd *d)
{
	if (--d->park_depth)
		return;
	atomic_store(&d->pause, false);
}

/* Give every rx queue of every port to a worker, round-robin. Quiesced. */
void uvnetd_assign(struct uvnetd *d)
{
	bool busy = d->o.poll || d->o.mode == UVN_FWD_TXONLY;
	unsigned k = 0;

	for (unsigned i = 0; i < d->nworkers; i++) {
		struct uvnetd_worker *w = &d->workers[i];

		for (unsigned j = 0; j < w->nsrcs; j++)
			if (w->srcs[j].h.fd >= 0)
				uvn_loop_del(w->loop, &w->srcs[j].h);
		w->nsrcs = 0;
	}
	for (unsigned i = 0; i < d->nports; i++) {
		struct uvn_port *p = d->ports[i];
		unsigned nq = p->ops->nqueues(p);

		for (unsigned q = 0; q < nq; q++) {
			struct uvnetd_worker *w = &d->workers[k++ % d->nworkers];
			struct uvnetd_src *s;
			int fd;

			if (w->nsrcs == UVNETD_MAX_SRCS)
				continue;
			s = &w->srcs[w->nsrcs++];
			*s = (struct uvnetd_src){ .p = p, .q = q, .w = w, .h.fd = -1 };
			fd = p->ops->rx_fd ? p->ops->rx_fd(p, q) : -1;
			if (busy || fd < 0)
				continue;
			s->h = (struct uvn_handler){ .fd = fd, .fn = on_src, .ctx = s };
			if (uvn_loop_add(w->loop, &s->h, EPOLLIN))
				s->h.fd = -1;
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

	d->workers = calloc(n, sizeof(*d->workers));
	if (!d->workers)
		return -ENOMEM;
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
