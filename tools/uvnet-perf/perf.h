/* SPDX-License-Identifier: MIT */
/*
 * uvnet-perf: netperf for virtio. One test runs a driver (ours in a forked
 * worker process, or DPDK virtio-user in testpmd) against a device (uvnetd,
 * DPDK net_vhost in testpmd, or an external backend), each pinned to its
 * own CPU, and turns the counters both sides report into a result.
 *
 *   main.c          what to run: a test, a suite or the comparison
 *   opts.c          command line
 *   run.c           one test, end to end
 *   run_result.c    from both sides' counters to a result
 *   proc.c          child processes, the private temporary directory
 *   side_*.c        the sides behind side.h: uvnetd, DPDK testpmd (net_vhost
 *                   or virtio-user), our driver's worker, an external backend
 *   worker.c        our driver's process; worker_loops.c its traffic loops
 *   frames.c        the frames it sends     hist.c     latency histogram
 *   report.c        JSON and table rows     suites.c   one test, default and
 *                                                      limits suites
 *   seeds.c         the seeds suite         compare.c  the 2x2 against DPDK
 *   limits.c        memcpy and cross-CPU probes        plot.c  gnuplot charts
 *   deps.c          a missing program: name its Debian packages and stop
 */
#ifndef UVN_PERF_H
#define UVN_PERF_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <uvnet/driver.h>

enum pt_test { PT_STREAM, PT_PPS, PT_RR };
enum pt_dir { PT_TX, PT_RX };          /* tx: driver -> device (guest->host) */
enum pt_drv { PT_DRV_UVNET, PT_DRV_DPDK };
enum pt_dev { PT_DEV_UVNETD, PT_DEV_DPDK, PT_DEV_EXTERNAL };
enum pt_zc { PT_ZC_DEFAULT, PT_ZC_ON, PT_ZC_OFF, PT_ZC_AUTO }; /* default: not passed */

#define PT_MIN_SIZE 60u
#define PT_MAX_SIZE 65536u
#define PT_MTU_FRAME 1514u       /* Ethernet header + 1500: the seed threads' "MTU-size frames" */
#define PT_PLAIN_MAX 1518u       /* + a VLAN tag: the largest frame sent without TSO */
#define PT_MAX_SEGS 8u

/* One test's settings. */
struct pt_cfg {
	enum pt_test test;
	enum pt_dir dir;
	unsigned size;              /* frame bytes: Ethernet header on, no FCS (testpmd's --txpkts) */
	unsigned segs;              /* tx: segments per frame up to 2 KB (>1: indirect tables) */
	bool pair;                  /* two drivers through a switch (A sends, B receives): uvnetd's,
				     * or an external one's (--connect A,B) */
	enum uvn_ring_layout ring;
	enum uvn_rx_mode rx_mode;
	bool poll;                  /* poll mode (both sides busy-poll) or event mode */
	unsigned queues;
	double duration, warmup;    /* seconds */
	/* The optimizations' switches, off to measure against (docs/seeds.md). */
	bool deferred_alloc;        /* driver: rx packet objects made on receipt (000) */
	enum uvn_mrg_sizing merge;  /* driver: mergeable buffer size (003) */
	bool desc_cache;            /* driver: indirect tables from a per-queue cache (002) */
	unsigned desc_cache_thr;
	enum pt_zc zerocopy;        /* uvnetd: guest TX zero-copy (001, 004) */
	bool dirty;                 /* sender writes, receiver reads every byte */
	double rate_gbps;           /* stream: uvnet's sender paced to this rate (0: as fast as it can) */
	enum pt_drv driver;
	enum pt_dev device;
	const char *connect;        /* external backend's socket (a pair: A's) */
	const char *connect_b;      /* a pair through an external switch: B's socket (else NULL) */
	pid_t connect_pid;          /* its process, for its CPU (0: unknown) */
	bool listen;                /* --listen: our drivers listen on the --connect sockets and the
				     * backend connects (OVS dpdkvhostuserclient, uvnetd's client ports) */
	int dev_cpu, drv_cpu;
	unsigned burst;
	unsigned queue_size;         /* uvnet's driver: ring entries (its RX and TX rings) */
};

enum pt_status { PT_OK, PT_NA, PT_ERR };

/*
 * What the receiving end did with each frame's payload, weakest first: a
 * stream is a byte rate only if every byte reached the receiver (netperf's
 * receiver gets every byte), a pps row is a descriptor rate and may touch
 * nothing. Named in every row (run_result.c decides).
 */
enum pt_touch {
	PT_TOUCH_UNKNOWN,           /* an external device: not ours to know */
	PT_TOUCH_DESC,              /* descriptors only: frames dropped unread */
	PT_TOUCH_COPIED,            /* every byte copied into the receiver's memory */
	PT_TOUCH_READ,              /* every byte read by the receiver */
};

/* --interval: seconds per record of the measured window (uvnetd reports every 0.2 s). */
#define PT_INTERVAL_MIN 0.2
#define PT_INTERVAL_MAX 3600.0

/* One interval of a test's measured window, by the receiver's counters and clock. */
struct pt_interval {
	double start_s, end_s;      /* offsets into the measured window */
	uint64_t frames, bytes;     /* rr: frames = 2 x transactions (request and response) */
	uint64_t trans;             /* rr */
};

struct pt_latency {
	double p50, p99, p999, min, max, mean; /* microseconds */
};

/* What one test measured. NAN marks a value nobody could measure. */
struct pt_result {
	struct pt_cfg cfg;
	enum pt_status status;
	char reason[320];           /* n/a or error: why; ok: notes (may be empty) */
	double secs;                /* measured window */
	double pps, gbps;           /* frames and frame bits per second at the receiver */
	const char *measured_at;    /* "receiver" or "sender" */
	double cpu_drv, cpu_dev;    /* fraction of one core */
	double sd, sd_drv, sd_dev;  /* service demand: us of CPU per KB (1024 B) */
	double kicks_ps, calls_ps, notif_ps;
	uint64_t sent, received, drops, backpressure;
	bool counted;               /* sent/received/drops are exact totals */
	double tps;                 /* rr */
	struct pt_latency lat;
	uint64_t rr_timeouts;
	const char *offload;        /* "none", "tso" (GSO frames), "jumbo" (frames above the MTU, no
				     * GSO), "segmented" (rx: the device cut TSO frames to MTU size) */
	unsigned mrg_buf_len;
	enum uvn_rx_mode rx_mode_used;
	double rtt_ns;              /* cache-line round trip between the CPUs before the test */
	double limit_frac;          /* result / physical limit */
	char limit_basis[96];
	bool over_limit;            /* limit_frac > 1: it moved less than it claims */
	enum pt_touch touched;
	bool windowed;              /* frames and bytes are known */
	uint64_t frames, bytes;     /* in the measured window: what pps and gbps come from */
	const struct pt_interval *iv; /* the window's intervals (their frames add up to
				       * frames); valid until the next pt_run() */
	unsigned n_iv;
};

/* Command-line state shared by the suites. */
struct pt_opts {
	struct pt_cfg cfg;
	enum { PT_RUN_DEFAULT, PT_RUN_TEST, PT_RUN_SEEDS, PT_RUN_LIMITS, PT_RUN_COMPARE } what;
	bool json, quiet;
	const char *plot_dir;
	unsigned runs;
	bool set_duration, set_warmup, set_runs, set_size, set_dir, set_mode;
	double interval;            /* seconds per interval record and progress line */
	const char *uvnetd, *testpmd;
	char connect[2][108];       /* --connect SOCK or SOCK_A,SOCK_B (cfg.connect points here) */
	char cmdline[512];          /* as typed, for the tables' headers */
};

/* Bar charts (plot.c): groups along x, one bar per series in each. */
#define PT_BARS_GROUPS 32
#define PT_BARS_SERIES 6
struct pt_bars {
	const char *file;           /* PNG name inside the plot directory */
	const char *title, *ylabel;
	unsigned ngroups, nseries;
	char group[PT_BARS_GROUPS][48];
	const char *series[PT_BARS_SERIES];
	double v[PT_BARS_GROUPS][PT_BARS_SERIES];  /* NAN: no bar */
	double lo[PT_BARS_GROUPS][PT_BARS_SERIES]; /* min-max whiskers (NAN: none) */
	double hi[PT_BARS_GROUPS][PT_BARS_SERIES];
	double ref;                 /* a horizontal reference line (NAN: none) */
	double ymax;                /* fixed top of the y axis (NAN: automatic) */
	bool log_y;                 /* values over orders of magnitude */
	char subtitle[160];         /* second title line: setup, date, regime */
	const char *label_fmt;      /* gnuplot sprintf format of the values over the bars */
};
void pt_bars_init(struct pt_bars *b, const char *file, const char *title, const char *ylabel);
/* Write @b as a PNG into o->plot_dir. @return 0 or -1 (message printed) */
int pt_plot_bars(const struct pt_opts *o, const struct pt_bars *b);

/* opts.c */
/* @return 0, 1 (--help), 2 (--version), or -EINVAL with @err filled in */
int pt_parse(int argc, char **argv, struct pt_opts *o, char *err, size_t errlen);
void pt_usage(FILE *f);
void pt_cfg_defaults(struct pt_cfg *c);
/* Settings that do not fit together. @return NULL or why */
const char *pt_cfg_check(const struct pt_cfg *c);

/* Names. */
const char *pt_test_name(enum pt_test t);
const char *pt_dir_name(enum pt_dir d);
const char *pt_ring_name(enum uvn_ring_layout r);
const char *pt_rx_mode_name(enum uvn_rx_mode m);
const char *pt_merge_name(enum uvn_mrg_sizing m);
const char *pt_zc_name(enum pt_zc z);
const char *pt_drv_name(enum pt_drv d);
const char *pt_dev_name(enum pt_dev d);
const char *pt_touch_name(enum pt_touch t);

/* run.c: run one test. Never fails without saying why in @r. */
void pt_run(const struct pt_opts *o, const struct pt_cfg *c, struct pt_result *r);

/* report.c */
void pt_json(FILE *f, const struct pt_result *r);
/* The same object with @extra ("\"key\":value,...") added, for suites. */
void pt_json_extra(FILE *f, const struct pt_result *r, const char *extra);
/* The first JSON line: {"metadata":{version, commit, kernel, cpu, command line, ...}}. */
void pt_json_metadata(FILE *f, const struct pt_opts *o, int argc, char *const *argv);
void pt_table_head(FILE *f);
void pt_table_row(FILE *f, const struct pt_result *r);
/* Under a table: a line per row of @r[0..n) over its physical limit ("# ! ..."). */
void pt_table_flags(FILE *f, const struct pt_result *r, unsigned n);
/* Why @r is over its physical limit, by what its receiver did. */
const char *pt_over_why(const struct pt_result *r);
/* Under a table: what its "touched" column says. */
void pt_table_legend(FILE *f);
/* A limit fraction as "12.3%", flagged "1250.0%!" above 100 %, or "-". */
const char *pt_fmt_limit(char *buf, size_t n, double frac);
/* "12.3 Mpps" style helpers */
const char *pt_fmt_rate(char *buf, size_t n, double pps);
const char *pt_fmt_num(char *buf, size_t n, int decimals, double v);
/* The result's headline value: pps for pps, Gb/s for stream, transactions/s for rr. */
double pt_headline(const struct pt_result *r);
const char *pt_headline_unit(const struct pt_result *r);
/* Print "# date, machine, CPUs, load" lines. */
void pt_print_machine(FILE *f, const char *prefix);
/* One line for a chart: @what, then the date, the load and the cross-CPU regime. */
void pt_subtitle(char *out, size_t n, const char *what, double rtt_ns);
/* Median (and min/max) of @n values; NANs skipped. @return values used */
unsigned pt_median(const double *v, unsigned n, double *med, double *min, double *max);

/* suites.c / seeds.c / compare.c */
int pt_suite_default(const struct pt_opts *o);
int pt_suite_limits(const struct pt_opts *o);
int pt_suite_seeds(const struct pt_opts *o);
int pt_compare_dpdk(const struct pt_opts *o);
/* Single test from the command line. */
int pt_single(const struct pt_opts *o);

/* limits.c: the physical limits of this machine. */
struct pt_limits {
	bool valid;
	double copy_gbps[3];        /* single-core memcpy at 64 B, 1518 B, 64 KB frames */
	double copy_sizes[3];
	double rtt_ns;              /* cache-line round trip between the two CPUs (median) */
	double rtt_min, rtt_max;
	/* pt_limits_cold(): memcpy with source and destination in no cache */
	double cold_gbps[3];        /* at 1518 B (2 KB slots), 16 KB and 64 KB frames */
	double cold_sizes[3];
	size_t cold_buf;            /* bytes of each of the two buffers walked */
	size_t llc;                 /* the last-level cache they dwarf (bytes) */
};
int pt_limits_measure(int cpu_a, int cpu_b, double secs, struct pt_limits *l);
/* The cold copy rows into @l (NAN where it could not run). @return 0 or -1 */
int pt_limits_cold(int cpu, double secs, struct pt_limits *l);
/* Cache-line round trip between two CPUs, median ns over @secs. NAN on failure. */
double pt_rtt_probe(int cpu_a, int cpu_b, double secs);
/* The limits measured in this run (NULL if none yet), and setting them. */
const struct pt_limits *pt_limits_cached(void);
void pt_limits_set(const struct pt_limits *l);
/* Attach the limit fraction to @r (nothing if @l is NULL). */
void pt_limits_apply(const struct pt_limits *l, struct pt_result *r);
const char *pt_regime(double rtt_ns);

/* deps.c: programs we need, installed from Debian when missing. */
/* @return 0 if @prog runs (after installing @pkgs if allowed), else -1 with a note on stderr */
int pt_need(const struct pt_opts *o, const char *prog, const char *pkgs);
/* Debian packages (space-separated) installed, installing the missing ones. @return 0 or -1 */
int pt_need_pkgs(const struct pt_opts *o, const char *pkgs);

static inline bool pt_known(double v)
{
	return !isnan(v);
}

#endif
