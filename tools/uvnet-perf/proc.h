/* SPDX-License-Identifier: MIT */
/*
 * The processes uvnet-perf starts (devices, drivers), the private temporary
 * directory their sockets live in, and cleaning both up on every exit path:
 * normal return, error, SIGINT/SIGTERM (a flag the waits look at), and our
 * own death (children get PR_SET_PDEATHSIG).
 */
#ifndef UVN_PERF_PROC_H
#define UVN_PERF_PROC_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PT_MAX_CHILDREN 8

struct pt_child {
	const char *name;
	pid_t pid;                  /* 0: not running */
	int out_fd;                 /* the child's stdout, -1 if not captured */
	void (*on_line)(void *ctx, char *line, uint64_t t_ns);
	void *ctx;
	char buf[8192];
	size_t len;
	bool exited;
	int status;                 /* wait status once exited */
	char log[256];              /* its stderr (and stdout for exec'd tools) */
};

/* Set by SIGINT/SIGTERM: every wait returns early and the run unwinds. */
extern volatile sig_atomic_t pt_interrupted;

/* Install the signal handlers and the exit-time cleanup. */
void pt_proc_init(void);

/* The private temporary directory (created on first use). NULL on failure. */
const char *pt_tmpdir(void);

/* Remove the temporary directory and stop every child (idempotent). */
void pt_cleanup(void);

/*
 * Start @argv with stdout captured line by line into @c->on_line and
 * stderr into @c->log, pinned to @cpu (-1: not pinned).
 * @return 0 or -errno
 */
int pt_spawn(struct pt_child *c, char *const argv[], int cpu);

/* Fork a child that runs @fn(@arg) pinned to @cpu and exits with its return value. */
int pt_fork(struct pt_child *c, int cpu, int (*fn)(void *), void *arg);

/* Read what the children printed (dispatching lines) and reap exits, for up to @ms. */
void pt_pump(int ms);

/* Sleep @secs while pumping; false if interrupted. */
bool pt_sleep(double secs);

/* Wait until @ready(@ctx) or @secs pass (pumping). @return true if ready */
bool pt_wait_for(double secs, bool (*ready)(void *ctx), void *ctx);

/* Is the child still running? */
bool pt_alive(struct pt_child *c);

/*
 * Send @sig, wait up to @secs for the exit (pumping its last lines), then
 * SIGKILL. @return the exit status (wait status), or -1 if it was killed
 */
int pt_stop(struct pt_child *c, int sig, double secs);

/* Last lines of the child's log, for error messages ("" if none). */
void pt_log_tail(const struct pt_child *c, char *out, size_t n);

/* Run @argv to completion with stdout into @out (NUL-terminated, truncated). @return exit status or -1 */
int pt_capture(char *const argv[], char *out, size_t n);

uint64_t pt_now_ns(void);

#endif
