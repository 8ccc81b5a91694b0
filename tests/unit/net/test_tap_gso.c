/* SPDX-License-Identifier: MIT */
/*
 * The TAP port's offloads against the kernel's tun, in a private network
 * namespace of this process (unshare; skipped without CAP_NET_ADMIN): the
 * kernel's UDP GSO (USO) frames come in whole when it offers USO, into a
 * big buffer; our USO and partial-checksum frames written to the TAP are
 * taken by the kernel and delivered to a socket as the right datagrams,
 * with the headers we checked even when the sender rewrites its own after
 * the check.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include <cmocka.h>

#include "gso_frames.h"
#include "net/gso.h"
#include "port/port.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif

#define IFNAME "uvgso0"
#define TUN_USO4 0x20

struct fx {
	struct uvn_pkt_pool *small, *big;
	struct uvn_port *port;
	uint8_t mac[6];
};

static bool in_netns;

/*
 * A guest that rewrites its frame between the port's checks and the
 * kernel's copy (with zero-copy the frame is still in its memory): the
 * TAP port's writev finds the IPv4 length of the frame at rewrite_ip
 * lying, when it is set.
 */
static uint8_t *rewrite_ip;

ssize_t writev(int fd, const struct iovec *iov, int n)
{
	if (rewrite_ip)
		tf_put16(rewrite_ip + 2, 100);
	return (ssize_t)syscall(SYS_writev, fd, iov, n);
}

static int group_setup(void **state)
{
	(void)state;
	in_netns = unshare(CLONE_NEWNET) == 0;
	return 0;
}

static void ifreq_addr(struct ifreq *ifr, unsigned long req, const char *addr, int s)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)&ifr->ifr_addr;

	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	inet_pton(AF_INET, addr, &sin->sin_addr);
	assert_int_equal(ioctl(s, req, ifr), 0);
}

static struct fx *setup(void)
{
	struct uvn_pkt_pool_cfg sc = { .count = 64, .buf_size = 2048 };
	struct uvn_pkt_pool_cfg bc = { .count = 8, .buf_size = 65536 + 64 };
	struct fx *f = calloc(1, sizeof(*f));
	struct ifreq ifr = { 0 };
	struct arpreq ar = { 0 };
	struct sockaddr_in *sin = (struct sockaddr_in *)&ar.arp_pa;
	int s = socket(AF_INET, SOCK_DGRAM, 0);

	assert_int_equal(uvn_pkt_pool_create(&sc, &f->small), 0);
	assert_int_equal(uvn_pkt_pool_create(&bc, &f->big), 0);
	assert_int_equal(uvn_port_tap_create(IFNAME, NULL, f->small, f->big, &f->port), 0);
	snprintf(ifr.ifr_name, IFNAMSIZ, IFNAME);
	ifreq_addr(&ifr, SIOCSIFADDR, "198.18.9.1", s);
	ifreq_addr(&ifr, SIOCSIFNETMASK, "255.255.255.0", s);
	assert_int_equal(ioctl(s, SIOCGIFFLAGS, &ifr), 0);
	ifr.ifr_flags |= IFF_UP;
	assert_int_equal(ioctl(s, SIOCSIFFLAGS, &ifr), 0);
	assert_int_equal(ioctl(s, SIOCGIFHWADDR, &ifr), 0);
	memcpy(f->mac, ifr.ifr_hwaddr.sa_data, 6);
	/* the peer behind the TAP, resolved for good: no ARP in the way */
	sin->sin_family = AF_INET;
	inet_pton(AF_INET, "198.18.9.2", &sin->sin_addr);
	ar.arp_ha.sa_family = ARPHRD_ETHER;
	memcpy(ar.arp_ha.sa_data, "\x02\x00\x00\x00\x00\x02", 6);
	ar.arp_flags = ATF_COM | ATF_PERM;
	snprintf(ar.arp_dev, sizeof(ar.arp_dev), IFNAME);
	assert_int_equal(ioctl(s, SIOCSARP, &ar), 0);
	close(s);
	return f;
}

static void teardown_fx(struct fx *f)
{
	f->port->ops->destroy(f->port);
	assert_int_equal(uvn_pkt_pool_avail(f->small), 64);
	assert_int_equal(uvn_pkt_pool_avail(f->big), 8);
	uvn_pkt_pool_destroy(f->small);
	uvn_pkt_pool_destroy(f->big);
	free(f);
}

/* The TAP's offload counters, from its dump_queues. */
static uint64_t tap_counter(struct fx *f, const char *name)
{
	char *buf = NULL, *at, key[64];
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	bool first = true;
	uint64_t v = 0;

	f->port->ops->dump_queues(f->port, m, true, &first);
	fclose(m);
	snprintf(key, sizeof(key), "\"%s\":", name);
	at = strstr(buf, key);
	if (at)
		v = strtoull(at + strlen(key), NULL, 10);
	free(buf);
	return v;
}

/* Frames from the kernel that are UDP to port @dport, for up to a second. */
static unsigned read_udp(struct fx *f, uint16_t dport, struct uvn_pkt **out, unsigned max)
{
	unsigned got = 0;

	for (int tries = 0; tries < 20 && got < max; tries++) {
		struct pollfd pfd = { .fd = uvn_port_tap_fd(f->port), .events = POLLIN };
		struct uvn_pkt *p[8];
		unsigned n;

		poll(&pfd, 1, 50);
		n = f->port->ops->rx(f->port, 0, p, 8);
		for (unsigned i = 0; i < n; i++) {
			uint8_t h[38];

			if (uvn_pkt_read(p[i], 0, h, sizeof(h)) == sizeof(h) && tf_get16(h + 12) == 0x0800 &&
			    h[23] == 17 && tf_get16(h + 36) == dport && got < max)
				out[got++] = p[i];
			else
				uvn_pkt_free(p[i]);
		}
	}
	return got;
}

static void test_kernel_uso_comes_in_whole(void **state)
{
	struct fx *f;
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(9000) };
	static uint8_t data[5000], flat[6000], seg[2000];
	struct uvn_pkt *p[8];
	int s, mss = 1000;
	unsigned n;

	(void)state;
	if (!in_netns)
		skip();
	f = setup();
	for (unsigned i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + 3);
	inet_pton(AF_INET, "198.18.9.2", &to.sin_addr);
	s = socket(AF_INET, SOCK_DGRAM, 0);
	assert_true(s >= 0);
	if (setsockopt(s, SOL_UDP, UDP_SEGMENT, &mss, sizeof(mss))) {
		close(s);
		teardown_fx(f);
		skip(); /* a kernel without UDP GSO sockets (before 4.18) */
	}
	assert_int_equal(sendto(s, data, sizeof(data), 0, (struct sockaddr *)&to, sizeof(to)), 5000);
	close(s);
	if (!(tap_counter(f, "offload_flags") & TUN_USO4)) {
		/* no USO from this kernel: it segmented, we got datagrams */
		assert_int_equal(read_udp(f, 9000, p, 8), 5);
		uvn_pkt_free_bulk(p, 5);
		teardown_fx(f);
		return;
	}
	n = read_udp(f, 9000, p, 8);
	assert_int_equal(n, 1);
	assert_int_equal(p[0]->len, 14 + 20 + 8 + 5000);
	assert_ptr_equal(p[0]->pool, f->big);
	assert_int_equal(p[0]->vnet.gso_type, VIRTIO_NET_HDR_GSO_UDP_L4);
	assert_int_equal(le16toh(p[0]->vnet.gso_size), 1000);
	assert_int_equal(tap_counter(f, "rx_gso"), 1);
	assert_true(tap_counter(f, "rx_big") >= 1);
	/* and it segments into the datagrams the socket sent */
	struct uvn_gso g;
	struct tf_layout l = { .l3 = 14, .l4 = 34, .hdr_len = 42, .len = p[0]->len };
	struct tf_opts o = { .udp = true, .mss = 1000 };

	assert_int_equal(uvn_gso_parse(p[0], &g), UVN_GSO_OK);
	assert_int_equal(g.nsegs, 5);
	uvn_pkt_read(p[0], 0, flat, p[0]->len);
	o.ip_id = tf_get16(flat + 18);
	assert_memory_equal(flat + 42, data, 5000);
	for (uint32_t i = 0; i < g.nsegs; i++) {
		uint32_t off, len = uvn_gso_seg(&g, p[0], i, false, seg, &off);
		const char *err;

		uvn_pkt_read(p[0], off, seg + g.hdr_len, len);
		err = tf_check_seg(seg, g.hdr_len + len, flat, &l, &o, i, g.nsegs, false);
		if (err)
			fail_msg("segment %u: %s", i, err);
	}
	uvn_pkt_free(p[0]);
	teardown_fx(f);
}

/* A frame from the peer (198.18.9.2) to us on the TAP, port @dport. */
static struct uvn_pkt *peer_frame(struct fx *f, uint32_t payload, bool gso, uint16_t dport)
{
	uint8_t macs[12];
	struct tf_opts o = { .udp = true, .mss = 1000, .seed = 5, .dport = dport,
			     .addrs = (const uint8_t *)"\xc6\x12\x09\x02\xc6\x12\x09\x01", .macs = macs };
	struct uvn_pkt *p = uvn_pkt_alloc(f->big);

	memcpy(macs, f->mac, 6);
	memcpy(macs + 6, "\x02\x00\x00\x00\x00\x02", 6);
	struct tf_layout l = tf_build(p->buf, payload, &o, &p->vnet);
	if (!gso) {
		p->vnet.gso_type = 0;
		p->vnet.gso_size = 0;
	}
	uvn_pkt_set_buf(p, l.len);
	return p;
}

/* A UDP socket on our side of the TAP (198.18.9.1), port @port. */
static int bound_socket(uint16_t port)
{
	struct sockaddr_in me = { .sin_family = AF_INET, .sin_port = htons(port) };
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);

	assert_true(s >= 0);
	inet_pton(AF_INET, "198.18.9.1", &me.sin_addr);
	assert_int_equal(bind(s, (struct sockaddr *)&me, sizeof(me)), 0);
	return s;
}

/* Datagrams on @s for up to two seconds, @want at most: datagram i must be
 * @sizes[i] bytes, those at @from[i]. @return how many came */
static unsigned recv_datagrams(int s, unsigned want, const uint32_t *sizes, const uint8_t *const *from)
{
	uint8_t buf[2000];
	unsigned got = 0;

	for (int tries = 0; tries < 40 && got < want; tries++) {
		struct pollfd pfd = { .fd = s, .events = POLLIN };
		ssize_t r;

		poll(&pfd, 1, 50);
		while (got < want && (r = recv(s, buf, sizeof(buf), 0)) > 0) {
			assert_int_equal(r, sizes[got]);
			assert_memory_equal(buf, from[got], (size_t)r);
			got++;
		}
	}
	return got;
}

static void test_our_uso_and_partial_checksums_reach_a_socket(void **state)
{
	struct fx *f;
	struct uvn_pkt *p[2];
	int s;

	(void)state;
	if (!in_netns)
		skip();
	f = setup();
	s = bound_socket(9001);
	p[0] = peer_frame(f, 4500, true, 9001);  /* USO: five datagrams, the last 500 bytes */
	p[1] = peer_frame(f, 777, false, 9001);  /* one datagram, checksum partial */
	const uint8_t *p0 = (const uint8_t *)p[0]->buf + 42;
	const uint8_t *from[] = { p0, p0 + 1000, p0 + 2000, p0 + 3000, p0 + 4000,
				  (const uint8_t *)p[1]->buf + 42 };
	static const uint32_t sizes[] = { 1000, 1000, 1000, 1000, 500, 777 };

	assert_int_equal(f->port->ops->tx(f->port, 0, p, 2), 2);
	assert_int_equal(tap_counter(f, "tx_err"), 0);
	assert_int_equal(recv_datagrams(s, 6, sizes, from), 6);
	if (tap_counter(f, "offload_flags") & TUN_USO4)
		assert_int_equal(tap_counter(f, "tx_gso"), 1);
	else
		assert_int_equal(tap_counter(f, "tx_gso_segs"), 5);
	assert_int_equal(tap_counter(f, "tx_csum"), 1);
	close(s);
	uvn_pkt_free_bulk(p, 2);
	teardown_fx(f);
}

static void test_malformed_gso_not_written(void **state)
{
	struct fx *f;
	struct uvn_pkt *p;
	struct uvn_port_stats st;

	(void)state;
	if (!in_netns)
		skip();
	f = setup();
	p = peer_frame(f, 4500, true, 9002);
	tf_put16((uint8_t *)p->buf + 16, 100); /* the IPv4 length lies */
	assert_int_equal(f->port->ops->tx(f->port, 0, &p, 1), 0);
	assert_int_equal(tap_counter(f, "tx_gso_bad"), 1);
	f->port->ops->stats(f->port, &st);
	assert_int_equal(st.tx_packets, 0);
	assert_int_equal(st.drops, 1);
	uvn_pkt_free(p);
	teardown_fx(f);
}

/* The rewrite comes too late: the kernel gets the headers we checked. */
static void test_headers_rewritten_after_the_check(void **state)
{
	static const uint32_t sizes[] = { 1000, 1000, 1000, 1000, 500 };
	const uint8_t *from[5];
	struct fx *f;
	struct uvn_pkt *p;
	int s;

	(void)state;
	if (!in_netns)
		skip();
	f = setup();
	s = bound_socket(9003);
	p = peer_frame(f, 4500, true, 9003);
	for (unsigned i = 0; i < 5; i++)
		from[i] = (const uint8_t *)p->buf + 42 + i * 1000;
	rewrite_ip = (uint8_t *)p->buf + 14;
	assert_int_equal(f->port->ops->tx(f->port, 0, &p, 1), 1);
	rewrite_ip = NULL;
	assert_int_equal(recv_datagrams(s, 5, sizes, from), 5);
	/* Where tun takes USO the frame went out whole (the path that wrote
	 * the guest's headers); elsewhere we segmented it from our copy. */
	if (tap_counter(f, "offload_flags") & TUN_USO4)
		assert_int_equal(tap_counter(f, "tx_gso"), 1);
	else
		assert_int_equal(tap_counter(f, "tx_gso_segs"), 5);
	close(s);
	uvn_pkt_free(p);
	teardown_fx(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kernel_uso_comes_in_whole),
		cmocka_unit_test(test_our_uso_and_partial_checksums_reach_a_socket),
		cmocka_unit_test(test_malformed_gso_not_written),
		cmocka_unit_test(test_headers_rewritten_after_the_check),
	};
	return cmocka_run_group_tests(tests, group_setup, NULL);
}
