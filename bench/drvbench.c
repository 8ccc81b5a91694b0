/* SPDX-License-Identifier: MIT */
/*
 * uvnet-drvbench: the virtio-net driver alone against an external
 * vhost-user backend (DPDK testpmd's net_vhost, uvnetd), poll mode, one
 * queue pair on one pinned CPU, like testpmd's virtio-user txonly/rxonly.
 * Prints packets/s, Gb/s (frame bytes, as testpmd counts them) and the CPU
 * the driver's thread used.
 *
 *   uvnet-drvbench --connect /tmp/vh.sock --dir tx --size 64 --cpu 1 --duration 10
 *   uvnet-drvbench --connect /tmp/vh.sock --dir rx --opt deferred_alloc=off
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uvnet/driver.h>

#include "net/frame.h"
#include "util/sys.h"

struct opts {
	const char *sock;
	bool server, tx, json, fill, dirty, stats;
	unsigned size, segs, burst, pairs;
	double duration, warmup;
	int cpu;
	struct uvn_drv_cfg cfg;
	char *spec[16];
	unsigned nspec;
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void usage(FILE *f)
{
	fputs("Usage: uvnet-drvbench --connect SOCK [OPTIONS]\n"
	      "  -c, --connect SOCK     vhost-user socket of the backend\n"
	      "      --server           listen on SOCK instead (the backend connects)\n"
	      "  -d, --dir tx|rx        tx: we send (guest->host), rx: we receive (host->guest)\n"
	      "  -s, --size N           frame bytes for tx (default 64)\n"
	      "      --segs N           tx: segments per frame (default 1; 2+ exercise the\n"
	      "                         indirect descriptor cache)\n"
	      "  -r, --ring split|packed\n"
	      "  -m, --rx-mode auto|small|big|mergeable\n"
	      "  -o, --opt KEY=VAL[,..] driver settings (uvn_drv_cfg_parse): deferred_alloc=on|off,\n"
	      "                         mrg_sizing=hdr_mtu|ewma|mtu_only, desc_cache=on|off,\n"
	      "                         desc_cache_thr=N, in_order=0, indirect=0, mrg_rxbuf=0 ...\n"
	      "  -t, --duration SEC     measured time (default 10)\n"
	      "  -w, --warmup SEC       unmeasured time first (default 1)\n"
	      "  -C, --cpu N            pin to CPU N\n"
	      "  -b, --burst N          burst size (default 32)\n"
	      "      --no-fill          tx: do not write the frame headers per packet\n"
	      "      --dirty            tx: write every byte; rx: read every byte\n"
	      "      --stats            print the queue's driver counters at the end\n"
	      "  -j, --json             one JSON object\n",
	      f);
}

static int parse(int argc, char **argv, struct opts *o)
{
	enum { O_SERVER = 256, O_SEGS, O_NOFILL, O_DIRTY, O_STATS };
	static const struct option lo[] = {
		{ "connect", required_argument, NULL, 'c' }, { "server", no_argument, NULL, O_SERVER },
		{ "dir", required_argument, NULL, 'd' },     { "size", required_argument, NULL, 's' },
		{ "segs", required_argument, NULL, O_SEGS }, { "ring", required_argument, NULL, 'r' },
		{ "rx-mode", required_argument, NULL, 'm' }, { "opt", required_argument, NULL, 'o' },
		{ "duration", required_argument, NULL, 't' }, { "warmup", required_argument, NULL, 'w' },
		{ "cpu", required_argument, NULL, 'C' },     { "burst", required_argument, NULL, 'b' },
		{ "no-fill", no_argument, NULL, O_NOFILL },  { "dirty", no_argument, NULL, O_DIRTY },
		{ "json", no_argument, NULL, 'j' },          { "help", no_argument, NULL, 'h' },
		{ "stats", no_argument, NULL, O_STATS },
		{ NULL, 0, NULL, 0 },
	};
	static char ring[32], mode[32];
	int c;

	memset(o, 0, sizeof(*o));
	uvn_drv_cfg_init(&o->cfg);
	o->cfg.poll = true;
	o->tx = true;
	o->fill = true;
	o->size = 64;
	o->segs = 1;
	o->burst = 32;
	o->duration = 10;
	o->warmup = 1;
	o->cpu = -1;
	while ((c = getopt_long(argc, argv, "c:d:s:r:m:o:t:w:C:b:jh", lo, NULL)) != -1) {
		switch (c) {
		case 'c': o->sock = optarg; break;
		case O_SERVER: o->server = true; break;
		case 'd':
			if (strcmp(optarg, "tx") && strcmp(optarg, "rx"))
				return -1;
			o->tx = !strcmp(optarg, "tx");
			break;
		case 's': o->size = (unsigned)atoi(optarg); break;
		case O_SEGS: o->segs = (unsigned)atoi(optarg); break;
		case 'r':
			snprintf(ring, sizeof(ring), "ring=%s", optarg);
			o->spec[o->nspec++] = ring;
			break;
		case 'm':
			snprintf(mode, sizeof(mode), "rx_mode=%s", optarg);
			o->spec[o->nspec++] = mode;
			break;
		case 'o':
			if (o->nspec == 16)
				return -1;
			o->spec[o->nspec++] = optarg;
			break;
		case 't': o->duration = atof(optarg); break;
		case 'w': o->warmup = atof(optarg); break;
		case 'C': o->cpu = atoi(optarg); break;
		case 'b': o->burst = (unsigned)atoi(optarg); break;
		case O_NOFILL: o->fill = false; break;
		case O_DIRTY: o->dirty = true; break;
		case O_STATS: o->stats = true; break;
		case 'j': o->json = true; break;
		case 'h': usage(stdout); exit(0);
		default: return -1;
		}
	}
	if (!o->sock || o->size < 60 || o->size > 1984 || !o->segs || o->segs > 8 ||
	    o->segs > o->size / 16 || !o->burst || o->burst > 256 || o->duration <= 0)
		return -1;
	o->cfg.path = o->sock;
	o->cfg.server = o->server;
	for (unsigned i = 0; i < o->nspec; i++) {
		const char *bad = NULL;

		if (uvn_drv_cfg_parse(&o->cfg, o->spec[i], &bad)) {
			fprintf(stderr, "uvnet-drvbench: bad setting '%s'\n", bad ? bad : o->spec[i]);
			return -1;
		}
	}
	return 0;
}

/* testpmd txonly's frame: Ethernet, IPv4, UDP, zero payload. */
/* UDP from 02:00:00:00:00:01 to 02:00:00:00:00:02, the discard port both ways. */
static void build_headers(uint8_t *b, unsigned size)
{
	static const uint8_t dst[6] = { 0x02, 0, 0, 0, 0, 0x02 }, src[6] = { 0x02, 0, 0, 0, 0, 0x01 };
	const struct uvn_frame_addr a = { .dst = dst, .src = src, .sport = 9, .dport = 9 };

	uvn_frame_udp4(b, &a, size);
}

/* Split the frame of a tx pool packet into @segs segments of its data room. */
static void make_segs(struct uvn_pkt *p, unsigned size, unsigned segs)
{
	uint8_t *f = p->seg[0].iov_base;
	unsigned per = size / segs, off = 0;

	for (unsigned i = 0; i < segs; i++) {
		unsigned len = i + 1 == segs ? size - off : per;

		p->seg[i].iov_base = f + off;
		p->seg[i].iov_len = len;
		off += len;
	}
	p->nseg = (uint16_t)segs;
}

struct result {
	uint64_t pkts, bytes, cpu_ns, wall_ns;
};

static int run(struct uvn_drv *d, const struct opts *o, double secs, struct result *res)
{
	uint64_t t0 = uvn_now_ns(), c0 = uvn_thread_cpu_ns(), end = t0 + (uint64_t)(secs * 1e9);
	struct uvn_pkt *pkts[256];
	uint64_t pkts_n = 0, bytes = 0, sink = 0;
	uint8_t hdr[UVN_FRAME_UDP_HDR];
	unsigned iter = 0;

	/* Every frame's headers are the same: built once, copied into each
	 * frame (as testpmd's txonly copies its prepared ones per mbuf). */
	build_headers(hdr, o->size);

	while (!stop) {
		int n;

		if (o->tx) {
			unsigned k = uvn_drv_tx_alloc(d, 0, pkts, o->burst, o->size);

			for (unsigned i = 0; i < k; i++) {
				uint8_t *b = pkts[i]->seg[0].iov_base;

				if (o->dirty)
					memset(b, (int)iter, o->size);
				if (o->fill)
					memcpy(b, hdr, sizeof(hdr));
				if (o->segs > 1)
					make_segs(pkts[i], o->size, o->segs);
			}
			n = uvn_tx_burst(d, 0, pkts, k);
			if (n < 0)
				return n;
			uvn_pkt_free_bulk(pkts + n, k - (unsigned)n);
			if (!k)
				uvn_tx_reclaim(d, 0);
		} else {
			n = uvn_rx_burst(d, 0, pkts, o->burst);
			if (n < 0)
				return n;
			for (int i = 0; i < n; i++) {
				bytes += pkts[i]->len;
				if (o->dirty)
					for (unsigned s = 0; s < pkts[i]->nseg; s++)
						for (size_t b = 0; b < pkts[i]->seg[s].iov_len; b++)
							sink += ((uint8_t *)pkts[i]->seg[s].iov_base)[b];
			}
			uvn_pkt_free_bulk(pkts, (unsigned)n);
		}
		if (o->tx && n > 0)
			bytes += (uint64_t)n * o->size;
		pkts_n += n > 0 ? (uint64_t)n : 0;
		if ((++iter & 255) == 0 && uvn_now_ns() >= end)
			break;
	}
	res->wall_ns = uvn_now_ns() - t0;
	res->cpu_ns = uvn_thread_cpu_ns() - c0;
	res->pkts = pkts_n;
	res->bytes = bytes + (sink & 0);
	return 0;
}

/* Every counter of queue 0's direction under test, one "name value" per line (stderr). */
static void print_stats(const struct uvn_drv *d, bool tx)
{
	const struct uvn_stat_desc *desc = tx ? uvn_drv_txq_stats_desc : uvn_drv_rxq_stats_desc;
	union {
		struct uvn_drv_txq_stats tx;
		struct uvn_drv_rxq_stats rx;
	} st;

	if (tx ? uvn_drv_txq_stats(d, 0, &st.tx) : uvn_drv_rxq_stats(d, 0, &st.rx))
		return;
	for (; desc->name; desc++)
		fprintf(stderr, "%s %llu\n", desc->name,
			(unsigned long long)*(const uint64_t *)((const char *)&st + desc->offset));
}

static const char *const mode_names[] = { "auto", "small", "big", "mergeable" };
static const char *const sizing_names[] = { "hdr_mtu", "ewma", "mtu_only" };

int main(int argc, char **argv)
{
	struct result warm, res;
	struct opts o;
	struct uvn_drv *d;
	double pps, gbps, cpu;
	int r;

	if (parse(argc, argv, &o)) {
		usage(stderr);
		return 2;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (o.cpu >= 0 && uvn_pin_thread(o.cpu)) {
		fprintf(stderr, "uvnet-drvbench: cannot pin to CPU %d\n", o.cpu);
		return 1;
	}
	r = uvn_drv_open(&o.cfg, &d);
	if (r) {
		fprintf(stderr, "uvnet-drvbench: %s: %s\n", o.sock, strerror(-r));
		return 1;
	}
	r = o.warmup > 0 ? run(d, &o, o.warmup, &warm) : 0;
	if (!r)
		r = run(d, &o, o.duration, &res);
	if (r) {
		fprintf(stderr, "uvnet-drvbench: backend error: %s\n", strerror(-r));
		uvn_drv_close(d);
		return 1;
	}
	pps = (double)res.pkts * 1e9 / (double)res.wall_ns;
	gbps = (double)res.bytes * 8 / (double)res.wall_ns;
	cpu = (double)res.cpu_ns / (double)res.wall_ns;
	if (o.json) {
		printf("{\"test\":\"drvbench\",\"direction\":\"%s\",\"size\":%u,\"segs\":%u,"
		       "\"ring\":\"%s\",\"rx_mode\":\"%s\",\"deferred_alloc\":%u,\"mrg_sizing\":\"%s\","
		       "\"desc_cache\":%u,\"desc_cache_thr\":%u,\"features\":\"0x%llx\","
		       "\"pps\":%.0f,\"gbps\":%.3f,\"cpu_driver\":%.3f,\"mrg_buf_len\":%u}\n",
		       o.tx ? "tx" : "rx", o.size, o.segs,
		       o.cfg.ring == UVN_RING_PACKED ? "packed" : "split",
		       mode_names[uvn_drv_rx_mode(d)], uvn_drv_get_opt(d, UVN_OPT_DEFERRED_ALLOC),
		       sizing_names[uvn_drv_get_opt(d, UVN_OPT_MRG_SIZING)],
		       uvn_drv_get_opt(d, UVN_OPT_DESC_CACHE), uvn_drv_get_opt(d, UVN_OPT_DESC_CACHE_THR),
		       (unsigned long long)uvn_drv_features(d), pps, gbps, cpu,
		       uvn_drv_mrg_buf_len(d, 0));
	} else {
		printf("%s size %u segs %u ring %s rx_mode %s: %.3f Mpps %.3f Gb/s cpu %.2f\n",
		       o.tx ? "tx" : "rx", o.size, o.segs,
		       o.cfg.ring == UVN_RING_PACKED ? "packed" : "split",
		       mode_names[uvn_drv_rx_mode(d)], pps / 1e6, gbps, cpu);
	}
	if (o.stats)
		print_stats(d, o.tx);
	uvn_drv_close(d);
	return 0;
}
