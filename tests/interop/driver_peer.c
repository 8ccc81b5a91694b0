/* SPDX-License-Identifier: MIT */
/*
 * driver_peer: the uvnet driver's side of the interop tests with DPDK
 * testpmd (driver_testpmd.sh). One connection, one job, then a check that
 * every buffer went back to its pool; the exit status says whether all
 * held. Prints "key=value" lines for the script.
 *
 *   driver_peer --connect SOCK [--opt SPEC]... send N SIZES   frames to rxonly
 *   driver_peer --connect SOCK [--opt SPEC]... recv IDLE_MS STOP_FILE  frames from txonly
 *   driver_peer --connect SOCK [--opt SPEC]... echo N SIZES   frames to macswap and back
 *   driver_peer --connect SOCK [--opt SPEC]... until-error    traffic until the backend dies
 * SIZES: comma-separated frame sizes, used in turn.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <uvnet/driver.h>

#define MAXF 9100u

static unsigned sizes[16], nsizes;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void die(const char *what, int err)
{
	printf("error=%s:%s\n", what, strerror(err < 0 ? -err : err));
	exit(1);
}

static void make_frame(uint8_t *b, unsigned len, unsigned seq)
{
	static const uint8_t hdr[14] = { 2, 0, 0, 0, 0, 0xbb, 2, 0, 0, 0, 0, 0xaa, 0x88, 0xb5 };

	memcpy(b, hdr, 14);
	for (unsigned i = 14; i < len; i++)
		b[i] = (uint8_t)(seq * 31 + i + (i >> 8));
	b[14] = (uint8_t)seq;
	b[15] = (uint8_t)(seq >> 8);
}

struct ctx {
	struct uvn_drv *d;
	struct uvn_pkt_pool *ext;
	uint8_t *big;        /* two frame buffers in shared memory */
	unsigned nbig;
	uint64_t sent;
};

/* Frames beyond a tx pool packet's room are laid out in shared memory. */
static struct uvn_pkt *frame_pkt(struct ctx *c, unsigned len, unsigned seq)
{
	struct uvn_pkt *p;
	uint8_t *b;

	if (len <= 2048 - UVN_DRV_HEADROOM) {
		while (!uvn_drv_tx_alloc(c->d, 0, &p, 1, len))
			if (uvn_tx_reclaim(c->d, 0) < 0)
				die("reclaim", uvn_drv_error(c->d));
		make_frame(p->seg[0].iov_base, len, seq);
		return p;
	}
	if (!c->big) {
		c->big = uvn_drv_mem_alloc(c->d, 2 * MAXF);
		if (!c->big)
			die("mem_alloc", ENOMEM);
	}
	b = c->big + (c->nbig++ & 1) * MAXF;
	make_frame(b, len, seq);
	while (!(p = uvn_pkt_alloc(c->ext)))
		if (uvn_tx_reclaim(c->d, 0) < 0)
			die("reclaim", uvn_drv_error(c->d));
	p->seg[0].iov_base = b;
	p->seg[0].iov_len = len;
	p->nseg = 1;
	p->len = len;
	return p;
}

static void tx_done(struct ctx *c)
{
	struct uvn_drv_mem_info mi;
	uint64_t end = now_ms() + 20000;

	do {
		if (uvn_tx_reclaim(c->d, 0) < 0)
			die("reclaim", uvn_drv_error(c->d));
		uvn_drv_mem_info(c->d, 0, &mi);
		if (now_ms() > end)
			die("tx_done", ETIMEDOUT);
	} while (mi.tx_in_flight);
}

static void send_one(struct ctx *c, unsigned seq)
{
	unsigned len = sizes[seq % nsizes];
	uint64_t end = now_ms() + 20000;
	struct uvn_pkt *p;
	int r;

	/* Shared frame buffers alternate: the older one must be done. */
	if (len > 2048 - UVN_DRV_HEADROOM && c->nbig >= 2)
		tx_done(c);
	p = frame_pkt(c, len, seq);
	while ((r = uvn_tx_burst(c->d, 0, &p, 1)) == 0) {
		if (now_ms() > end)
			die("tx", ETIMEDOUT);
		usleep(10);
	}
	if (r < 0)
		die("tx", r);
	c->sent++;
}

static int check_echo(const struct uvn_pkt *p, unsigned seq)
{
	static uint8_t want[MAXF], got[MAXF];
	unsigned len = sizes[seq % nsizes];

	if (p->len != len)
		return -1;
	make_frame(want, len, seq);
	memcpy(want, "\x02\x00\x00\x00\x00\xaa\x02\x00\x00\x00\x00\xbb", 12); /* macswap */
	uvn_pkt_read(p, 0, got, len);
	return memcmp(got, want, len) ? -1 : 0;
}

/* testpmd txonly: IPv4/UDP 198.18.0.1:9 -> 198.18.0.2:9. */
static int check_txonly(const struct uvn_pkt *p)
{
	uint8_t b[42];

	if (p->len < 42 || uvn_pkt_read(p, 0, b, 42) != 42)
		return -1;
	if (b[12] != 0x08 || b[13] != 0x00 || b[14] != 0x45 || b[23] != 17 ||
	    (unsigned)(b[16] << 8 | b[17]) != p->len - 14 ||
	    memcmp(b + 26, "\xc6\x12\x00\x01\xc6\x12\x00\x02", 8) ||
	    b[34] != 0 || b[35] != 9 || b[36] != 0 || b[37] != 9 ||
	    (unsigned)(b[38] << 8 | b[39]) != p->len - 34)
		return -1;
	return 0;
}

static void finish(struct ctx *c)
{
	struct uvn_drv_rxq_stats rs;
	struct uvn_drv_txq_stats ts;
	struct uvn_drv_mem_info mi;
	int leak;

	uvn_drv_rxq_stats(c->d, 0, &rs);
	uvn_drv_txq_stats(c->d, 0, &ts);
	printf("rx_packets=%llu rx_drops=%llu rx_mrg_multi=%llu tx_packets=%llu tx_drops=%llu "
	       "tx_indirect=%llu tx_desc_cache_hit=%llu rx_bufs_posted=%llu rx_bufs_used=%llu "
	       "rx_refill_fail=%llu\n",
	       (unsigned long long)rs.packets, (unsigned long long)rs.drops,
	       (unsigned long long)rs.mrg_multi, (unsigned long long)ts.packets,
	       (unsigned long long)ts.drops, (unsigned long long)ts.indirect,
	       (unsigned long long)ts.desc_cache_hit,
	       (unsigned long long)rs.bufs_posted, (unsigned long long)rs.bufs_used,
	       (unsigned long long)rs.refill_fail);
	if (c->big)
		uvn_drv_mem_free(c->d, c->big, 2 * MAXF);
	uvn_drv_stop(c->d);
	uvn_drv_mem_info(c->d, 0, &mi);
	leak = mi.rx_frags_out || mi.rx_frag_pages || mi.rx_pkts_free != mi.rx_pkts_total ||
	       mi.tx_pkts_free != mi.tx_pkts_total || mi.tx_in_flight ||
	       uvn_pkt_pool_avail(c->ext) != uvn_pkt_pool_count(c->ext);
	printf("returned=%s\n", leak ? "no" : "yes");
	uvn_drv_close(c->d);
	uvn_pkt_pool_destroy(c->ext);
	fflush(stdout);
	exit(leak ? 1 : 0);
}

static void parse_sizes(const char *s)
{
	char *dup = strdup(s), *save = NULL;

	for (char *t = strtok_r(dup, ",", &save); t && nsizes < 16; t = strtok_r(NULL, ",", &save))
		sizes[nsizes++] = (unsigned)atoi(t);
	free(dup);
	for (unsigned i = 0; i < nsizes; i++)
		if (sizes[i] < 60 || sizes[i] > MAXF)
			die("sizes", EINVAL);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "connect", required_argument, NULL, 'c' },
		{ "opt", required_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 },
	};
	struct uvn_pkt_pool_cfg pc = { .count = 64, .name = "ext" };
	struct uvn_drv_cfg cfg;
	struct uvn_pkt *pkts[32];
	struct ctx c = { 0 };
	const char *mode;
	int o, r;

	uvn_drv_cfg_init(&cfg);
	cfg.poll = true;
	cfg.app_mem_bytes = 4 * MAXF;
	while ((o = getopt_long(argc, argv, "c:o:", lo, NULL)) != -1) {
		const char *bad = NULL;

		if (o == 'c')
			cfg.path = optarg;
		else if (o != 'o' || uvn_drv_cfg_parse(&cfg, optarg, &bad))
			die("usage", EINVAL);
	}
	if (optind >= argc || !cfg.path)
		die("usage", EINVAL);
	mode = argv[optind];
	if (uvn_pkt_pool_create(&pc, &c.ext))
		die("pool", ENOMEM);
	r = uvn_drv_open(&cfg, &c.d);
	if (r)
		die("open", r);
	printf("features=0x%llx rx_mode=%d\n", (unsigned long long)uvn_drv_features(c.d),
	       (int)uvn_drv_rx_mode(c.d));
	fflush(stdout);
	if (!strcmp(mode, "send") && optind + 2 < argc) {
		unsigned n = (unsigned)atoi(argv[optind + 1]);

		parse_sizes(argv[optind + 2]);
		for (unsigned i = 0; i < n; i++)
			send_one(&c, i);
		tx_done(&c);
		printf("sent=%llu\n", (unsigned long long)c.sent);
	} else if (!strcmp(mode, "recv") && optind + 2 < argc) {
		uint64_t idle = (uint64_t)atoi(argv[optind + 1]), got = 0, bad = 0;
		uint64_t last = now_ms(), end = now_ms() + 60000;
		const char *stop_file = argv[optind + 2];
		bool stopped = false;
		unsigned iter = 0;

		/* Until the sender said it stopped (STOP_FILE exists) and then was
		 * quiet for IDLE_MS: the frames still in the ring are drained. */
		while (!stopped || now_ms() - last < idle) {
			if (!stopped && (++iter & 1023) == 0 && access(stop_file, F_OK) == 0) {
				stopped = true;
				last = now_ms();
			}
			r = uvn_rx_burst(c.d, 0, pkts, 32);
			if (r < 0)
				die("rx", r);
			for (int i = 0; i < r; i++) {
				if (!check_txonly(pkts[i]))
					continue;
				if (!bad++) {
					/* The first bad frame, for the log. */
					uint8_t b[48] = { 0 };

					uvn_pkt_read(pkts[i], 0, b, sizeof(b));
					printf("bad_frame: len %u nseg %u seg0 %zu after %llu:", pkts[i]->len,
					       pkts[i]->nseg, pkts[i]->seg[0].iov_len, (unsigned long long)got + (unsigned)i);
					for (unsigned k = 0; k < sizeof(b); k++)
						printf(" %02x", b[k]);
					printf("\n");
				}
			}
			uvn_pkt_free_bulk(pkts, (unsigned)r);
			if (r) {
				got += (unsigned)r;
				last = now_ms();
			}
			if (now_ms() > end)
				die("recv", ETIMEDOUT);
		}
		printf("received=%llu bad=%llu\n", (unsigned long long)got, (unsigned long long)bad);
		if (bad)
			die("recv_content", EBADMSG);
	} else if (!strcmp(mode, "echo") && optind + 2 < argc) {
		unsigned n = (unsigned)atoi(argv[optind + 1]), got = 0, win;
		struct uvn_drv_mem_info mi;
		uint64_t end = now_ms() + 60000;

		parse_sizes(argv[optind + 2]);
		uvn_drv_mem_info(c.d, 0, &mi);
		/* Windows no larger than the rx buffers posted: nothing is dropped. */
		win = mi.rx_posted < 32 ? mi.rx_posted : 32;
		while (got < n) {
			unsigned k = n - got < win ? n - got : win, have = 0;

			for (unsigned i = 0; i < k; i++)
				send_one(&c, got + i);
			while (have < k) {
				r = uvn_rx_burst(c.d, 0, pkts, 32);
				if (r < 0)
					die("rx", r);
				for (int i = 0; i < r; i++) {
					if (have >= k || check_echo(pkts[i], got + have))
						die("echo_content", EBADMSG);
					have++;
				}
				uvn_pkt_free_bulk(pkts, (unsigned)r);
				if (now_ms() > end)
					die("echo", ETIMEDOUT);
			}
			got += k;
		}
		printf("echoed=%u\n", got);
	} else if (!strcmp(mode, "until-error")) {
		uint64_t end = now_ms() + 60000, moved = 0;

		printf("running=1\n");
		fflush(stdout);
		for (r = 0; r >= 0;) {
			unsigned k = uvn_drv_tx_alloc(c.d, 0, pkts, 32, 64);

			r = uvn_tx_burst(c.d, 0, pkts, k);
			if (r >= 0) {
				uvn_pkt_free_bulk(pkts + r, k - (unsigned)r);
				moved += (unsigned)r;
				r = uvn_rx_burst(c.d, 0, pkts, 32);
				if (r > 0)
					uvn_pkt_free_bulk(pkts, (unsigned)r);
			} else {
				uvn_pkt_free_bulk(pkts, k);
			}
			if (now_ms() > end)
				die("until_error", ETIMEDOUT);
		}
		printf("moved=%llu backend_error=%s\n", (unsigned long long)moved,
		       r == -ENOTCONN ? "ENOTCONN" : strerror(-r));
	} else {
		die("usage", EINVAL);
	}
	finish(&c);
	return 0;
}
