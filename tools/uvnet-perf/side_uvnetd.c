/* SPDX-License-Identifier: MIT */
/*
 * uvnetd as the device: sink (stream tx: it reads every byte), rxonly (pps
 * tx: it drops frames unread), txonly (rx tests), loopback (rr), switch (a
 * pair). Its --json interval lines give the counters; SIGINT makes it print
 * the final totals and exit.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/json_read.h"
#include "side.h"

#define STATS_INTERVAL "0.2"

const char *pt_uvnetd_path(const struct pt_opts *o)
{
	static char path[PATH_MAX];
	char self[PATH_MAX];
	ssize_t n;

	if (o->uvnetd)
		return o->uvnetd;
	if (path[0])
		return path;
	/* Build tree (tools/uvnet-perf/ next to tools/uvnetd/) or installed (same bindir). */
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		char *slash;

		self[n] = 0;
		slash = strrchr(self, '/');
		if (slash) {
			*slash = 0;
			snprintf(path, sizeof(path), "%.3800s/../uvnetd/uvnetd", self);
			if (access(path, X_OK) == 0)
				return path;
			snprintf(path, sizeof(path), "%.3800s/uvnetd", self);
			if (access(path, X_OK) == 0)
				return path;
		}
	}
	snprintf(path, sizeof(path), "uvnetd");
	return path;
}

const char *pt_uvnetd_help(const struct pt_opts *o)
{
	static char help[8192];
	static bool done;

	if (!done) {
		char *argv[] = { (char *)pt_uvnetd_path(o), (char *)"--help", NULL };

		if (pt_capture(argv, help, sizeof(help)) != 0)
			help[0] = 0;
		done = true;
	}
	return help;
}

bool pt_uvnetd_has(const struct pt_opts *o, const char *option)
{
	return strstr(pt_uvnetd_help(o), option) != NULL;
}

unsigned pt_uvnetd_txonly_max(const struct pt_opts *o)
{
	const char *s = strstr(pt_uvnetd_help(o), "--txonly-size");
	const char *dots = s ? strstr(s, "..") : NULL;
	const char *eol = s ? strchr(s, '\n') : NULL;

	/* "frame size for txonly (default 64, 42..2048)": the range is on its line. */
	if (dots && eol && dots > eol && (eol = strchr(eol + 1, '\n')) && dots > eol)
		return 0;
	return dots ? (unsigned)strtoul(dots + 2, NULL, 10) : 0;
}

bool pt_uvnetd_sink_reads(const struct pt_opts *o)
{
	/* The two came together: before rxonly, sink read nothing. */
	return pt_uvnetd_has(o, "rxonly");
}

bool pt_sock_exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISSOCK(st.st_mode);
}

/* {"t":..,"ports":[{...},...]}: sum the ports (a pair has two). */
static bool parse_line(const char *line, struct pt_counts *out)
{
	struct js_doc doc;
	const struct js *ports, *p;
	bool ok = false;

	if (line[0] != '{' || js_parse(&doc, line))
		return false;
	ports = js_get(doc.root, "ports");
	memset(out, 0, sizeof(*out));
	out->t_ns = (uint64_t)(js_num(js_get(doc.root, "t"), 0) * 1e9);
	for (unsigned i = 0; (p = js_at(ports, i)); i++) {
		out->rx_pkts += (uint64_t)js_num(js_get(p, "rx_packets"), 0);
		out->tx_pkts += (uint64_t)js_num(js_get(p, "tx_packets"), 0);
		out->rx_bytes += (uint64_t)js_num(js_get(p, "rx_bytes"), 0);
		out->tx_bytes += (uint64_t)js_num(js_get(p, "tx_bytes"), 0);
		out->drops += (uint64_t)js_num(js_get(p, "drops"), 0) +
			      (uint64_t)js_num(js_get(p, "errors"), 0);
		out->kicks += (uint64_t)js_num(js_get(p, "kicks"), 0);
		out->calls += (uint64_t)js_num(js_get(p, "calls"), 0);
		ok = true;
	}
	out->have_notif = js_get(js_at(ports, 0), "kicks") != NULL;
	out->have_bytes = js_get(js_at(ports, 0), "rx_bytes") != NULL;
	out->valid = ok;
	js_free(&doc);
	return ok;
}

static void on_line(void *ctx, char *line, uint64_t t_ns)
{
	struct pt_side *s = ctx;
	struct pt_counts c;
	bool final = strstr(line, "\"final\":true") != NULL;

	(void)t_ns;
	if (!parse_line(line, &c))
		return;
	c.updates = s->last.updates + 1;
	if (final)
		s->final = c;
	else
		s->last = c;
}

static const char *forward_mode(const struct pt_opts *o, const struct pt_cfg *c)
{
	if (c->pair)
		return "switch";
	if (c->test == PT_RR)
		return "loopback";
	if (c->dir == PT_RX)
		return "txonly";
	/* pps is a descriptor rate: nothing reads the frames. */
	return c->test == PT_PPS && pt_uvnetd_sink_reads(o) ? "rxonly" : "sink";
}

static int start(struct pt_side *s)
{
	const struct pt_cfg *c = s->c;
	char port[2][192], size[16], cpu[16];
	char *argv[24];
	unsigned n = 0;
	int r;

	snprintf(size, sizeof(size), "%u", c->size);
	snprintf(cpu, sizeof(cpu), "%d", c->dev_cpu);
	argv[n++] = (char *)pt_uvnetd_path(s->o);
	for (unsigned i = 0; i < (c->pair ? 2u : 1u); i++) {
		snprintf(port[i], sizeof(port[i]), "vhost-user:%s,queues=%u", s->sock[i], c->queues);
		argv[n++] = (char *)"--port";
		argv[n++] = port[i];
	}
	argv[n++] = (char *)"--forward";
	argv[n++] = (char *)forward_mode(s->o, c);
	if (!c->pair && c->test != PT_RR && c->dir == PT_RX) {
		argv[n++] = (char *)"--txonly-size";
		argv[n++] = size;
	}
	if (c->poll)
		argv[n++] = (char *)"--poll";
	argv[n++] = (char *)"--cpu";
	argv[n++] = cpu;
	if (c->zerocopy != PT_ZC_DEFAULT) {
		argv[n++] = (char *)"--zerocopy";
		argv[n++] = (char *)pt_zc_name(c->zerocopy);
	}
	argv[n++] = (char *)"--stats-interval";
	argv[n++] = (char *)STATS_INTERVAL;
	argv[n++] = (char *)"--json";
	argv[n] = NULL;
	s->child.name = "uvnetd";
	s->child.on_line = on_line;
	s->child.ctx = s;
	r = pt_spawn(&s->child, argv, -1); /* uvnetd pins its data path itself (--cpu) */
	if (r)
		snprintf(s->why, sizeof(s->why), "cannot start %s: %s", argv[0], strerror(-r));
	s->pid = s->child.pid;
	return r;
}

static bool ready(struct pt_side *s)
{
	return pt_sock_exists(s->sock[0]) && (!s->c->pair || pt_sock_exists(s->sock[1]));
}

static int snap(struct pt_side *s, uint64_t after_ns, struct pt_counts *out)
{
	unsigned seen = s->last.updates;
	uint64_t end = pt_now_ns() + 2000000000ull;

	/* The next interval line after @after_ns: at most one interval away. */
	(void)after_ns;
	while (s->last.updates == seen && pt_now_ns() < end && pt_alive(&s->child) &&
	       !pt_interrupted)
		pt_pump(20);
	*out = s->last;
	return s->last.updates > seen ? 0 : -ETIMEDOUT;
}

static void stop(struct pt_side *s)
{
	if (s->stopped)
		return;
	pt_stop(&s->child, SIGINT, 5);
	s->stopped = true;
}

const struct pt_side_ops pt_uvnetd_ops = { start, ready, snap, stop };

/* ------------------------------------------------------------------ */
/* An external backend: nothing to start or stop, counters unknown.   */

/* The sockets it serves: one, or a pair's two (A's and B's). */
static unsigned ext_socks(const struct pt_side *s)
{
	return s->c->pair ? 2 : 1;
}

static int ext_start(struct pt_side *s)
{
	s->pid = s->c->connect_pid;
	/* --listen: the driver makes the sockets, the backend connects to them */
	for (unsigned i = 0; !s->c->listen && i < ext_socks(s); i++) {
		if (!pt_sock_exists(s->sock[i])) {
			snprintf(s->why, sizeof(s->why), "no vhost-user socket at %s", s->sock[i]);
			return -ENOENT;
		}
	}
	return 0;
}

static bool ext_ready(struct pt_side *s)
{
	for (unsigned i = 0; !s->c->listen && i < ext_socks(s); i++)
		if (!pt_sock_exists(s->sock[i]))
			return false;
	return true;
}

static int ext_snap(struct pt_side *s, uint64_t after_ns, struct pt_counts *out)
{
	(void)s;
	(void)after_ns;
	memset(out, 0, sizeof(*out));
	return 0;
}

/*
 * A pair's totals are our two drivers' own: A counted what it sent, B what
 * it received, exactly. The switch counts nothing for us, so it adds no
 * drops: what it lost (or still holds after the drain) is what A sent and
 * B never got, the result's "unaccounted". A single driver's totals need
 * the far side's count: unknown.
 */
static void ext_stop(struct pt_side *s)
{
	if (s->c->pair)
		s->final = (struct pt_counts){ .valid = true };
	s->stopped = true;
}

const struct pt_side_ops pt_external_ops = { ext_start, ext_ready, ext_snap, ext_stop };
