/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proc.h"

volatile sig_atomic_t pt_interrupted;

static struct pt_child *children[PT_MAX_CHILDREN];
static char tmpdir[64];

uint64_t pt_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void on_signal(int sig)
{
	/* A second Ctrl-C while cleanup is slow: stop waiting politely. */
	if (pt_interrupted) {
		for (unsigned i = 0; i < PT_MAX_CHILDREN; i++)
			if (children[i] && children[i]->pid > 0)
				kill(children[i]->pid, SIGKILL);
	}
	pt_interrupted = sig;
}

void pt_proc_init(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	atexit(pt_cleanup);
}

const char *pt_tmpdir(void)
{
	if (!tmpdir[0]) {
		const char *base = getenv("TMPDIR");

		snprintf(tmpdir, sizeof(tmpdir), "%s/uvnet-perf.XXXXXX",
			 base && strlen(base) < 24 ? base : "/tmp");
		if (!mkdtemp(tmpdir)) {
			tmpdir[0] = 0;
			return NULL;
		}
	}
	return tmpdir;
}

/* Only our own flat directory: sockets, logs and scripts, no subdirectories. */
static void remove_tmpdir(void)
{
	DIR *d;
	struct dirent *e;

	if (!tmpdir[0])
		return;
	d = opendir(tmpdir);
	if (d) {
		while ((e = readdir(d)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
				unlinkat(dirfd(d), e->d_name, 0);
		closedir(d);
	}
	rmdir(tmpdir);
	tmpdir[0] = 0;
}

void pt_cleanup(void)
{
	for (unsigned i = 0; i < PT_MAX_CHILDREN; i++)
		if (children[i])
			pt_stop(children[i], SIGTERM, 2);
	remove_tmpdir();
}

static int track(struct pt_child *c)
{
	for (unsigned i = 0; i < PT_MAX_CHILDREN; i++) {
		if (!children[i]) {
			children[i] = c;
			return 0;
		}
	}
	return -EMFILE;
}

static void untrack(struct pt_child *c)
{
	for (unsigned i = 0; i < PT_MAX_CHILDREN; i++)
		if (children[i] == c)
			children[i] = NULL;
}

/* In the child, before exec or the worker function. */
static void child_setup(int cpu, int out_fd, int log_fd)
{
	sigset_t none;

	/* If uvnet-perf dies (even by SIGKILL) its children follow. */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() == 1)
		_exit(1); /* the parent died before prctl() */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* Our own process group: a terminal's Ctrl-C reaches only uvnet-perf,
	 * which then stops the children in the right order. */
	setpgid(0, 0);
	if (cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		sched_setaffinity(0, sizeof(set), &set);
	}
	if (out_fd >= 0)
		dup2(out_fd, STDOUT_FILENO);
	if (log_fd >= 0) {
		dup2(log_fd, STDERR_FILENO);
		if (out_fd < 0)
			dup2(log_fd, STDOUT_FILENO);
	}
	int null = open("/dev/null", O_RDONLY);

	if (null >= 0)
		dup2(null, STDIN_FILENO);
	for (int fd = 3; fd < 1024; fd++)
		close(fd);
}

/* A build running next to us relinks a tool for a moment (ETXTBSY, EACCES): wait it out. */
static void exec_retry(char *const argv[])
{
	for (unsigned i = 0; i < 20; i++) {
		execvp(argv[0], argv);
		if (errno != ETXTBSY && errno != EACCES)
			return;
		usleep(100000);
	}
}

static int open_log(struct pt_child *c)
{
	const char *dir = pt_tmpdir();

	if (!dir)
		return -errno;
	snprintf(c->log, sizeof(c->log), "%s/%s.%d.log", dir, c->name, (int)getpid());
	for (unsigned i = 0; access(c->log, F_OK) == 0; i++)
		snprintf(c->log, sizeof(c->log), "%s/%s.%u.log", dir, c->name, i);
	return open(c->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
}

static int start(struct pt_child *c, int cpu, char *const argv[], int (*fn)(void *), void *arg)
{
	int pfd[2] = { -1, -1 }, log_fd, ret;

	c->pid = 0;
	c->len = 0;
	c->exited = false;
	c->out_fd = -1;
	log_fd = open_log(c);
	if (log_fd < 0)
		return log_fd;
	if (c->on_line && pipe2(pfd, O_CLOEXEC)) {
		ret = -errno;
		close(log_fd);
		return ret;
	}
	ret = track(c);
	if (!ret) {
		c->pid = fork();
		if (c->pid < 0) {
			ret = -errno;
			c->pid = 0;
			untrack(c);
		}
	}
	if (c->pid == 0 && !ret) {
		child_setup(cpu, pfd[1], log_fd);
		if (fn)
			_exit(fn(arg));
		exec_retry(argv);
		fprintf(stderr, "uvnet-perf: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(log_fd);
	if (pfd[1] >= 0)
		close(pfd[1]);
	if (ret) {
		if (pfd[0] >= 0)
			close(pfd[0]);
		return ret;
	}
	c->out_fd = pfd[0];
	if (c->out_fd >= 0)
		fcntl(c->out_fd, F_SETFL, O_NONBLOCK);
	return 0;
}

int pt_spawn(struct pt_child *c, char *const argv[], int cpu)
{
	return start(c, cpu, argv, NULL, NULL);
}

int pt_fork(struct pt_child *c, int cpu, int (*fn)(void *), void *arg)
{
	return start(c, cpu, NULL, fn, arg);
}

static void split_lines(struct pt_child *c, uint64_t now)
{
	char *s = c->buf, *nl;

	while ((nl = memchr(s, '\n', c->len - (size_t)(s - c->buf)))) {
		*nl = 0;
		if (c->on_line)
			c->on_line(c->ctx, s, now);
		s = nl + 1;
	}
	c->len -= (size_t)(s - c->buf);
	memmove(c->buf, s, c->len);
	/* A line longer than the buffer: hand over what we have. */
	if (c->len == sizeof(c->buf) - 1) {
		c->buf[c->len] = 0;
		if (c->on_line)
			c->on_line(c->ctx, c->buf, now);
		c->len = 0;
	}
}

static void read_child(struct pt_child *c)
{
	for (;;) {
		ssize_t n = read(c->out_fd, c->buf + c->len, sizeof(c->buf) - 1 - c->len);

		if (n <= 0) {
			if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
				close(c->out_fd);
				c->out_fd = -1;
			}
			return;
		}
		c->len += (size_t)n;
		split_lines(c, pt_now_ns());
	}
}

static void reap(void)
{
	for (unsigned i = 0; i < PT_MAX_CHILDREN; i++) {
		struct pt_child *c = children[i];
		int st;

		if (c && c->pid > 0 && !c->exited && waitpid(c->pid, &st, WNOHANG) == c->pid) {
			c->exited = true;
			c->status = st;
		}
	}
}

void pt_pump(int ms)
{
	struct pollfd p[PT_MAX_CHILDREN];
	struct pt_child *who[PT_MAX_CHILDREN];
	unsigned n = 0;

	for (unsigned i = 0; i < PT_MAX_CHILDREN; i++) {
		if (children[i] && children[i]->out_fd >= 0) {
			p[n] = (struct pollfd){ .fd = children[i]->out_fd, .events = POLLIN };
			who[n++] = children[i];
		}
	}
	if (poll(p, n, ms < 0 ? 0 : ms) > 0)
		for (unsigned i = 0; i < n; i++)
			if (p[i].revents)
				read_child(who[i]);
	reap();
}

bool pt_sleep(double secs)
{
	uint64_t end = pt_now_ns() + (uint64_t)(secs * 1e9);

	while (!pt_interrupted) {
		uint64_t now = pt_now_ns();

		if (now >= end)
			return true;
		pt_pump((int)((end - now) / 1000000) + 1 > 50 ? 50 : (int)((end - now) / 1000000) + 1);
	}
	return false;
}

bool pt_wait_for(double secs, bool (*ready)(void *ctx), void *ctx)
{
	uint64_t end = pt_now_ns() + (uint64_t)(secs * 1e9);

	while (!pt_interrupted && pt_now_ns() < end) {
		if (ready(ctx))
			return true;
		pt_pump(10);
	}
	return ready(ctx);
}

bool pt_alive(struct pt_child *c)
{
	reap();
	return c->pid > 0 && !c->exited;
}

int pt_stop(struct pt_child *c, int sig, double secs)
{
	uint64_t end;

	if (c->pid <= 0)
		return -1;
	if (!c->exited)
		kill(c->pid, sig);
	end = pt_now_ns() + (uint64_t)(secs * 1e9);
	while (!c->exited && pt_now_ns() < end)
		pt_pump(10);
	if (!c->exited) {
		kill(c->pid, SIGKILL);
		waitpid(c->pid, &c->status, 0);
		c->exited = true;
		c->status = -1;
	}
	/* Lines still in the pipe after the exit (a descendant may hold the
	 * pipe open: look a few times, then let go). */
	for (unsigned i = 0; i < 64 && c->out_fd >= 0; i++) {
		struct pollfd p = { .fd = c->out_fd, .events = POLLIN };

		if (poll(&p, 1, 0) <= 0)
			break;
		read_child(c);
	}
	if (c->out_fd >= 0) {
		close(c->out_fd);
		c->out_fd = -1;
	}
	untrack(c);
	c->pid = 0;
	return c->status;
}

void pt_log_tail(const struct pt_child *c, char *out, size_t n)
{
	char buf[4096];
	size_t len = 0;
	FILE *f = c->log[0] ? fopen(c->log, "r") : NULL;
	char *s;

	out[0] = 0;
	if (!f)
		return;
	if (fseek(f, -(long)(sizeof(buf) - 1), SEEK_END))
		rewind(f);
	len = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[len] = 0;
	while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
		buf[--len] = 0;
	/* The last two lines: usually the error and what led to it. */
	s = strrchr(buf, '\n');
	if (s && s > buf) {
		*s = 0;
		char *prev = strrchr(buf, '\n');

		*s = '\n';
		s = prev ? prev + 1 : buf;
	} else {
		s = buf;
	}
	snprintf(out, n, "%s", s);
	for (char *p = out; *p; p++)
		if (*p == '\n')
			*p = ';';
}

int pt_capture(char *const argv[], char *out, size_t n)
{
	int pfd[2], st;
	size_t len = 0;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -1;
	}
	if (pid == 0) {
		dup2(pfd[1], STDOUT_FILENO);
		dup2(pfd[1], STDERR_FILENO);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(pfd[1]);
	for (;;) {
		ssize_t r = read(pfd[0], out + len, n - 1 - len);

		if (r > 0 && len + (size_t)r < n - 1) {
			len += (size_t)r;
			continue;
		}
		if (r > 0) {
			len += (size_t)r;
			/* Full: drain the rest so the child can exit. */
			char sink[512];

			while (read(pfd[0], sink, sizeof(sink)) > 0)
				;
		}
		if (r < 0 && errno == EINTR)
			continue;
		break;
	}
	out[len] = 0;
	close(pfd[0]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
