/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>

#include "ctl_parse.h"
#include "net/device/netdev.h"
#include "switch/fdb.h"
#include "util/mac.h"

#define SEP " \t\r\n"
#define MAX_WORDS 5

const char *const uvnetd_ctl_zc_names[3] = { [UVN_ZC_OFF] = "off", [UVN_ZC_ON] = "on",
					     [UVN_ZC_AUTO] = "auto" };

static const char *const show_names[] = {
	[UVNETD_CTL_SHOW_PORTS] = "ports",
	[UVNETD_CTL_SHOW_QUEUES] = "queues",
	[UVNETD_CTL_SHOW_FDB] = "fdb",
	[UVNETD_CTL_SHOW_STATS] = "stats",
};

static int parse_show(char **w, unsigned n, struct uvnetd_ctl_cmd *cmd)
{
	if (n == 4 && !strcmp(w[1], "stats") && !strcmp(w[2], "--format") &&
	    !strcmp(w[3], "openmetrics")) {
		*cmd = (struct uvnetd_ctl_cmd){ .op = UVNETD_CTL_SHOW_STATS, .openmetrics = true };
		return 0;
	}
	if (n > 3 || (n == 3 && strcmp(w[2], "--json")))
		return -EINVAL;
	for (unsigned i = 0; i < sizeof(show_names) / sizeof(show_names[0]); i++) {
		if (!strcmp(w[1], show_names[i])) {
			*cmd = (struct uvnetd_ctl_cmd){ .op = (enum uvnetd_ctl_op)i, .json = n == 3 };
			return 0;
		}
	}
	return -EINVAL;
}

static int parse_set_zerocopy(char **w, unsigned n, struct uvnetd_ctl_cmd *cmd)
{
	cmd->error = "set zerocopy on|off|auto";
	if (n != 3)
		return -EINVAL;
	for (int m = 0; m < 3; m++) {
		if (!strcmp(w[2], uvnetd_ctl_zc_names[m])) {
			*cmd = (struct uvnetd_ctl_cmd){ .op = UVNETD_CTL_SET_ZEROCOPY, .zerocopy = m };
			return 0;
		}
	}
	return -EINVAL;
}

static int parse_add_port(char **w, unsigned n, struct uvnetd_ctl_cmd *cmd)
{
	cmd->error = "add-port SPEC [name=NAME]";
	if (n < 2 || n > 3 || (n == 3 && (strncmp(w[2], "name=", 5) || !w[2][5])))
		return -EINVAL;
	*cmd = (struct uvnetd_ctl_cmd){ .op = UVNETD_CTL_ADD_PORT, .spec = w[1],
					.name = n == 3 ? w[2] + 5 : NULL };
	return 0;
}

static int parse_del_port(char **w, unsigned n, struct uvnetd_ctl_cmd *cmd)
{
	cmd->error = "del-port NAME";
	if (n != 2)
		return -EINVAL;
	*cmd = (struct uvnetd_ctl_cmd){ .op = UVNETD_CTL_DEL_PORT, .name = w[1] };
	return 0;
}

static int parse_save(char **w, unsigned n, struct uvnetd_ctl_cmd *cmd)
{
	cmd->error = "save [FILE]";
	if (n > 2)
		return -EINVAL;
	*cmd = (struct uvnetd_ctl_cmd){ .op = UVNETD_CTL_SAVE, .path = n == 2 ? w[1] : NULL };
	return 0;
}

/* aa:bb:cc:dd:ee:ff, as the FDB's key. */
static int parse_mac(const char *s, uint64_t *mac)
{
	uint8_t m[6];

	if (uvn_mac_parse(s, m))
		return -EINVAL;
	*mac = uvn_mac_key(m);
	return 0;
}

/* vlan=N, 0..4094, decimal. */
static int parse_vlan(const char *s, unsigned *vlan)
{
	unsigned v = 0;

	if (strncmp(s, "vlan=", 5) || !s[5] || strlen(s + 5) > 4)
		return -EINVAL;
	for (s += 5; *s; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		v = v * 10 + (unsigned)(*s - '0');
	}
	if (v > 4094)
		return -EINVAL;
	*vlan = v;
	return 0;
}

static const char *port_opt(const char *s)
{
	return !strncmp(s, "port=", 5) && s[5] ? s + 5 : NULL;
}

static int parse_fdb(char **w, unsigned n, struct uvnetd_ctl_cmd *cmd)
{
	static const char *const usage = "fdb show [--json], fdb add MAC port=NAME [vlan=N],"
					 " fdb del MAC [vlan=N], fdb flush [port=NAME]"
					 " (MAC: 02:00:00:00:00:01, N: 0..4094)";
	struct uvnetd_ctl_cmd c = { .error = usage };

	*cmd = c;
	if (!strcmp(w[1], "show")) {
		if (n > 3 || (n == 3 && strcmp(w[2], "--json")))
			return -EINVAL;
		*cmd = (struct uvnetd_ctl_cmd){ .op = UVNETD_CTL_SHOW_FDB, .json = n == 3 };
		return 0;
	}
	if (!strcmp(w[1], "flush")) {
		if (n > 3 || (n == 3 && !(c.port = port_opt(w[2]))))
			return -EINVAL;
		c.op = UVNETD_CTL_FDB_FLUSH;
	} else if (!strcmp(w[1], "add")) {
		if (n < 4 || n > 5 || parse_mac(w[2], &c.mac) || !(c.port = port_opt(w[3])) ||
		    (n == 5 && parse_vlan(w[4], &c.vlan)))
			return -EINVAL;
		c.op = UVNETD_CTL_FDB_ADD;
	} else if (!strcmp(w[1], "del")) {
		if (n < 3 || n > 4 || parse_mac(w[2], &c.mac) || (n == 4 && parse_vlan(w[3], &c.vlan)))
			return -EINVAL;
		c.op = UVNETD_CTL_FDB_DEL;
	} else {
		return -EINVAL;
	}
	c.error = NULL;
	*cmd = c;
	return 0;
}

int uvnetd_ctl_parse(char *line, struct uvnetd_ctl_cmd *cmd)
{
	char *save = NULL, *w[MAX_WORDS + 1];
	unsigned n = 0;

	*cmd = (struct uvnetd_ctl_cmd){
		.error = "commands: show ports|queues|fdb|stats [--json],"
			 " show stats --format openmetrics, set zerocopy on|off|auto,"
			 " add-port SPEC [name=NAME], del-port NAME, save [FILE],"
			 " fdb show|add|del|flush"
	};
	/* One word more than any command has is enough to refuse the line. */
	for (char *t = strtok_r(line, SEP, &save); t && n <= MAX_WORDS; t = strtok_r(NULL, SEP, &save))
		w[n++] = t;
	if (n && !strcmp(w[0], "save"))
		return parse_save(w, n, cmd);
	if (n < 2)
		return -EINVAL;
	if (!strcmp(w[0], "add-port"))
		return parse_add_port(w, n, cmd);
	if (!strcmp(w[0], "del-port"))
		return parse_del_port(w, n, cmd);
	if (!strcmp(w[0], "show"))
		return parse_show(w, n, cmd);
	if (!strcmp(w[0], "fdb"))
		return parse_fdb(w, n, cmd);
	if (!strcmp(w[0], "set") && !strcmp(w[1], "zerocopy"))
		return parse_set_zerocopy(w, n, cmd);
	return -EINVAL;
}

int uvnetd_ctl_gather(char *buf, size_t size, unsigned *len, const char *data, size_t n)
{
	const char *nl;
	size_t take;

	if (*len >= size)
		return -EALREADY;
	nl = memchr(data, '\n', n);
	take = nl ? (size_t)(nl - data) : n;
	if (take > size - 1 - *len) {
		*len = (unsigned)size;
		return -E2BIG;
	}
	memcpy(buf + *len, data, take);
	*len += (unsigned)take;
	buf[*len] = 0;
	if (!nl)
		return UVNETD_CTL_MORE;
	*len = (unsigned)size;
	return UVNETD_CTL_READY;
}

int uvnetd_ctl_gather_end(size_t size, unsigned *len)
{
	unsigned had = *len;

	/* The bytes gathered are NUL-terminated already, after each piece. */
	if (had >= size)
		return -EALREADY;
	*len = (unsigned)size;
	return had ? UVNETD_CTL_READY : -ENODATA;
}
