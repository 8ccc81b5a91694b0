/* SPDX-License-Identifier: MIT */
/* Ports from their command-line form (port.h): vhost-user:PATH[,OPTS] | tap:IFNAME[,OPTS] */
#include <errno.h>
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

/* An option every kind of port takes: max-kpps=N.
 * @return 1 if @opt was one (stored in *@pps), 0 if not, -EINVAL if bad */
static int parse_common(const char *opt, uint64_t *pps)
{
	char *end;
	long k;

	if (strncmp(opt, "max-kpps=", 9))
		return 0;
	k = strtol(opt + 9, &end, 10);
	if (end == opt + 9 || *end || k < 1 || k > MAX_KPPS)
		return -EINVAL;
	*pps = (uint64_t)k * 1000;
	return 1;
}

static int parse_vhost(char *args, struct uvn_vhost_port_cfg *cfg, uint64_t *pps)
{
	char *save = NULL, *opt;
	int r;

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
		} else if ((r = parse_common(opt, pps)) <= 0) {
			return -EINVAL;
		}
	}
	return 0;
}

/* tap:IFNAME[,max-kpps=N]: the name ends at the first comma. */
static int parse_tap(char *args, uint64_t *pps)
{
	char *save = NULL, *opt, *name = strtok_r(args, ",", &save);

	if (!name)
		return -EINVAL;
	while ((opt = strtok_r(NULL, ",", &save)))
		if (parse_common(opt, pps) <= 0)
			return -EINVAL;
	return 0;
}

/* @return 0, -errno from creating it, or 1 if @buf does not parse */
static int create(char *buf, const struct uvn_port_env *env, struct uvn_port **out)
{
	uint64_t pps = 0;
	int r = 1;

	if (!strncmp(buf, "vhost-user:", 11)) {
		struct uvn_vhost_port_cfg cfg = { 0 };

		if (parse_vhost(buf + 11, &cfg, &pps))
			return 1;
		r = uvn_port_vhost_create(&cfg, env, out);
	} else if (!strncmp(buf, "tap:", 4) && buf[4] && buf[4] != ',') {
		if (parse_tap(buf + 4, &pps))
			return 1;
		r = uvn_port_tap_create(buf + 4, env->loop, env->small, env->big, out);
	}
	if (!r)
		(*out)->max_pps = pps;
	return r;
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
	UVN_ERR("bad port '%s': expected vhost-user:PATH[,client][,queues=N][,max-kpps=N]"
			" or tap:IFNAME[,max-kpps=N]", spec);
	return -EINVAL;
}
