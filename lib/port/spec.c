/* SPDX-License-Identifier: MIT */
/* Ports from their command-line form (port.h): vhost-user:PATH[,OPTS] | tap:IFNAME[,OPTS] */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "port/port.h"
#include "util/log.h"

#define S(f) UVN_STAT(struct uvn_port_stats, f)
const struct uvn_stat_desc uvn_port_stats_desc[] = {
	S(rx_packets), S(rx_bytes), S(tx_packets), S(tx_bytes), S(drops), S(errors),
	S(kicks), S(calls), S(calls_suppressed),
	{ NULL, 0 },
};

/* The ingress limit in thousands of frames per second: up to 100 Mpps. */
#define MAX_KPPS 100000

/* What every kind of port takes besides its own options. */
struct common {
	uint64_t pps;
	const char *name;
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

/* max-kpps=N or name=NAME.
 * @return 1 if @opt was one (stored in @c), 0 if not, -EINVAL if bad */
static int parse_common(char *opt, struct common *c)
{
	char *end;
	long k;

	if (!strncmp(opt, "name=", 5)) {
		c->name = opt + 5;
		return uvn_port_name_ok(c->name) ? 1 : -EINVAL;
	}
	if (strncmp(opt, "max-kpps=", 9))
		return 0;
	k = strtol(opt + 9, &end, 10);
	if (end == opt + 9 || *end || k < 1 || k > MAX_KPPS)
		return -EINVAL;
	c->pps = (uint64_t)k * 1000;
	return 1;
}

static int parse_vhost(char *args, struct uvn_vhost_port_cfg *cfg, struct common *c)
{
	char *save = NULL, *opt;

	cfg->path = strtok_r(args, ",", &save);
	cfg->queues = 1;
	cfg->client = false;
	if (!cfg->path)
		return -EINVAL;
	while ((opt = strtok_r(NULL, ",", &save))) {
		if (!strcmp(opt, "client")) {
			cfg->client = true;
		} else if (!strncmp(opt, "queues=", 7)) {
			char *end;
			long q = strtol(opt + 7, &end, 10);

			if (*end || q < 1 || q > UVN_PORT_MAX_QUEUES)
				return -EINVAL;
			cfg->queues = (unsigned)q;
		} else if (parse_common(opt, c) <= 0) {
			return -EINVAL;
		}
	}
	return 0;
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
	return 0;
}

/* A default name longer than a socket path can be is cut. */
static void set_name(struct uvn_port *p, const char *name)
{
	size_t n = strlen(name);

	if (n >= sizeof(p->name))
		n = sizeof(p->name) - 1;
	memcpy(p->name, name, n);
	p->name[n] = 0;
}

/* @return 0, -errno from creating it, or 1 if @buf does not parse */
static int create(char *buf, const struct uvn_port_env *env, struct uvn_port **out)
{
	struct common c = { 0 };
	char dflt[300]; /* cut to the name's size below */
	int r = 1;

	if (!strncmp(buf, "vhost-user:", 11)) {
		struct uvn_vhost_port_cfg cfg = { 0 };

		if (parse_vhost(buf + 11, &cfg, &c))
			return 1;
		snprintf(dflt, sizeof(dflt), "vhost-user:%s", cfg.path);
		r = uvn_port_vhost_create(&cfg, env, out);
	} else if (!strncmp(buf, "tap:", 4) && buf[4] && buf[4] != ',') {
		if (parse_tap(buf + 4, &c))
			return 1;
		snprintf(dflt, sizeof(dflt), "tap:%s", buf + 4);
		r = uvn_port_tap_create(buf + 4, env->loop, env->small, env->big, out);
	}
	if (r)
		return r;
	(*out)->max_pps = c.pps;
	set_name(*out, c.name ? c.name : dflt);
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
	UVN_ERR("bad port '%s': expected vhost-user:PATH[,client][,queues=N][,OPTS] or"
		" tap:IFNAME[,OPTS], OPTS: max-kpps=N (1..%d), name=NAME (up to %d printable"
		" characters, no space or comma)", spec, MAX_KPPS, UVN_PORT_NAME_MAX);
	return -EINVAL;
}
