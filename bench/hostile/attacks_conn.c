/* SPDX-License-Identifier: MIT */
/*
 * Attacks on the listening socket itself: connections, not messages.
 * Taking a frontend in (and losing it) is control work uvnetd does with
 * its workers parked, so how often a peer can make it do that is what it
 * costs the other ports.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "hostile/hfe.h"

/* A connection to @path, not waiting when the backlog is full.
 * @return the fd, or -errno */
static int dial(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) && errno != EINPROGRESS) {
		int e = errno;

		close(fd);
		return -e;
	}
	return fd;
}

/* Connect and hang up again and again, @hello (a GET_FEATURES header) sent
 * first when asked; a full backlog (the backend accepts in step) waits a
 * millisecond. */
static void churn(struct hfe *h, const char *path, bool hello, double end)
{
	/* request 1 (GET_FEATURES), flags 1 (version 1), no payload */
	static const uint32_t get_features[3] = { 1, 1, 0 };

	while (hfe_running(end)) {
		int fd = dial(path);

		if (fd < 0) {
			h->errs += fd != -EAGAIN;
			hfe_sleep_ms(1);
			continue;
		}
		if (hello && write(fd, get_features, sizeof(get_features)) < 0)
			h->errs++;
		close(fd);
		h->ops++;
	}
}

/* A session of our own set up, then a second frontend connecting and
 * hanging up without pause: each is refused, none may park the workers. */
int attack_accept_flood(struct hfe *h, const struct hfe_opts *o, double end)
{
	int r = hfe_start(h, o->path, 0, 8u << 20, o->qsize ? o->qsize : 256);

	if (r)
		return r;
	churn(h, o->path, false, end);
	if (!hfe_alive(h))
		h->note = "our own session was dropped";
	return 0;
}

/* No session kept: connect, ask GET_FEATURES, hang up, again. Each one is
 * taken in and lost, with the workers parked both times. */
int attack_reconnect_flood(struct hfe *h, const struct hfe_opts *o, double end)
{
	churn(h, o->path, true, end);
	return 0;
}
