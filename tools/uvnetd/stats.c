/* SPDX-License-Identifier: MIT */
/* Per-port rates per interval (text or one JSON object per line) and totals. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "util/json.h"
#include "util/sys.h"
#include "uvnetd.h"

struct rates {
	double rx_pps, tx_pps, rx_gbps, tx_gbps;
};

static struct rates rates(const struct uvn_port_stats *now, const struct uvn_port_stats *then,
			  double secs)
{
	/* Gb/s of frame bytes, without preamble, CRC or inter-frame gap: the
	 * same count testpmd's throughput uses. */
	return (struct rates){
		.rx_pps = (double)(now->rx_packets - then->rx_packets) / secs,
		.tx_pps = (double)(now->tx_packets - then->tx_packets) / secs,
		.rx_gbps = (double)(now->rx_bytes - then->rx_bytes) * 8 / secs / 1e9,
		.tx_gbps = (double)(now->tx_bytes - then->tx_bytes) * 8 / secs / 1e9,
	};
}

static void json_port(const char *sep, const struct uvn_port *p, const struct rates *r,
		      const struct uvn_port_stats *s)
{
	printf("%s{\"name\":", sep);
	uvn_json_str(stdout, p->name);
	printf(",\"rx_pps\":%.0f,\"tx_pps\":%.0f,\"rx_gbps\":%.3f,"
	       "\"tx_gbps\":%.3f,\"rx_packets\":%" PRIu64 ",\"tx_packets\":%" PRIu64
	       ",\"drops\":%" PRIu64 ",\"errors\":%" PRIu64 ",\"kicks\":%" PRIu64
	       ",\"calls\":%" PRIu64 ",\"calls_suppressed\":%" PRIu64 ",\"mtu_drops\":%" PRIu64
	       ",\"guest_filtered\":%" PRIu64 "}",
	       r->rx_pps, r->tx_pps, r->rx_gbps, r->tx_gbps, s->rx_packets,
	       s->tx_packets, s->drops, s->errors, s->kicks, s->calls, s->calls_suppressed,
	       s->mtu_drops, s->guest_filtered);
}

static void text_port(const struct uvn_port *p, const struct rates *r, const struct uvn_port_stats *s)
{
	printf("%-32s rx %10.0f pps %7.3f Gb/s  tx %10.0f pps %7.3f Gb/s  drops %" PRIu64
	       " errors %" PRIu64 " kicks %" PRIu64 " calls %" PRIu64 " (suppressed %" PRIu64 ")\n",
	       p->name, r->rx_pps, r->rx_gbps, r->tx_pps, r->tx_gbps, s->drops, s->errors, s->kicks,
	       s->calls, s->calls_suppressed);
}

void uvnetd_stats_interval(struct uvnetd *d)
{
	uint64_t now = uvn_now_ns();
	double secs = (double)(now - d->last_ns) / 1e9;

	if (secs <= 0)
		return;
	if (d->o.json)
		printf("{\"t\":%.3f,\"ports\":[", (double)(now - d->start_ns) / 1e9);
	for (unsigned i = 0, n = 0; i < d->fwd.nports; i++) {
		struct uvn_port *p = d->fwd.ports[i];
		struct uvn_port_stats s;
		struct rates r;

		if (!p)
			continue;
		p->ops->stats(p, &s);
		r = rates(&s, &d->last[i], secs);
		if (d->o.json)
			json_port(n++ ? "," : "", p, &r, &s);
		else
			text_port(p, &r, &s);
		d->last[i] = s;
	}
	if (d->o.json)
		printf("]}\n");
	fflush(stdout);
	d->last_ns = now;
}

void uvnetd_stats_final(struct uvnetd *d)
{
	double secs = (double)(uvn_now_ns() - d->start_ns) / 1e9;

	if (d->o.json)
		printf("{\"final\":true,\"t\":%.3f,\"ports\":[", secs);
	else
		printf("uvnetd: totals after %.1f s\n", secs);
	for (unsigned i = 0, n = 0; i < d->fwd.nports; i++) {
		struct uvn_port *p = d->fwd.ports[i];
		struct uvn_port_stats s, zero = { 0 };
		struct rates r;

		if (!p)
			continue;
		p->ops->stats(p, &s);
		r = rates(&s, &zero, secs > 0 ? secs : 1);
		if (d->o.json) {
			json_port(n++ ? "," : "", p, &r, &s);
		} else {
			printf("  %-30s rx %" PRIu64 " pkts %" PRIu64 " bytes  tx %" PRIu64
			       " pkts %" PRIu64 " bytes  drops %" PRIu64 " errors %" PRIu64 "\n",
			       p->name, s.rx_packets, s.rx_bytes, s.tx_packets, s.tx_bytes,
			       s.drops, s.errors);
		}
	}
	if (d->o.json)
		printf("]}\n");
	fflush(stdout);
}

void uvnetd_fwd_stats(struct uvnetd *d, struct uvn_fwd_stats *st)
{
	memset(st, 0, sizeof(*st));
	for (unsigned i = 0; i < d->nworkers; i++)
		uvn_fwd_stats_add(st, &d->workers[i].fw);
}
