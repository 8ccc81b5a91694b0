/* SPDX-License-Identifier: MIT */
/*
 * uvnet-hostile: a vhost-user frontend that attacks the backend it
 * connects to, one attack per run, for --seconds; bench/isolation.sh runs
 * it against uvnetd while two honest drivers stream through the switch.
 *
 *   uvnet-hostile --socket PATH --attack NAME [--seconds S] [--qsize N] [-v]
 *
 * It prints one summary line on stdout:
 *   attack=NAME rc=0 ops=N nacks=N errs=N conn=up|down note="..."
 * ops counts the attack's own steps (flips, posts, kicks, cycles), nacks
 * the requests uvnetd refused, conn whether uvnetd still talks to us.
 * Exit status 0 when the attack ran, 1 when the session could not even be
 * set up (the reason is on stderr), 2 for a usage error.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostile/hfe.h"

static const struct {
	const char *name;
	hfe_attack_fn fn;
	const char *what;
} attacks[] = {
	{ "packed-batch", attack_packed_batch,
	  "packed + IN_ORDER: TX and control descriptors made available again and again" },
	{ "stale-ring", attack_stale_ring,
	  "start, enable, disable a TX ring, then a memory table without it" },
	{ "blocking-fd", attack_blocking_fd, "a full blocking pipe as call and error fd" },
	{ "kick-fd-swap", attack_kick_fd_swap,
	  "replace the kick fd, go NOFD, keep writing the old eventfds" },
	{ "full-tx", attack_full_tx, "the TX ring kept full: avail = used + num, forever" },
	{ "memfd-shrink", attack_memfd_shrink, "ftruncate the guest memfd to 0 after set-up" },
	{ "kick-storm", attack_kick_storm, "write the kick eventfds as fast as possible" },
	{ "rx-hoard", attack_rx_hoard, "RX buffers posted once, never taken back" },
	{ "sparse-mem", attack_sparse_mem, "a memory table of 32 sparse 1 TB regions" },
	{ "msg-flood", attack_msg_flood, "vhost-user messages (GET_FEATURES) without pause" },
	{ "accept-flood", attack_accept_flood,
	  "a session, then a second frontend connecting and hanging up without pause" },
	{ "reconnect-flood", attack_reconnect_flood,
	  "connect, send GET_FEATURES, hang up, without pause" },
	{ "idle-spin", attack_idle_spin,
	  "control: full-tx's set-up and spin, nothing posted, kicked or asked" },
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: uvnet-hostile --socket PATH --attack NAME [--seconds S] [--qsize N] [-v]\n"
		   "Attacks:\n");
	for (size_t i = 0; i < sizeof(attacks) / sizeof(attacks[0]); i++)
		fprintf(f, "  %-13s %s\n", attacks[i].name, attacks[i].what);
}

static void on_signal(int sig)
{
	(void)sig;
	hfe_stop = 1;
}

static int parse(int argc, char **argv, struct hfe_opts *o)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' }, { "attack", required_argument, NULL, 'a' },
		{ "seconds", required_argument, NULL, 't' }, { "qsize", required_argument, NULL, 'n' },
		{ "verbose", no_argument, NULL, 'v' },       { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	o->seconds = 10;
	while ((c = getopt_long(argc, argv, "s:a:t:n:vh", opts, NULL)) != -1) {
		switch (c) {
		case 's': o->path = optarg; break;
		case 'a': o->attack = optarg; break;
		case 't': o->seconds = strtod(optarg, NULL); break;
		case 'n': o->qsize = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'v': o->verbose = true; break;
		case 'h': usage(stdout); exit(0);
		default: return -1;
		}
	}
	if (!o->path || !o->attack || o->seconds <= 0 || o->qsize > 32768)
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	struct hfe_opts o = { 0 };
	struct sigaction sa = { .sa_handler = on_signal };
	hfe_attack_fn fn = NULL;
	static struct hfe h;
	const char *conn;
	int r;

	if (parse(argc, argv, &o)) {
		usage(stderr);
		return 2;
	}
	for (size_t i = 0; i < sizeof(attacks) / sizeof(attacks[0]); i++)
		if (!strcmp(attacks[i].name, o.attack))
			fn = attacks[i].fn;
	if (!fn) {
		fprintf(stderr, "uvnet-hostile: no attack '%s'\n", o.attack);
		usage(stderr);
		return 2;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	r = fn(&h, &o, hfe_now() + o.seconds);
	conn = !h.fe ? "none" : uvn_vu_fe_check(h.fe) ? "down" : "up";
	printf("attack=%s rc=%d ops=%llu nacks=%llu errs=%llu conn=%s note=\"%s\"\n", o.attack, r,
	       (unsigned long long)h.ops, (unsigned long long)h.nacks, (unsigned long long)h.errs,
	       conn, h.note ? h.note : (r ? strerror(-r) : ""));
	fflush(stdout);
	if (r)
		hfe_log("%s: set-up failed: %s", o.attack, strerror(-r));
	hfe_close(&h);
	return r ? 1 : 0;
}
