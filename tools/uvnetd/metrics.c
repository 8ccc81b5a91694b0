/* SPDX-License-Identifier: MIT */
/*
 * `uvnetd ctl PATH show stats --format openmetrics`: every number that
 * `show ports|queues|stats --json` has, in the OpenMetrics text format
 * (what Prometheus scrapes), so the two can never disagree: the JSON is
 * rendered, read back and rewritten.
 *
 *   uvnetd_port_<field>{port="NAME",kind="vhost-user"}
 *   uvnetd_queue_<field>{port="NAME",vq="1",dir="guest_tx"}   (nested
 *       objects of a queue, "ring" and "dev", prefix their fields)
 *   uvnetd_<field>                                          (the switch)
 *
 * Counters get the _total suffix; the few gauges (sizes, limits, modes)
 * are listed below. Booleans are 0 or 1; strings become no metric.
 */
#include <stdlib.h>
#include <string.h>

#include "util/json_read.h"
#include "uvnetd.h"

#define MAX_KEYS 128

static const char *const gauges[] = {
	"queues", "size", "max_kpps", "broken", "zerocopy", "zc_held", "zc_held_peak",
	"offload_flags", "workers", "fdb_entries", "mac_limit", "mtu",
};

static bool is_gauge(const char *key)
{
	for (size_t i = 0; i < sizeof(gauges) / sizeof(gauges[0]); i++)
		if (!strcmp(key, gauges[i]))
			return true;
	return false;
}

static void label(FILE *f, const char *name, const char *v, bool first)
{
	fprintf(f, "%s%s=\"", first ? "" : ",", name);
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fprintf(f, "\\%c", *v);
		else if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
	fputc('"', f);
}

/* The labels of one entry of "ports" or "queues". */
static void labels(FILE *f, const struct js *e, bool queue)
{
	const struct js *port = js_get(e, queue ? "port" : "name");
	char vq[16];

	fputc('{', f);
	label(f, "port", port && port->type == JS_STR ? port->str : "", true);
	if (queue) {
		snprintf(vq, sizeof(vq), "%.0f", js_num(js_get(e, "vq"), -1));
		label(f, "vq", vq, false);
		label(f, "dir", js_get(e, "dir") ? js_get(e, "dir")->str : "", false);
	} else {
		label(f, "kind", js_get(e, "kind") ? js_get(e, "kind")->str : "", false);
	}
	fputc('}', f);
}

static bool is_value(const struct js *v)
{
	return v && (v->type == JS_NUM || v->type == JS_BOOL);
}

static double value(const struct js *v)
{
	return v->type == JS_BOOL ? v->b : v->num;
}

/* The member @key of @e, or of its object @obj when @obj is set. */
static const struct js *member(const struct js *e, const char *obj, const char *key)
{
	return obj ? js_get(js_get(e, obj), key) : js_get(e, key);
}

struct key {
	const char *obj, *key; /* obj: the nested object, or NULL */
};

/* Every (object, key) with a value in any entry of @arr, first seen first. */
static unsigned gather(const struct js *arr, struct key *keys)
{
	unsigned n = 0;

	for (const struct js *e = arr ? arr->child : NULL; e; e = e->next)
		for (const struct js *m = e->child; m; m = m->next) {
			const struct js *sub = m->type == JS_OBJ ? m->child : m;

			for (; sub; sub = m->type == JS_OBJ ? sub->next : NULL) {
				const char *obj = m->type == JS_OBJ ? m->key : NULL;
				unsigned i = 0;

				/* vq is a label; queue (its pair) says nothing more */
				if (!is_value(sub) ||
				    (!obj && (!strcmp(sub->key, "vq") || !strcmp(sub->key, "queue"))))
					continue;
				while (i < n && !(!keys[i].obj == !obj &&
						  (!obj || !strcmp(keys[i].obj, obj)) &&
						  !strcmp(keys[i].key, sub->key)))
					i++;
				if (i == n && n < MAX_KEYS)
					keys[n++] = (struct key){ obj, sub->key };
			}
		}
	return n;
}

/* One family per key over the entries of @arr ("ports" or "queues"). */
static void families(FILE *f, const struct js *arr, const char *prefix, bool queue)
{
	struct key keys[MAX_KEYS];
	unsigned n = gather(arr, keys);

	for (unsigned i = 0; i < n; i++) {
		bool gauge = is_gauge(keys[i].key);
		char name[160];

		snprintf(name, sizeof(name), "%s_%s%s%s", prefix, keys[i].obj ? keys[i].obj : "",
			 keys[i].obj ? "_" : "", keys[i].key);
		fprintf(f, "# TYPE %s %s\n", name, gauge ? "gauge" : "counter");
		for (const struct js *e = arr->child; e; e = e->next) {
			const struct js *v = member(e, keys[i].obj, keys[i].key);

			if (!is_value(v))
				continue;
			fprintf(f, "%s%s", name, gauge ? "" : "_total");
			labels(f, e, queue);
			fprintf(f, " %.17g\n", value(v));
		}
	}
}

/* Render one `show ... --json` into memory and read it back. */
static int render(struct uvnetd *d, uvnetd_show_fn show, struct js_doc *doc)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	int r;

	if (!m)
		return -1;
	show(d, m, true);
	fclose(m);
	r = js_parse(doc, buf);
	free(buf);
	return r;
}

int uvnetd_metrics(struct uvnetd *d, FILE *f, uvnetd_show_fn ports, uvnetd_show_fn queues,
		   uvnetd_show_fn stats)
{
	struct js_doc p, q, s;
	int r = render(d, ports, &p);

	if (r)
		return r;
	if ((r = render(d, queues, &q))) {
		js_free(&p);
		return r;
	}
	if ((r = render(d, stats, &s))) {
		js_free(&p);
		js_free(&q);
		return r;
	}
	families(f, js_get(p.root, "ports"), "uvnetd_port", false);
	families(f, js_get(q.root, "queues"), "uvnetd_queue", true);
	for (const struct js *m = s.root ? s.root->child : NULL; m; m = m->next)
		if (is_value(m))
			fprintf(f, "# TYPE uvnetd_%s %s\nuvnetd_%s%s %.17g\n", m->key,
				is_gauge(m->key) ? "gauge" : "counter", m->key,
				is_gauge(m->key) ? "" : "_total", value(m));
	fputs("# EOF\n", f);
	js_free(&p);
	js_free(&q);
	js_free(&s);
	return 0;
}
