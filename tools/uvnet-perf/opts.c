/* SPDX-License-Identifier: MIT */
/* Command line: tests and suites, the knobs, and their names. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

static const char *const test_names[] = { "stream", "pps", "rr" };
static const char *const dir_names[] = { "tx", "rx" };
static const char *const ring_names[] = { "split", "packed" };
static const char *const mode_names[] = { "auto", "small", "big", "mergeable" };
/* Indexed by enum uvn_mrg_sizing: HDR_MTU, EWMA, MTU_ONLY. */
static const char *const merge_names[] = { "header", "adaptive", "mtu-only" };
static const char *const zc_names[] = { "default", "on", "off", "auto" };
static const char *const drv_names[] = { "uvnet", "dpdk" };
static const char *const dev_names[] = { "uvnetd", "dpdk", "external" };
static const char *const touch_names[] = { "unknown", "descriptors only", "payload copied",
					   "payload read" };

const char *pt_test_name(enum pt_test t) { return test_names[t]; }
const char *pt_dir_name(enum pt_dir d) { return dir_names[d]; }
const char *pt_ring_name(enum uvn_ring_layout r) { return ring_names[r]; }
const char *pt_rx_mode_name(enum uvn_rx_mode m) { return mode_names[m]; }
const char *pt_merge_name(enum uvn_mrg_sizing m) { return merge_names[m]; }
const char *pt_zc_name(enum pt_zc z) { return zc_names[z]; }
const char *pt_drv_name(enum pt_drv d) { return drv_names[d]; }
const char *pt_dev_name(enum pt_dev d) { return dev_names[d]; }
const char *pt_touch_name(enum pt_touch t) { return touch_names[t]; }

void pt_usage(FILE *f)
{
	fputs("Usage: uvnet-perf [TEST] [OPTIONS]      (no arguments: the default suite)\n"
	      "netperf for virtio: a driver and a device, each in its own process pinned to its\n"
	      "own CPU, connected by a vhost-user socket; throughput, CPU per side, service\n"
	      "demand, notifications and drops, each optimization on and off.\n\n"
	      "Tests (-t TEST or the first argument):\n"
	      "  stream   bulk frames one way, Gb/s (the sender builds every frame, the\n"
	      "           receiver gets every byte: uvnetd's sink reads them)\n"
	      "  pps      64 B frames at the maximum rate (prebuilt frames, pktgen-style,\n"
	      "           dropped unread: a descriptor rate)\n"
	      "  rr       request/response of --size bytes: transactions/s, latency p50/p99/p99.9\n\n"
	      "Suites:\n"
	      "      --suite default|seeds|limits   default: pps, stream tx/rx at 64 B, 1518 B,\n"
	      "                       64 KB and rr (< 1 min); seeds: each optimization's switch\n"
	      "                       off/on next to the figure of the Linux thread it comes from\n"
	      "                       (docs/seeds.md); limits: memcpy bandwidth (in\n"
	      "                       cache and cold: buffers past the LLC) and the cross-CPU\n"
	      "                       cache-line round trip\n"
	      "      --compare dpdk   driver {uvnet, DPDK virtio-user} x device {uvnetd, DPDK\n"
	      "                       net_vhost}, interleaved runs, ratios to the all-DPDK pair\n"
	      "      --runs N         runs per row, interleaved (seeds, compare: 3)\n"
	      "      --plot DIR       PNG charts of the suite (gnuplot)\n\n"
	      "Test settings:\n"
	      "  -d, --direction tx|rx  tx: driver -> device (guest->host), rx: device -> driver\n"
	      "  -s, --size N[K]      frame bytes, 60..65536 (default 64; above 1518 TSO frames\n"
	      "                       when the device offers TSO, jumbo frames otherwise)\n"
	      "      --segs N         tx: segments per frame up to 2 KB (1..8; >1 uses indirect\n"
	      "                       descriptor tables, the desc cache's case)\n"
	      "  -l, --duration S     measured seconds (default 5)\n"
	      "  -w, --warmup S       unmeasured seconds first (default 1)\n"
	      "  -r, --ring split|packed\n"
	      "  -m, --rx-mode auto|small|big|mergeable\n"
	      "  -M, --mode poll|event  both sides busy-poll (default) or sleep on notifications\n"
	      "  -Q, --queues N       queue pairs (one driver thread serves them all)\n"
	      "      --burst N        frames per burst (default 32)\n"
	      "      --queue-size N   uvnet's driver: entries per ring (64..32768, a power of two; default 256)\n"
	      "      --dirty          the sender writes every byte, the receiver reads every byte\n"
	      "      --pair           two uvnet drivers through a switch, A sends to B: uvnetd's\n"
	      "                       (started here), or another's with --connect SOCK_A,SOCK_B\n"
	      "      --rate GBPS      stream: pace uvnet's sender to GBPS (compare CPU at equal throughput)\n\n"
	      "Optimization switches, off to measure against (docs/seeds.md: the seed threads):\n"
	      "      --deferred-alloc on|off   driver: make rx packet objects only for used\n"
	      "                       buffers (000; default on)\n"
	      "      --merge-size header|mtu-only|adaptive   driver: mergeable rx buffers of\n"
	      "                       header + MTU, MTU only (an MTU frame takes two) or an\n"
	      "                       average of frame sizes (003; default header)\n"
	      "      --desc-cache on|off|N     driver: indirect tables from a per-queue cache\n"
	      "                       of tables up to N entries (002; default on, 4)\n"
	      "      --zerocopy on|off|auto    uvnetd: guest TX in the guest's own buffers\n"
	      "                       (001, 004; passed to uvnetd)\n\n"
	      "Sides:\n"
	      "      --driver uvnet|dpdk    the driver (dpdk: testpmd net_virtio_user)\n"
	      "      --device uvnetd|dpdk   the device (dpdk: testpmd net_vhost)\n"
	      "  -c, --connect SOCK   drive an external vhost-user backend instead\n"
	      "  -c, --connect SOCK_A,SOCK_B   --pair: A and B connect to a switch's two\n"
	      "                       sockets (uvnetd, OVS dpdkvhostuser, testpmd net_vhost);\n"
	      "                       the switch's drops are the result's \"unaccounted\"\n"
	      "      --listen         the --connect sockets are the driver's: it listens, the\n"
	      "                       backend connects (OVS dpdkvhostuserclient)\n"
	      "      --connect-pid PID  the external backend's process, for its CPU\n"
	      "      --device-cpu N   (default 0)     --driver-cpu N  (default 1)\n"
	      "      --uvnetd PATH    --testpmd PATH\n\n"
	      "Output:\n"
	      "  -j, --json           a metadata object, then one JSON object per test with\n"
	      "                       its per-interval records; no progress lines\n"
	      "  -i, --interval S     seconds per interval record and progress line, 0.2..3600\n"
	      "                       (default 1)\n"
	      "  -q, --quiet          no progress lines\n"
	      "  -h, --help           this text\n"
	      "      --version        the version\n",
	      f);
}

void pt_cfg_defaults(struct pt_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->test = PT_STREAM;
	c->dir = PT_TX;
	c->size = 64;
	c->segs = 1;
	c->ring = UVN_RING_SPLIT;
	c->rx_mode = UVN_RX_AUTO;
	c->poll = true;
	c->queues = 1;
	c->duration = 5;
	c->warmup = 1;
	c->deferred_alloc = true;
	c->merge = UVN_MRG_HDR_MTU;
	c->desc_cache = true;
	c->desc_cache_thr = 4;
	c->dev_cpu = 0;
	c->drv_cpu = 1;
	c->burst = 32;
	c->queue_size = 256;
}

const char *pt_cfg_check(const struct pt_cfg *c)
{
	if (c->size < PT_MIN_SIZE || c->size > PT_MAX_SIZE)
		return "--size must be 60..65536";
	if (!c->segs || c->segs > PT_MAX_SEGS || (c->segs > 1 && c->size / c->segs < 16))
		return "--segs must be 1..8, each segment at least 16 bytes";
	if (c->segs > 1 && c->size > 2048 - UVN_DRV_HEADROOM)
		return "--segs applies to frames up to 1984 B (larger ones go in 4 KB segments)";
	if (!c->queues || c->queues > UVN_DRV_MAX_QUEUE_PAIRS)
		return "--queues must be 1..16";
	if (c->duration <= 0 || c->warmup < 0)
		return "--duration must be > 0 and --warmup >= 0";
	if (!c->burst || c->burst > 256)
		return "--burst must be 1..256";
	if (c->queue_size < 64 || c->queue_size > 32768 || (c->queue_size & (c->queue_size - 1)))
		return "--queue-size must be a power of two, 64..32768";
	if (c->queue_size != 256 && c->driver == PT_DRV_DPDK)
		return "--queue-size sets uvnet's driver (testpmd's rings stay at 256)";
	if (c->desc_cache_thr < 1 || c->desc_cache_thr > UVN_DRV_DESC_CACHE_MAX)
		return "--desc-cache N must be 1..20";
	if (c->rx_mode == UVN_RX_SMALL && c->size > 1518 && (c->dir == PT_RX || c->test == PT_RR || c->pair))
		return "--rx-mode small receives frames up to 1518 B";
	if (c->dev_cpu < 0 || c->drv_cpu < 0)
		return "CPUs must be >= 0";
	if (c->connect_b && !c->pair)
		return "--connect SOCK_A,SOCK_B drives a pair: add --pair";
	if (c->pair && c->connect && !c->connect_b)
		return "--pair through an external switch takes its two sockets: --connect SOCK_A,SOCK_B";
	if (c->connect_b && !strcmp(c->connect, c->connect_b))
		return "--connect SOCK_A,SOCK_B: A and B must be two different sockets";
	if (c->connect && c->device != PT_DEV_EXTERNAL)
		return "--connect drives an external backend: no --device with it";
	if (c->listen && (!c->connect || c->driver != PT_DRV_UVNET))
		return "--listen: uvnet's driver listens on the --connect sockets (--driver uvnet)";
	if (c->connect_pid && !c->connect)
		return "--connect-pid is the external backend's process: it needs --connect";
	if (c->rate_gbps > 0 && (c->test != PT_STREAM || c->driver != PT_DRV_UVNET ||
				 (c->dir != PT_TX && !c->pair)))
		return "--rate paces uvnet's sender: stream -d tx or --pair, --driver uvnet";
	return NULL;
}

/* What the value that failed to parse last should have been, for the message. */
static char expected[256];

static int pick(const char *v, const char *const *names, unsigned n, unsigned *out)
{
	size_t len = 0;

	for (unsigned i = 0; i < n; i++) {
		if (!strcmp(v, names[i])) {
			*out = i;
			return 0;
		}
	}
	len = (size_t)snprintf(expected, sizeof(expected), "one of");
	for (unsigned i = 0; i < n && len < sizeof(expected); i++)
		len += (size_t)snprintf(expected + len, sizeof(expected) - len, "%s %s",
					i ? "," : "", names[i]);
	return -EINVAL;
}

#define PICK(v, names, out) pick(v, names, sizeof(names) / sizeof(names[0]), out)

static int num(const char *v, double min, double max, double *out)
{
	char *end;
	double d;

	errno = 0;
	d = strtod(v, &end);
	if (end != v && (*end == 'k' || *end == 'K') && !end[1]) {
		d *= 1024;
		end++;
	}
	if (errno || end == v || *end || !(d >= min && d <= max)) {
		snprintf(expected, sizeof(expected), "a number from %.15g to %.15g", min, max);
		return -EINVAL;
	}
	*out = d;
	return 0;
}

static int uint_arg(const char *v, unsigned min, unsigned max, unsigned *out)
{
	double d;

	if (num(v, min, max, &d) || d != (double)(unsigned)d) {
		snprintf(expected, sizeof(expected), "a whole number from %u to %u", min, max);
		return -EINVAL;
	}
	*out = (unsigned)d;
	return 0;
}

static int onoff(const char *v, bool *out)
{
	unsigned i;

	if (PICK(v, ((const char *const[]){ "off", "on" }), &i))
		return -EINVAL;
	*out = i;
	return 0;
}

static int desc_cache(const char *v, struct pt_cfg *c)
{
	if (!onoff(v, &c->desc_cache))
		return 0;
	c->desc_cache = true;
	return uint_arg(v, 1, UVN_DRV_DESC_CACHE_MAX, &c->desc_cache_thr);
}

/*
 * --connect SOCK, or SOCK_A,SOCK_B for a pair through an external switch
 * (a comma cannot be in a path here: uvnetd's --port uses it too).
 */
static int connect_arg(const char *v, struct pt_opts *o)
{
	const char *comma = strchr(v, ',');
	size_t la = comma ? (size_t)(comma - v) : strlen(v), lb = comma ? strlen(comma + 1) : 0;
	size_t max = sizeof(o->connect[0]) - 1;

	if (!la || la > max || (comma && (!lb || lb > max || strchr(comma + 1, ',')))) {
		snprintf(expected, sizeof(expected),
			 "SOCK or SOCK_A,SOCK_B: one or two socket paths of 1..%zu bytes", max);
		return -EINVAL;
	}
	memcpy(o->connect[0], v, la);
	o->connect[0][la] = 0;
	o->cfg.connect = o->connect[0];
	o->cfg.connect_b = NULL;
	if (comma) {
		memcpy(o->connect[1], comma + 1, lb + 1);
		o->cfg.connect_b = o->connect[1];
	}
	o->cfg.device = PT_DEV_EXTERNAL;
	return 0;
}

enum {
	O_SEGS = 256, O_BURST, O_QSIZE, O_DIRTY, O_PAIR, O_DEFERRED, O_MERGE, O_DESC, O_ZC, O_DRIVER,
	O_DEVICE, O_CONNECT_PID, O_DEV_CPU, O_DRV_CPU, O_UVNETD, O_TESTPMD,
	O_SUITE, O_COMPARE, O_RUNS, O_PLOT, O_RATE, O_LISTEN,
};

static const struct option longopts[] = {
	{ "test", required_argument, NULL, 't' },
	{ "direction", required_argument, NULL, 'd' },
	{ "size", required_argument, NULL, 's' },
	{ "segs", required_argument, NULL, O_SEGS },
	{ "duration", required_argument, NULL, 'l' },
	{ "warmup", required_argument, NULL, 'w' },
	{ "ring", required_argument, NULL, 'r' },
	{ "rx-mode", required_argument, NULL, 'm' },
	{ "mode", required_argument, NULL, 'M' },
	{ "queues", required_argument, NULL, 'Q' },
	{ "burst", required_argument, NULL, O_BURST },
	{ "queue-size", required_argument, NULL, O_QSIZE },
	{ "dirty", no_argument, NULL, O_DIRTY },
	{ "pair", no_argument, NULL, O_PAIR },
	{ "rate", required_argument, NULL, O_RATE },
	{ "deferred-alloc", required_argument, NULL, O_DEFERRED },
	{ "merge-size", required_argument, NULL, O_MERGE },
	{ "desc-cache", required_argument, NULL, O_DESC },
	{ "zerocopy", required_argument, NULL, O_ZC },
	{ "driver", required_argument, NULL, O_DRIVER },
	{ "device", required_argument, NULL, O_DEVICE },
	{ "connect", required_argument, NULL, 'c' },
	{ "connect-pid", required_argument, NULL, O_CONNECT_PID },
	{ "listen", no_argument, NULL, O_LISTEN },
	{ "device-cpu", required_argument, NULL, O_DEV_CPU },
	{ "driver-cpu", required_argument, NULL, O_DRV_CPU },
	{ "uvnetd", required_argument, NULL, O_UVNETD },
	{ "testpmd", required_argument, NULL, O_TESTPMD },
	{ "suite", required_argument, NULL, O_SUITE },
	{ "compare", required_argument, NULL, O_COMPARE },
	{ "runs", required_argument, NULL, O_RUNS },
	{ "plot", required_argument, NULL, O_PLOT },
	{ "json", no_argument, NULL, 'j' },
	{ "interval", required_argument, NULL, 'i' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

/* Test and side settings. @return 0, 1 (not ours), or -EINVAL */
static int parse_cfg(int opt, const char *v, struct pt_opts *o)
{
	struct pt_cfg *c = &o->cfg;
	unsigned u = 0;
	double d;
	int r = 0;

	switch (opt) {
	case 'd': r = PICK(v, dir_names, &u); c->dir = u; o->set_dir = true; break;
	case 's': r = uint_arg(v, 1, PT_MAX_SIZE * 4, &c->size); o->set_size = true; break;
	case O_SEGS: r = uint_arg(v, 1, 64, &c->segs); break;
	case 'l': r = num(v, 0.001, 86400, &c->duration); o->set_duration = true; break;
	case 'w': r = num(v, 0, 3600, &c->warmup); o->set_warmup = true; break;
	case 'r': r = PICK(v, ring_names, &u); c->ring = u; break;
	case 'm': r = PICK(v, mode_names, &u); c->rx_mode = u; break;
	case 'M':
		r = PICK(v, ((const char *const[]){ "event", "poll" }), &u);
		c->poll = u;
		o->set_mode = true;
		break;
	case 'Q': r = uint_arg(v, 1, UVN_DRV_MAX_QUEUE_PAIRS, &c->queues); break;
	case O_BURST: r = uint_arg(v, 1, 256, &c->burst); break;
	case O_QSIZE: r = uint_arg(v, 1, 32768, &c->queue_size); break;
	case O_DIRTY: c->dirty = true; break;
	case O_PAIR: c->pair = true; break;
	case O_RATE: r = num(v, 0.001, 10000, &c->rate_gbps); break;
	case O_DEFERRED: r = onoff(v, &c->deferred_alloc); break;
	case O_MERGE: r = PICK(v, merge_names, &u); c->merge = u; break;
	case O_DESC: r = desc_cache(v, c); break;
	case O_ZC: r = PICK(v, zc_names, &u); c->zerocopy = u; break;
	case O_DRIVER: r = PICK(v, drv_names, &u); c->driver = u; break;
	case O_DEVICE: r = PICK(v, ((const char *const[]){ "uvnetd", "dpdk" }), &u); c->device = u; break;
	case 'c': r = connect_arg(v, o); break;
	case O_LISTEN: c->listen = true; break;
	case O_CONNECT_PID: r = uint_arg(v, 1, 1u << 30, &u); c->connect_pid = (pid_t)u; break;
	case O_DEV_CPU: r = num(v, 0, 4095, &d); c->dev_cpu = (int)d; break;
	case O_DRV_CPU: r = num(v, 0, 4095, &d); c->drv_cpu = (int)d; break;
	default: return 1;
	}
	return r;
}

/* What to run, where the tools are, what to print. @return 0, 1 (not ours), or -EINVAL */
static int parse_run(int opt, const char *v, struct pt_opts *o)
{
	unsigned u = 0;
	int r = 0;

	switch (opt) {
	case 't':
		r = PICK(v, test_names, &u);
		o->cfg.test = u;
		o->what = PT_RUN_TEST;
		break;
	case O_SUITE:
		r = PICK(v, ((const char *const[]){ "default", "seeds", "limits" }), &u);
		o->what = u == 0 ? PT_RUN_DEFAULT : u == 1 ? PT_RUN_SEEDS : PT_RUN_LIMITS;
		break;
	case O_COMPARE:
		r = strcmp(v, "dpdk") ? -EINVAL : 0;
		o->what = PT_RUN_COMPARE;
		break;
	case O_RUNS: r = uint_arg(v, 1, 100, &o->runs); o->set_runs = true; break;
	case O_PLOT: o->plot_dir = v; break;
	case O_UVNETD: o->uvnetd = v; break;
	case O_TESTPMD: o->testpmd = v; break;
	case 'j': o->json = true; break;
	case 'i': r = num(v, PT_INTERVAL_MIN, PT_INTERVAL_MAX, &o->interval); break;
	case 'q': o->quiet = true; break;
	default: return 1;
	}
	return r;
}

static int __attribute__((format(printf, 3, 4))) bad(char *err, size_t n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* "--size" for 's': the option as the user can write it. */
static const char *opt_name(int c)
{
	static char name[64];

	for (const struct option *l = longopts; l->name; l++)
		if (l->val == c) {
			snprintf(name, sizeof(name), "--%s", l->name);
			return name;
		}
	snprintf(name, sizeof(name), "-%c", c);
	return name;
}

int pt_parse(int argc, char **argv, struct pt_opts *o, char *err, size_t errlen)
{
	int c;

	memset(o, 0, sizeof(*o));
	pt_cfg_defaults(&o->cfg);
	o->runs = 1;
	o->interval = 1;
	o->what = PT_RUN_DEFAULT;
	optind = 0; /* 0, not 1: glibc then forgets a previous parse's state too */
	opterr = 0;
	while ((c = getopt_long(argc, argv, "t:d:s:l:w:r:m:M:Q:c:i:jqh", longopts, NULL)) != -1) {
		int r;

		if (c == 'h')
			return 1;
		if (c == 'V')
			return 2;
		if (c == '?' || c == ':')
			return bad(err, errlen, "unknown option or missing value: %s", argv[optind - 1]);
		expected[0] = 0;
		r = parse_cfg(c, optarg, o);
		if (r > 0)
			r = parse_run(c, optarg, o);
		if (r)
			return bad(err, errlen, "bad value '%s' for %s%s%s%s", optarg ? optarg : "",
				   opt_name(c), expected[0] ? " (" : "", expected,
				   expected[0] ? ")" : "");
	}
	/* The test may be named first, netperf style (getopt moved it here). */
	if (optind < argc) {
		unsigned u;

		if (PICK(argv[optind], test_names, &u))
			return bad(err, errlen, "unknown test '%s' (stream, pps, rr)", argv[optind]);
		if (optind + 1 < argc)
			return bad(err, errlen, "unexpected argument '%s'", argv[optind + 1]);
		o->cfg.test = u;
		o->what = PT_RUN_TEST;
	}
	if (o->cfg.test == PT_PPS && !o->set_size)
		o->cfg.size = 64;
	if (o->what == PT_RUN_TEST || o->what == PT_RUN_DEFAULT) {
		const char *why = pt_cfg_check(&o->cfg);

		if (why)
			return bad(err, errlen, "%s", why);
	}
	return 0;
}
