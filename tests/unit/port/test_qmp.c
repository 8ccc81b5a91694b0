/* SPDX-License-Identifier: MIT */
/*
 * The QMP receive-filter client against a scripted QEMU on a unix socket:
 * the handshake, the state applied, an event answered with a new query,
 * and a peer that misbehaves costing only its session (filter open).
 */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "net/device/filter.h"
#include "port/qmp.h"
#include "util/loop.h"
#include "vhost_user/backend.h"

static const uint8_t own[6] = { 0x52, 0x54, 0, 0x12, 0x34, 0x56 };
static const uint8_t listed[6] = { 0x02, 0, 0, 0, 0, 0x02 };
static const uint8_t other[6] = { 0x02, 0, 0, 0, 0, 0x03 };
static const uint8_t mcast[6] = { 0x01, 0x00, 0x5e, 0, 0, 0x01 };

struct fx {
	char path[64];
	int lfd, sfd;
	struct uvn_loop *loop;
	struct uvn_rx_filter f;
	struct uvn_qmp *q;
};

static void run(struct fx *x)
{
	while (uvn_loop_run_once(x->loop, 0) > 0)
		;
}

/* The next line the client sent (within 5 s). */
static void expect(struct fx *x, const char *what)
{
	char line[512];
	size_t n = 0;

	run(x);
	while (n < sizeof(line) - 1) {
		struct pollfd p = { .fd = x->sfd, .events = POLLIN };

		assert_int_equal(poll(&p, 1, 5000), 1);
		assert_int_equal(read(x->sfd, line + n, 1), 1);
		if (line[n++] == '\n')
			break;
	}
	line[n] = 0;
	if (!strstr(line, what))
		fail_msg("client sent '%s', expected '%s'", line, what);
}

static void tell(struct fx *x, const char *msg)
{
	assert_int_equal(write(x->sfd, msg, strlen(msg)), (ssize_t)strlen(msg));
	run(x);
}

static void accept_client(struct fx *x)
{
	struct pollfd p = { .fd = x->lfd, .events = POLLIN };

	assert_int_equal(poll(&p, 1, 5000), 1);
	x->sfd = uvn_vu_accept(x->lfd);
	assert_true(x->sfd >= 0);
}

#define INFO(promisc, uni, multi, ovf) \
	"{\"name\":\"nic0\",\"promiscuous\":" promisc ",\"multicast\":\"" multi "\"," \
	"\"unicast\":\"" uni "\",\"vlan\":\"normal\",\"broadcast-allowed\":true," \
	"\"multicast-overflow\":false,\"unicast-overflow\":" ovf "," \
	"\"main-mac\":\"52:54:00:12:34:56\",\"vlan-table\":[]," \
	"\"unicast-table\":[\"02:00:00:00:00:02\"],\"multicast-table\":[\"01:00:5e:00:00:01\"]}"

static int setup(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));

	snprintf(x->path, sizeof(x->path), "/tmp/uvn-test-qmp-%d.sock", (int)getpid());
	unlink(x->path);
	x->lfd = uvn_vu_listen(x->path);
	assert_true(x->lfd >= 0);
	assert_int_equal(uvn_loop_create(&x->loop), 0);
	assert_int_equal(uvn_qmp_create(x->loop, x->path, "nic0", &x->f, "test", &x->q), 0);
	accept_client(x);
	/* the handshake, then the first query */
	tell(x, "{\"QMP\": {\"version\": {}, \"capabilities\": []}}\n");
	expect(x, "\"qmp_capabilities\"");
	tell(x, "{\"return\": {}}\n");
	expect(x, "{\"execute\":\"query-rx-filter\",\"arguments\":{\"name\":\"nic0\"}}");
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct fx *x = *state;

	uvn_qmp_destroy(x->q);
	uvn_loop_destroy(x->loop);
	close(x->sfd);
	close(x->lfd);
	unlink(x->path);
	free(x);
	return 0;
}

static void test_state_and_events(void **state)
{
	struct fx *x = *state;
	struct uvn_qmp_stats st;

	/* open until told otherwise */
	assert_true(uvn_rx_filter_pass(&x->f, other));
	tell(x, "{\"return\": [" INFO("false", "normal", "normal", "false") "]}\n");
	assert_true(uvn_rx_filter_pass(&x->f, own));
	assert_true(uvn_rx_filter_pass(&x->f, listed));
	assert_false(uvn_rx_filter_pass(&x->f, other));
	assert_true(uvn_rx_filter_pass(&x->f, mcast));
	/* another NIC's change is not ours; ours asks again */
	tell(x, "{\"event\": \"NIC_RX_FILTER_CHANGED\", \"data\": {\"name\": \"nic1\"}}\n");
	tell(x, "{\"event\": \"NIC_RX_FILTER_CHANGED\", \"data\": {\"name\": \"nic0\", \"path\": \"/x\"}}\n");
	expect(x, "query-rx-filter");
	tell(x, "{\"timestamp\": {}, \"event\": \"OTHER\"}\n{\"return\": [" INFO("true", "normal", "normal", "false") "]}\n");
	assert_true(uvn_rx_filter_pass(&x->f, other));
	/* a unicast table that overflowed lets unicast through */
	tell(x, "{\"return\": [" INFO("false", "normal", "none", "true") "]}\n");
	assert_true(uvn_rx_filter_pass(&x->f, other));
	assert_false(uvn_rx_filter_pass(&x->f, mcast));
	uvn_qmp_stats(x->q, &st);
	assert_int_equal(st.updates, 3);
	assert_int_equal(st.errors, 0);
	assert_int_equal(st.connects, 1);
}

/* A malformed answer ends the session: filter open, counted, and the
 * client calls again (the timer, within its second). */
static void test_bad_answer_hangs_up(void **state)
{
	struct fx *x = *state;
	struct uvn_qmp_stats st;
	char c;

	tell(x, "{\"return\": [" INFO("false", "normal", "normal", "false") "]}\n");
	assert_false(uvn_rx_filter_pass(&x->f, other));
	tell(x, "{\"return\": [{\"name\":\"nic0\",\"promiscuous\":\"yes\"}]}\n");
	assert_true(uvn_rx_filter_pass(&x->f, other));
	uvn_qmp_stats(x->q, &st);
	assert_int_equal(st.errors, 1);
	assert_int_equal(read(x->sfd, &c, 1), 0);
	close(x->sfd);
	/* back within the retry period */
	for (int i = 0; i < 30 && st.connects < 2; i++) {
		uvn_loop_run_once(x->loop, 100);
		uvn_qmp_stats(x->q, &st);
	}
	assert_int_equal(st.connects, 2);
	accept_client(x);
	tell(x, "{\"QMP\": {}}\n");
	expect(x, "qmp_capabilities");
}

static void test_garbage_and_long_lines(void **state)
{
	struct fx *x = *state;
	static char big[70000];
	struct uvn_qmp_stats st;
	char c;

	tell(x, "{\"return\": [" INFO("false", "normal", "normal", "false") "]}\n");
	memset(big, 'x', sizeof(big));
	/* not a line within 64 KB: the session ends, the filter opens */
	assert_true(write(x->sfd, big, sizeof(big)) > 0);
	run(x);
	assert_true(uvn_rx_filter_pass(&x->f, other));
	uvn_qmp_stats(x->q, &st);
	assert_int_equal(st.errors, 1);
	/* closed (with our bytes unread: reset) */
	assert_true(read(x->sfd, &c, 1) <= 0);
}

static void test_error_reply_and_not_json(void **state)
{
	struct fx *x = *state;
	struct uvn_qmp_stats st;

	tell(x, "{\"error\": {\"class\": \"GenericError\", \"desc\": \"no such NIC\"}}\n");
	uvn_qmp_stats(x->q, &st);
	assert_int_equal(st.errors, 1);
	assert_true(uvn_rx_filter_pass(&x->f, other));
}

static void test_bad_names(void **state)
{
	struct uvn_rx_filter f;
	struct uvn_qmp *q;

	(void)state;
	assert_int_equal(uvn_qmp_create(NULL, "/tmp/x", "ni\"c", &f, "t", &q), -EINVAL);
	assert_int_equal(uvn_qmp_create(NULL, "/tmp/x", "0nic", &f, "t", &q), -EINVAL);
	assert_int_equal(uvn_qmp_create(NULL, "/tmp/x", "", &f, "t", &q), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_state_and_events, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_answer_hangs_up, setup, teardown),
		cmocka_unit_test_setup_teardown(test_garbage_and_long_lines, setup, teardown),
		cmocka_unit_test_setup_teardown(test_error_reply_and_not_json, setup, teardown),
		cmocka_unit_test(test_bad_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
