/* SPDX-License-Identifier: MIT */
/* Unix sockets for vhost-user: server (listen/accept) and client (connect). */
#include <errno.h>
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

static int connect_to(const struct sockaddr_un *sa)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
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
		fd = connect_to(&sa);
		if (fd >= 0) {
			close(fd);
			return -EADDRINUSE;
		}
		unlink(path);
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
