/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uvnet/version.h>

#include "ctl_parse.h"
#include "net/device/netdev.h"
#include "util/log.h"
#include "util/sys.h"
#include "uvnetd.h"

void uvnetd_usage(FILE *f)
{
	fputs("Usage: uvnetd [OPTIONS] --port SPEC [--port SPEC ...]\n"
	      "       uvnetd --config FILE [OPTIONS]\n"
	      "       uvnetd ctl PATH show ports|queues|fdb|stats [--json]\n"
	      "       uvnetd ctl PATH show stats --format openmetrics\n"
	      "       uvnetd ctl PATH set zerocopy on|off|auto\n"
	      "       uvnetd ctl PATH add-port SPEC [name=NAME] | del-port NAME\n"
	      "       uvnetd ctl PATH save [FILE]\n"
	      "A vhost-user switch: QEMU guests, DPDK virtio-user and uvnet drivers plug in,\n"
	      "TAP devices connect it to the host.\n\n"
	      "Ports:\n"
	      "  -p, --port vhost-user:PATH[,client][,queues=N][,group=G][,mode=M][,max-kpps=K]\n"
	      "             [,name=NAME]\n"
	      "                       a vhost-user socket uvnetd listens on (or connects to and\n"
	      "                       keeps reconnecting with 'client', for QEMU's server=on);\n"
	      "                       N queue pairs (default 1); group= and mode= (octal) for\n"
	      "                       this socket, over --socket-group and --socket-mode;\n"
	      "                       max-mem=SIZE (K, M, G, T): the guest's files uvnetd maps\n"
	      "                       at most (memory, dirty log; default: this machine's RAM)\n"
	      "  -p, --port tap:IFNAME[,max-kpps=K]  a TAP device (created if missing, IFF_VNET_HDR)\n"
	      "                       max-kpps: take at most K thousand frames/s in from the\n"
	      "                       port (the rest wait in the guest's ring; default: no limit)\n"
	      "                       name=NAME (either kind): the port's name in ctl and stats\n"
	      "                       (default: the spec up to its first comma)\n\n"
	      "Forwarding:\n"
	      "  -f, --forward MODE   switch (default: L2 learning switch), loopback (frames go\n"
	      "                       back out of their port, MACs swapped), sink (read every\n"
	      "                       byte, count and drop), rxonly (count and drop unread:\n"
	      "                       a descriptor rate), txonly (generate frames into every\n"
	      "                       port)\n"
	      "      --txonly-size N  frame size for txonly (default 64, 42..65535; above 1518:\n"
	      "                       TCPv4 GSO frames, MSS 1448, segmented for guests without TSO)\n"
	      "      --txonly-count N stop once N frames were delivered (default: no end)\n"
	      "      --poll           busy-poll the queues (default: sleep on kicks)\n"
	      "      --zerocopy MODE  guest TX zero-copy: on, off or auto (default auto:\n"
	      "                       frames of --zerocopy-min bytes or more are handed on in\n"
	      "                       the guest's buffers, smaller ones are copied)\n"
	      "      --zerocopy-min N auto's threshold in bytes (default 256)\n"
	      "      --zerocopy-max-held N  chains a guest TX queue may have held before\n"
	      "                       frames are copied (default: half the ring)\n"
	      "      --cpus LIST      one data-path thread per CPU in LIST (e.g. 0 or 2-3,6),\n"
	      "                       pinned; queues are spread over them (default: one\n"
	      "                       unpinned thread). --cpu N is --cpus N\n\n"
	      "Control:\n"
	      "      --ctl PATH       listen for `uvnetd ctl PATH ...` commands on this socket\n"
	      "      --socket-group GROUP  group of every vhost-user socket uvnetd listens on\n"
	      "                       (default: uvnetd's), e.g. libvirt's qemu user's group\n"
	      "      --socket-mode OCTAL   their mode, e.g. 0660 (default: the umask's)\n"
	      "      --config FILE    options and ports from FILE, one a line: an option's long\n"
	      "                       name and its value (a flag alone), '#' comment lines,\n"
	      "                       e.g. 'port vhost-user:/run/uvnetd/vm1.sock,name=vm1';\n"
	      "                       ports add up with --port, other options on the command\n"
	      "                       line win. SIGHUP reads it again and applies the ports\n"
	      "                       that changed; `uvnetd ctl PATH save` writes it\n"
	      "      --fdb-static 'MAC port=NAME [vlan=N]'  a static FDB entry (as `ctl fdb\n"
	      "                       add` makes), added once the ports exist; repeatable\n\n"
	      "Output:\n"
	      "  -s, --stats-interval SEC  print per-port rates every SEC seconds\n"
	      "  -j, --json           stats as one JSON object per interval\n"
	      "  -q, --quiet          no final totals\n"
	      "  -h, --help           this text\n"
	      "      --version        the version\n\n"
	      "SIGINT or SIGTERM stop uvnetd; it prints the final totals. SIGHUP reloads\n"
	      "--config. Under systemd (Type=notify) it reports readiness with sd_notify.\n",
	      f);
}

const char *const uvnetd_opt_names[UVNETD_OPT_N] = {
	[UVNETD_OPT_PORT] = "port",
	[UVNETD_OPT_FORWARD] = "forward",
	[UVNETD_OPT_TXSIZE] = "txonly-size",
	[UVNETD_OPT_TXCOUNT] = "txonly-count",
	[UVNETD_OPT_POLL] = "poll",
	[UVNETD_OPT_CPUS] = "cpus",
	[UVNETD_OPT_ZC] = "zerocopy",
	[UVNETD_OPT_ZC_MIN] = "zerocopy-min",
	[UVNETD_OPT_ZC_HELD] = "zerocopy-max-held",
	[UVNETD_OPT_CTL] = "ctl",
	[UVNETD_OPT_SOCK_GROUP] = "socket-group",
	[UVNETD_OPT_SOCK_MODE] = "socket-mode",
	[UVNETD_OPT_STATS] = "stats-interval",
	[UVNETD_OPT_JSON] = "json",
	[UVNETD_OPT_QUIET] = "quiet",
	[UVNETD_OPT_FDB] = "fdb-static",
};

/* getopt's values: the option's id, past any character. */
#define LONG(id) (1000 + (id))
enum { OPT_CONFIG = 900, OPT_HELP, OPT_VERSION };

/* Errors go to stderr at start-up, to the log on a reload. */
static bool reloading;

void uvnetd_say(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (reloading)
		UVN_ERR("reload: %s", msg);
	else
		fprintf(stderr, "uvnetd: %s\n", msg);
}

int uvnetd_opt_find(const char *name)
{
	if (!strcmp(name, "cpu"))
		return UVNETD_OPT_CPUS;
	for (int i = 0; i < UVNETD_OPT_N; i++)
		if (!strcmp(name, uvnetd_opt_names[i]))
			return i;
	return -1;
}

bool uvnetd_opt_is_flag(int id)
{
	return id == UVNETD_OPT_POLL || id == UVNETD_OPT_JSON || id == UVNETD_OPT_QUIET;
}

static int parse_mode(const char *s, enum uvn_fwd_mode *m)
{
	static const char *const names[] = {
		[UVN_FWD_SWITCH] = "switch", [UVN_FWD_LOOPBACK] = "loopback", [UVN_FWD_SINK] = "sink",
		[UVN_FWD_TXONLY] = "txonly", [UVN_FWD_RXONLY] = "rxonly",
	};

	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!strcmp(s, names[i])) {
			*m = (enum uvn_fwd_mode)i;
			return 0;
		}
	}
	return -1;
}

int uvnetd_parse_zc(const char *s, int *mode)
{
	static const char *const names[] = { [UVN_ZC_OFF] = "off", [UVN_ZC_ON] = "on",
					     [UVN_ZC_AUTO] = "auto" };

	for (int i = 0; i < 3; i++) {
		if (!strcmp(s, names[i])) {
			*mode = i;
			return 0;
		}
	}
	return -1;
}

/* A whole unsigned decimal number up to @max. */
static int parse_num(const char *s, uint64_t max, uint64_t *v)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return *end || errno || *v > max ? -1 : 0;
}

static int add_port(struct uvnetd_opts *o, const char *spec, unsigned line, const char *where)
{
	char name[128], other[128];

	if (uvn_port_spec_name(spec, name, sizeof(name))) {
		uvnetd_say("%sbad port '%s': expected vhost-user:PATH[,client][,queues=N][,group=G]"
		    "[,mode=M][,OPTS] or tap:IFNAME[,OPTS], OPTS: max-kpps=N, name=NAME",
		    where, spec);
		return -1;
	}
	for (unsigned i = 0; i < o->nports; i++) {
		if (uvn_port_spec_name(o->port_specs[i], other, sizeof(other)) || strcmp(name, other))
			continue;
		/* The same port in the file and on the command line (a file
		 * written by save, say) is one port. */
		if (!line && o->port_line[i] && !strcmp(spec, o->port_specs[i]))
			return 0;
		uvnetd_say("%sport '%s': a port of that name is given already%s", where, name,
		    o->port_line[i] ? " (in the config file)" : "");
		return -1;
	}
	if (o->nports == UVNETD_MAX_PORTS) {
		uvnetd_say("%stoo many ports (max %d)", where, UVNETD_MAX_PORTS);
		return -1;
	}
	o->port_line[o->nports] = line;
	o->port_specs[o->nports++] = spec;
	return 0;
}

/* A static FDB entry, checked now, added once the ports exist. */
static int add_fdb(struct uvnetd_opts *o, const char *spec, const char *where)
{
	struct uvnetd_ctl_cmd cmd;
	char buf[256];

	if (uvnetd_fdb_spec(spec, buf, sizeof(buf), &cmd)) {
		uvnetd_say("%sbad fdb-static '%s': expected MAC port=NAME [vlan=N]", where, spec);
		return -1;
	}
	for (unsigned i = 0; i < o->nfdb; i++)
		if (!strcmp(o->fdb_specs[i], spec))
			return 0; /* in the file and on the command line: one entry */
	if (o->nfdb == UVNETD_MAX_FDB_STATIC) {
		uvnetd_say("%stoo many fdb-static entries (max %d)", where, UVNETD_MAX_FDB_STATIC);
		return -1;
	}
	o->fdb_specs[o->nfdb++] = spec;
	return 0;
}

/* @return 0 or -1 with nothing said: the caller names the option */
static int set_value(struct uvnetd_opts *o, int id, const char *arg)
{
	uint64_t v;
	int n;

	switch (id) {
	case UVNETD_OPT_FORWARD:
		return parse_mode(arg, &o->mode);
	case UVNETD_OPT_TXSIZE:
		if (parse_num(arg, 65535, &v) || v < 42)
			return -1;
		o->txonly_size = (uint32_t)v;
		return 0;
	case UVNETD_OPT_TXCOUNT:
		if (parse_num(arg, UINT64_MAX, &v) || !v)
			return -1;
		o->txonly_count = v;
		return 0;
	case UVNETD_OPT_POLL:
		o->poll = true;
		return 0;
	case UVNETD_OPT_CPUS:
		n = uvn_parse_cpulist(arg, o->cpus, UVNETD_MAX_WORKERS);
		if (n < 0)
			return -1;
		o->ncpus = (unsigned)n;
		return 0;
	case UVNETD_OPT_ZC:
		return uvnetd_parse_zc(arg, &o->zerocopy);
	case UVNETD_OPT_ZC_MIN:
		if (parse_num(arg, UINT32_MAX, &v))
			return -1;
		o->zc_min = (uint32_t)v;
		return 0;
	case UVNETD_OPT_ZC_HELD:
		if (parse_num(arg, UINT32_MAX, &v))
			return -1;
		o->zc_max_held = (unsigned)v;
		return 0;
	case UVNETD_OPT_CTL:
		o->ctl_path = arg;
		return *arg ? 0 : -1;
	case UVNETD_OPT_SOCK_GROUP:
		o->set_gid = true;
		return uvn_port_parse_group(arg, &o->sock_gid);
	case UVNETD_OPT_SOCK_MODE:
		o->set_mode = true;
		return uvn_port_parse_mode(arg, &o->sock_mode);
	case UVNETD_OPT_STATS: {
		char *end;

		o->stats_interval = strtod(arg, &end);
		/* a day at most: the timer takes nanoseconds in 64 bits */
		return *end || end == arg || !(o->stats_interval > 0 && o->stats_interval <= 86400) ? -1 : 0;
	}
	case UVNETD_OPT_JSON:
		o->json = true;
		return 0;
	case UVNETD_OPT_QUIET:
		o->quiet = true;
		return 0;
	}
	return -1;
}

/* What a bad value of each option should have been. */
static const char *expected(int id)
{
	switch (id) {
	case UVNETD_OPT_FORWARD: return "switch, loopback, sink, rxonly or txonly";
	case UVNETD_OPT_TXSIZE: return "42..65535";
	case UVNETD_OPT_TXCOUNT: return "a count of 1 or more";
	case UVNETD_OPT_CPUS: return "a CPU list such as 0 or 2-3,6";
	case UVNETD_OPT_ZC: return "on, off or auto";
	case UVNETD_OPT_ZC_MIN:
	case UVNETD_OPT_ZC_HELD: return "0..4294967295";
	case UVNETD_OPT_CTL: return "a socket path";
	case UVNETD_OPT_SOCK_GROUP: return "a group name or number";
	case UVNETD_OPT_SOCK_MODE: return "an octal mode up to 0777, such as 0660";
	case UVNETD_OPT_STATS: return "seconds, more than 0 and up to 86400";
	}
	return "nothing";
}

int uvnetd_opt_set(struct uvnetd_opts *o, int id, const char *arg, const char *where,
		   unsigned line)
{
	if (id == UVNETD_OPT_PORT)
		return add_port(o, arg, line, where);
	if (id == UVNETD_OPT_FDB)
		return add_fdb(o, arg, where);
	if (set_value(o, id, arg ? arg : "")) {
		uvnetd_say("%sbad value '%s' for %s%s: expected %s", where, arg ? arg : "",
		    *where ? "" : "--", uvnetd_opt_names[id], expected(id));
		return -1;
	}
	o->given[id] = arg ? arg : "";
	return 0;
}

static void defaults(struct uvnetd_opts *o, int argc, char **argv)
{
	memset(o, 0, sizeof(*o));
	o->mode = UVN_FWD_SWITCH;
	o->txonly_size = 64;
	o->zerocopy = UVN_ZC_AUTO;
	o->zc_min = 256;
	o->argc = argc;
	o->argv = argv;
}

static const struct option longopts[] = {
	{ "port", required_argument, NULL, 'p' },
	{ "forward", required_argument, NULL, 'f' },
	{ "txonly-size", required_argument, NULL, LONG(UVNETD_OPT_TXSIZE) },
	{ "txonly-count", required_argument, NULL, LONG(UVNETD_OPT_TXCOUNT) },
	{ "poll", no_argument, NULL, LONG(UVNETD_OPT_POLL) },
	{ "cpu", required_argument, NULL, LONG(UVNETD_OPT_CPUS) },
	{ "cpus", required_argument, NULL, LONG(UVNETD_OPT_CPUS) },
	{ "zerocopy", required_argument, NULL, LONG(UVNETD_OPT_ZC) },
	{ "ctl", required_argument, NULL, LONG(UVNETD_OPT_CTL) },
	{ "zerocopy-min", required_argument, NULL, LONG(UVNETD_OPT_ZC_MIN) },
	{ "zerocopy-max-held", required_argument, NULL, LONG(UVNETD_OPT_ZC_HELD) },
	{ "socket-group", required_argument, NULL, LONG(UVNETD_OPT_SOCK_GROUP) },
	{ "socket-mode", required_argument, NULL, LONG(UVNETD_OPT_SOCK_MODE) },
	{ "stats-interval", required_argument, NULL, 's' },
	{ "json", no_argument, NULL, 'j' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "fdb-static", required_argument, NULL, LONG(UVNETD_OPT_FDB) },
	{ "config", required_argument, NULL, OPT_CONFIG },
	{ "help", no_argument, NULL, OPT_HELP },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

static int short_id(int c)
{
	switch (c) {
	case 'p': return UVNETD_OPT_PORT;
	case 'f': return UVNETD_OPT_FORWARD;
	case 's': return UVNETD_OPT_STATS;
	case 'j': return UVNETD_OPT_JSON;
	case 'q': return UVNETD_OPT_QUIET;
	}
	return c >= LONG(0) && c < LONG(UVNETD_OPT_N) ? c - LONG(0) : -1;
}

/* Defaults, then the config file, then the command line over it. */
static int load(int argc, char **argv, struct uvnetd_opts *o)
{
	struct { int id; const char *arg; } *args = calloc((size_t)argc + 1, sizeof(*args));
	unsigned nargs = 0;
	const char *config = NULL;
	int c, r = 0;

	defaults(o, argc, argv);
	if (!args)
		return -1;
	optind = 0; /* again from the start, on a reload too */
	while ((c = getopt_long(argc, argv, "p:f:s:jqh", longopts, NULL)) != -1) {
		if (c == 'h' || c == OPT_HELP) {
			uvnetd_usage(stdout);
			exit(0);
		}
		if (c == OPT_VERSION) {
			printf("uvnetd %s\n", UVN_VERSION_STRING);
			exit(0);
		}
		if (c == OPT_CONFIG) {
			config = optarg;
			continue;
		}
		if (short_id(c) < 0) {
			uvnetd_usage(stderr);
			free(args);
			return -1;
		}
		args[nargs].id = short_id(c);
		args[nargs++].arg = optarg;
	}
	if (optind < argc) {
		uvnetd_say("unexpected argument '%s'", argv[optind]);
		free(args);
		return -1;
	}
	o->config = config;
	if (config)
		r = uvnetd_config_read(config, o);
	for (unsigned i = 0; !r && i < nargs; i++)
		r = uvnetd_opt_set(o, args[i].id, args[i].arg, "", 0);
	free(args);
	if (r)
		return -1;
	/* With a control socket, ports can come later (add-port). */
	if (!o->nports && !o->ctl_path) {
		uvnetd_say("at least one --port (or --ctl, to add them later) is needed");
		if (!reloading)
			uvnetd_usage(stderr);
		return -1;
	}
	return 0;
}

int uvnetd_parse(int argc, char **argv, struct uvnetd_opts *o)
{
	int r = load(argc, argv, o);

	if (r)
		uvnetd_opts_free(o);
	return r;
}

int uvnetd_reparse(const struct uvnetd_opts *cur, struct uvnetd_opts *o)
{
	int r;

	reloading = true;
	opterr = 0; /* the command line was read once already */
	r = load(cur->argc, cur->argv, o);
	reloading = false;
	if (r)
		uvnetd_opts_free(o);
	return r;
}

void uvnetd_opts_free(struct uvnetd_opts *o)
{
	free(o->text);
	o->text = NULL;
}
