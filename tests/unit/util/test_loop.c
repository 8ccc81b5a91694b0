/* SPDX-License-Identifier: MIT */
/*
 * The event loop's light-handler check: uvnetd runs a round without
 * parking its workers only when every ready event belongs to a handler
 * marked light.
 */
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ready_light),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
