/* SPDX-License-Identifier: MIT */
/*
 * A small JSON reader for JSON we (or a trusted peer of the tests) wrote:
 * uvnet-perf reads uvnetd's --json lines, the schema tests read our own
 * output, uvnetd's ctl turns its own JSON into OpenMetrics. Values live in
 * one allocation per document.
 */
#ifndef UVN_UTIL_JSON_READ_H
#define UVN_UTIL_JSON_READ_H

#include <stdbool.h>
#include <stddef.h>

enum js_type { JS_NULL, JS_BOOL, JS_NUM, JS_STR, JS_ARR, JS_OBJ };

struct js {
	enum js_type type;
	bool b;
	double num;
	const char *str;            /* JS_STR: the string (escapes decoded) */
	const char *key;            /* member of an object: its name */
	struct js *child, *next;    /* JS_ARR/JS_OBJ: first element; siblings */
};

struct js_doc {
	struct js *root;
	struct js *nodes;           /* one allocation: nodes then strings */
	char err[80];
};

/* Parse @text (one value, surrounding blanks allowed). @return 0 or -1 (doc->err says why) */
int js_parse(struct js_doc *doc, const char *text);
void js_free(struct js_doc *doc);

/* Member @key of object @o (NULL if absent or @o is not an object). */
const struct js *js_get(const struct js *o, const char *key);
/* Element @i of array @a. */
const struct js *js_at(const struct js *a, unsigned i);
/* Number value, or @dflt if @v is not a number. */
double js_num(const struct js *v, double dflt);

#endif
