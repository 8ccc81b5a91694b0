/* SPDX-License-Identifier: MIT */
/*
 * Running one configuration: fork the driver and the device, pin them to
 * two CPUs, watch them, always reap them (killing the survivor by PID when
 * one fails, and both if we are told to stop), then check their final
 * counters against each other and print the outcome.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/virtio_config.h>
#include <linux/virtio_ring.h>

#include "cross.h"

static pid_t g_pids[2]; /* children alive, for the signal handler */

uint64_t cross_features(const struct cross_cfg *cfg)
{
	uint64_t f = 1ull << VIRTIO_F_VERSION_1;

	if (cfg->packed)
		f |= 1ull << VIRTIO_F_RING_PACKED;
	if (cfg->event_idx)
		f |= 1ull << VIRTIO_RING_F_EVENT_IDX;
	if (cfg->indirect)
		f |= 1ull << VIRTIO_RING_F_INDIRECT_DESC;
	if (cfg->order != ORDER_ANY)
		f |= 1ull << VIRTIO_F_IN_ORDER;
	return f;
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void kill_children(void)
{
	for (int i = 0; i < 2; i++)
		if (g_pids[i] > 0)
			kill(g_pids[i], SIGKILL);
}

/* meson's timeout (SIGTERM) or ^C: take the children down with us. */
static void on_signal(int sig)
{
	kill_children();
	for (int i = 0; i < 2; i++)
		if (g_pids[i] > 0)
			waitpid(g_pids[i], NULL, 0);
	signal(sig, SIG_DFL);
	raise(sig);
}

void cross_install_signals(void)
{
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
}

int cross_pick_cpus(int cpus[2])
{
	cpu_set_t set;
	int n = 0;

	cpus[0] = cpus[1] = -1;
	if (sched_getaffinity(0, sizeof(set), &set))
		return 0;
	for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
		if (CPU_ISSET(c, &set))
			cpus[n++] = c;
	return n;
}

static void pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		fprintf(stderr, "ring-cross: cannot pin to CPU %d: %s\n", cpu, strerror(errno));
}

static pid_t spawn(enum cross_side_id side, struct cross_ctl *ctl, int memfd, int kick, int call,
		   int cpu)
{
	pid_t parent = getpid(), pid;

	fflush(NULL); /* or the child flushes our buffered output again */
	pid = fork();
	if (pid != 0)
		return pid;
	/* Die with the supervisor, whatever kills it. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(1);
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	pin(cpu);
	if (side == DRV)
		cross_driver_main(ctl, memfd, kick, call);
	cross_device_main(ctl, memfd, kick, call);
}

__attribute__((format(printf, 3, 4)))
static void record(struct cross_ctl *ctl, enum cross_fail_kind kind, const char *fmt, ...)
{
	int none = FAIL_NONE;
	va_list ap;

	if (!atomic_compare_exchange_strong(&ctl->fail_kind, &none, (int)kind))
		return;
	va_start(ap, fmt);
	vsnprintf(ctl->fail_msg, sizeof(ctl->fail_msg), fmt, ap);
	va_end(ap);
}

static void reap_all(int status[2])
{
	kill_children();
	for (int i = 0; i < 2; i++) {
		if (g_pids[i] > 0) {
			waitpid(g_pids[i], &status[i], 0);
			g_pids[i] = 0;
		}
	}
}

static bool clean_exit(int st)
{
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/*
 * Wait for both children. The first one to fail takes the other down; a
 * run where neither side makes progress for hang_s seconds is a hang (the
 * backstop for poll mode, where nobody sleeps and the detector cannot see).
 */
static void supervise(struct cross_ctl *ctl, int status[2])
{
	uint64_t last = UINT64_MAX;
	double last_change = now(), fail_seen = 0;

	while (g_pids[0] > 0 || g_pids[1] > 0) {
		uint64_t prog;

		poll(NULL, 0, 20);
		for (int i = 0; i < 2; i++) {
			if (g_pids[i] > 0 && waitpid(g_pids[i], &status[i], WNOHANG) == g_pids[i]) {
				g_pids[i] = 0;
				if (!clean_exit(status[i]))
					reap_all(status);
			}
		}
		prog = atomic_load(&ctl->side[DRV].progress) + atomic_load(&ctl->side[DEV].progress);
		if (prog != last) {
			last = prog;
			last_change = now();
		} else if (now() - last_change > ctl->cfg.hang_s) {
			record(ctl, FAIL_HANG, "supervisor: no progress for %u s (driver state %" PRIu64
			       ", device state %" PRIu64 ")", ctl->cfg.hang_s,
			       atomic_load(&ctl->side[DRV].state) & 0xff,
			       atomic_load(&ctl->side[DEV].state) & 0xff);
			reap_all(status);
		}
		if (atomic_load(&ctl->fail_kind) && !fail_seen)
			fail_seen = now();
		else if (fail_seen && now() - fail_seen > 5)
			reap_all(status);
	}
}

static void describe_exit(struct cross_ctl *ctl, const int status[2])
{
	static const char *const who[] = { "driver", "device" };

	for (int i = 0; i < 2; i++) {
		if (WIFSIGNALED(status[i]) && WTERMSIG(status[i]) != SIGKILL)
			record(ctl, FAIL_CRASH, "%s killed by signal %d (%s)", who[i],
			       WTERMSIG(status[i]), strsignal(WTERMSIG(status[i])));
		else if (!clean_exit(status[i]) && !atomic_load(&ctl->fail_kind))
			record(ctl, FAIL_CRASH, "%s ended (status 0x%x) without a report", who[i],
			       status[i]);
	}
}

/* Both sides finished cleanly: their counters must tell the same story. */
static void compare_sides(struct cross_ctl *ctl)
{
	const struct cross_side *d = &ctl->side[DRV], *v = &ctl->side[DEV];
	uint64_t ops = atomic_load(&ctl->ops_final);

	if (d->stats.bufs != ops || d->stats.used != ops || v->stats.bufs != ops ||
	    v->stats.used != ops)
		record(ctl, FAIL_CHECK, "counts: driver added %" PRIu64 " reclaimed %" PRIu64
		       ", device popped %" PRIu64 " pushed %" PRIu64 ", expected %" PRIu64,
		       d->stats.bufs, d->stats.used, v->stats.bufs, v->stats.used, ops);
	else if (d->stats.indirect != v->stats.indirect)
		record(ctl, FAIL_CHECK, "driver made %" PRIu64 " indirect chains, device saw %" PRIu64,
		       d->stats.indirect, v->stats.indirect);
	else if (d->avail_state != v->avail_state)
		record(ctl, FAIL_CHECK, "avail state: driver 0x%x, device 0x%x", d->avail_state,
		       v->avail_state);
	else if (d->indirect_allocs != d->indirect_frees)
		record(ctl, FAIL_CHECK, "%" PRIu64 " indirect tables allocated, %" PRIu64 " freed",
		       d->indirect_allocs, d->indirect_frees);
}

static const char *order_name(enum cross_order o)
{
	return o == ORDER_ANY ? "any" : o == ORDER_IN ? "in_order" : "in_order+batch";
}

static void print_cfg(const struct cross_cfg *c, int idx)
{
	static const char *const fault[] = { "", " drop-kick", " drop-call" };

	printf("[%2d] %-6s %-5s event_idx=%d order=%-14s indirect=%d num=%-4u ops=%-8" PRIu64
	       " seed=0x%016" PRIx64 "%s", idx, c->packed ? "packed" : "split",
	       c->mode == MODE_POLL ? "poll" : "event", c->event_idx, order_name(c->order),
	       c->indirect, c->num, c->ops, c->seed, fault[c->fault]);
}

static void print_counters(struct cross_ctl *ctl, double secs)
{
	const struct cross_side *d = &ctl->side[DRV], *v = &ctl->side[DEV];
	uint64_t done = atomic_load(&ctl->ops_final);

	if (done != ctl->cfg.ops)
		printf("  passed %" PRIu64 " (time cap)", done);
	printf("  %.2fs  kicks %" PRIu64 "/%" PRIu64 " calls %" PRIu64 "/%" PRIu64
	       " (needed/suppressed)  sleeps %" PRIu64 "/%" PRIu64 "  indirect %" PRIu64
	       "  device restarts %" PRIu64 "\n",
	       secs, d->stats.notify, d->stats.notify_suppressed, v->stats.notify,
	       v->stats.notify_suppressed, atomic_load(&d->sleeps), atomic_load(&v->sleeps),
	       d->stats.indirect, v->restarts);
}

/* Run one configuration. @return true if it behaved as expected. */
bool cross_run_one(const struct cross_cfg *cfg, int idx, const int cpus[2])
{
	int status[2] = { 0, 0 }, memfd, kick, call, kind;
	struct cross_ctl *ctl;
	double t0 = now();
	bool ok;

	print_cfg(cfg, idx);
	fflush(stdout);
	g_pids[DRV] = g_pids[DEV] = 0;
	if (cross_shm_create(cfg, &ctl, &memfd)) {
		printf("  SETUP FAILED: %s\n", strerror(errno));
		return false;
	}
	kick = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	call = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (kick >= 0 && call >= 0) {
		g_pids[DRV] = spawn(DRV, ctl, memfd, kick, call, cpus[0]);
		if (g_pids[DRV] > 0)
			g_pids[DEV] = spawn(DEV, ctl, memfd, kick, call, cpus[1]);
	}
	if (g_pids[DRV] <= 0 || g_pids[DEV] <= 0) {
		record(ctl, FAIL_SETUP, "eventfd or fork: %s", strerror(errno));
		reap_all(status);
	} else {
		supervise(ctl, status);
	}
	describe_exit(ctl, status);
	kind = atomic_load(&ctl->fail_kind);
	if (kind == FAIL_NONE)
		compare_sides(ctl);
	kind = atomic_load(&ctl->fail_kind);
	if (cfg->fault == FAULT_NONE) {
		ok = kind == FAIL_NONE;
		if (ok)
			print_counters(ctl, now() - t0);
		else
			printf("\n  FAILED: %s\n", ctl->fail_msg);
	} else {
		ok = kind == FAIL_LOST_WAKEUP && atomic_load(&ctl->fault_injected);
		printf("\n  %s: %s\n", ok ? "detected as expected" : "DETECTOR FAILED",
		       kind ? ctl->fail_msg
			    : atomic_load(&ctl->fault_injected) ? "fault injected, nothing reported"
								: "fault never injected");
	}
	munmap(ctl, ctl->size);
	close(memfd);
	if (kick >= 0)
		close(kick);
	if (call >= 0)
		close(call);
	return ok;
}

