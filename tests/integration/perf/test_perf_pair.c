/* SPDX-License-Identifier: MIT */
/*
 * uvnet-perf --pair, paced: two drivers through uvnetd's switch lose no
 * frame when A is paced, whatever the frame size. A 16 KB frame takes 11
 * of B's 1536-byte mergeable buffers and a 64 KB one 43: a burst of 32 is
 * more than B's 256-entry ring, and the switch drops what does not fit.
 * A paced A sends only what B's free buffers hold (a window), so every
 * frame arrives: drops are 0 exactly, received == sent. Unpaced, A does
 * not wait, and the row says so (its drops are the switch's).
 *
 * Usage: test_perf_pair UVNET_PERF UVNETD
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "util/json_read.h"

static const char *perf, *uvnetd;

/* uvnet-perf @args --json: its one test object into @d. @return exit status */
static int run_json(const char *args, struct js_doc *d)
{
	char cmd[1024], line[8192], obj[8192] = "";
	unsigned lines = 0;
	FILE *p;
	int st;

	snprintf(cmd, sizeof(cmd), "%s %s -l 1 -w 0.2 --json --uvnetd %s", perf, args, uvnetd);
	p = popen(cmd, "r");
	assert_non_null(p);
	/* The metadata line, then the test's object. */
	while (fgets(line, sizeof(line), p))
		if (lines++ == 1)
			snprintf(obj, sizeof(obj), "%s", line);
	st = pclose(p);
	assert_int_equal(lines, 2);
	if (js_parse(d, obj))
		fail_msg("not JSON (%s): %s", d->err, obj);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static double num(const struct js *o, const char *key)
{
	const struct js *v = js_get(o, key);

	assert_non_null(v);
	assert_int_equal(v->type, JS_NUM);
	return v->num;
}

static const char *str(const struct js *o, const char *key)
{
	const struct js *v = js_get(o, key);

	assert_non_null(v);
	assert_int_equal(v->type, JS_STR);
	return v->str;
}

/* A paced pair: every frame A sent reached B, and the row names the window. */
static void paced(const char *args)
{
	struct js_doc d;
	int st = run_json(args, &d);

	if (strcmp(str(d.root, "status"), "ok"))
		fail_msg("%s: %s", args, str(d.root, "reason"));
	assert_int_equal(st, 0);
	assert_string_equal(str(d.root, "topology"), "pair");
	assert_true(num(d.root, "sent") > 0);
	if (num(d.root, "drops") != 0 || num(d.root, "received") != num(d.root, "sent"))
		fail_msg("%s: sent %.0f, received %.0f, drops %.0f", args, num(d.root, "sent"),
			 num(d.root, "received"), num(d.root, "drops"));
	assert_non_null(strstr(str(d.root, "reason"), "pair flow: window"));
	js_free(&d);
}

static void paced_16k_event(void **s) { (void)s; paced("stream --pair -s 16384 -M event --rate 1"); }
static void paced_64k_event(void **s) { (void)s; paced("stream --pair -s 65536 -M event --rate 1"); }
static void paced_16k_poll(void **s) { (void)s; paced("stream --pair -s 16384 -M poll --rate 1"); }

/* Unpaced, A does not wait for B: whatever the drops, the row says whose they are. */
static void unpaced_says_so(void **s)
{
	struct js_doc d;

	(void)s;
	assert_int_equal(run_json("stream --pair -s 16384 -M event", &d), 0);
	assert_string_equal(str(d.root, "status"), "ok");
	assert_true(num(d.root, "received") == num(d.root, "sent") - num(d.root, "drops"));
	assert_non_null(strstr(str(d.root, "reason"), "pair flow: none"));
	js_free(&d);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(paced_16k_event),
		cmocka_unit_test(paced_64k_event),
		cmocka_unit_test(paced_16k_poll),
		cmocka_unit_test(unpaced_says_so),
	};

	perf = argc == 3 ? argv[1] : NULL;
	uvnetd = argc == 3 ? argv[2] : NULL;
	if (!perf) {
		fprintf(stderr, "usage: test_perf_pair UVNET_PERF UVNETD\n");
		return 2;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
