/* SPDX-License-Identifier: MIT */
/* Ports from their command-line form: vhost-user:PATH[,client][,queues=N] | tap:IFNAME */
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

static int parse_vhost(char *args, struct uvn_vhost_port_cfg *cfg)
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
		} else {
			return -EINVAL;
		}
	}
	return 0;
}

int uvn_port_create(const char *spec, const struct uvn_port_env *env, struct uvn_port **out)
{
	char buf[256];
	int r = -EINVAL;

	if (strlen(spec) >= sizeof(buf))
		goto bad;
	strcpy(buf, spec);
	if (!strncmp(buf, "vhost-user:", 11)) {
		struct uvn_vhost_port_cfg cfg = { 0 };

		if (parse_vhost(buf + 11, &cfg))
			goto bad;
		return uvn_port_vhost_create(&cfg, env, out);
	}
	if (!strncmp(buf, "tap:", 4) && buf[4])
		return uvn_port_tap_create(buf + 4, env->loop, env->small, env->big, out);
bad:
	UVN_ERR("bad port '%s': expected vhost-user:PATH[,client][,queues=N] or tap:IFNAME", spec);
	return r;
}
