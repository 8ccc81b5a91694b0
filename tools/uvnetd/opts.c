/* SPDX-License-Identifier: MIT */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uvnet/version.h>

#include "net/device/netdev.h"
#include "util/sys.h"
#include "uvnetd.h"

void uvnetd_usage(FILE *f)
{
	fputs("Usage: uvnetd [OPTIONS] --port SPEC [--port SPEC ...]\n"
	      "       uvnetd ctl PATH show ports|queues|fdb|stats [--json]\n"
	      "       uvnetd ctl PATH set zerocopy on|off|auto\n"
	      "       uvnetd ctl PATH add-port SPEC [name=NAME] | del-port NAME\n"
	      "A vhost-user switch: QEMU guests, DPDK virtio-user and uvnet drivers plug in,\n"
	      "TAP devices connect it to the host.\n\n"
	      "Ports:\n"
	      "  -p, --port vhost-user:PATH[,client][,queues=N][,max-kpps=K][,name=NAME]\n"
	      "                       a vhost-user socket uvnetd listens on (or connects to and\n"
	      "                       keeps reconnecting with 'client', for QEMU's server=on);\n"
	      "                       N queue pairs (default 1)\n"
	      "  -p, --port tap:IFNAME[,max-kpps=K]  a TAP device (created if missing, IFF_VNET_HDR)\n"
	      "                       max-kpps: take at most K thousand frames/s in from the\n"
	      "                       port (the rest wait in the guest's ring; default: no limit)\n"
	      "                       name=NAME (either kind): the port's name in ctl and stats\n"
	      "                       (default: the spec up to its first comma)\n\n"
	      "Forwarding:\n"
	      "  -f, --forward MODE   switch (default: L2 learning switch), loopback (frames go\n"
	      "                       back out of their port, MACs swapped), sink (count and\n"
	      "                       drop), txonly (generate frames into every port)\n"
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
	      "      --ctl PATH       listen for `uvnetd ctl PATH ...` commands on this socket\n\n"
	      "Output:\n"
	      "  -s, --stats-interval SEC  print per-port rates every SEC seconds\n"
	      "  -j, --json           stats as one JSON object per interval\n"
	      "  -q, --quiet          no final totals\n"
	      "  -h, --help           this text\n"
	      "      --version        the version\n\n"
	      "SIGINT or SIGTERM stop uvnetd; it prints the final totals.\n",
	      f);
}

static int parse_mode(const char *s, enum uvn_fwd_mode *m)
{
	static const char *const names[] = { "switch", "loopback", "sink", "txonly" };

	for (unsigned i = 0; i < 4; i++) {
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

int uvnetd_parse(int argc, char **argv, struct uvnetd_opts *o)
{
	enum { OPT_TXCOUNT = 255, OPT_TXSIZE = 256, OPT_POLL, OPT_CPU, OPT_ZC, OPT_ZC_MIN, OPT_ZC_HELD, OPT_CTL };
	static const struct option longopts[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "forward", required_argument, NULL, 'f' },
		{ "txonly-size", required_argument, NULL, OPT_TXSIZE },
		{ "txonly-count", required_argument, NULL, OPT_TXCOUNT },
		{ "poll", no_argument, NULL, OPT_POLL },
		{ "cpu", required_argument, NULL, OPT_CPU },
		{ "cpus", required_argument, NULL, OPT_CPU },
		{ "zerocopy", required_argument, NULL, OPT_ZC },
		{ "ctl", required_argument, NULL, OPT_CTL },
		{ "zerocopy-min", required_argument, NULL, OPT_ZC_MIN },
		{ "zerocopy-max-held", required_argument, NULL, OPT_ZC_HELD },
		{ "stats-interval", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	int c;

	memset(o, 0, sizeof(*o));
	o->mode = UVN_FWD_SWITCH;
	o->txonly_size = 64;
	o->zerocopy = UVN_ZC_AUTO;
	o->zc_min = 256;
	while ((c = getopt_long(argc, argv, "p:f:s:jqh", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (o->nports == UVNETD_MAX_PORTS) {
				fprintf(stderr, "uvnetd: too many ports (max %d)\n", UVNETD_MAX_PORTS);
				return -1;
			}
			o->port_specs[o->nports++] = optarg;
			break;
		case 'f':
			if (parse_mode(optarg, &o->mode)) {
				fprintf(stderr, "uvnetd: unknown forward mode '%s'\n", optarg);
				return -1;
			}
			break;
		case OPT_TXCOUNT:
			o->txonly_count = strtoull(optarg, &end, 10);
			if (*end || !o->txonly_count) {
				fprintf(stderr, "uvnetd: bad --txonly-count '%s'\n", optarg);
				return -1;
			}
			break;
		case OPT_TXSIZE:
			o->txonly_size = (uint32_t)strtoul(optarg, &end, 10);
			if (*end || o->txonly_size < 42 || o->txonly_size > 65535) {
				fprintf(stderr, "uvnetd: --txonly-size must be 42..65535\n");
				return -1;
			}
			break;
		case OPT_POLL:
			o->poll = true;
			break;
		case OPT_CPU: {
			int n = uvn_parse_cpulist(optarg, o->cpus, UVNETD_MAX_WORKERS);

			if (n < 0) {
				fprintf(stderr, "uvnetd: bad CPU list '%s'\n", optarg);
				return -1;
			}
			o->ncpus = (unsigned)n;
			break;
		}
		case OPT_CTL:
			o->ctl_path = optarg;
			break;
		case OPT_ZC:
			if (uvnetd_parse_zc(optarg, &o->zerocopy)) {
				fprintf(stderr, "uvnetd: --zerocopy must be on, off or auto\n");
				return -1;
			}
			break;
		case OPT_ZC_MIN:
			o->zc_min = (uint32_t)strtoul(optarg, &end, 10);
			if (*end) {
				fprintf(stderr, "uvnetd: bad --zerocopy-min '%s'\n", optarg);
				return -1;
			}
			break;
		case OPT_ZC_HELD:
			o->zc_max_held = (unsigned)strtoul(optarg, &end, 10);
			if (*end) {
				fprintf(stderr, "uvnetd: bad --zerocopy-max-held '%s'\n", optarg);
				return -1;
			}
			break;
		case 's':
			o->stats_interval = strtod(optarg, &end);
			if (*end || o->stats_interval <= 0) {
				fprintf(stderr, "uvnetd: bad --stats-interval '%s'\n", optarg);
				return -1;
			}
			break;
		case 'j':
			o->json = true;
			break;
		case 'q':
			o->quiet = true;
			break;
		case 'h':
			uvnetd_usage(stdout);
			exit(0);
		case 'V':
			printf("uvnetd %s\n", UVN_VERSION_STRING);
			exit(0);
		default:
			uvnetd_usage(stderr);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "uvnetd: unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	/* With a control socket, ports can come later (add-port). */
	if (!o->nports && !o->ctl_path) {
		fprintf(stderr, "uvnetd: at least one --port (or --ctl, to add them later) is needed\n");
		uvnetd_usage(stderr);
		return -1;
	}
	return 0;
}
