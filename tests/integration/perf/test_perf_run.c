/* SPDX-License-Identifier: MIT */
/*
 * uvnet-perf against uvnetd, short runs of every test type: each JSON
 * object matches the schema, and the numbers make sense as numbers (never
 * as speeds): what arrived is what was sent minus the reported drops, CPU
 * is a fraction of one core, rr latencies are positive and ordered, the
 * per-interval records add up to the measured window, a row over its
 * physical limit says so, every row names what its receiver did with the
 * payload (stream: every byte reaches it; pps: a descriptor rate). Also:
 * the metadata line comes first, n/a and error rows are still valid
 * objects, a bad --interval is refused, the limits suite has its cold copy
 * row, and Ctrl-C leaves no process or file behind.
 *
 * Usage: test_perf_run UVNET_PERF UVNETD
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <uvnet/version.h>

#include "util/json_read.h"
#include "schema.h"

static const char *perf, *uvnetd;

#define SHORT "-l 1 -w 0.2"

/* Run uvnet-perf with @args (and --json if @json); its stdout in @out. @return exit status */
static int run_as(const char *args, bool json, char *out, size_t n)
{
	char cmd[1024];
	size_t len = 0;
	FILE *p;
	int st;

	snprintf(cmd, sizeof(cmd), "%s %s%s --uvnetd %s", perf, args, json ? " --json" : "",
		 uvnetd);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (len < n - 1 && fgets(out + len, (int)(n - len), p))
		len += strlen(out + len);
	out[len] = 0;
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int run(const char *args, char *out, size_t n)
{
	return run_as(args, true, out, n);
}

static double metadata_interval;

/* The first line: what ran where, this build and this machine. */
static void metadata(const struct js *o)
{
	const struct js *m = js_get(o, "metadata"), *a;
	struct utsname u;
	bool json = false;

	assert_int_equal(uname(&u), 0);
	assert_string_equal(js_get(js_get(m, "kernel"), "release")->str, u.release);
	assert_string_equal(js_get(js_get(m, "kernel"), "machine")->str, u.machine);
	assert_true(js_num(js_get(js_get(m, "cpu"), "count"), 0) == (double)sysconf(_SC_NPROCESSORS_ONLN));
	a = js_get(m, "command_line")->child;
	assert_string_equal(a->str, perf);
	for (; a; a = a->next)
		json |= !strcmp(a->str, "--json");
	assert_true(json);
	metadata_interval = js_num(js_get(m, "interval_s"), 0);
}

/*
 * The metadata line, then objects that pass the schema (intervals adding
 * up included); @return how many test objects.
 */
static unsigned each_object(char *out, bool suite, void (*check)(const struct js *o))
{
	unsigned n = 0;
	bool first = true;

	for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
		struct js_doc d;
		const char *bad;

		if (js_parse(&d, line))
			fail_msg("not JSON (%s): %s", d.err, line);
		if (first) {
			bad = perf_metadata_check(d.root, UVN_VERSION_STRING);
			if (bad)
				fail_msg("metadata: %s in %s", bad, line);
			metadata(d.root);
			js_free(&d);
			first = false;
			continue;
		}
		bad = perf_schema_check(d.root, suite);
		if (bad)
			fail_msg("schema: %s in %s", bad, line);
		if (check)
			check(d.root);
		js_free(&d);
		n++;
	}
	return n;
}

static double num(const struct js *o, const char *key)
{
	const struct js *v = js_get(o, key);

	assert_non_null(v);
	return v->type == JS_NUM ? v->num : NAN;
}

static void sane(const struct js *o)
{
	const struct js *status = js_get(o, "status");
	const char *test = js_get(o, "test")->str;

	if (strcmp(status->str, "ok"))
		fail_msg("%s %s: %s: %s", test, js_get(o, "direction")->str, status->str,
			 js_get(o, "reason")->str);
	/* Counted on both sides, after the drain: nothing unaccounted for. */
	assert_true(num(o, "received") > 0);
	assert_true(num(o, "unaccounted") == 0);
	assert_true(num(o, "received") == num(o, "sent") - num(o, "drops"));
	assert_true(num(o, "cpu_driver") >= 0 && num(o, "cpu_driver") <= 1);
	assert_true(num(o, "cpu_device") >= 0 && num(o, "cpu_device") <= 1);
	assert_true(num(o, "pps") > 0 && num(o, "gbps") > 0);
	assert_true(num(o, "notifications_per_s") >= 0);
	assert_string_equal(js_get(o, "measured_at")->str, "receiver");
	/* Never silently over the limit: the flag is the fraction's. */
	if (js_get(o, "limit_fraction")->type == JS_NUM) {
		assert_int_equal(js_get(o, "over_limit")->type, JS_BOOL);
		assert_true(js_get(o, "over_limit")->b == (num(o, "limit_fraction") > 1));
	} else {
		assert_int_equal(js_get(o, "over_limit")->type, JS_NULL);
	}
	if (!strcmp(test, "rr")) {
		const struct js *lat = js_get(o, "latency_us");

		assert_int_equal(lat->type, JS_OBJ);
		assert_true(num(lat, "p50") > 0);
		assert_true(num(o, "transactions_per_s") > 0);
	} else {
		assert_int_equal(js_get(o, "latency_us")->type, JS_NULL);
	}
}

static const char *want_touched;

static void sane_touched(const struct js *o)
{
	sane(o);
	assert_string_equal(js_get(o, "touched")->str, want_touched);
}

/*
 * One test, and what its receiver does with the payload: uvnetd's sink
 * reads every byte of a stream, drops pps frames unread (those below
 * --zerocopy-min, 256 B, it copied to take them), writes every byte it
 * sends into the driver's buffers; the driver reads them with --dirty.
 */
static void one(const char *args, const char *touched)
{
	char out[8192], cmd[512];
	int st;

	snprintf(cmd, sizeof(cmd), "%s %s", args, SHORT);
	st = run(cmd, out, sizeof(out));
	want_touched = touched;
	/* The object first: a failed test says why in its reason. */
	assert_int_equal(each_object(out, false, sane_touched), 1);
	assert_int_equal(st, 0);
}

#define READ "payload read"
#define COPIED "payload copied"
static void stream_tx(void **s) { (void)s; one("stream -s 64", READ); }
static void stream_rx(void **s) { (void)s; one("stream -d rx -s 1518", COPIED); }
static void stream_tso(void **s) { (void)s; one("stream -s 65535", READ); }
static void stream_rx_big(void **s) { (void)s; one("stream -d rx -s 65535 -m big", COPIED); }
static void stream_event(void **s) { (void)s; one("stream -s 1518 -M event", READ); }
static void stream_packed(void **s) { (void)s; one("stream -d rx -r packed -m small", COPIED); }
static void stream_dirty(void **s) { (void)s; one("stream -s 4096 --dirty", READ); }
static void stream_rx_dirty(void **s) { (void)s; one("stream -d rx -s 4096 --dirty", READ); }
static void pps_tx(void **s) { (void)s; one("pps", COPIED); }
static void pps_tx_big(void **s) { (void)s; one("pps -s 4096", "descriptors only"); }
static void pps_rx_segs(void **s) { (void)s; one("pps -d rx", COPIED); }
static void pps_segs(void **s) { (void)s; one("pps --segs 2 --desc-cache off", COPIED); }
static void rr_poll(void **s) { (void)s; one("rr", COPIED); }
static void rr_event(void **s) { (void)s; one("rr -M event -s 1518", COPIED); }
static void pair_stream(void **s) { (void)s; one("stream --pair -s 4096 -M event", COPIED); }
static void pair_rr(void **s) { (void)s; one("rr --pair -M event", COPIED); }
static void queues(void **s) { (void)s; one("stream -Q 2 -s 256", READ); }

/* --rate is a ceiling: the receiver never sees more than the sender was let send. */
static void paced(const struct js *o)
{
	sane(o);
	assert_true(num(o, "gbps") <= 0.5 * 1.1);
}

static void pair_paced(void **s)
{
	char out[8192], cmd[512];

	(void)s;
	snprintf(cmd, sizeof(cmd), "stream --pair -s 4096 -M event --rate 0.5 %s", SHORT);
	assert_int_equal(run(cmd, out, sizeof(out)), 0);
	assert_int_equal(each_object(out, false, paced), 1);
}

static unsigned n_intervals;

static void counted_intervals(const struct js *o)
{
	sane(o);
	n_intervals = 0;
	for (const struct js *r = js_get(o, "intervals")->child; r; r = r->next)
		n_intervals++;
}

/* --interval sets the records' length; a value out of range is refused, naming it. */
static void intervals_and_metadata(void **s)
{
	char out[8192];

	(void)s;
	assert_int_equal(run("stream -d rx -s 1518 -l 2 -w 0.2 -i 0.5", out, sizeof(out)), 0);
	assert_int_equal(each_object(out, false, counted_intervals), 1);
	assert_true(metadata_interval == 0.5);
	/* 4 by the clock; at least the end and one sample in between on a loaded machine */
	assert_true(n_intervals >= 2);
	assert_int_equal(run("rr -l 1 -w 0.2 --interval 0.25", out, sizeof(out)), 0);
	assert_int_equal(each_object(out, false, counted_intervals), 1);
	assert_int_equal(run("stream -i 0.1 " SHORT, out, sizeof(out)), 2);
	assert_string_equal(out, ""); /* no metadata, nothing ran */
}

static void na_is_an_object(const struct js *o)
{
	assert_string_equal(js_get(o, "status")->str, "n/a");
	assert_true(strlen(js_get(o, "reason")->str) > 0);
	assert_int_equal(js_get(o, "pps")->type, JS_NULL);
	assert_int_equal(js_get(o, "deferred_alloc")->type, JS_NULL);
}

static void error_is_an_object(const struct js *o)
{
	assert_string_equal(js_get(o, "status")->str, "error");
	assert_non_null(strstr(js_get(o, "reason")->str, "no-such.sock"));
}

static void not_available_and_errors(void **s)
{
	char out[8192];

	(void)s;
	/* Decided before anything starts: no DPDK needed. */
	assert_int_equal(run("rr --driver dpdk " SHORT, out, sizeof(out)), 0);
	assert_int_equal(each_object(out, false, na_is_an_object), 1);
	assert_int_equal(run("stream -c /nonexistent/no-such.sock " SHORT, out, sizeof(out)), 1);
	assert_int_equal(each_object(out, false, error_is_an_object), 1);
}

static void default_suite_short(void **s)
{
	char out[32768];

	(void)s;
	assert_int_equal(run("-l 0.5 -w 0.1", out, sizeof(out)), 0);
	/* pps tx/rx, stream tx/rx at three sizes, rr */
	assert_int_equal(each_object(out, false, sane), 9);
}

/* The text table names what each row's receiver touched, and says what that means. */
static void table_says_what_was_touched(void **s)
{
	char out[8192];

	(void)s;
	assert_int_equal(run_as("stream -s 1518 -q " SHORT, false, out, sizeof(out)), 0);
	assert_non_null(strstr(out, " touched "));
	assert_non_null(strstr(out, "  payload read  "));
	assert_non_null(strstr(out, "\n# touched: "));
	assert_int_equal(run_as("pps -s 4096 -q " SHORT, false, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "  descriptors only  "));
}

static double member(const struct js *o, const char *obj, const char *key)
{
	const struct js *v = js_get(js_get(o, obj), key);

	assert_non_null(v);
	assert_int_equal(v->type, JS_NUM);
	return v->num;
}

/* --suite limits: the warm copy rows and, next to them, the cold ones. */
static void limits_cold_copy(void **s)
{
	char out[4096], *line;
	struct js_doc d;
	const struct js *llc;
	double buf;

	(void)s;
	assert_int_equal(run("--suite limits", out, sizeof(out)), 0);
	line = strchr(out, '\n');
	assert_non_null(line);
	assert_int_equal(js_parse(&d, line + 1), 0);
	assert_string_equal(js_get(d.root, "test")->str, "limits");
	assert_true(member(d.root, "memcpy_gbps", "64") > 0);
	assert_true(member(d.root, "memcpy_gbps", "1518") > 0);
	assert_true(member(d.root, "memcpy_gbps", "65536") > 0);
	assert_true(member(d.root, "cold_memcpy_gbps", "1518") > 0);
	assert_true(member(d.root, "cold_memcpy_gbps", "16384") > 0);
	assert_true(member(d.root, "cold_memcpy_gbps", "65536") > 0);
	/* Far past the last-level cache, whatever its size. */
	buf = js_num(js_get(d.root, "cold_buffer_bytes"), 0);
	llc = js_get(d.root, "llc_bytes");
	assert_true(buf >= 128.0 * (1 << 20));
	if (llc->type == JS_NUM)
		assert_true(buf >= 4 * llc->num || buf >= 1024.0 * (1 << 20));
	else
		assert_int_equal(llc->type, JS_NULL);
	js_free(&d);
}

static void seeds_schema(const struct js *o)
{
	assert_non_null(js_get(o, "seed"));
	assert_non_null(js_get(o, "switch"));
}

static void seeds_suite_objects(void **s)
{
	char out[65536];

	(void)s;
	assert_int_equal(run("--suite seeds --runs 1 -l 0.3 -w 0", out, sizeof(out)), 0);
	/* 11 experiments, off and on */
	assert_int_equal(each_object(out, true, seeds_schema), 22);
}

/* Processes whose command line mentions @needle. */
static unsigned procs_with(const char *needle)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	unsigned n = 0;

	while (d && (e = readdir(d))) {
		char path[300], buf[4096];
		FILE *f;
		size_t len;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		len = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		for (size_t i = 0; i < len; i++)
			if (!buf[i])
				buf[i] = ' ';
		buf[len] = 0;
		n += strstr(buf, needle) != NULL;
	}
	if (d)
		closedir(d);
	return n;
}

static void interrupt_cleans_up(void **s)
{
	char tmp[] = "/tmp/uvpt-XXXXXX", dur[] = "30";
	pid_t pid;
	int st;
	DIR *d;
	struct dirent *e;
	unsigned entries = 0;

	(void)s;
	assert_non_null(mkdtemp(tmp));
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char *argv[] = { (char *)perf, (char *)"stream", (char *)"-l", dur, (char *)"-q",
				 (char *)"--uvnetd", (char *)uvnetd, NULL };

		setenv("TMPDIR", tmp, 1);
		execv(perf, argv);
		_exit(127);
	}
	sleep(2);
	/* Its uvnetd listens on a socket inside our TMPDIR: that is how we find it. */
	assert_true(procs_with(tmp) >= 1);
	kill(pid, SIGINT);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 130);
	usleep(200000);
	assert_int_equal(procs_with(tmp), 0);
	d = opendir(tmp);
	assert_non_null(d);
	while ((e = readdir(d)))
		entries += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	assert_int_equal(entries, 0);
	rmdir(tmp);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(stream_tx),       cmocka_unit_test(stream_rx),
		cmocka_unit_test(stream_tso),      cmocka_unit_test(stream_rx_big),
		cmocka_unit_test(stream_event),    cmocka_unit_test(stream_packed),
		cmocka_unit_test(stream_dirty),    cmocka_unit_test(stream_rx_dirty),
		cmocka_unit_test(pps_tx),          cmocka_unit_test(pps_tx_big),
		cmocka_unit_test(pps_rx_segs),     cmocka_unit_test(pps_segs),
		cmocka_unit_test(rr_poll),         cmocka_unit_test(rr_event),
		cmocka_unit_test(pair_stream),     cmocka_unit_test(pair_rr),
		cmocka_unit_test(queues),          cmocka_unit_test(pair_paced),
		cmocka_unit_test(not_available_and_errors),
		cmocka_unit_test(intervals_and_metadata),
		cmocka_unit_test(default_suite_short), cmocka_unit_test(seeds_suite_objects),
		cmocka_unit_test(table_says_what_was_touched), cmocka_unit_test(limits_cold_copy),
		cmocka_unit_test(interrupt_cleans_up),
	};

	if (argc != 3) {
		fprintf(stderr, "usage: %s UVNET_PERF UVNETD\n", argv[0]);
		return 2;
	}
	perf = argv[1];
	uvnetd = argv[2];
	return cmocka_run_group_tests(tests, NULL, NULL);
}
