/* SPDX-License-Identifier: MIT */
/* Ports from their command-line form (port.h): vhost-user:PATH[,OPTS] | tap:IFNAME[,OPTS] */
#include <errno.h>
#include <grp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "port/port.h"
#include "util/log.h"

#define S(f) UVN_STAT(struct uvn_port_stats, f)
const struct uvn_stat_desc uvn_port_stats_desc[] = {
	S(rx_packets), S(rx_bytes), S(tx_packets), S(tx_bytes), S(drops), S(errors),
	S(kicks), S(calls), S(calls_suppressed), S(mtu_drops), S(guest_filtered),
	{ NULL, 0 },
};

/* The ingress limit in thousands of frames per second: up to 100 Mpps. */
#define MAX_KPPS 100000
/* Addresses one port may have in the FDB (mac-limit=N). */
#define MAX_MACS 65536

/* What every kind of port takes besides its own options. */
struct common {
	struct uvn_port_conf conf;
	const char *name;
	bool set_gid, set_mode;  /* group=, mode= (a listening vhost-user socket's) */
	gid_t gid;
	unsigned mode;
};

/* A spec taken apart, before anything is created. */
struct parsed {
	bool vhost;
	struct uvn_vhost_port_cfg cfg;  /* vhost */
	const char *ifname;             /* tap */
	struct common c;
	char dflt[300];                 /* the default name, cut to the name's size later */
};

bool uvn_port_name_ok(const char *name)
{
	size_t n = strlen(name);

	if (!n || n > UVN_PORT_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (name[i] <= ' ' || name[i] > '~' || name[i] == ',')
			return false;
	return true;
}

int uvn_port_parse_group(const char *s, gid_t *gid)
{
	char buf[1024], *end;
	struct group gr, *g = NULL;
	unsigned long n;

	if (!*s)
		return -EINVAL;
	n = strtoul(s, &end, 10);
	if (!*end && *s != '-' && *s != '+' && n < (gid_t)-1) {
		*gid = (gid_t)n;
		return 0;
	}
	if (getgrnam_r(s, &gr, buf, sizeof(buf), &g) || !g)
		return -EINVAL;
	*gid = g->gr_gid;
	return 0;
}

int uvn_port_parse_mode(const char *s, unsigned *mode)
{
	char *end;
	unsigned long m;

	if (*s < '0' || *s > '7')
		return -EINVAL;
	m = strtoul(s, &end, 8);
	if (*end || m > 0777)
		return -EINVAL;
	*mode = (unsigned)m;
	return 0;
}

/* A decimal number in [@lo, @hi], the whole of @s. @return 0 or -EINVAL */
static int parse_num(const char *s, long lo, long hi, long *out)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	*out = strtol(s, &end, 10);
	return *end || *out < lo || *out > hi ? -EINVAL : 0;
}

/* trunks=LIST: VLANs and ranges joined by colons (10:20:100-199). */
static int parse_trunks(char *list, struct uvn_port_vlans *v)
{
	char *save = NULL, *item;

	v->trunk = true;
	while ((item = strtok_r(list, ":", &save))) {
		char *dash = strchr(item, '-');
		long lo, hi;

		list = NULL;
		if (dash)
			*dash = 0;
		if (parse_num(item, 1, UVN_VLAN_MAX, &lo) ||
		    parse_num(dash ? dash + 1 : item, lo, UVN_VLAN_MAX, &hi))
			return -EINVAL;
		for (long vid = lo; vid <= hi; vid++)
			v->allowed[vid / 64] |= 1ULL << (vid % 64);
	}
	return list ? -EINVAL : 0; /* an empty list */
}

/* The OPTS shared by every kind: a number or a list. @return 1 if @opt was
 * one (stored in @c), 0 if not, -EINVAL if bad */
static int parse_conf(char *opt, struct uvn_port_conf *c)
{
	long n;

	if (!strncmp(opt, "trunks=", 7))
		return c->vlan.tag || c->vlan.trunk || parse_trunks(opt + 7, &c->vlan) ? -EINVAL : 1;
	if (!strncmp(opt, "vlan=", 5)) {
		if (c->vlan.tag || c->vlan.trunk || parse_num(opt + 5, 1, UVN_VLAN_MAX, &n))
			return -EINVAL;
		c->vlan.tag = (uint16_t)n;
	} else if (!strncmp(opt, "mtu=", 4)) {
		if (parse_num(opt + 4, UVN_PORT_MTU_MIN, UVN_PORT_MTU_MAX, &n))
			return -EINVAL;
		c->mtu = (uint32_t)n;
	} else if (!strncmp(opt, "mac-limit=", 10)) {
		if (parse_num(opt + 10, 1, MAX_MACS, &n))
			return -EINVAL;
		c->mac_limit = (uint32_t)n;
	} else if (!strncmp(opt, "max-kpps=", 9)) {
		if (parse_num(opt + 9, 1, MAX_KPPS, &n))
			return -EINVAL;
		c->max_pps = (uint64_t)n * 1000;
	} else {
		return 0;
	}
	return 1;
}

/* name=NAME, group=G, mode=M or one of parse_conf's.
 * @return 1 if @opt was one (stored in @c), 0 if not, -EINVAL if bad */
static int parse_common(char *opt, struct common *c)
{
	if (!strncmp(opt, "name=", 5)) {
		c->name = opt + 5;
		return uvn_port_name_ok(c->name) ? 1 : -EINVAL;
	}
	if (!strncmp(opt, "group=", 6)) {
		c->set_gid = true;
		return uvn_port_parse_group(opt + 6, &c->gid) ? -EINVAL : 1;
	}
	if (!strncmp(opt, "mode=", 5)) {
		c->set_mode = true;
		return uvn_port_parse_mode(opt + 5, &c->mode) ? -EINVAL : 1;
	}
	return parse_conf(opt, &c->conf);
}

/* A size in bytes, with an optional K, M, G or T (binary); not 0. */
static int parse_size(const char *s, uint64_t *out)
{
	static const char units[] = "KMGT";
	unsigned long long n;
	const char *u;
	char *end;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	n = strtoull(s, &end, 10);
	if (errno || n == 0)
		return -EINVAL;
	if (*end) {
		u = strchr(units, *end);
		if (!u || end[1] || n > (UINT64_MAX >> (10 * (u - units + 1))))
			return -EINVAL;
		n <<= 10 * (u - units + 1);
	}
	*out = n;
	return 0;
}

static int parse_vhost(char *args, struct uvn_vhost_port_cfg *cfg, struct common *c)
{
	char *save = NULL, *opt;

	cfg->path = strtok_r(args, ",", &save);
	cfg->queues = 1;
	cfg->client = false;
	cfg->qmp = cfg->nic = NULL;
	cfg->max_mem = 0;
	if (!cfg->path)
		return -EINVAL;
	while ((opt = strtok_r(NULL, ",", &save))) {
		if (!strcmp(opt, "client")) {
			cfg->client = true;
		} else if (!strncmp(opt, "queues=", 7)) {
			long q;

			if (parse_num(opt + 7, 1, UVN_PORT_MAX_QUEUES, &q))
				return -EINVAL;
			cfg->queues = (unsigned)q;
		} else if (!strncmp(opt, "max-mem=", 8)) {
			if (parse_size(opt + 8, &cfg->max_mem))
				return -EINVAL;
		} else if (!strncmp(opt, "qmp=", 4) && opt[4]) {
			cfg->qmp = opt + 4;
		} else if (!strncmp(opt, "nic=", 4) && opt[4]) {
			cfg->nic = opt + 4;
		} else if (parse_common(opt, c) <= 0) {
			return -EINVAL;
		}
	}
	/* A client's socket is QEMU's: not ours to chown. */
	if (cfg->client && (c->set_gid || c->set_mode))
		return -EINVAL;
	return cfg->nic && !cfg->qmp ? -EINVAL : 0;
}

/* tap:IFNAME[,OPTS]: the name ends at the first comma. */
static int parse_tap(char *args, struct common *c)
{
	char *save = NULL, *opt, *name = strtok_r(args, ",", &save);

	if (!name)
		return -EINVAL;
	while ((opt = strtok_r(NULL, ",", &save)))
		if (parse_common(opt, c) <= 0)
			return -EINVAL;
	return c->set_gid || c->set_mode ? -EINVAL : 0;
}

/* A default name longer than a socket path can be is cut. */
static void set_name(char *dst, size_t size, const char *name)
{
	size_t n = strlen(name);

	if (n >= size)
		n = size - 1;
	memcpy(dst, name, n);
	dst[n] = 0;
}

/* Take @buf (a copy of the spec) apart, in place. @return 0 or -EINVAL */
static int parse(char *buf, struct parsed *ps)
{
	memset(ps, 0, sizeof(*ps));
	if (!strncmp(buf, "vhost-user:", 11)) {
		ps->vhost = true;
		if (parse_vhost(buf + 11, &ps->cfg, &ps->c))
			return -EINVAL;
		snprintf(ps->dflt, sizeof(ps->dflt), "vhost-user:%s", ps->cfg.path);
		return 0;
	}
	if (!strncmp(buf, "tap:", 4) && buf[4] && buf[4] != ',') {
		if (parse_tap(buf + 4, &ps->c))
			return -EINVAL;
		ps->ifname = buf + 4;
		snprintf(ps->dflt, sizeof(ps->dflt), "tap:%s", ps->ifname);
		return 0;
	}
	return -EINVAL;
}

/* The listening socket's group and mode: the spec's, else the env's. */
static int own_socket(const struct parsed *ps, const struct uvn_port_env *env, const char *name)
{
	const char *path = ps->cfg.path;
	bool set_gid = ps->c.set_gid || env->set_gid, set_mode = ps->c.set_mode || env->set_mode;
	gid_t gid = ps->c.set_gid ? ps->c.gid : env->sock_gid;
	unsigned mode = ps->c.set_mode ? ps->c.mode : env->sock_mode;
	int r;

	if (!ps->vhost || ps->cfg.client)
		return 0;
	if (set_gid && chown(path, (uid_t)-1, gid)) {
		r = -errno;
		UVN_ERR("port %s: socket %s: cannot give it group %u: %s", name, path,
			(unsigned)gid, strerror(-r));
		return r;
	}
	if (set_mode && chmod(path, mode)) {
		r = -errno;
		UVN_ERR("port %s: socket %s: cannot give it mode %04o: %s", name, path, mode,
			strerror(-r));
		return r;
	}
	return 0;
}

/* @return 0, -errno from creating it, or 1 if @buf does not parse */
static int create(char *buf, const struct uvn_port_env *env, struct uvn_port **out)
{
	struct parsed ps;
	int r;

	if (parse(buf, &ps))
		return 1;
	if (ps.vhost)
		r = uvn_port_vhost_create(&ps.cfg, env, out);
	else
		r = uvn_port_tap_create_own(ps.ifname, env->loop, env->small, env->big, out);
	if (r)
		return r;
	(*out)->conf = ps.c.conf;
	set_name((*out)->name, sizeof((*out)->name), ps.c.name ? ps.c.name : ps.dflt);
	if (ps.vhost)
		r = own_socket(&ps, env, (*out)->name);
	else if (ps.c.conf.mtu)
		r = uvn_port_tap_set_mtu(*out, ps.c.conf.mtu);
	if (r) {
		(*out)->ops->destroy(*out);
		*out = NULL;
	}
	return r;
}

int uvn_port_spec_name(const char *spec, char *name, size_t n)
{
	char buf[256];
	struct parsed ps;

	if (strlen(spec) >= sizeof(buf) || !n)
		return -EINVAL;
	strcpy(buf, spec);
	if (parse(buf, &ps))
		return -EINVAL;
	set_name(name, n, ps.c.name ? ps.c.name : ps.dflt);
	return 0;
}

int uvn_port_spec_conf(const char *spec, struct uvn_port_conf *conf)
{
	char buf[256];
	struct parsed ps;

	if (strlen(spec) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, spec);
	if (parse(buf, &ps))
		return -EINVAL;
	*conf = ps.c.conf;
	return 0;
}

int uvn_port_create(const char *spec, const struct uvn_port_env *env, struct uvn_port **out)
{
	char buf[256];
	int r = 1;

	if (strlen(spec) < sizeof(buf)) {
		strcpy(buf, spec);
		r = create(buf, env, out);
	}
	if (r <= 0)
		return r;
	UVN_ERR("bad port '%s': expected vhost-user:PATH[,client][,queues=N][,group=G][,mode=M]"
		"[,max-mem=SIZE][,qmp=PATH[,nic=ID]][,OPTS]"
		" or tap:IFNAME[,OPTS], OPTS: max-kpps=N (1..%d), name=NAME (up to %d printable"
		" characters, no space or comma), mtu=N (%d..%d), vlan=N (1..%d) or"
		" trunks=LIST (VLANs and ranges joined by colons: 10:20:100-199), mac-limit=N"
		" (1..%d); group= (a group name or number) and mode= (octal, up to 0777) only"
		" for a socket uvnetd listens on", spec, MAX_KPPS, UVN_PORT_NAME_MAX,
		UVN_PORT_MTU_MIN, UVN_PORT_MTU_MAX, UVN_VLAN_MAX, MAX_MACS);
	return -EINVAL;
}
