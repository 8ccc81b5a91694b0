/* SPDX-License-Identifier: MIT */
/*
 * The event loop's light-handler check: uvnetd runs a round without
 * parking its workers only when every ready event belongs to a handler
 * marked light. Registrations: a handler without fn is never registered
 * nor called; a removal by a number that was closed or now names another
 * file fails loudly (returned and counted), and the registrant's own dup()
 * is what makes removal work whatever happens to the original fd.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cmocka.h>

#include "util/loop.h"

static unsigned ran;

static void on_event(struct uvn_handler *h, uint32_t events)
{
	uint64_t v;

	(void)events;
	if (read(h->fd, &v, sizeof(v)) == sizeof(v))
		ran++;
}

static void fire(int fd)
{
	uint64_t one = 1;

	assert_int_equal(write(fd, &one, sizeof(one)), sizeof(one));
}

static void test_ready_light(void **state)
{
	struct uvn_handler light = { .fd = eventfd(0, EFD_NONBLOCK), .fn = on_event, .light = true };
	struct uvn_handler heavy = { .fd = eventfd(0, EFD_NONBLOCK), .fn = on_event };
	struct uvn_loop *l;

	(void)state;
	assert_true(light.fd >= 0 && heavy.fd >= 0);
	assert_int_equal(uvn_loop_create(&l), 0);
	assert_int_equal(uvn_loop_add(l, &light, EPOLLIN), 0);
	assert_int_equal(uvn_loop_add(l, &heavy, EPOLLIN), 0);

	fire(light.fd);
	assert_int_equal(uvn_loop_wait(l, 1000), 1);
	assert_true(uvn_loop_ready_light(l));
	assert_int_equal(uvn_loop_dispatch(l), 1);

	fire(heavy.fd);
	assert_int_equal(uvn_loop_wait(l, 1000), 1);
	assert_false(uvn_loop_ready_light(l));
	assert_int_equal(uvn_loop_dispatch(l), 1);

	fire(light.fd);
	fire(heavy.fd);
	assert_int_equal(uvn_loop_wait(l, 1000), 2);
	assert_false(uvn_loop_ready_light(l));
	assert_int_equal(uvn_loop_dispatch(l), 2);
	assert_int_equal(ran, 4);

	uvn_loop_del(l, &light);
	uvn_loop_del(l, &heavy);
	uvn_loop_destroy(l);
	close(light.fd);
	close(heavy.fd);
}

/* A handler with no fn is refused, so no event can call NULL. */
static void test_null_fn_refused(void **state)
{
	struct uvn_handler h = { .fd = eventfd(0, EFD_NONBLOCK) };
	struct uvn_handler nofd = { .fd = -1, .fn = on_event };
	struct uvn_loop *l;

	(void)state;
	assert_true(h.fd >= 0);
	assert_int_equal(uvn_loop_create(&l), 0);
	assert_int_equal(uvn_loop_add(l, &h, EPOLLIN), -EINVAL);
	assert_int_equal(uvn_loop_add(l, &nofd, EPOLLIN), -EINVAL);
	fire(h.fd);
	assert_int_equal(uvn_loop_run_once(l, 0), 0);
	uvn_loop_destroy(l);
	close(h.fd);
}

/* A handler whose fn was cleared while registered (its owner rebuilt it):
 * its events are dropped and counted, not called. */
static void test_cleared_fn_not_called(void **state)
{
	struct uvn_handler h = { .fd = eventfd(0, EFD_NONBLOCK), .fn = on_event };
	struct uvn_loop_stats st;
	struct uvn_loop *l;

	(void)state;
	assert_true(h.fd >= 0);
	assert_int_equal(uvn_loop_create(&l), 0);
	assert_int_equal(uvn_loop_add(l, &h, EPOLLIN), 0);
	h.fn = NULL;
	fire(h.fd);
	assert_int_equal(uvn_loop_run_once(l, 0), 0);
	uvn_loop_stats(l, &st);
	assert_int_equal(st.stray, 1);
	h.fn = on_event;
	assert_int_equal(uvn_loop_del(l, &h), 0);
	uvn_loop_destroy(l);
	close(h.fd);
}

/* Removal by a closed number, then by a reused one: epoll cannot find the
 * registration, which lives on while another copy of the file is open.
 * The failure is returned and counted, never silent. */
static void test_del_after_close(void **state)
{
	struct uvn_handler h = { .fd = eventfd(0, EFD_NONBLOCK), .fn = on_event };
	struct uvn_handler h2 = { .fn = on_event };
	struct uvn_loop_stats st;
	struct uvn_loop *l;
	int peer, num = h.fd;

	(void)state;
	assert_true(h.fd >= 0);
	assert_int_equal(uvn_loop_create(&l), 0);
	assert_int_equal(uvn_loop_add(l, &h, EPOLLIN), 0);
	peer = dup(h.fd); /* the frontend's copy */
	assert_true(peer >= 0);
	close(h.fd);
	assert_int_equal(uvn_loop_del(l, &h), -EBADF);
	uvn_loop_stats(l, &st);
	assert_int_equal(st.del_failed, 1);

	/* The number names another file now. */
	h2.fd = eventfd(0, EFD_NONBLOCK);
	assert_int_equal(h2.fd, num);
	assert_int_equal(uvn_loop_del(l, &h2), -ENOENT);
	uvn_loop_stats(l, &st);
	assert_int_equal(st.del_failed, 2);

	/* What the failure means: the old registration still fires. The
	 * owner clears fn before letting go of the handler. */
	h.fn = NULL;
	fire(peer);
	assert_int_equal(uvn_loop_run_once(l, 0), 0);
	uvn_loop_stats(l, &st);
	assert_int_equal(st.stray, 1);
	uvn_loop_destroy(l);
	close(peer);
	close(h2.fd);
}

/* The pattern uvnetd's workers use: register a dup() you own. Whatever the
 * original's owner does (close it, reuse the number), removing by the dup
 * works, and after it no event comes. */
static void test_del_own_dup(void **state)
{
	int orig = eventfd(0, EFD_NONBLOCK), peer = dup(orig);
	struct uvn_handler h = { .fd = dup(orig), .fn = on_event };
	struct uvn_loop *l;
	unsigned before = ran;

	(void)state;
	assert_true(orig >= 0 && peer >= 0 && h.fd >= 0);
	assert_int_equal(uvn_loop_create(&l), 0);
	assert_int_equal(uvn_loop_add(l, &h, EPOLLIN), 0);
	close(orig);
	fire(peer);
	assert_int_equal(uvn_loop_run_once(l, 0), 1);
	assert_int_equal(ran, before + 1);
	assert_int_equal(uvn_loop_del(l, &h), 0);
	close(h.fd);
	fire(peer);
	assert_int_equal(uvn_loop_run_once(l, 0), 0);
	uvn_loop_destroy(l);
	close(peer);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ready_light),
		cmocka_unit_test(test_null_fn_refused),
		cmocka_unit_test(test_cleared_fn_not_called),
		cmocka_unit_test(test_del_after_close),
		cmocka_unit_test(test_del_own_dup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
