/* SPDX-License-Identifier: MIT */
/* Unix sockets for vhost-user: server (listen/accept) and client (connect). */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "backend.h"

static int make_addr(const char *path, struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (!path || !*path)
		return -EINVAL;
	if (strlen(path) >= sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	strcpy(sa->sun_path, path);
	return 0;
}

/*
 * Connect without waiting: a unix listener whose backlog is full would
 * block a blocking connect() until the peer accepts, and the peer is not
 * ours to wait on. Linux fails a non-blocking one with EAGAIN instead
 * (unix stream sockets never return EINPROGRESS). The connected socket is
 * handed back blocking, as callers use it.
 */
static int connect_to(const struct sockaddr_un *sa)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int err;

	if (fd < 0)
		return -errno;
	if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0 &&
	    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) == 0)
		return fd;
	err = errno == EWOULDBLOCK ? -EAGAIN : -errno;
	close(fd);
	return err;
}

/*
 * Is the socket file at @sa's path stale? Only a refused connection says
 * nobody listens there. A listener that is busy (EAGAIN) or that we may
 * not reach (EACCES...) is someone's. @return 0 if stale (removed),
 * 1 if gone already, -EADDRINUSE or another -errno if not ours to remove
 */
static int remove_stale(const struct sockaddr_un *sa)
{
	int fd = connect_to(sa);

	if (fd >= 0) {
		close(fd);
		return -EADDRINUSE;
	}
	if (fd == -EAGAIN)
		return -EADDRINUSE;
	if (fd == -ENOENT)
		return 1;
	if (fd != -ECONNREFUSED)
		return fd;
	return unlink(sa->sun_path) && errno != ENOENT ? -errno : 0;
}

int uvn_vu_listen(const char *path)
{
	struct sockaddr_un sa;
	struct stat st;
	int fd, ret = make_addr(path, &sa);

	if (ret)
		return ret;
	/* A socket file left by a dead process is removed; one that still
	 * accepts connections belongs to someone: leave it. Other files are
	 * never removed. */
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return -EEXIST;
		ret = remove_stale(&sa);
		if (ret < 0)
			return ret;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 16) < 0) {
		ret = -errno;
		close(fd);
		return ret;
	}
	return fd;
}

int uvn_vu_accept(int lfd)
{
	int fd;

	do {
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	} while (fd < 0 && errno == EINTR);
	return fd < 0 ? -errno : fd;
}

int uvn_vu_connect(const char *path)
{
	struct sockaddr_un sa;
	int ret = make_addr(path, &sa);

	return ret ? ret : connect_to(&sa);
}
