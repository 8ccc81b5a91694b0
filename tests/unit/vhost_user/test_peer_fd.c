/* SPDX-License-Identifier: MIT */
/*
 * vu_peer_eventfd: where the protocol means an eventfd (kick, call, error,
 * log), only an eventfd passes, whatever else shares its anonymous inode,
 * and it leaves non-blocking. The inode shortcut (one fstat before the
 * /proc lookup) must refuse exactly what the lookup refuses, and keep no
 * fd of its own.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cmocka.h>

#include "vhost_user/internal.h"

static int count_fds(void)
{
	int n = 0;

	for (int fd = 0; fd < 4096; fd++)
		n += fcntl(fd, F_GETFD) >= 0;
	return n;
}

/* (pipes and sockets: test_backend_hostile, through the backend) */
enum kind { TIMERFD, SIGNALFD, EPOLLFD, MEMFD, DEVNULL, OPATH, KINDS };
static const char *const kind_name[KINDS] = { "timerfd", "signalfd", "epoll", "memfd",
					      "/dev/null", "O_PATH fd" };

static int make_fd(enum kind k)
{
	int fd = -1;
	sigset_t mask;

	switch (k) {
	case TIMERFD:
		fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
		break;
	case SIGNALFD:
		sigemptyset(&mask);
		sigaddset(&mask, SIGUSR2);
		fd = signalfd(-1, &mask, SFD_CLOEXEC);
		break;
	case EPOLLFD:
		fd = epoll_create1(EPOLL_CLOEXEC);
		break;
	case MEMFD:
		fd = memfd_create("not-an-eventfd", MFD_CLOEXEC);
		break;
	case DEVNULL:
		fd = open("/dev/null", O_RDWR | O_CLOEXEC);
		break;
	case OPATH:
		fd = open("/proc/self/fd", O_PATH | O_CLOEXEC);
		break;
	default:
		break;
	}
	assert_true(fd >= 0);
	return fd;
}

/* Every kind that is not an eventfd is refused, and left as it was. */
static void refuse_all(void)
{
	for (enum kind k = 0; k < KINDS; k++) {
		int fd = make_fd(k), fl = fcntl(fd, F_GETFL);

		print_message("%s\n", kind_name[k]);
		assert_int_equal(vu_peer_eventfd(fd), -EBADF);
		assert_int_equal(fcntl(fd, F_GETFL), fl);
		close(fd);
	}
}

static void test_not_eventfds_first(void **state)
{
	(void)state;
	/* First in this process: the first check learns the inode. */
	refuse_all();
}

static void test_eventfds(void **state)
{
	int fds0 = count_fds();

	(void)state;
	for (int round = 0; round < 2; round++) {
		int blocking = eventfd(0, EFD_CLOEXEC), nonblocking = eventfd(3, EFD_NONBLOCK);
		uint64_t v = 0;

		assert_true(blocking >= 0 && nonblocking >= 0);
		assert_int_equal(vu_peer_eventfd(blocking), 0);
		assert_true(fcntl(blocking, F_GETFL) & O_NONBLOCK);
		assert_int_equal(vu_peer_eventfd(nonblocking), 0);
		/* checked, not consumed */
		assert_int_equal(read(nonblocking, &v, sizeof(v)), sizeof(v));
		assert_int_equal(v, 3);
		close(blocking);
		close(nonblocking);
	}
	/* The shortcut's own eventfds are gone. */
	assert_int_equal(count_fds(), fds0);
}

static void test_not_eventfds_again(void **state)
{
	(void)state;
	/* Again, with real eventfds checked in between. */
	refuse_all();
}

static void test_not_open(void **state)
{
	int fd = eventfd(0, EFD_CLOEXEC);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(vu_peer_eventfd(fd), -EBADF);
	assert_int_equal(vu_peer_eventfd(-1), -EBADF);
	assert_int_equal(vu_peer_eventfd(1 << 20), -EBADF);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_not_eventfds_first),
		cmocka_unit_test(test_eventfds),
		cmocka_unit_test(test_not_eventfds_again),
		cmocka_unit_test(test_not_open),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
