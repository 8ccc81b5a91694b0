/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json_read.h"

/* Nodes and decoded strings come from one block sized by the text: a
 * document never holds more values, or string bytes, than it has bytes. */
struct parser {
	const char *s;
	struct js *nodes;
	size_t nnodes, cap;
	char *strs;
	size_t slen;
	unsigned depth;
	char *err;
};

#define MAX_DEPTH 64

static void fail(struct parser *p, const char *what)
{
	if (!p->err[0])
		snprintf(p->err, 80, "%s at '%.16s'", what, p->s);
}

static void skip_ws(struct parser *p)
{
	while (*p->s == ' ' || *p->s == '\t' || *p->s == '\n' || *p->s == '\r')
		p->s++;
}

static struct js *node(struct parser *p, enum js_type t)
{
	struct js *n;

	if (p->nnodes == p->cap) {
		fail(p, "too many values");
		return NULL;
	}
	n = &p->nodes[p->nnodes++];
	memset(n, 0, sizeof(*n));
	n->type = t;
	return n;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* A \uXXXX escape as UTF-8 (no surrogate pairing: we never need it). */
static int put_u(struct parser *p, char *out, size_t *o)
{
	unsigned v = 0;

	/* p->s points at the backslash: "\uXXXX" */
	for (int i = 2; i <= 5; i++) {
		int h = hexval(p->s[i]);

		if (h < 0)
			return -1;
		v = v << 4 | (unsigned)h;
	}
	p->s += 6;
	if (v < 0x80) {
		out[(*o)++] = (char)v;
	} else if (v < 0x800) {
		out[(*o)++] = (char)(0xc0 | v >> 6);
		out[(*o)++] = (char)(0x80 | (v & 0x3f));
	} else {
		out[(*o)++] = (char)(0xe0 | v >> 12);
		out[(*o)++] = (char)(0x80 | ((v >> 6) & 0x3f));
		out[(*o)++] = (char)(0x80 | (v & 0x3f));
	}
	return 0;
}

static const char *string(struct parser *p)
{
	static const char esc_in[] = "\"\\/bfnrt", esc_out[] = "\"\\/\b\f\n\r\t";
	char *out = p->strs + p->slen;
	size_t o = 0;

	p->s++; /* opening quote */
	while (*p->s != '"') {
		if (!*p->s || (unsigned char)*p->s < 0x20) {
			fail(p, "bad string");
			return NULL;
		}
		if (*p->s != '\\') {
			out[o++] = *p->s++;
			continue;
		}
		const char *e = p->s[1] ? strchr(esc_in, p->s[1]) : NULL;

		if (e) {
			out[o++] = esc_out[e - esc_in];
			p->s += 2;
		} else if (p->s[1] != 'u' || put_u(p, out, &o)) {
			fail(p, "bad escape");
			return NULL;
		}
	}
	p->s++;
	out[o++] = 0;
	p->slen += o;
	return out;
}

static struct js *value(struct parser *p);

static struct js *members(struct parser *p, struct js *c, bool obj)
{
	struct js **tail = &c->child;
	char close = obj ? '}' : ']';

	p->s++;
	skip_ws(p);
	if (*p->s == close) {
		p->s++;
		return c;
	}
	for (;;) {
		const char *key = NULL;
		struct js *v;

		skip_ws(p);
		if (obj) {
			if (*p->s != '"' || !(key = string(p))) {
				fail(p, "expected a member name");
				return NULL;
			}
			skip_ws(p);
			if (*p->s++ != ':') {
				fail(p, "expected ':'");
				return NULL;
			}
		}
		v = value(p);
		if (!v)
			return NULL;
		v->key = key;
		*tail = v;
		tail = &v->next;
		skip_ws(p);
		if (*p->s == ',') {
			p->s++;
			continue;
		}
		if (*p->s++ == close)
			return c;
		fail(p, obj ? "expected ',' or '}'" : "expected ',' or ']'");
		return NULL;
	}
}

static struct js *number(struct parser *p)
{
	const char *s = p->s;
	char *end;
	struct js *n;

	/* JSON's grammar, stricter than strtod: no hex, inf, nan or leading '+'. */
	if (*s == '-')
		s++;
	if (*s < '0' || *s > '9' || (s[0] == '0' && s[1] >= '0' && s[1] <= '9')) {
		fail(p, "bad value");
		return NULL;
	}
	n = node(p, JS_NUM);
	if (!n)
		return NULL;
	n->num = strtod(p->s, &end);
	p->s = end;
	return n;
}

static struct js *literal(struct parser *p, const char *word, enum js_type t, bool b)
{
	struct js *n;

	if (strncmp(p->s, word, strlen(word))) {
		fail(p, "bad value");
		return NULL;
	}
	p->s += strlen(word);
	n = node(p, t);
	if (n)
		n->b = b;
	return n;
}

static struct js *value(struct parser *p)
{
	struct js *n;

	skip_ws(p);
	if (++p->depth > MAX_DEPTH) {
		fail(p, "nested too deep");
		return NULL;
	}
	switch (*p->s) {
	case '{':
	case '[':
		n = node(p, *p->s == '{' ? JS_OBJ : JS_ARR);
		n = n ? members(p, n, n->type == JS_OBJ) : NULL;
		break;
	case '"':
		n = node(p, JS_STR);
		if (n && !(n->str = string(p)))
			n = NULL;
		break;
	case 't': n = literal(p, "true", JS_BOOL, true); break;
	case 'f': n = literal(p, "false", JS_BOOL, false); break;
	case 'n': n = literal(p, "null", JS_NULL, false); break;
	default: n = number(p); break;
	}
	p->depth--;
	return n;
}

int js_parse(struct js_doc *doc, const char *text)
{
	size_t len = strlen(text);
	struct parser p = { .s = text, .err = doc->err };

	memset(doc, 0, sizeof(*doc));
	p.cap = len / 2 + 2;
	doc->nodes = malloc(p.cap * sizeof(struct js) + len + 1);
	if (!doc->nodes) {
		snprintf(doc->err, sizeof(doc->err), "out of memory");
		return -1;
	}
	p.nodes = doc->nodes;
	p.strs = (char *)(doc->nodes + p.cap);
	doc->root = value(&p);
	if (doc->root) {
		skip_ws(&p);
		if (*p.s) {
			fail(&p, "trailing text");
			doc->root = NULL;
		}
	}
	return doc->root ? 0 : -1;
}

void js_free(struct js_doc *doc)
{
	free(doc->nodes);
	memset(doc, 0, sizeof(*doc));
}

const struct js *js_get(const struct js *o, const char *key)
{
	if (!o || o->type != JS_OBJ)
		return NULL;
	for (const struct js *c = o->child; c; c = c->next)
		if (!strcmp(c->key, key))
			return c;
	return NULL;
}

const struct js *js_at(const struct js *a, unsigned i)
{
	const struct js *c;

	if (!a || a->type != JS_ARR)
		return NULL;
	for (c = a->child; c && i; c = c->next)
		i--;
	return c;
}

double js_num(const struct js *v, double dflt)
{
	return v && v->type == JS_NUM ? v->num : dflt;
}
