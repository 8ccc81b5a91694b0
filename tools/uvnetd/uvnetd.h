/* SPDX-License-Identifier: MIT */
/* uvnetd: the daemon's state, shared by its files. */
#ifndef UVNETD_H
#define UVNETD_H

#include <stdbool.h>
#include <stdint.h>

#include "port/port.h"
#include "switch/forward.h"
#include "util/loop.h"

#define UVNETD_MAX_PORTS UVN_FWD_MAX_PORTS

struct uvnetd_opts {
	const char *port_specs[UVNETD_MAX_PORTS];
	unsigned nports;
	enum uvn_fwd_mode mode;
	uint32_t txonly_size;
	bool poll;
	int cpu;                 /* pin the data path here, -1: no pinning */
	double stats_interval;   /* seconds, 0: off */
	bool json;
	bool quiet;
	const char *ctl_path;    /* --ctl: live control socket */
	int zerocopy;            /* enum uvn_zc_mode */
	uint32_t zc_min;
	unsigned zc_max_held;
};

struct uvnetd {
	struct uvnetd_opts o;
	struct uvn_loop *loop;
	struct uvn_pkt_pool *small, *big, *gen, *ext;
	struct uvn_fwd fwd;
	struct uvn_port *ports[UVNETD_MAX_PORTS];
	unsigned nports;
	struct uvn_handler sig_h, stats_h;
	struct uvn_handler tap_h[UVNETD_MAX_PORTS];
	struct uvn_handler ctl_h;
	volatile bool stop;
	/* stats: the previous interval's totals */
	struct uvn_port_stats last[UVNETD_MAX_PORTS];
	uint64_t last_ns, start_ns;
};

int uvnetd_parse(int argc, char **argv, struct uvnetd_opts *o);
/* "on" | "off" | "auto" -> enum uvn_zc_mode. @return 0 or -1 */
int uvnetd_parse_zc(const char *s, int *mode);
void uvnetd_usage(FILE *f);

/* Run until SIGINT/SIGTERM. */
int uvnetd_run(struct uvnetd *d);

/* Print one stats interval (text or JSON) or the final totals. */
void uvnetd_stats_interval(struct uvnetd *d);
void uvnetd_stats_final(struct uvnetd *d);

/* Live control socket (ctl.c). */
int uvnetd_ctl_start(struct uvnetd *d, const char *path);
void uvnetd_ctl_stop(struct uvnetd *d);
/* `uvnetd ctl PATH COMMAND...`: @argv[0] is PATH. @return the exit status */
int uvnetd_ctl_client(int argc, char **argv);

#endif
