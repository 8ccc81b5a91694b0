/* SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "schema.h"

static char why[256];

static bool one_of(const char *s, const char *values)
{
	size_t n = strlen(s);

	for (const char *p = values; p && *p;) {
		size_t k = strcspn(p, "|");

		if (k == n && !strncmp(p, s, n))
			return true;
		p += k + (p[k] == '|');
	}
	return false;
}

static const char *check_latency(const struct js *v)
{
	static const char *const keys[] = { "p50", "p99", "p999", "min", "max", "mean" };
	unsigned n = 0;

	for (const struct js *c = v->child; c; c = c->next)
		n++;
	if (n != 6)
		return "latency_us must have exactly p50, p99, p999, min, max, mean";
	for (unsigned i = 0; i < 6; i++) {
		const struct js *x = js_get(v, keys[i]);

		if (!x || x->type != JS_NUM || !isfinite(x->num) || x->num < 0)
			return "latency_us: a value is missing or not a number >= 0";
	}
	if (!(js_num(js_get(v, "min"), 0) <= js_num(js_get(v, "p50"), 0) &&
	      js_num(js_get(v, "p50"), 0) <= js_num(js_get(v, "p99"), 0) &&
	      js_num(js_get(v, "p99"), 0) <= js_num(js_get(v, "p999"), 0) &&
	      js_num(js_get(v, "p999"), 0) <= js_num(js_get(v, "max"), 0)))
		return "latency_us: not min <= p50 <= p99 <= p999 <= max";
	return NULL;
}

static const char *check_intervals(const struct js *v);

static const char *check_field(const struct field *f, const struct js *v)
{
	switch (v->type) {
	case JS_NULL:
		return f->types & F_NULL ? NULL : "null where a value is required";
	case JS_BOOL:
		return f->types & F_BOOL ? NULL : "a boolean where it should not be";
	case JS_STR:
		if (!(f->types & F_STR))
			return "a string where it should not be";
		return !f->values || one_of(v->str, f->values) ? NULL : "a value outside the allowed set";
	case JS_OBJ:
		return f->types & F_LAT ? check_latency(v) : "an object where it should not be";
	case JS_NUM:
		if (!(f->types & (F_NUM | F_UINT | F_INT)) || !isfinite(v->num))
			return "a number where it should not be";
		if ((f->types & (F_UINT | F_INT)) && v->num != floor(v->num))
			return "not a whole number";
		if ((f->types & F_UINT) && v->num < 0)
			return "negative";
		return v->num >= f->min ? NULL : "below its minimum";
	default:
		return f->types & F_IV ? check_intervals(v) : "an array where it should not be";
	}
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* Every field of @fields in @obj and valid, nothing else. @return NULL or why */
static const char *check_fields(const struct js *obj, const struct field *fields, unsigned n,
				const char *what)
{
	unsigned seen = 0;

	if (!obj || obj->type != JS_OBJ)
		return "not a JSON object";
	for (const struct js *c = obj->child; c; c = c->next, seen++) {
		const struct field *f = NULL;
		const char *bad;

		for (unsigned i = 0; i < n && !f; i++)
			if (!strcmp(fields[i].key, c->key))
				f = &fields[i];
		if (!f) {
			snprintf(why, sizeof(why), "%s: unknown field %s", what, c->key);
			return why;
		}
		bad = check_field(f, c);
		if (bad) {
			snprintf(why, sizeof(why), "%s: field %s: %s", what, c->key, bad);
			return why;
		}
	}
	return seen == n ? NULL : "a record without all its fields";
}

/* Records back to back from 0, each with its own fields right. */
static const char *check_intervals(const struct js *v)
{
	double end = 0;
	const char *bad;

	for (const struct js *r = v->child; r; r = r->next) {
		bad = check_fields(r, perf_interval_schema, N(perf_interval_schema), "intervals");
		if (bad)
			return bad;
		if (js_num(js_get(r, "start_s"), -1) != end)
			return "intervals: a record does not start where the one before ended";
		end = js_num(js_get(r, "end_s"), 0);
		if (!(end > js_num(js_get(r, "start_s"), 0)))
			return "intervals: a record does not end after it starts";
	}
	return NULL;
}

static double sum(const struct js *arr, const char *key)
{
	double n = 0;

	for (const struct js *r = arr->child; r; r = r->next)
		n += js_num(js_get(r, key), 0);
	return n;
}

/*
 * The intervals split the measured window: their frames and bytes add up
 * to the window's, their ends to its seconds; rr's frames are two per
 * transaction. A test that measured nothing has none.
 */
static const char *check_window(const struct js *obj)
{
	const struct js *iv = js_get(obj, "intervals"), *last;
	bool ok = !strcmp(js_get(obj, "status")->str, "ok");
	bool rr = !strcmp(js_get(obj, "test")->str, "rr");
	unsigned n = 0;

	for (last = iv->child; last && last->next; last = last->next)
		n++;
	if (!ok)
		return !last && js_get(obj, "frames")->type == JS_NULL ? NULL :
		       "intervals or frames in a test that measured nothing";
	if (!last)
		return "no intervals in a test that measured";
	if (sum(iv, "frames") != js_num(js_get(obj, "frames"), -1))
		return "the intervals' frames do not add up to the window's";
	if (sum(iv, "bytes") != js_num(js_get(obj, "bytes"), -1))
		return "the intervals' bytes do not add up to the window's";
	/* seconds has 3 decimals, end_s 6 */
	if (fabs(js_num(js_get(last, "end_s"), 0) - js_num(js_get(obj, "seconds"), 0)) > 0.0006)
		return "the last interval does not end where the window does";
	for (const struct js *r = iv->child; r; r = r->next) {
		const struct js *t = js_get(r, "transactions");

		if (rr ? t->type != JS_NUM || 2 * t->num != js_num(js_get(r, "frames"), -1) :
			 t->type != JS_NULL)
			return "intervals: transactions are not half the frames (rr) or null";
	}
	return NULL;
}

static const struct field *find(const char *key, bool suite)
{
	for (unsigned i = 0; i < sizeof(perf_schema) / sizeof(perf_schema[0]); i++)
		if (!strcmp(perf_schema[i].key, key))
			return &perf_schema[i];
	for (unsigned i = 0; suite && i < sizeof(perf_schema_suite) / sizeof(perf_schema_suite[0]); i++)
		if (!strcmp(perf_schema_suite[i].key, key))
			return &perf_schema_suite[i];
	return NULL;
}

const char *perf_schema_check(const struct js *obj, bool suite)
{
	if (!obj || obj->type != JS_OBJ)
		return "not a JSON object";
	for (unsigned i = 0; i < N(perf_schema); i++) {
		if (!js_get(obj, perf_schema[i].key)) {
			snprintf(why, sizeof(why), "field %s is missing", perf_schema[i].key);
			return why;
		}
	}
	for (const struct js *c = obj->child; c; c = c->next) {
		const struct field *f = find(c->key, suite);
		const char *bad;

		if (!f) {
			snprintf(why, sizeof(why), "unknown field %s", c->key);
			return why;
		}
		bad = check_field(f, c);
		if (bad) {
			if (bad != why)
				snprintf(why, sizeof(why), "field %s: %s", c->key, bad);
			return why;
		}
	}
	return check_window(obj);
}

static const struct field kernel_schema[] = {
	{ "sysname", F_STR, NULL, 0 },
	{ "release", F_STR, NULL, 0 },
	{ "version", F_STR, NULL, 0 },
	{ "machine", F_STR, NULL, 0 },
};

static const struct field cpu_schema[] = {
	{ "model", F_STR | F_NULL, NULL, 0 },
	{ "count", F_UINT, NULL, 1 },
};

static bool all_hex(const char *s, size_t n)
{
	if (strlen(s) != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!strchr("0123456789abcdef", s[i]))
			return false;
	return true;
}

/* "2026-12-01T23:14:38Z" */
static bool iso_utc(const char *s)
{
	static const char pat[] = "dddd-dd-ddTdd:dd:ddZ";

	if (strlen(s) != sizeof(pat) - 1)
		return false;
	for (size_t i = 0; pat[i]; i++)
		if (pat[i] == 'd' ? !(s[i] >= '0' && s[i] <= '9') : s[i] != pat[i])
			return false;
	return true;
}

const char *perf_metadata_check(const struct js *line, const char *version)
{
	const struct js *m = js_get(line, "metadata"), *v;
	unsigned n = 0;
	const char *bad;

	if (!line || line->type != JS_OBJ || !m || m->type != JS_OBJ || line->child->next)
		return "not {\"metadata\":{...}}";
	for (v = m->child; v; v = v->next)
		n++;
	if (n != 8)
		return "metadata: not exactly tool, version, commit, kernel, cpu, command_line, "
		       "start_time, interval_s";
	v = js_get(m, "tool");
	if (!v || v->type != JS_STR || strcmp(v->str, "uvnet-perf"))
		return "metadata: tool is not uvnet-perf";
	v = js_get(m, "version");
	if (!v || v->type != JS_STR || strcmp(v->str, version))
		return "metadata: version is not uvnet's";
	v = js_get(m, "commit");
	if (!v || !(v->type == JS_NULL || (v->type == JS_STR && all_hex(v->str, 40))))
		return "metadata: commit is neither 40 hex digits nor null";
	bad = check_fields(js_get(m, "kernel"), kernel_schema, N(kernel_schema), "metadata.kernel");
	if (!bad)
		bad = check_fields(js_get(m, "cpu"), cpu_schema, N(cpu_schema), "metadata.cpu");
	if (bad)
		return bad;
	v = js_get(m, "command_line");
	if (!v || v->type != JS_ARR || !v->child)
		return "metadata: command_line is not a non-empty array";
	for (const struct js *a = v->child; a; a = a->next)
		if (a->type != JS_STR)
			return "metadata: command_line holds a non-string";
	v = js_get(m, "start_time");
	if (!v || v->type != JS_STR || !iso_utc(v->str))
		return "metadata: start_time is not YYYY-MM-DDTHH:MM:SSZ";
	v = js_get(m, "interval_s");
	if (!v || v->type != JS_NUM || !(v->num >= 0.2))
		return "metadata: interval_s is not a number >= 0.2";
	return NULL;
}
