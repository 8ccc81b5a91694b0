/* SPDX-License-Identifier: MIT */
/*
 * uvnetd's control protocol without the daemon: a client's command line
 * gathered from the pieces it arrives in, then parsed. Nothing here
 * touches a socket or uvnetd's state (ctl.c does), so it is fuzzed alone
 * (tests/fuzz/fuzz_ctl.c).
 *
 *   show ports|queues|fdb|stats [--json]
 *   show stats --format openmetrics   (every number of ports, queues, stats)
 *   set zerocopy on|off|auto
 *   add-port SPEC [name=NAME]     (SPEC as uvnetd --port takes it)
 *   del-port NAME
 *   save [FILE]                   (FILE: where to write; none: the --config file)
 *   fdb show [--json]             (the same as show fdb)
 *   fdb add MAC port=NAME [vlan=N]   (a static entry)
 *   fdb del MAC [vlan=N]
 *   fdb flush [port=NAME]         (learned entries; static ones stay)
 *
 * MAC: six hex bytes joined by colons; N: a VLAN, 0..4094 (0 by default:
 * untagged frames on trunks).
 *
 * Words are separated by spaces, tabs and carriage returns.
 */
#ifndef UVNETD_CTL_PARSE_H
#define UVNETD_CTL_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum uvnetd_ctl_op {
	UVNETD_CTL_SHOW_PORTS,
	UVNETD_CTL_SHOW_QUEUES,
	UVNETD_CTL_SHOW_FDB,
	UVNETD_CTL_SHOW_STATS,
	UVNETD_CTL_SET_ZEROCOPY,
	UVNETD_CTL_ADD_PORT,
	UVNETD_CTL_DEL_PORT,
	UVNETD_CTL_SAVE,
	UVNETD_CTL_FDB_ADD,
	UVNETD_CTL_FDB_DEL,
	UVNETD_CTL_FDB_FLUSH,
	UVNETD_CTL_NOPS
};

struct uvnetd_ctl_cmd {
	enum uvnetd_ctl_op op;
	bool json;                    /* show: --json */
	bool openmetrics;             /* show stats: --format openmetrics */
	int zerocopy;                 /* set zerocopy: enum uvn_zc_mode */
	const char *spec;             /* add-port: SPEC (a word of the line) */
	const char *name;             /* add-port: NAME or NULL; del-port: NAME */
	const char *path;             /* save: FILE or NULL */
	const char *port;             /* fdb add: NAME; fdb flush: NAME or NULL (every port) */
	uint64_t mac;                 /* fdb add, del: the address (48 bits) */
	unsigned vlan;                /* fdb add, del: its VLAN */
	const char *error;            /* refused: the reason for the client (static) */
};

/* enum uvn_zc_mode -> "off", "on", "auto" */
extern const char *const uvnetd_ctl_zc_names[3];

/*
 * Parse one command line (NUL-terminated, its '\n' already removed or
 * not). @line is cut into words in place.
 * @return 0 and @cmd filled in; -EINVAL for anything else, with
 *         @cmd->error saying why (the rest of @cmd means nothing)
 */
int uvnetd_ctl_parse(char *line, struct uvnetd_ctl_cmd *cmd);

/* A connection carries one line; what follows its '\n' is ignored. */
enum {
	UVNETD_CTL_MORE = 0,          /* no '\n' yet: wait for more bytes */
	UVNETD_CTL_READY = 1,         /* @buf holds the line, NUL-terminated */
};

/*
 * Append the @n bytes a client sent (@n > 0) to the line gathered in @buf
 * (@size bytes, 1 <= @size <= UINT_MAX; *@len of them so far, 0 at first).
 * Nothing is ever written past @buf + @size - 1: a line has room for
 * @size - 1 bytes before its '\n' and is refused as soon as it cannot fit.
 * Once a line or -E2BIG came out the gatherer is done: *@len is then
 * @size, and later calls change nothing and return -EALREADY.
 * @return UVNETD_CTL_MORE, UVNETD_CTL_READY, -E2BIG (line too long)
 */
int uvnetd_ctl_gather(char *buf, size_t size, unsigned *len, const char *data, size_t n);

/*
 * The client sent all it will (end of stream, or a read error): the bytes
 * gathered in the buffer of @size bytes without a '\n' are the line, if
 * there are any.
 * @return UVNETD_CTL_READY, -ENODATA (nothing was sent), -EALREADY
 */
int uvnetd_ctl_gather_end(size_t size, unsigned *len);

#endif
