/* SPDX-License-Identifier: MIT */
/*
 * The JSON object uvnet-perf prints per test (uvnet-perf(1), DESIGN.md
 * "the interfaces that other tools rely on"): every field with its type
 * and allowed values. The test checks both ways: each field here is
 * present and valid, and nothing unlisted appears.
 */
#ifndef UVN_TEST_PERF_SCHEMA_H
#define UVN_TEST_PERF_SCHEMA_H

#include <stdbool.h>

#include "util/json_read.h"

enum {
	F_STR = 1,      /* a string (one of @values if given) */
	F_NUM = 2,      /* a finite number >= @min */
	F_UINT = 4,     /* a whole number >= 0 */
	F_INT = 8,      /* a whole number */
	F_BOOL = 16,
	F_NULL = 32,    /* may be null */
	F_LAT = 64,     /* latency object {p50, p99, p999, min, max, mean} */
	F_IV = 128,     /* the intervals array (perf_interval_schema) */
};

struct field {
	const char *key;
	unsigned types;
	const char *values;     /* "a|b|c" for strings */
	double min;
};

static const struct field perf_schema[] = {
	{ "test", F_STR, "stream|pps|rr", 0 },
	{ "direction", F_STR, "tx|rx|both", 0 },
	{ "size", F_UINT, NULL, 60 },
	{ "segs", F_UINT, NULL, 1 },
	{ "topology", F_STR, "direct|pair", 0 },
	{ "driver", F_STR, "uvnet|dpdk", 0 },
	{ "device", F_STR, "uvnetd|dpdk|external", 0 },
	{ "ring", F_STR, "split|packed", 0 },
	{ "rx_mode", F_STR, "auto|small|big|mergeable", 0 },
	{ "mode", F_STR, "poll|event", 0 },
	{ "queues", F_UINT, NULL, 1 },
	{ "burst", F_UINT, NULL, 1 },
	{ "queue_size", F_UINT, NULL, 64 },
	{ "deferred_alloc", F_BOOL | F_NULL, NULL, 0 },
	{ "merge_size", F_STR | F_NULL, "header|mtu-only|adaptive", 0 },
	{ "desc_cache", F_STR | F_NULL, "on|off", 0 },
	{ "desc_cache_thr", F_UINT | F_NULL, NULL, 1 },
	{ "zerocopy", F_STR | F_NULL, "default|on|off|auto", 0 },
	{ "dirty", F_BOOL, NULL, 0 },
	{ "duration_s", F_NUM, NULL, 0 },
	{ "warmup_s", F_NUM, NULL, 0 },
	{ "status", F_STR, "ok|n/a|error", 0 },
	{ "reason", F_STR, NULL, 0 },
	{ "pps", F_NUM | F_NULL, NULL, 0 },
	{ "gbps", F_NUM | F_NULL, NULL, 0 },
	{ "measured_at", F_STR, "receiver|sender", 0 },
	{ "seconds", F_NUM | F_NULL, NULL, 0 },
	{ "cpu_driver", F_NUM | F_NULL, NULL, 0 },
	{ "cpu_device", F_NUM | F_NULL, NULL, 0 },
	{ "service_demand_us_per_kb", F_NUM | F_NULL, NULL, 0 },
	{ "service_demand_driver_us_per_kb", F_NUM | F_NULL, NULL, 0 },
	{ "service_demand_device_us_per_kb", F_NUM | F_NULL, NULL, 0 },
	{ "notifications_per_s", F_NUM | F_NULL, NULL, 0 },
	{ "kicks_per_s", F_NUM | F_NULL, NULL, 0 },
	{ "calls_per_s", F_NUM | F_NULL, NULL, 0 },
	{ "sent", F_UINT | F_NULL, NULL, 0 },
	{ "received", F_UINT | F_NULL, NULL, 0 },
	{ "drops", F_UINT | F_NULL, NULL, 0 },
	{ "backpressure", F_UINT | F_NULL, NULL, 0 },
	{ "unaccounted", F_INT | F_NULL, NULL, -1e300 },
	{ "transactions_per_s", F_NUM | F_NULL, NULL, 0 },
	{ "latency_us", F_LAT | F_NULL, NULL, 0 },
	{ "rr_timeouts", F_UINT | F_NULL, NULL, 0 },
	{ "offload", F_STR, "none|tso|jumbo|segmented", 0 },
	{ "mrg_buf_len", F_UINT, NULL, 0 },
	{ "rtt_ns", F_NUM | F_NULL, NULL, 0 },
	{ "regime", F_STR, "near|far|contended|unknown", 0 },
	{ "limit_fraction", F_NUM | F_NULL, NULL, 0 },
	{ "limit_basis", F_STR, NULL, 0 },
	{ "over_limit", F_BOOL | F_NULL, NULL, 0 },
	{ "touched", F_STR, "payload read|payload copied|descriptors only|unknown", 0 },
	{ "frames", F_UINT | F_NULL, NULL, 0 },
	{ "bytes", F_UINT | F_NULL, NULL, 0 },
	{ "intervals", F_IV, NULL, 0 },
};

/* Each record of "intervals": offsets into the measured window, what arrived. */
static const struct field perf_interval_schema[] = {
	{ "start_s", F_NUM, NULL, 0 },
	{ "end_s", F_NUM, NULL, 0 },
	{ "frames", F_UINT, NULL, 0 },
	{ "bytes", F_UINT, NULL, 0 },
	{ "mpps", F_NUM, NULL, 0 },
	{ "gbit_per_s", F_NUM, NULL, 0 },
	{ "transactions", F_UINT | F_NULL, NULL, 0 },
};

/* Fields the suites add. */
static const struct field perf_schema_suite[] = {
	{ "seed", F_STR, NULL, 0 },
	{ "switch", F_STR, "on|off", 0 },
	{ "run", F_UINT, NULL, 1 },
	{ "compare", F_STR, "dpdk", 0 },
	{ "pair", F_STR, "DPDK->DPDK|uvnet->DPDK|DPDK->uvnetd|uvnet->uvnetd", 0 },
};

/*
 * Check @obj against the schema (plus the suite fields if @suite).
 * @return NULL, or what is wrong (a static string)
 */
const char *perf_schema_check(const struct js *obj, bool suite);

/*
 * The first line of --json, {"metadata":{...}}: uvnet's version (@version),
 * the commit (40 hex digits or null), the kernel as uname says, the CPU
 * model and count, the command line as an array of strings, the start
 * time in UTC ISO 8601, the interval. @return NULL, or what is wrong
 */
const char *perf_metadata_check(const struct js *line, const char *version);

#endif
