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
 * With --connect SOCK_A,SOCK_B the pair drives a switch it did not start
 * (VM-to-VM through OVS-DPDK or testpmd, bench/vm2vm.sh): here a uvnetd
 * --forward switch the test starts itself, whose own counters then say
 * what the pair's totals must be: A's frames arrived at uvnetd, uvnetd
 * delivered B's, and the frames uvnet-perf cannot account for (an external
 * switch's losses) are the drops uvnetd counted.
 *
 * Usage: test_perf_pair UVNET_PERF UVNETD
 */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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

/* ------------------------------------------------------------------ */
/* The pair against a uvnetd it did not start (--connect SOCK_A,SOCK_B). */

static struct {
	pid_t pid;
	char dir[32], a[64], b[64], out[64];
} sw;

/* uvnetd's totals after it stopped: per port, and its drops + errors over all. */
struct sw_totals {
	double a_rx, b_tx, lost;
};

static bool is_sock(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISSOCK(st.st_mode);
}

static uint64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/* uvnetd --forward switch with ports a and b, listening (or with @client
 * connecting, again and again until the sockets are there); polling with @poll. */
static int sw_start(bool poll, bool client)
{
	char pa[128], pb[128];

	snprintf(sw.dir, sizeof(sw.dir), "/tmp/uvn-extpair-XXXXXX");
	if (!mkdtemp(sw.dir))
		return -1;
	snprintf(sw.a, sizeof(sw.a), "%s/a.sock", sw.dir);
	snprintf(sw.b, sizeof(sw.b), "%s/b.sock", sw.dir);
	snprintf(sw.out, sizeof(sw.out), "%s/uvnetd.json", sw.dir);
	snprintf(pa, sizeof(pa), "vhost-user:%s,name=a%s", sw.a, client ? ",client" : "");
	snprintf(pb, sizeof(pb), "vhost-user:%s,name=b%s", sw.b, client ? ",client" : "");
	sw.pid = fork();
	if (sw.pid < 0)
		return -1;
	if (sw.pid == 0) {
		int fd = open(sw.out, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the test */
		dup2(fd, 1);
		execl(uvnetd, uvnetd, "--port", pa, "--port", pb, "--forward", "switch", "--json",
		      poll ? "--poll" : (char *)NULL, (char *)NULL);
		_exit(127);
	}
	for (uint64_t end = now_ms() + 10000; !client && (!is_sock(sw.a) || !is_sock(sw.b));) {
		if (now_ms() > end || waitpid(sw.pid, NULL, WNOHANG) == sw.pid)
			return -1;
		usleep(5000);
	}
	return 0;
}

/* A pair in event mode kicks, one polling does not (its switch must poll too). */
static int sw_start_event(void **state)
{
	(void)state;
	return sw_start(false, false);
}

static int sw_start_poll(void **state)
{
	(void)state;
	return sw_start(true, false);
}

static int sw_start_client(void **state)
{
	(void)state;
	return sw_start(false, true);
}

/* Stop uvnetd (SIGINT: it prints its totals) and read them. */
static void sw_stop(struct sw_totals *t)
{
	char line[8192], last[8192] = "";
	const struct js *p;
	struct js_doc d;
	int st;
	FILE *f;

	kill(sw.pid, SIGINT);
	for (uint64_t end = now_ms() + 10000; waitpid(sw.pid, &st, WNOHANG) != sw.pid;) {
		if (now_ms() > end)
			fail_msg("uvnetd (pid %d) ignored SIGINT for 10 s", (int)sw.pid);
		usleep(10000);
	}
	sw.pid = 0;
	f = fopen(sw.out, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "\"final\":true"))
			memcpy(last, line, sizeof(last));
	fclose(f);
	if (js_parse(&d, last))
		fail_msg("no totals from uvnetd: %s", last);
	memset(t, 0, sizeof(*t));
	for (unsigned i = 0; (p = js_at(js_get(d.root, "ports"), i)); i++) {
		const char *name = str(p, "name");

		if (!strcmp(name, "a"))
			t->a_rx = num(p, "rx_packets");
		if (!strcmp(name, "b"))
			t->b_tx = num(p, "tx_packets");
		t->lost += num(p, "drops") + num(p, "errors");
	}
	js_free(&d);
}

static int sw_cleanup(void **state)
{
	(void)state;
	if (sw.pid > 0) {
		kill(sw.pid, SIGKILL);
		waitpid(sw.pid, NULL, 0);
		sw.pid = 0;
	}
	unlink(sw.a);
	unlink(sw.b);
	unlink(sw.out);
	rmdir(sw.dir);
	return 0;
}

/* The pair through the external uvnetd: @args, then --connect A,B and its PID. */
static void ext_run(const char *args, struct js_doc *d, struct sw_totals *t)
{
	char line[512];
	int st;

	snprintf(line, sizeof(line), "%s --connect %s,%s --connect-pid %d", args, sw.a, sw.b,
		 (int)sw.pid);
	st = run_json(line, d);
	if (strcmp(str(d->root, "status"), "ok"))
		fail_msg("%s: %s", line, str(d->root, "reason"));
	assert_int_equal(st, 0);
	assert_string_equal(str(d->root, "topology"), "pair");
	assert_string_equal(str(d->root, "device"), "external");
	assert_string_equal(str(d->root, "measured_at"), "receiver");
	assert_true(num(d->root, "frames") > 0);
	assert_true(num(d->root, "received") > 0);
	/* the switch's process, read through --connect-pid */
	assert_true(num(d->root, "cpu_device") > 0);
	sw_stop(t);
	/* uvnetd took every frame A sent and gave B every frame B counted */
	assert_true(t->a_rx == num(d->root, "sent"));
	assert_true(t->b_tx == num(d->root, "received"));
	/* what the pair cannot account for is what uvnetd dropped */
	if (num(d->root, "unaccounted") != t->lost)
		fail_msg("%s: sent %.0f, received %.0f, drops %.0f, unaccounted %.0f; uvnetd lost %.0f",
			 line, num(d->root, "sent"), num(d->root, "received"), num(d->root, "drops"),
			 num(d->root, "unaccounted"), t->lost);
}

/* Paced: B received exactly what A sent, through a switch uvnet-perf did not start. */
static void ext_paced(void **s)
{
	struct sw_totals t;
	struct js_doc d;

	(void)s;
	ext_run("stream --pair -s 16384 -M event --rate 1", &d, &t);
	assert_true(num(d.root, "received") == num(d.root, "sent"));
	assert_true(num(d.root, "drops") == 0 && t.lost == 0);
	js_free(&d);
}

/* Unpaced, 1518 B, the pair and uvnetd polling: whatever uvnetd dropped is the unaccounted. */
static void ext_unpaced(void **s)
{
	struct sw_totals t;
	struct js_doc d;

	(void)s;
	ext_run("stream --pair -s 1518 -M poll", &d, &t);
	assert_true(num(d.root, "received") <= num(d.root, "sent"));
	assert_non_null(strstr(str(d.root, "reason"), "pair flow: none"));
	js_free(&d);
}

/* --listen: the pair listens, uvnetd's client ports connect to it (OVS dpdkvhostuserclient). */
static void ext_listen(void **s)
{
	struct sw_totals t;
	struct js_doc d;

	(void)s;
	ext_run("stream --pair -s 1518 -M event --listen", &d, &t);
	assert_false(is_sock(sw.a) || is_sock(sw.b)); /* the drivers removed their sockets */
	js_free(&d);
}

/* No switch at those sockets: an error that names the socket, not a hang. */
static void ext_no_switch(void **s)
{
	struct js_doc d;

	(void)s;
	assert_int_equal(run_json("stream --pair --connect /nonexistent/a.sock,/nonexistent/b.sock",
				  &d),
			 1);
	assert_string_equal(str(d.root, "status"), "error");
	assert_non_null(strstr(str(d.root, "reason"), "no vhost-user socket at /nonexistent/a.sock"));
	js_free(&d);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(paced_16k_event),
		cmocka_unit_test(paced_64k_event),
		cmocka_unit_test(paced_16k_poll),
		cmocka_unit_test(unpaced_says_so),
		cmocka_unit_test_setup_teardown(ext_paced, sw_start_event, sw_cleanup),
		cmocka_unit_test_setup_teardown(ext_unpaced, sw_start_poll, sw_cleanup),
		cmocka_unit_test_setup_teardown(ext_listen, sw_start_client, sw_cleanup),
		cmocka_unit_test(ext_no_switch),
	};

	perf = argc == 3 ? argv[1] : NULL;
	uvnetd = argc == 3 ? argv[2] : NULL;
	if (!perf) {
		fprintf(stderr, "usage: test_perf_pair UVNET_PERF UVNETD\n");
		return 2;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
