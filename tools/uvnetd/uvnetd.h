/* SPDX-License-Identifier: MIT */
/* uvnetd: the daemon's state, shared by its files. */
#ifndef UVNETD_H
#define UVNETD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "port/port.h"
#include "switch/forward.h"
#include "util/loop.h"

#define UVNETD_MAX_PORTS UVN_FWD_MAX_PORTS
#define UVNETD_MAX_FDB_STATIC 256 /* fdb-static entries in the configuration */
#define UVNETD_MAX_WORKERS 64
#define UVNETD_MAX_SRCS 256
#define UVNETD_CTL_CLIENTS 8   /* control connections open at once */
#define UVNETD_CTL_LINE 256    /* longest command line */

/* The options by their long name: the command line's --NAME is the config
 * file's NAME (opts.c has the names, in this order). */
enum uvnetd_opt {
	UVNETD_OPT_PORT, UVNETD_OPT_FORWARD, UVNETD_OPT_TXSIZE, UVNETD_OPT_TXCOUNT,
	UVNETD_OPT_POLL, UVNETD_OPT_CPUS, UVNETD_OPT_ZC, UVNETD_OPT_ZC_MIN, UVNETD_OPT_ZC_HELD,
	UVNETD_OPT_CTL, UVNETD_OPT_SOCK_GROUP, UVNETD_OPT_SOCK_MODE, UVNETD_OPT_STATS,
	UVNETD_OPT_JSON, UVNETD_OPT_QUIET, UVNETD_OPT_FDB,
	UVNETD_OPT_N
};

struct uvnetd_opts {
	const char *port_specs[UVNETD_MAX_PORTS];
	unsigned port_line[UVNETD_MAX_PORTS]; /* its line in the config file, 0: command line */
	unsigned nports;
	const char *fdb_specs[UVNETD_MAX_FDB_STATIC]; /* fdb-static: "MAC port=NAME [vlan=N]" */
	unsigned nfdb;
	enum uvn_fwd_mode mode;
	uint32_t txonly_size;
	uint64_t txonly_count;        /* txonly: stop generating after this many, 0: never */
	bool poll;
	int cpus[UVNETD_MAX_WORKERS]; /* one worker per CPU given */
	unsigned ncpus;               /* 0: one unpinned worker */
	double stats_interval;        /* seconds, 0: off */
	bool json;
	bool quiet;
	const char *ctl_path;         /* --ctl: live control socket */
	int zerocopy;                 /* enum uvn_zc_mode */
	uint32_t zc_min;
	unsigned zc_max_held;
	bool set_gid, set_mode;       /* --socket-group, --socket-mode */
	gid_t sock_gid;
	unsigned sock_mode;
	const char *config;           /* --config FILE */
	/* Each single-valued option given, in the file or on the command
	 * line (which wins): its text ("" for a flag), for save; NULL: the
	 * default. Ports are port_specs, fdb-static entries fdb_specs. */
	const char *given[UVNETD_OPT_N];
	char *text;                   /* the config file, which strings above point into */
	int argc;                     /* the command line, read again with the file */
	char **argv;
};

struct uvnetd;
struct uvnetd_worker;

/* A control connection: its command line, gathered until '\n'. */
struct uvnetd_ctl_conn {
	struct uvn_handler h;
	struct uvnetd *d;
	uint64_t seq;                 /* accept order: the oldest goes first */
	unsigned len;
	char line[UVNETD_CTL_LINE];
};

/* An rx queue a worker serves. */
struct uvnetd_src {
	struct uvn_port *p;
	unsigned q;
	struct uvnetd_worker *w;
	struct uvn_handler h;         /* event mode: our dup of its kick (or TAP) fd */
	bool busy;                    /* event mode: has more, served again next round */
	bool held;                    /* left unread for its port's max-kpps */
	/* Event mode, a queue nothing signals (UVN_PORT_RX_POLL): always
	 * busy; found empty, it dozes: like a held one, it lets the worker
	 * sleep HELD_SLEEP_MS before its next look. */
	bool polled, dozing;
	uint64_t served;              /* the worker's round that last served it */
	/* The port's ingress limit, this queue's share: a token bucket in
	 * picoseconds of credit (worker.c). cost_ps 0: no limit. */
	uint64_t cost_ps;             /* credit one frame takes */
	uint64_t credit_ps;
	uint64_t last_ns;             /* credit earned up to here */
};

/* A cache line of its own (and its size a multiple of one): the array's
 * workers write their counters every round, beside each other. */
struct uvnetd_worker {
	_Alignas(64) struct uvnetd *d;
	struct uvn_fwd_worker fw;     /* id, pools, scratch, counters */
	int cpu;
	pthread_t thr;
	bool started;
	_Atomic unsigned acked;       /* last pause generation acknowledged */
	struct uvn_loop *loop;        /* event mode: its queues' fds */
	struct uvn_handler wake_h;    /* eventfd: the control thread wants it */
	struct uvnetd_src srcs[UVNETD_MAX_SRCS];
	unsigned nsrcs;
	unsigned nbusy;               /* srcs with busy set */
	unsigned nheld;               /* srcs with held set (each is busy too) */
	unsigned ndozing;             /* srcs with dozing set (each is busy too) */
	uint64_t round;               /* event mode: rounds (epoll waits) so far */
	/* Poll mode: where its CPU went, in uvn_cycles() (uvn_stat). A round
	 * that brought in (or generated) a frame is busy, else idle, as OVS counts
	 * its PMD threads' cycles: empty polls are cheap, so a share of empty
	 * polls says little about the share of time. Wall time: a round the
	 * thread was descheduled in counts all of it. */
	uint64_t busy_cycles, idle_cycles;
	uint64_t cycles_mark;         /* uvn_cycles() at the last round's end */
	uint64_t moved;               /* frames brought in or generated, for the above */
};

struct uvnetd {
	struct uvnetd_opts o;
	struct uvn_loop *loop;        /* control thread */
	struct uvn_pkt_pool *small, *big; /* TAP rx */
	struct uvn_fwd fwd;           /* and its port slots: fwd.ports[0..fwd.nports), NULL: free */
	struct uvn_port_env env;      /* what a port added at run time gets */
	char *spec[UVNETD_MAX_PORTS]; /* by port id: the spec each port was created from */
	struct uvnetd_worker *workers;
	unsigned nworkers;
	_Atomic bool pause, stop;
	_Atomic unsigned pause_gen;
	unsigned park_depth;          /* control thread: nested quiesce calls */
	bool parked;                  /* control thread: the outermost quiesce parked them */
	uint64_t pauses;              /* times the workers were parked */
	struct uvn_handler sig_h, stats_h, ctl_h;
	struct uvnetd_ctl_conn ctl_conn[UVNETD_CTL_CLIENTS];
	uint64_t ctl_seq;
	/* stats: the previous interval's totals */
	struct uvn_port_stats last[UVNETD_MAX_PORTS];
	uint64_t last_ns, start_ns;
};

/* The command line, and the --config file it names (the command line's
 * single-valued options win, ports add up). @return 0 or -1, said why */
int uvnetd_parse(int argc, char **argv, struct uvnetd_opts *o);
/* The same again for a reload: @cur's command line and its config file as
 * the file is now, into @o. @return 0 or -1, with the reason logged */
int uvnetd_reparse(const struct uvnetd_opts *cur, struct uvnetd_opts *o);
void uvnetd_opts_free(struct uvnetd_opts *o);
void uvnetd_usage(FILE *f);
/* enum uvnetd_opt -> its long name; -1 for a name that is none */
extern const char *const uvnetd_opt_names[UVNETD_OPT_N];
int uvnetd_opt_find(const char *name);
bool uvnetd_opt_is_flag(int id);
/* Give option @id the value @arg (NULL for a flag). @where: "FILE:LINE: "
 * or "", @line: the file's line or 0. @return 0 or -1, with the reason
 * said (uvnetd_say) */
int uvnetd_opt_set(struct uvnetd_opts *o, int id, const char *arg, const char *where,
		   unsigned line);
/* An error in the options: to stderr at start-up, to the log on a reload. */
void uvnetd_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The config file (config.c): read @path into @o, over what it has.
 * @return 0 or -1, with the file, line and reason said */
int uvnetd_config_read(const char *path, struct uvnetd_opts *o);
/* Write the running configuration to @path, atomically. @return the
 * number of ports written, or -errno with @err (@n bytes) saying why */
int uvnetd_config_save(struct uvnetd *d, const char *path, char *err, size_t n);
/* Change the zero-copy mode of every port and of ports added later (ctl.c).
 * @return 0 or -ECANCELED (uvnetd is stopping) */
int uvnetd_set_zerocopy(struct uvnetd *d, int mode);
/* SIGHUP: read the --config file again and apply it (ports by name). */
void uvnetd_reload(struct uvnetd *d);
/* sd_notify(3) when built with libsystemd, nothing otherwise. */
void uvnetd_notify(const char *state);
/* "on" | "off" | "auto" -> enum uvn_zc_mode. @return 0 or -1 */
int uvnetd_parse_zc(const char *s, int *mode);

/* Data-path threads (worker.c). */
int uvnetd_workers_start(struct uvnetd *d);
void uvnetd_workers_stop(struct uvnetd *d);
/* Park every worker (returns once none is in the data path) / let them go.
 * Calls nest: only the outermost pair parks and releases. Every quiesce
 * is paired with a resume, whatever it returned.
 * @return true when parked; false when uvnetd is stopping (a stop signal
 *         came while waiting): the workers may still run, change nothing */
bool uvnetd_quiesce(struct uvnetd *d);
void uvnetd_resume(struct uvnetd *d);
/* Give every port's rx queues to workers (quiesced). */
void uvnetd_assign(struct uvnetd *d);

/* Print one stats interval (text or JSON) or the final totals. */
void uvnetd_stats_interval(struct uvnetd *d);
void uvnetd_stats_final(struct uvnetd *d);
/* Forwarding counters summed over workers. */
void uvnetd_fwd_stats(struct uvnetd *d, struct uvn_fwd_stats *st);

/* Ports by name (ports.c), on the control thread. add: create the port
 * from its --port spec and start serving it; del: stop serving it and
 * destroy it. @return 0 or -errno (EEXIST: the name is taken, ENOSPC: no
 * free slot, ENOENT: no such port, ECANCELED: uvnetd is stopping, others
 * from creating the port, with the reason logged) */
struct uvn_port *uvnetd_port_find(struct uvnetd *d, const char *name);
int uvnetd_port_add(struct uvnetd *d, const char *spec);
int uvnetd_port_del(struct uvnetd *d, const char *name);

/* Static FDB entries (fdb_static.c), on the control thread. */
struct uvnetd_ctl_cmd;
/* "MAC port=NAME [vlan=N]" into @cmd (@buf: @n bytes for its words).
 * @return 0 or -EINVAL */
int uvnetd_fdb_spec(const char *spec, char *buf, size_t n, struct uvnetd_ctl_cmd *cmd);
/* Add @cmd's entry (workers parked for it). @return 0, or -errno with why in @err */
int uvnetd_fdb_add(struct uvnetd *d, const struct uvnetd_ctl_cmd *cmd, char *err, size_t n);
/* Add @o's fdb-static entries (@reload: first remove the static entries @o
 * does not have). @return 0, or -EINVAL if one failed (logged) */
int uvnetd_fdb_apply(struct uvnetd *d, const struct uvnetd_opts *o, bool reload);
/* The static entries as fdb-static lines of a config file. */
void uvnetd_fdb_save(struct uvnetd *d, FILE *f);

/* `show ...` as text or JSON (ctl.c). */
typedef void (*uvnetd_show_fn)(struct uvnetd *d, FILE *f, bool json);
/* Every number of show ports, queues and stats in OpenMetrics text
 * (metrics.c). @return 0, or -1 (nothing written) */
int uvnetd_metrics(struct uvnetd *d, FILE *f, uvnetd_show_fn ports, uvnetd_show_fn queues,
		   uvnetd_show_fn stats);

/* Live control socket (ctl.c). */
int uvnetd_ctl_start(struct uvnetd *d, const char *path);
void uvnetd_ctl_stop(struct uvnetd *d);
/* `uvnetd ctl PATH COMMAND...`: @argv[0] is PATH. @return the exit status */
int uvnetd_ctl_client(int argc, char **argv);

#endif
