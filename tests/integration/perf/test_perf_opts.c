/* SPDX-License-Identifier: MIT */
/*
 * uvnet-perf's pieces that run nothing: the command line, the latency
 * histogram, the JSON reader it parses uvnetd's output (and the schema
 * test parses its own output) with, the flag on a row over its physical
 * limit and what each kind of test says its receiver touched.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hist.h"
#include "util/json_read.h"
#include "perf.h"
#include "run.h"

/* Parse a command line given as one string. */
static int parse(const char *line, struct pt_opts *o, char *err)
{
	static char buf[512];
	char *argv[32];
	int argc = 0;

	snprintf(buf, sizeof(buf), "uvnet-perf %s", line);
	for (char *t = strtok(buf, " "); t && argc < 31; t = strtok(NULL, " "))
		argv[argc++] = t;
	argv[argc] = NULL;
	err[0] = 0;
	return pt_parse(argc, argv, o, err, 256);
}

static void defaults_run_the_default_suite(void **state)
{
	struct pt_opts o;
	char err[256];

	(void)state;
	assert_int_equal(parse("", &o, err), 0);
	assert_int_equal(o.what, PT_RUN_DEFAULT);
	assert_int_equal(o.cfg.test, PT_STREAM);
	assert_int_equal(o.cfg.size, 64);
	assert_true(o.cfg.poll);
	assert_true(o.cfg.deferred_alloc);
	assert_true(o.cfg.desc_cache);
	assert_int_equal(o.cfg.desc_cache_thr, 4);
	assert_int_equal(o.cfg.merge, UVN_MRG_HDR_MTU);
	assert_int_equal(o.cfg.zerocopy, PT_ZC_DEFAULT);
	assert_int_equal(o.cfg.driver, PT_DRV_UVNET);
	assert_int_equal(o.cfg.device, PT_DEV_UVNETD);
	assert_int_equal(o.cfg.dev_cpu, 0);
	assert_int_equal(o.cfg.drv_cpu, 1);
	assert_int_equal(o.runs, 1);
}

static void a_test_and_its_knobs(void **state)
{
	struct pt_opts o;
	char err[256];

	(void)state;
	assert_int_equal(parse("stream -d rx -s 1518 -r packed -m big -M event -Q 2 -l 2.5 -w 0 "
			       "--deferred-alloc off --merge-size mtu-only --desc-cache 8 "
			       "--zerocopy auto --dirty --json",
			       &o, err),
			 0);
	assert_int_equal(o.what, PT_RUN_TEST);
	assert_int_equal(o.cfg.test, PT_STREAM);
	assert_int_equal(o.cfg.dir, PT_RX);
	assert_int_equal(o.cfg.size, 1518);
	assert_int_equal(o.cfg.ring, UVN_RING_PACKED);
	assert_int_equal(o.cfg.rx_mode, UVN_RX_BIG);
	assert_false(o.cfg.poll);
	assert_int_equal(o.cfg.queues, 2);
	assert_true(o.cfg.duration == 2.5);
	assert_true(o.cfg.warmup == 0);
	assert_false(o.cfg.deferred_alloc);
	assert_int_equal(o.cfg.merge, UVN_MRG_MTU_ONLY);
	assert_true(o.cfg.desc_cache);
	assert_int_equal(o.cfg.desc_cache_thr, 8);
	assert_int_equal(o.cfg.zerocopy, PT_ZC_AUTO);
	assert_true(o.cfg.dirty);
	assert_true(o.json);
	assert_true(o.set_duration && o.set_warmup && o.set_size && o.set_dir && o.set_mode);
}

static void names_sizes_and_sides(void **state)
{
	struct pt_opts o;
	char err[256];

	(void)state;
	assert_int_equal(parse("-t rr -s 64K", &o, err), 0);
	assert_int_equal(o.cfg.test, PT_RR);
	assert_int_equal(o.cfg.size, 65536);
	assert_int_equal(parse("pps", &o, err), 0);
	assert_int_equal(o.cfg.test, PT_PPS);
	assert_int_equal(o.cfg.size, 64);
	assert_int_equal(parse("pps --desc-cache off --merge-size adaptive", &o, err), 0);
	assert_false(o.cfg.desc_cache);
	assert_int_equal(o.cfg.merge, UVN_MRG_EWMA);
	assert_int_equal(parse("stream -c /run/x.sock --connect-pid 42", &o, err), 0);
	assert_int_equal(o.cfg.device, PT_DEV_EXTERNAL);
	assert_string_equal(o.cfg.connect, "/run/x.sock");
	assert_int_equal(o.cfg.connect_pid, 42);
	assert_int_equal(parse("stream --driver dpdk --device dpdk --device-cpu 1 --driver-cpu 0",
			       &o, err),
			 0);
	assert_int_equal(o.cfg.driver, PT_DRV_DPDK);
	assert_int_equal(o.cfg.device, PT_DEV_DPDK);
	assert_int_equal(o.cfg.dev_cpu, 1);
	assert_int_equal(o.cfg.drv_cpu, 0);
	assert_int_equal(parse("--pair --segs 2 --burst 64 stream", &o, err), 0);
	assert_true(o.cfg.pair);
	assert_int_equal(o.cfg.segs, 2);
	assert_int_equal(o.cfg.burst, 64);
	assert_int_equal(o.cfg.queue_size, 256);
	assert_int_equal(parse("--pair --queue-size 1024 stream", &o, err), 0);
	assert_int_equal(o.cfg.queue_size, 1024);
	assert_int_equal(parse("stream --pair --rate 9.5", &o, err), 0);
	assert_true(o.cfg.rate_gbps > 9.49 && o.cfg.rate_gbps < 9.51);
	assert_int_equal(parse("stream -d tx --rate 2", &o, err), 0);
}

static void suites(void **state)
{
	struct pt_opts o;
	char err[256];

	(void)state;
	assert_int_equal(parse("--suite seeds --runs 5 --plot /tmp/p", &o, err), 0);
	assert_int_equal(o.what, PT_RUN_SEEDS);
	assert_int_equal(o.runs, 5);
	assert_true(o.set_runs);
	assert_string_equal(o.plot_dir, "/tmp/p");
	assert_int_equal(parse("--suite limits", &o, err), 0);
	assert_int_equal(o.what, PT_RUN_LIMITS);
	assert_int_equal(parse("--suite default -q", &o, err), 0);
	assert_int_equal(o.what, PT_RUN_DEFAULT);
	assert_true(o.quiet);
	assert_int_equal(parse("--compare dpdk --testpmd /x/tp --uvnetd /y/u", &o, err),
			 0);
	assert_int_equal(o.what, PT_RUN_COMPARE);
	assert_string_equal(o.testpmd, "/x/tp");
	assert_string_equal(o.uvnetd, "/y/u");
}

static void errors_say_what(void **state)
{
	static const char *const bad[] = {
		"--size 10",            "--size 70000",       "-s abc",
		"stream --size 4096 --segs 2", "--segs 9",    "--ring round",
		"--rx-mode huge",       "--mode sleepy",      "--queues 0",
		"--queues 17",          "--duration 0",       "--warmup -1",
		"--deferred-alloc maybe", "--merge-size large", "--desc-cache 21",
		"--zerocopy sometimes", "--driver virtio",    "--device qemu",
		"--compare ovs",        "--suite all",        "--runs 0",
		"stream extra",         "netperf",            "--burst 0",
		"--no-such-option",     "rr -d rx -m small -s 4096",
		"stream --rate 0",      "stream -d rx --rate 5", "pps --rate 5",
		"stream --driver dpdk --rate 5", "stream --rate fast",
		"--queue-size 100",     "--queue-size 32",    "--queue-size 65536",
		"stream --driver dpdk --queue-size 1024",
	};
	struct pt_opts o;
	char err[256];

	(void)state;
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse(bad[i], &o, err), -EINVAL);
		assert_true(strlen(err) > 5); /* a message for the user */
	}
	/* the option by its long name, and what it takes */
	assert_int_equal(parse("stream -s abc", &o, err), -EINVAL);
	assert_string_equal(err, "bad value 'abc' for --size (a whole number from 1 to 262144)");
	assert_int_equal(parse("-d sideways", &o, err), -EINVAL);
	assert_string_equal(err, "bad value 'sideways' for --direction (one of tx, rx)");
	assert_int_equal(parse("--runs 0", &o, err), -EINVAL);
	assert_non_null(strstr(err, "--runs (a whole number from 1 to "));
	assert_int_equal(parse("--help", &o, err), 1);
	assert_int_equal(parse("stream -h", &o, err), 1);
	assert_int_equal(parse("--version", &o, err), 2);
}

/* --connect SOCK_A,SOCK_B: a pair through an external switch; one socket or two, as fits. */
static void connect_a_pair(void **state)
{
	static const char *const bad[] = {
		"stream --pair -c /s/a",            /* a pair needs two */
		"stream -c /s/a,/s/b",              /* two are a pair */
		"stream --pair -c /s/a,/s/a",       /* A and B the same */
		"stream --pair -c ,/s/b",           "stream --pair -c /s/a,",
		"stream --pair -c /s/a,/s/b,/s/c",  "stream -c ,",
		"stream --connect-pid 7",           /* whose? */
		"stream -c /s/a --device uvnetd",   /* external or uvnetd */
	};
	char line[400], path[120];
	struct pt_opts o;
	char err[256];

	(void)state;
	assert_int_equal(parse("stream --pair -c /run/a.sock,/run/b.sock --connect-pid 9", &o, err), 0);
	assert_true(o.cfg.pair);
	assert_int_equal(o.cfg.device, PT_DEV_EXTERNAL);
	assert_string_equal(o.cfg.connect, "/run/a.sock");
	assert_string_equal(o.cfg.connect_b, "/run/b.sock");
	assert_int_equal(o.cfg.connect_pid, 9);
	/* the last --connect wins, a single socket clears B */
	assert_int_equal(parse("stream -c /x,/y -c /z", &o, err), 0);
	assert_string_equal(o.cfg.connect, "/z");
	assert_null(o.cfg.connect_b);
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (parse(bad[i], &o, err) != -EINVAL)
			fail_msg("accepted: %s", bad[i]);
		assert_non_null(strstr(err, "--connect"));
	}
	assert_int_equal(parse("stream --pair -c /s/a", &o, err), -EINVAL);
	assert_string_equal(err, "--pair through an external switch takes its two sockets: "
				 "--connect SOCK_A,SOCK_B");
	/* a socket path is at most 107 bytes (sun_path) */
	memset(path, 'p', 107);
	path[0] = '/';
	path[107] = 0;
	snprintf(line, sizeof(line), "stream --pair -c /s/a,%s", path);
	assert_int_equal(parse(line, &o, err), 0);
	snprintf(line, sizeof(line), "stream --pair -c /s/a,%sp", path);
	assert_int_equal(parse(line, &o, err), -EINVAL);
	assert_non_null(strstr(err, "1..107 bytes"));
}

/* --interval: seconds per JSON interval record, within its range, named when refused. */
static void interval_option(void **state)
{
	static const char *const bad[] = { "-i 0", "--interval 0.1", "--interval 3601",
					   "--interval -1", "-i abc", "--interval" };
	struct pt_opts o;
	char err[256];

	(void)state;
	assert_int_equal(parse("stream", &o, err), 0);
	assert_true(o.interval == 1.0);
	assert_int_equal(parse("stream --interval 0.5 --json", &o, err), 0);
	assert_true(o.interval == 0.5);
	assert_int_equal(parse("-i 3600", &o, err), 0);
	assert_true(o.interval == 3600.0);
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse(bad[i], &o, err), -EINVAL);
		assert_non_null(strstr(err, "--interval"));
	}
	assert_int_equal(parse("stream --interval 0", &o, err), -EINVAL);
	assert_string_equal(err, "bad value '0' for --interval (a number from 0.2 to 3600)");
}

static void histogram(void **state)
{
	static struct pt_hist h;

	(void)state;
	/* Every value lands in a bucket whose upper edge is within 1/64 above it. */
	for (uint64_t v = 0; v < (1ull << 40); v = v * 3 / 2 + 1) {
		unsigned i = pt_hist_index(v);
		uint64_t up = pt_hist_upper(i);

		assert_true(i < PT_HIST_BUCKETS);
		assert_true(up >= v);
		assert_true((double)(up - v) <= (double)v / 64 + 1);
		if (i)
			assert_true(pt_hist_upper(i - 1) < v);
	}
	pt_hist_reset(&h);
	assert_int_equal(pt_hist_quantile(&h, 0.5), 0);
	for (uint64_t v = 1; v <= 1000; v++)
		pt_hist_add(&h, v * 1000);
	assert_int_equal(h.count, 1000);
	assert_int_equal(h.min, 1000);
	assert_int_equal(h.max, 1000000);
	assert_true(pt_hist_quantile(&h, 0.5) >= 500000 && pt_hist_quantile(&h, 0.5) <= 508000);
	assert_true(pt_hist_quantile(&h, 0.99) >= 990000 && pt_hist_quantile(&h, 0.99) <= 1000000);
	assert_int_equal(pt_hist_quantile(&h, 1.0), 1000000);
	assert_int_equal(pt_hist_quantile(&h, 0), 1000);
}

static void json_reader(void **state)
{
	struct js_doc d;
	const struct js *p;

	(void)state;
	assert_int_equal(js_parse(&d, "{\"t\":1.5,\"ports\":[{\"name\":\"a\\\"b\\u00e9\","
				      "\"rx_packets\":12,\"ok\":true,\"x\":null}],\"e\":[],\"o\":{}}"),
			 0);
	assert_true(js_num(js_get(d.root, "t"), 0) == 1.5);
	p = js_at(js_get(d.root, "ports"), 0);
	assert_non_null(p);
	assert_string_equal(js_get(p, "name")->str, "a\"b\xc3\xa9");
	assert_true(js_num(js_get(p, "rx_packets"), 0) == 12);
	assert_int_equal(js_get(p, "ok")->type, JS_BOOL);
	assert_int_equal(js_get(p, "x")->type, JS_NULL);
	assert_null(js_at(js_get(d.root, "ports"), 1));
	assert_null(js_get(d.root, "missing"));
	assert_null(js_get(d.root, "e")->child);
	js_free(&d);
	static const char *const bad[] = { "", "{", "{\"a\":}", "[1,]", "{\"a\" 1}", "tru",
					   "\"abc", "01", "+1", "{} x", "[1 2]", "NaN" };
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(js_parse(&d, bad[i]), -1);
		assert_true(d.err[0] != 0);
		js_free(&d);
	}
}

/* A result of @gbps at @size bytes, stream tx, as run_compute() leaves it. */
static struct pt_result result(unsigned size, double gbps, enum pt_touch touched)
{
	struct pt_result r;

	memset(&r, 0, sizeof(r));
	pt_cfg_defaults(&r.cfg);
	r.cfg.size = size;
	r.status = PT_OK;
	r.gbps = gbps;
	r.pps = gbps * 1e9 / 8 / size;
	r.cpu_drv = r.cpu_dev = r.sd = r.notif_ps = r.limit_frac = NAN;
	r.lat.p50 = NAN;
	r.touched = touched;
	return r;
}

/* The table's text for @n rows and their flags. */
static char *table(const struct pt_result *r, unsigned n)
{
	static char *buf;
	size_t len;
	FILE *f;

	free(buf);
	f = open_memstream(&buf, &len);
	assert_non_null(f);
	for (unsigned i = 0; i < n; i++)
		pt_table_row(f, &r[i]);
	pt_table_flags(f, r, n);
	fclose(f);
	return buf;
}

/* 1394 Gb/s against a 111.5 Gb/s copy: 1250 %, flagged in JSON and text, never silent. */
static void over_the_limit_is_flagged(void **state)
{
	struct pt_limits l = { .valid = true, .copy_gbps = { 20, 80, 111.5 },
			       .copy_sizes = { 64, 1518, 65536 }, .rtt_ns = 100 };
	struct pt_result r[2] = { result(65535, 1393.75, PT_TOUCH_DESC),
				  result(65535, 55.75, PT_TOUCH_READ) };
	char buf[24], *t;

	(void)state;
	for (unsigned i = 0; i < 2; i++)
		pt_limits_apply(&l, &r[i]);
	assert_true(fabs(r[0].limit_frac - 12.5) < 1e-9);
	assert_true(r[0].over_limit);
	assert_true(fabs(r[1].limit_frac - 0.5) < 1e-9);
	assert_false(r[1].over_limit);
	assert_string_equal(pt_fmt_limit(buf, sizeof(buf), r[0].limit_frac), "1250.0%!");
	assert_string_equal(pt_fmt_limit(buf, sizeof(buf), r[1].limit_frac), "50.0%");
	assert_string_equal(pt_fmt_limit(buf, sizeof(buf), NAN), "-");
	t = table(r, 2);
	assert_non_null(strstr(t, "1250.0%!  descriptors only"));
	assert_non_null(strstr(t, "50.0%  payload read"));
	assert_non_null(strstr(t, "# ! stream tx 65535 B is 1250 % of its physical limit, one memcpy "
				  "per frame (65536 B frames: 111.5 Gb/s on one core): its frames went "
				  "unread"));
	/* One flag line: the row under its limit has none. */
	assert_null(strstr(strstr(t, "# !") + 1, "# !"));
	/* A read may outrun a copy: said so when it does. */
	r[1].gbps = 200;
	pt_limits_apply(&l, &r[1]);
	assert_true(r[1].over_limit);
	assert_non_null(strstr(table(&r[1], 1), "reads every byte but copies none"));
}

/* What the receiver does with the payload, for the sides that need no uvnetd to ask. */
static void what_the_receiver_touches(void **state)
{
	struct pt_opts o;
	struct pt_cfg c;
	char err[256];

	(void)state;
	assert_int_equal(parse("stream -d rx", &o, err), 0);
	c = o.cfg;
	assert_int_equal(run_touched(&o, &c), PT_TOUCH_COPIED);  /* the device writes its buffers */
	c.dirty = true;
	assert_int_equal(run_touched(&o, &c), PT_TOUCH_READ);    /* and the driver reads them */
	c.driver = PT_DRV_DPDK;
	assert_int_equal(run_touched(&o, &c), PT_TOUCH_COPIED);  /* testpmd has no --dirty */
	c = o.cfg;
	c.dir = PT_TX;
	c.device = PT_DEV_DPDK;
	assert_int_equal(run_touched(&o, &c), PT_TOUCH_COPIED);  /* net_vhost copies into mbufs */
	c.test = PT_PPS;
	assert_int_equal(run_touched(&o, &c), PT_TOUCH_COPIED);
	c.device = PT_DEV_EXTERNAL;
	assert_int_equal(run_touched(&o, &c), PT_TOUCH_UNKNOWN);
	c.test = PT_RR;
	assert_int_equal(run_touched(&o, &c), PT_TOUCH_COPIED);  /* the answers land in our buffers */
	assert_string_equal(pt_touch_name(PT_TOUCH_DESC), "descriptors only");
	assert_string_equal(pt_touch_name(PT_TOUCH_READ), "payload read");
	assert_string_equal(pt_touch_name(PT_TOUCH_COPIED), "payload copied");
	assert_string_equal(pt_touch_name(PT_TOUCH_UNKNOWN), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(defaults_run_the_default_suite),
		cmocka_unit_test(a_test_and_its_knobs),
		cmocka_unit_test(names_sizes_and_sides),
		cmocka_unit_test(suites),
		cmocka_unit_test(errors_say_what),
		cmocka_unit_test(connect_a_pair),
		cmocka_unit_test(interval_option),
		cmocka_unit_test(histogram),
		cmocka_unit_test(json_reader),
		cmocka_unit_test(over_the_limit_is_flagged),
		cmocka_unit_test(what_the_receiver_touches),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
