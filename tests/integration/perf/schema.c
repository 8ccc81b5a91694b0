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
		return "an array where it should not be";
	}
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
	for (unsigned i = 0; i < sizeof(perf_schema) / sizeof(perf_schema[0]); i++) {
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
			snprintf(why, sizeof(why), "field %s: %s", c->key, bad);
			return why;
		}
	}
	return NULL;
}
