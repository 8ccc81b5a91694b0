/* SPDX-License-Identifier: MIT */
/*
 * DPDK testpmd as either side, each process owning one CPU with both of its
 * lcores (--lcores 0@N,1@N: the main lcore sleeps), no hugepages needed:
 *   device: --vdev net_vhost0,iface=SOCK   rxonly (tx tests), txonly (rx), macswap (rr)
 *   driver: --vdev net_virtio_user0,path=SOCK   txonly (tx tests), rxonly (rx)
 * Counters come from the NIC statistics block --stats-period 1 prints every
 * second; SIGINT makes it print its forward statistics and exit.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "side.h"

const char *pt_testpmd_path(const struct pt_opts *o)
{
	return o->testpmd ? o->testpmd : "dpdk-testpmd";
}

/* "RX-packets: 12   RX-missed: 0   RX-bytes: 768" -> the value after @key. */
static bool field(const char *line, const char *key, uint64_t *v)
{
	const char *p = strstr(line, key);

	if (!p)
		return false;
	p += strlen(key);
	while (*p == ' ')
		p++;
	if (*p < '0' || *p > '9')
		return false;
	*v = strtoull(p, NULL, 10);
	return true;
}

static void on_line(void *ctx, char *line, uint64_t t_ns)
{
	struct pt_side *s = ctx;
	struct pt_counts *c = s->in_final ? &s->final : &s->pending;
	uint64_t v;

	if (strstr(line, "NIC statistics for port")) {
		s->in_block = true;
		s->in_final = false;
		memset(&s->pending, 0, sizeof(s->pending));
		return;
	}
	if (strstr(line, "Forward statistics for port")) {
		s->in_final = true;
		s->in_block = false;
		return;
	}
	if (strstr(line, "Accumulated forward statistics")) {
		s->in_final = false;
		return;
	}
	if (!s->in_block && !s->in_final)
		return;
	if (s->in_block && strstr(line, "#####") && !strstr(line, "NIC")) {
		/* End of a block: it becomes the latest report. */
		s->pending.valid = true;
		s->pending.t_ns = t_ns;
		s->pending.updates = s->last.updates + 1;
		s->last = s->pending;
		s->in_block = false;
		return;
	}
	if (field(line, "RX-packets:", &v))
		c->rx_pkts = v;
	if (field(line, "RX-bytes:", &v)) {
		c->rx_bytes = v;
		c->have_bytes = true;
	}
	if (field(line, "RX-missed:", &v) || field(line, "RX-dropped:", &v))
		c->drops = v;
	if (field(line, "TX-packets:", &v))
		c->tx_pkts = v;
	if (field(line, "TX-bytes:", &v))
		c->tx_bytes = v;
	/* Frames testpmd's txonly could not place: the ring was full. */
	if (field(line, "TX-dropped:", &v))
		c->tx_full = v;
	if (s->in_final)
		s->final.valid = true;
}

static const char *fwd_mode(const struct pt_side *s)
{
	const struct pt_cfg *c = s->c;

	if (s->is_device)
		return c->test == PT_RR ? "macswap" : c->dir == PT_TX ? "rxonly" : "txonly";
	return c->dir == PT_TX ? "txonly" : "rxonly";
}

static void vdev(const struct pt_side *s, char *out, size_t n)
{
	const struct pt_cfg *c = s->c;

	if (s->is_device) {
		snprintf(out, n, "net_vhost0,iface=%s,queues=%u", s->sock[0], c->queues);
		return;
	}
	/* virtio-user's own defaults otherwise: mergeable, in_order, 256 entries. */
	snprintf(out, n, "net_virtio_user0,path=%s,queues=%u%s%s", s->sock[0], c->queues,
		 c->ring == UVN_RING_PACKED ? ",packed_vq=1" : "",
		 c->rx_mode == UVN_RX_SMALL ? ",mrg_rxbuf=0" : "");
}

/* EAL run-time dirs of uvnet-perf runs that were killed (their PID is gone). */
static void sweep_dead_prefixes(void)
{
	static bool done;
	DIR *d;
	struct dirent *e;

	if (done)
		return;
	done = true;
	d = opendir("/var/run/dpdk");
	while (d && (e = readdir(d))) {
		char path[300], out[64];
		char *argv[] = { (char *)"rm", (char *)"-rf", path, NULL };
		int pid;

		if (sscanf(e->d_name, "uvp%dx", &pid) != 1 || pid <= 0 || kill(pid, 0) == 0 ||
		    errno != ESRCH)
			continue;
		snprintf(path, sizeof(path), "/var/run/dpdk/%s", e->d_name);
		pt_capture(argv, out, sizeof(out));
	}
	if (d)
		closedir(d);
}

static int start(struct pt_side *s)
{
	const struct pt_cfg *c = s->c;
	int cpu = s->is_device ? c->dev_cpu : c->drv_cpu;
	char lcores[32], prefix[64], dev[256], fwd[48], txpkts[32], burst[24], q[2][24];
	char *argv[40];
	unsigned n = 0;
	int r;

	snprintf(lcores, sizeof(lcores), "0@%d,1@%d", cpu, cpu);
	snprintf(prefix, sizeof(prefix), "--file-prefix=uvp%dx%u", (int)getpid(), s->n);
	vdev(s, dev, sizeof(dev));
	snprintf(fwd, sizeof(fwd), "--forward-mode=%s", fwd_mode(s));
	snprintf(txpkts, sizeof(txpkts), "--txpkts=%u", c->size);
	snprintf(burst, sizeof(burst), "--burst=%u", c->burst);
	snprintf(q[0], sizeof(q[0]), "--rxq=%u", c->queues);
	snprintf(q[1], sizeof(q[1]), "--txq=%u", c->queues);
	/* stdbuf execs testpmd in place: the PID (for CPU accounting) stays testpmd's,
	 * and its statistics arrive line by line instead of in 4 KB lumps. */
	argv[n++] = (char *)"stdbuf";
	argv[n++] = (char *)"-oL";
	argv[n++] = (char *)pt_testpmd_path(s->o);
	argv[n++] = (char *)"--lcores";
	argv[n++] = lcores;
	argv[n++] = (char *)"--no-pci";
	argv[n++] = (char *)"--no-huge";
	argv[n++] = (char *)"-m";
	argv[n++] = (char *)"512";
	argv[n++] = prefix;
	argv[n++] = (char *)"--vdev";
	argv[n++] = dev;
	argv[n++] = (char *)"--";
	argv[n++] = (char *)"--nb-cores=1";
	argv[n++] = burst;
	argv[n++] = (char *)"--total-num-mbufs=16384";
	argv[n++] = (char *)"--stats-period";
	argv[n++] = (char *)"1";
	argv[n++] = (char *)"-a";
	argv[n++] = fwd;
	argv[n++] = txpkts;
	argv[n++] = q[0];
	argv[n++] = q[1];
	argv[n] = NULL;
	sweep_dead_prefixes();
	s->child.name = s->is_device ? "testpmd-vhost" : "testpmd-virtio-user";
	s->child.on_line = on_line;
	s->child.ctx = s;
	if (s->is_device)
		unlink(s->sock[0]);
	r = pt_spawn(&s->child, argv, -1); /* --lcores pins it */
	if (r)
		snprintf(s->why, sizeof(s->why), "cannot start testpmd: %s", strerror(-r));
	s->pid = s->child.pid;
	return r;
}

static bool ready(struct pt_side *s)
{
	/* A device listens once its port started; a driver moves traffic once it
	 * prints its first statistics. */
	return s->is_device ? pt_sock_exists(s->sock[0]) : s->last.updates > 0;
}

static int snap(struct pt_side *s, uint64_t after_ns, struct pt_counts *out)
{
	uint64_t end = pt_now_ns() + 2500000000ull;

	while (s->last.t_ns <= after_ns && pt_now_ns() < end && pt_alive(&s->child) &&
	       !pt_interrupted)
		pt_pump(20);
	*out = s->last;
	return s->last.t_ns > after_ns ? 0 : -ETIMEDOUT;
}

static void remove_runtime_dir(const struct pt_side *s)
{
	char path[PATH_MAX], *argv[] = { (char *)"rm", (char *)"-rf", path, NULL }, out[64];

	/* EAL's run-time directory for our --file-prefix (not removed by testpmd). */
	snprintf(path, sizeof(path), "/var/run/dpdk/uvp%dx%u", (int)getpid(), s->n);
	if (access(path, F_OK) == 0)
		pt_capture(argv, out, sizeof(out));
}

static void stop(struct pt_side *s)
{
	if (s->stopped)
		return;
	pt_stop(&s->child, SIGINT, 10);
	remove_runtime_dir(s);
	s->stopped = true;
}

const struct pt_side_ops pt_testpmd_ops = { start, ready, snap, stop };
