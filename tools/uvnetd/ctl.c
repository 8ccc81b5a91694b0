/* SPDX-License-Identifier: MIT */
/*
 * Live control: uvnetd listens on a Unix socket (--ctl PATH); each
 * connection sends one command line and gets the answer, then the
 * connection closes. `uvnetd ctl PATH COMMAND...` is the client.
 *
 *   show ports|queues|fdb|stats [--json]
 *   show stats --format openmetrics
 *   set zerocopy on|off|auto
 *   add-port SPEC [name=NAME]
 *   del-port NAME
 *   save [FILE]
 *   fdb show [--json]
 *   fdb add MAC port=NAME [vlan=N]
 *   fdb del MAC [vlan=N]
 *   fdb flush [port=NAME]
 *
 * An answer that starts with "error:" makes the client exit 1. The line
 * is gathered and parsed by ctl_parse.c, which needs no daemon (fuzzed).
 *
 * The handlers are light (main.c): a client's line is gathered and `show`
 * answered beside the running workers, reading their counters as the
 * stats timer does; `set`, `add-port`, `del-port` and the fdb changes
 * park them for the change alone (ports.c), so that what the workers learn
 * meanwhile does not race with the operator's entry. Connections
 * are non-blocking, up to UVNETD_CTL_CLIENTS at once (a new one closes
 * the oldest), so a slow client delays neither the data path nor the
 * control thread; only one that does not read its answer gets 200 ms.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "ctl_parse.h"
#include "net/device/netdev.h"
#include "util/json.h"
#include "util/log.h"
#include "util/stats.h"
#include "util/sys.h"
#include "uvnetd.h"
#include "vhost_user/backend.h"

/* The port's VLANs as its spec says them: vlan=N, trunks=LIST, or "" (all). */
static void vlans_text(const struct uvn_port *p, char *buf, size_t n)
{
	const struct uvn_port_vlans *v = &p->conf.vlan;
	size_t o = 0;

	buf[0] = 0;
	if (v->tag) {
		snprintf(buf, n, "vlan=%u", v->tag);
		return;
	}
	if (!v->trunk)
		return;
	o = (size_t)snprintf(buf, n, "trunks=");
	for (unsigned a = 0; a <= UVN_VLAN_MAX && o < n; a++) {
		unsigned b = a;

		if (!uvn_port_vlan_allowed(v, a))
			continue;
		while (b < UVN_VLAN_MAX && uvn_port_vlan_allowed(v, b + 1))
			b++;
		o += (size_t)snprintf(buf + o, n - o, b > a ? "%s%u-%u" : "%s%u", o > 7 ? ":" : "",
				      a, b);
		a = b;
	}
}

static void show_ports(struct uvnetd *d, FILE *f, bool json)
{
	const struct uvn_fdb *fdb = &d->fwd.fdb;

	if (json)
		fputs("{\"ports\":[", f);
	for (unsigned i = 0, n = 0; i < d->fwd.nports; i++) {
		struct uvn_port *p = d->fwd.ports[i];
		uint64_t policed, limited, vdrop;
		struct uvn_port_stats s;
		char vlans[24 * 1024];
		uint32_t entries;

		if (!p)
			continue;
		policed = atomic_load_explicit(&p->policed, memory_order_relaxed);
		limited = atomic_load_explicit(&fdb->port[i].limited, memory_order_relaxed);
		vdrop = atomic_load_explicit(&d->fwd.port_st[i].vlan_dropped, memory_order_relaxed);
		entries = uvn_fdb_port_count(fdb, (uint16_t)i);
		vlans_text(p, vlans, sizeof(vlans));
		p->ops->stats(p, &s);
		if (json) {
			fputs(n++ ? ",{\"name\":" : "{\"name\":", f);
			uvn_json_str(f, p->name);
			fprintf(f, ",\"kind\":\"%s\",\"queues\":%u,", p->ops->kind, p->ops->nqueues(p));
			uvn_stats_json(f, &s, uvn_port_stats_desc);
			fprintf(f, ",\"max_kpps\":%" PRIu64 ",\"policed\":%" PRIu64 ",\"vlans\":",
				p->conf.max_pps / 1000, policed);
			uvn_json_str(f, vlans[0] ? vlans : "all");
			fprintf(f, ",\"vlan_drops\":%" PRIu64 ",\"fdb_entries\":%" PRIu32
				",\"mac_limit\":%" PRIu32 ",\"mac_limit_drops\":%" PRIu64
				",\"mtu\":%" PRIu32 "}",
				vdrop, entries, p->conf.mac_limit, limited, p->conf.mtu);
		} else {
			fprintf(f, "%-40s %-10s queues %u  ", p->name, p->ops->kind, p->ops->nqueues(p));
			uvn_stats_print(f, &s, uvn_port_stats_desc, 1);
			if (p->conf.max_pps)
				fprintf(f, " max-kpps=%" PRIu64 " policed=%" PRIu64, p->conf.max_pps / 1000,
					policed);
			if (p->conf.mtu)
				fprintf(f, " mtu=%" PRIu32, p->conf.mtu);
			if (vlans[0])
				fprintf(f, " %s vlan_drops=%" PRIu64, vlans, vdrop);
			if (p->conf.mac_limit)
				fprintf(f, " mac-limit=%" PRIu32 " fdb_entries=%" PRIu32
					" mac_limit_drops=%" PRIu64, p->conf.mac_limit, entries, limited);
			fputc('\n', f);
		}
	}
	if (json)
		fputs("]}\n", f);
}

static void show_queues(struct uvnetd *d, FILE *f, bool json)
{
	bool first = true;

	if (json)
		fputs("{\"queues\":[", f);
	for (unsigned i = 0; i < d->fwd.nports; i++)
		if (d->fwd.ports[i] && d->fwd.ports[i]->ops->dump_queues)
			d->fwd.ports[i]->ops->dump_queues(d->fwd.ports[i], f, json, &first);
	if (json)
		fputs("]}\n", f);
}

static const char *port_name(struct uvnetd *d, uint16_t id)
{
	return id < d->fwd.nports && d->fwd.ports[id] ? d->fwd.ports[id]->name : NULL;
}

static void show_fdb(struct uvnetd *d, FILE *f, bool json)
{
	const struct uvn_fdb *fdb = &d->fwd.fdb;
	uint64_t now = uvn_now_ns();
	bool first = true;

	if (json)
		fputs("{\"fdb\":[", f);
	else
		fprintf(f, "%-4s  %-17s  %-40s  %s\n", "vlan", "mac", "port", "age (or static)");
	for (unsigned i = 0; i <= fdb->mask; i++) {
		struct uvn_fdb_info e;
		const char *name;
		uint64_t mac;
		double age;

		if (!uvn_fdb_get(fdb, i, now, &e) || !(name = port_name(d, e.port)))
			continue;
		mac = uvn_fdb_key_mac(e.key);
		age = (double)e.age_ns / 1e9;
		if (json) {
			fprintf(f, "%s{\"vlan\":%u,\"mac\":\"%012" PRIx64 "\",\"port\":",
				first ? "" : ",", uvn_fdb_key_vlan(e.key), mac);
			uvn_json_str(f, name);
			fprintf(f, ",\"age_s\":%.1f,\"static\":%s}", age, e.is_static ? "true" : "false");
		} else {
			fprintf(f, "%4u  %02x:%02x:%02x:%02x:%02x:%02x  %-40s  ", uvn_fdb_key_vlan(e.key),
				(unsigned)(mac >> 40) & 0xff, (unsigned)(mac >> 32) & 0xff,
				(unsigned)(mac >> 24) & 0xff, (unsigned)(mac >> 16) & 0xff,
				(unsigned)(mac >> 8) & 0xff, (unsigned)mac & 0xff, name);
			if (e.is_static)
				fputs("static\n", f);
			else
				fprintf(f, "%.1f s\n", age);
		}
		first = false;
	}
	if (json)
		fputs("]}\n", f);
}

/* The poll-mode workers' cycles, busy and idle (uvnetd.h), summed over the
 * workers (so their share is the workers' average), since start. */
static void show_cycles(struct uvnetd *d, FILE *f, bool json)
{
	uint64_t busy = 0, idle = 0;

	for (unsigned i = 0; i < d->nworkers; i++) {
		busy += uvn_stat_read(&d->workers[i].busy_cycles);
		idle += uvn_stat_read(&d->workers[i].idle_cycles);
	}
	if (json)
		fprintf(f, ",\"poll_busy_cycles\":%" PRIu64 ",\"poll_idle_cycles\":%" PRIu64, busy, idle);
	else if (busy + idle)
		fprintf(f, "poll cycles busy %" PRIu64 " idle %" PRIu64 " (%.1f %% busy since start)\n",
			busy, idle, 100.0 * (double)busy / (double)(busy + idle));
}

static void show_stats(struct uvnetd *d, FILE *f, bool json)
{
	const struct uvn_fdb *fdb = &d->fwd.fdb;
	struct uvn_fwd_stats st, *s = &st;

	uvnetd_fwd_stats(d, &st);
	fprintf(f,
		json ? "{\"forwarded\":%" PRIu64 ",\"flooded\":%" PRIu64 ",\"filtered\":%" PRIu64
		       ",\"sunk\":%" PRIu64 ",\"generated\":%" PRIu64 ",\"vlan_dropped\":%" PRIu64
		       ",\"limit_dropped\":%" PRIu64 ",\"tag_failed\":%" PRIu64
		       ",\"fdb_learned\":%" PRIu64 ",\"fdb_moved\":%" PRIu64 ",\"fdb_aged\":%" PRIu64
		       ",\"fdb_full\":%" PRIu64 ",\"fdb_limited\":%" PRIu64 ",\"zerocopy\":\"%s\","
		       "\"workers\":%u,\"worker_pauses\":%" PRIu64
		     : "forwarded %" PRIu64 " flooded %" PRIu64 " filtered %" PRIu64 " sunk %" PRIu64
		       " generated %" PRIu64 "\nvlan_dropped %" PRIu64 " limit_dropped %" PRIu64
		       " tag_failed %" PRIu64 "\nfdb learned %" PRIu64 " moved %" PRIu64
		       " aged %" PRIu64 " full %" PRIu64 " limited %" PRIu64
		       "\nzerocopy %s\nworkers %u (parked %" PRIu64 " times)\n",
		s->forwarded, s->flooded, s->filtered, s->sunk, s->generated, s->vlan_dropped,
		s->limit_dropped, s->tag_failed, (uint64_t)fdb->learned, (uint64_t)fdb->moved,
		(uint64_t)fdb->aged, (uint64_t)fdb->full, (uint64_t)fdb->limited,
		uvnetd_ctl_zc_names[d->o.zerocopy], d->nworkers, d->pauses);
	show_cycles(d, f, json);
	if (json)
		fputs("}\n", f);
}

/* The workers parked for an FDB change. @return false (said): stopping */
static bool fdb_quiesce(struct uvnetd *d, FILE *f)
{
	if (uvnetd_quiesce(d))
		return true;
	uvnetd_resume(d);
	fputs("error: uvnetd is stopping\n", f);
	return false;
}

static void fdb_add(struct uvnetd *d, const struct uvnetd_ctl_cmd *cmd, FILE *f)
{
	char err[160];

	if (uvnetd_fdb_add(d, cmd, err, sizeof(err)))
		fprintf(f, "error: %s\n", err);
	else
		fprintf(f, "static entry added (vlan %u, port %s)\n", cmd->vlan, cmd->port);
}

static void fdb_del(struct uvnetd *d, const struct uvnetd_ctl_cmd *cmd, FILE *f)
{
	int r;

	if (!fdb_quiesce(d, f))
		return;
	r = uvn_fdb_del(&d->fwd.fdb, uvn_fdb_key(cmd->vlan, cmd->mac), uvn_now_ns());
	uvnetd_resume(d);
	if (r)
		fprintf(f, "error: no entry for that address in vlan %u (fdb show lists them)\n",
			cmd->vlan);
	else
		fputs("entry removed\n", f);
}

static void fdb_flush(struct uvnetd *d, const struct uvnetd_ctl_cmd *cmd, FILE *f)
{
	struct uvn_port *p = cmd->port ? uvnetd_port_find(d, cmd->port) : NULL;
	unsigned n;

	if (cmd->port && !p) {
		fprintf(f, "error: no port '%s' (show ports lists them)\n", cmd->port);
		return;
	}
	if (!fdb_quiesce(d, f))
		return;
	n = uvn_fdb_flush(&d->fwd.fdb, p ? p->id : UVN_FDB_NO_PORT, false, uvn_now_ns());
	uvnetd_resume(d);
	fprintf(f, "flushed %u learned entries\n", n);
}

int uvnetd_set_zerocopy(struct uvnetd *d, int m)
{
	if (!uvnetd_quiesce(d)) {
		uvnetd_resume(d);
		return -ECANCELED;
	}
	d->o.zerocopy = m;
	d->env.zerocopy = m; /* and ports added later */
	for (unsigned i = 0; i < d->fwd.nports; i++)
		if (d->fwd.ports[i] && !strcmp(d->fwd.ports[i]->ops->kind, "vhost-user"))
			uvn_port_vhost_set_zerocopy(d->fwd.ports[i], m);
	uvnetd_resume(d);
	return 0;
}

static void set_zerocopy(struct uvnetd *d, int m, FILE *f)
{
	if (uvnetd_set_zerocopy(d, m))
		fputs("error: uvnetd is stopping\n", f);
	else
		fprintf(f, "zerocopy %s\n", uvnetd_ctl_zc_names[m]);
}

/* The running configuration to @path, or to the --config file. */
static void save(struct uvnetd *d, const char *path, FILE *f)
{
	char err[512];
	int r;

	if (!path)
		path = d->o.config;
	if (!path) {
		fputs("error: save needs a FILE: uvnetd runs without --config\n", f);
		return;
	}
	/* `uvnetd ctl` sends FILE made absolute: its cwd is not ours. */
	if (path != d->o.config && path[0] != '/') {
		fprintf(f, "error: save %s: the path must be absolute\n", path);
		return;
	}
	r = uvnetd_config_save(d, path, err, sizeof(err));
	if (r < 0)
		fprintf(f, "error: %s\n", err);
	else
		fprintf(f, "saved the options and %d ports to %s\n", r, path);
}

static void add_port(struct uvnetd *d, const struct uvnetd_ctl_cmd *cmd, FILE *f)
{
	char spec[UVNETD_CTL_LINE + 8];
	int r;

	snprintf(spec, sizeof(spec), "%s%s%s", cmd->spec, cmd->name ? ",name=" : "",
		 cmd->name ? cmd->name : "");
	r = uvnetd_port_add(d, spec);
	if (!r)
		fprintf(f, "port added\n");
	else if (r == -EINVAL)
		fprintf(f, "error: bad port spec '%s' (uvnetd --help shows the forms)\n", spec);
	else if (r == -EEXIST)
		fputs("error: a port of that name exists\n", f);
	else if (r == -ECANCELED)
		fputs("error: uvnetd is stopping\n", f);
	else
		fprintf(f, "error: cannot add the port: %s (uvnetd's log says more)\n", strerror(-r));
}

static void del_port(struct uvnetd *d, const char *name, FILE *f)
{
	int r = uvnetd_port_del(d, name);

	if (!r)
		fputs("port removed\n", f);
	else if (r == -ENOENT)
		fputs("error: no such port (show ports lists them)\n", f);
	else
		fputs("error: uvnetd is stopping\n", f);
}

static void execute(struct uvnetd *d, char *line, FILE *f)
{
	struct uvnetd_ctl_cmd cmd;

	if (uvnetd_ctl_parse(line, &cmd)) {
		fprintf(f, "error: %s\n", cmd.error);
		return;
	}
	switch (cmd.op) {
	case UVNETD_CTL_SHOW_PORTS:
		return show_ports(d, f, cmd.json);
	case UVNETD_CTL_SHOW_QUEUES:
		return show_queues(d, f, cmd.json);
	case UVNETD_CTL_SHOW_FDB:
		return show_fdb(d, f, cmd.json);
	case UVNETD_CTL_SHOW_STATS:
		if (cmd.openmetrics && uvnetd_metrics(d, f, show_ports, show_queues, show_stats))
			fputs("error: cannot render the metrics\n", f);
		if (cmd.openmetrics)
			return;
		return show_stats(d, f, cmd.json);
	case UVNETD_CTL_SET_ZEROCOPY:
		return set_zerocopy(d, cmd.zerocopy, f);
	case UVNETD_CTL_ADD_PORT:
		return add_port(d, &cmd, f);
	case UVNETD_CTL_DEL_PORT:
		return del_port(d, cmd.name, f);
	case UVNETD_CTL_SAVE:
		return save(d, cmd.path, f);
	case UVNETD_CTL_FDB_ADD:
		return fdb_add(d, &cmd, f);
	case UVNETD_CTL_FDB_DEL:
		return fdb_del(d, &cmd, f);
	case UVNETD_CTL_FDB_FLUSH:
		return fdb_flush(d, &cmd, f);
	case UVNETD_CTL_NOPS:
		break;
	}
}

/* Send the whole answer; a client that does not read it gets 200 ms. */
static void answer(int fd, const char *out, size_t len)
{
	struct timeval tv = { .tv_sec = 0, .tv_usec = 200000 };
	uint64_t deadline = uvn_now_ns() + 200000000ull;

	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	for (size_t off = 0; off < len && uvn_now_ns() < deadline;) {
		ssize_t w = write(fd, out + off, len - off);

		if (w <= 0)
			break;
		off += (size_t)w;
	}
}

static void conn_close(struct uvnetd_ctl_conn *c)
{
	uvn_loop_close(c->d->loop, &c->h);
}

/* Run the client's line (NULL: refused before parsing), answer. */
static void reply(struct uvnetd_ctl_conn *c, char *line)
{
	char *out = NULL;
	size_t outlen = 0;
	FILE *f = open_memstream(&out, &outlen);

	if (!f)
		return;
	if (line)
		execute(c->d, line, f);
	else
		fprintf(f, "error: command line longer than %zu bytes\n", sizeof(c->line) - 1);
	fclose(f);
	answer(c->h.fd, out, outlen);
	free(out);
}

/* The client's bytes so far; once the line is whole, answer and hang up. */
static void on_conn(struct uvn_handler *h, uint32_t events)
{
	struct uvnetd_ctl_conn *c = h->ctx;
	char in[UVNETD_CTL_LINE];
	ssize_t n = read(h->fd, in, sizeof(in));
	int r;

	(void)events;
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	/* A read error ends the line as the end of the stream does. */
	r = n > 0 ? uvnetd_ctl_gather(c->line, sizeof(c->line), &c->len, in, (size_t)n)
		  : uvnetd_ctl_gather_end(sizeof(c->line), &c->len);
	if (r == UVNETD_CTL_MORE)
		return;
	if (r == UVNETD_CTL_READY || r == -E2BIG)
		reply(c, r == UVNETD_CTL_READY ? c->line : NULL);
	conn_close(c);
}

/* A new client takes a free slot, or the oldest one's: clients that
 * connect and say nothing hold a slot, never the control thread. */
static void on_accept(struct uvn_handler *h, uint32_t events)
{
	struct uvnetd *d = h->ctx;
	struct uvnetd_ctl_conn *c = &d->ctl_conn[0];
	int fd = accept4(h->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	(void)events;
	if (fd < 0)
		return;
	for (unsigned i = 0; i < UVNETD_CTL_CLIENTS && c->h.fd >= 0; i++)
		if (d->ctl_conn[i].h.fd < 0 || d->ctl_conn[i].seq < c->seq)
			c = &d->ctl_conn[i];
	if (c->h.fd >= 0)
		conn_close(c);
	*c = (struct uvnetd_ctl_conn){ .h = { .fd = fd, .fn = on_conn, .ctx = c, .light = true },
				       .d = d, .seq = ++d->ctl_seq };
	if (uvn_loop_add(d->loop, &c->h, EPOLLIN)) {
		close(fd);
		c->h.fd = -1;
	}
}

/* The socket is made as the vhost-user ones are (uvn_vu_listen): a stale
 * socket file is replaced, but never a file of another kind nor a socket
 * some process (another uvnetd) still accepts on. */
int uvnetd_ctl_start(struct uvnetd *d, const char *path)
{
	int fd = uvn_vu_listen(path), r;

	if (fd == -EEXIST)
		UVN_ERR("control socket %s: exists and is not a socket: not removed", path);
	else if (fd == -EADDRINUSE)
		UVN_ERR("control socket %s: in use by a live process: not removed", path);
	if (fd < 0)
		return fd;
	for (unsigned i = 0; i < UVNETD_CTL_CLIENTS; i++)
		d->ctl_conn[i].h.fd = -1;
	d->ctl_h = (struct uvn_handler){ .fd = fd, .fn = on_accept, .ctx = d, .light = true };
	r = uvn_loop_add(d->loop, &d->ctl_h, EPOLLIN);
	if (r) {
		close(fd);
		unlink(path);
		d->ctl_h.fd = -1;
	}
	return r;
}

void uvnetd_ctl_stop(struct uvnetd *d)
{
	if (d->ctl_h.fd < 0)
		return;
	for (unsigned i = 0; i < UVNETD_CTL_CLIENTS; i++)
		if (d->ctl_conn[i].h.fd >= 0)
			conn_close(&d->ctl_conn[i]);
	uvn_loop_close(d->loop, &d->ctl_h);
	unlink(d->o.ctl_path);
}

int uvnetd_ctl_client(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char cmd[UVNETD_CTL_LINE] = "", buf[4096];
	bool error = false, first = true;
	ssize_t n;
	int fd;

	if (argc < 2) {
		fputs("usage: uvnetd ctl PATH show ports|queues|fdb|stats [--json]\n"
		      "       uvnetd ctl PATH show stats --format openmetrics\n"
		      "       uvnetd ctl PATH set zerocopy on|off|auto\n"
		      "       uvnetd ctl PATH add-port SPEC [name=NAME]\n"
		      "       uvnetd ctl PATH del-port NAME\n"
		      "       uvnetd ctl PATH save [FILE]\n"
		      "       uvnetd ctl PATH fdb show [--json]\n"
		      "       uvnetd ctl PATH fdb add MAC port=NAME [vlan=N]\n"
		      "       uvnetd ctl PATH fdb del MAC [vlan=N]\n"
		      "       uvnetd ctl PATH fdb flush [port=NAME]\n", stderr);
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		const char *w = argv[i];

		/* save FILE: uvnetd writes it, from its own directory */
		if (i == 2 && !strcmp(argv[1], "save") && w[0] != '/') {
			if (!getcwd(buf, sizeof(buf)) || strlen(buf) + strlen(w) + 2 >= sizeof(buf))
				return 2;
			strcat(buf, "/");
			w = strcat(buf, w);
		}
		if (strlen(cmd) + strlen(w) + 2 >= sizeof(cmd)) {
			fprintf(stderr, "uvnetd ctl: command longer than %zu bytes\n", sizeof(cmd) - 2);
			return 2;
		}
		strcat(cmd, w);
		strcat(cmd, i + 1 < argc ? " " : "\n");
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", argv[0]);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		fprintf(stderr, "uvnetd ctl: %s: %s\n", argv[0], strerror(errno));
		return 1;
	}
	if (write(fd, cmd, strlen(cmd)) < 0) {
		fprintf(stderr, "uvnetd ctl: %s\n", strerror(errno));
		close(fd);
		return 1;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		if (first && n >= 6 && !strncmp(buf, "error:", 6))
			error = true;
		first = false;
		fwrite(buf, 1, (size_t)n, error ? stderr : stdout);
	}
	close(fd);
	return error ? 1 : 0;
}
