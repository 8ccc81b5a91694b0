/* SPDX-License-Identifier: MIT */
/*
 * The TAP port against the kernel's tun, in a private network namespace
 * (unshare; skipped without CAP_NET_ADMIN):
 * - mtu=N sets the device's MTU when the port makes it; frames over N are
 *   dropped and counted (mtu_drops, also in drops) both ways: the kernel's
 *   (sent through a packet socket after the device's MTU was raised behind
 *   the port's back) and ours;
 * - queues: one, and one per sender once set_senders says how many, each
 *   with its own fd; every queue reads what the kernel puts on it and
 *   writes on its own, with its own counters, which add up.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "port/port.h"

#define IFNAME "uvmtu0"

static bool in_netns;
static struct uvn_pkt_pool *small, *big, *frames;

static int group_setup(void **state)
{
	struct uvn_pkt_pool_cfg sc = { .count = 64, .buf_size = 2048 };
	struct uvn_pkt_pool_cfg bc = { .count = 8, .buf_size = 65536 + 64 };
	struct uvn_pkt_pool_cfg fc = { .count = 8, .buf_size = 9100 };

	(void)state;
	in_netns = unshare(CLONE_NEWNET) == 0;
	if (in_netns) {
		/* no IPv6 on the devices: nothing of the kernel's own on the TAP */
		FILE *f = fopen("/proc/sys/net/ipv6/conf/default/disable_ipv6", "w");

		if (f) {
			fputs("1\n", f);
			fclose(f);
		}
	}
	return uvn_pkt_pool_create(&sc, &small) || uvn_pkt_pool_create(&bc, &big) ||
	       uvn_pkt_pool_create(&fc, &frames);
}

static int group_teardown(void **state)
{
	(void)state;
	uvn_pkt_pool_destroy(small);
	uvn_pkt_pool_destroy(big);
	uvn_pkt_pool_destroy(frames);
	return 0;
}

static struct uvn_port *make(const char *opts)
{
	struct uvn_port_env env = { .small = small, .big = big };
	struct uvn_port *p;
	char spec[64];

	snprintf(spec, sizeof(spec), "tap:" IFNAME "%s", opts);
	assert_int_equal(uvn_port_create(spec, &env, &p), 0);
	return p;
}

static int dev_ioctl(unsigned long req, struct ifreq *ifr)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), r;

	assert_true(s >= 0);
	snprintf(ifr->ifr_name, IFNAMSIZ, IFNAME);
	r = ioctl(s, req, ifr);
	close(s);
	return r;
}

static int dev_mtu(void)
{
	struct ifreq ifr = { 0 };

	assert_int_equal(dev_ioctl(SIOCGIFMTU, &ifr), 0);
	return ifr.ifr_mtu;
}

static void set_dev_mtu(int mtu)
{
	struct ifreq ifr = { .ifr_mtu = mtu };

	assert_int_equal(dev_ioctl(SIOCSIFMTU, &ifr), 0);
}

/* A packet socket on the device: what it sends, the TAP port reads. */
static int packet_socket(void)
{
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL) };
	int s = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));

	assert_true(s >= 0);
	sll.sll_ifindex = (int)if_nametoindex(IFNAME);
	assert_true(sll.sll_ifindex > 0);
	assert_int_equal(bind(s, (struct sockaddr *)&sll, sizeof(sll)), 0);
	return s;
}

/* An IPv4 frame of @len bytes (not valid IP: the kernel passes it on as is). */
static void fill(uint8_t *b, uint32_t len, uint8_t mark)
{
	memset(b, mark, len);
	memcpy(b, "\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00", 14);
}

static void kernel_sends(int s, uint32_t len, uint8_t mark)
{
	static uint8_t b[9100];

	fill(b, len, mark);
	assert_int_equal(send(s, b, len, 0), (ssize_t)len);
}

/* Frames the port reads from any queue within a second, up to @max (freed). */
static unsigned port_reads(struct uvn_port *p, unsigned max, uint32_t *lens)
{
	unsigned got = 0, nq = p->ops->nqueues(p);

	for (int tries = 0; tries < 20 && got < max; tries++) {
		struct pollfd pfd[UVN_PORT_MAX_QUEUES];

		for (unsigned q = 0; q < nq; q++)
			pfd[q] = (struct pollfd){ .fd = p->ops->rx_fd(p, q), .events = POLLIN };
		poll(pfd, nq, 50);
		for (unsigned q = 0; q < nq; q++) {
			struct uvn_pkt *pk[8];
			unsigned n = p->ops->rx(p, q, pk, 8);

			for (unsigned i = 0; i < n; i++) {
				assert_int_equal(pk[i]->queue, q);
				if (got < max && lens)
					lens[got] = pk[i]->len;
				got++;
			}
			uvn_pkt_free_bulk(pk, n);
		}
	}
	return got;
}

static struct uvn_port_stats stats(struct uvn_port *p)
{
	struct uvn_port_stats st;

	p->ops->stats(p, &st);
	return st;
}

static unsigned send_frame(struct uvn_port *p, unsigned sender, uint32_t len)
{
	struct uvn_pkt *f = uvn_pkt_alloc(frames);
	unsigned n;

	assert_non_null(f);
	fill(f->buf, len, 0x55);
	uvn_pkt_set_buf(f, len);
	n = p->ops->tx(p, sender, &f, 1);
	uvn_pkt_free(f);
	return n;
}

static void test_mtu_sets_the_device(void **state)
{
	struct uvn_port *p;

	(void)state;
	if (!in_netns)
		skip();
	p = make(",mtu=9000");
	assert_int_equal(dev_mtu(), 9000);
	p->ops->destroy(p);
	p = make(",mtu=1280");
	assert_int_equal(dev_mtu(), 1280);
	p->ops->destroy(p);
	/* without mtu= the device keeps the kernel's default */
	p = make("");
	assert_int_equal(dev_mtu(), 1500);
	p->ops->destroy(p);
}

static void test_mtu_drops_both_ways(void **state)
{
	struct uvn_port *p;
	uint32_t lens[4];
	int s;

	(void)state;
	if (!in_netns)
		skip();
	p = make(",mtu=1500");
	/* someone raises the device's MTU: the port's stays */
	set_dev_mtu(9000);
	s = packet_socket();
	kernel_sends(s, 1514, 1);
	kernel_sends(s, 1515, 2);
	kernel_sends(s, 9014, 3);
	kernel_sends(s, 60, 4);
	assert_int_equal(port_reads(p, 4, lens), 2);
	assert_int_equal(lens[0], 1514);
	assert_int_equal(lens[1], 60);
	assert_int_equal(stats(p).mtu_drops, 2);
	assert_int_equal(stats(p).drops, 2);
	assert_int_equal(stats(p).rx_packets, 4);
	/* ours: over the MTU, not written */
	assert_int_equal(send_frame(p, 0, 1515), 0);
	assert_int_equal(send_frame(p, 0, 1514), 1);
	assert_int_equal(stats(p).mtu_drops, 3);
	assert_int_equal(stats(p).tx_packets, 1);
	close(s);
	p->ops->destroy(p);
}

/* Queues per sender: each its own fd; frames in on any, out on each. */
static void test_queue_per_sender(void **state)
{
	struct uvn_port *p;
	struct uvn_port_stats st;
	int s;

	(void)state;
	if (!in_netns)
		skip();
	p = make("");
	assert_int_equal(p->ops->nqueues(p), 1);
	p->ops->set_senders(p, 3);
	assert_int_equal(p->ops->nqueues(p), 3);
	assert_int_not_equal(p->ops->rx_fd(p, 0), p->ops->rx_fd(p, 1));
	assert_int_not_equal(p->ops->rx_fd(p, 1), p->ops->rx_fd(p, 2));
	assert_int_equal(p->ops->rx_fd(p, 3), -1);
	/* fewer senders later: the queues stay */
	p->ops->set_senders(p, 2);
	assert_int_equal(p->ops->nqueues(p), 3);
	p->ops->set_senders(p, 3);
	for (unsigned sender = 0; sender < 6; sender++)
		assert_int_equal(send_frame(p, sender, 100 + sender), 1);
	st = stats(p);
	assert_int_equal(st.tx_packets, 6);
	assert_int_equal(st.tx_bytes, 6 * 100 + 15);
	/* what the kernel sends comes in on some queue, all of it */
	s = packet_socket();
	for (unsigned i = 0; i < 10; i++)
		kernel_sends(s, 60 + i, (uint8_t)i);
	assert_int_equal(port_reads(p, 10, NULL), 10);
	assert_int_equal(stats(p).rx_packets, 10);
	/* many senders on few queues: shared under a lock, still counted */
	p->ops->set_senders(p, 64);
	assert_int_equal(p->ops->nqueues(p), UVN_PORT_MAX_QUEUES);
	for (unsigned sender = 0; sender < 64; sender++)
		assert_int_equal(send_frame(p, sender, 60), 1);
	assert_int_equal(stats(p).tx_packets, 70);
	close(s);
	p->ops->destroy(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mtu_sets_the_device),
		cmocka_unit_test(test_mtu_drops_both_ways),
		cmocka_unit_test(test_queue_per_sender),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
