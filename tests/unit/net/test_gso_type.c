/* SPDX-License-Identifier: MIT */
/*
 * "May this driver receive this GSO type": the one answer both sides use
 * (lib/net/gso.c uvn_gso_type_ok(): the device before it passes a GSO
 * frame on, our driver when it reads a header a device wrote), as a table
 * of negotiated features x gso_type (ECN bit included) x IP version, and
 * the IP version a frame carries.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "net/gso.h"

#define F(b) (1ull << (b))
#define CS F(VIRTIO_NET_F_GUEST_CSUM)
#define TSO4 F(VIRTIO_NET_F_GUEST_TSO4)
#define TSO6 F(VIRTIO_NET_F_GUEST_TSO6)
#define ECN F(VIRTIO_NET_F_GUEST_ECN)
#define UFO F(VIRTIO_NET_F_GUEST_UFO)
#define USO4 F(VIRTIO_NET_F_GUEST_USO4)
#define USO6 F(VIRTIO_NET_F_GUEST_USO6)
#define ALL (CS | TSO4 | TSO6 | ECN | UFO | USO4 | USO6)

#define T_NONE VIRTIO_NET_HDR_GSO_NONE
#define T_TCP4 VIRTIO_NET_HDR_GSO_TCPV4
#define T_TCP6 VIRTIO_NET_HDR_GSO_TCPV6
#define T_UFO VIRTIO_NET_HDR_GSO_UDP
#define T_USO VIRTIO_NET_HDR_GSO_UDP_L4
#define T_ECN VIRTIO_NET_HDR_GSO_ECN

struct row {
	uint64_t features;
	uint8_t gso_type;
	unsigned ip;
	bool ok;
};

static const struct row rows[] = {
	/* no GSO: always, whatever was negotiated or the frame carries */
	{ 0, T_NONE, 0, true },
	{ ALL, T_NONE, 6, true },
	{ ALL, T_NONE | T_ECN, 4, false },       /* ECN without a type */
	/* TCP: the bit of its IP version, with GUEST_CSUM */
	{ CS | TSO4, T_TCP4, 4, true },
	{ TSO4, T_TCP4, 4, false },              /* TSO needs GUEST_CSUM */
	{ CS | TSO6, T_TCP4, 4, false },
	{ ALL, T_TCP4, 6, false },               /* TCPV4 over IPv6 */
	{ ALL, T_TCP4, 0, false },               /* not IP at all */
	{ CS | TSO6, T_TCP6, 6, true },
	{ CS | TSO4, T_TCP6, 6, false },
	{ ALL, T_TCP6, 4, false },
	/* ECN: only with GUEST_ECN (the driver used to take it without) */
	{ CS | TSO4, T_TCP4 | T_ECN, 4, false },
	{ CS | TSO4 | ECN, T_TCP4 | T_ECN, 4, true },
	{ CS | TSO6 | ECN, T_TCP6 | T_ECN, 6, true },
	{ CS | TSO6 | ECN, T_TCP4 | T_ECN, 4, false },
	{ ALL, T_USO | T_ECN, 4, false },        /* ECN is TCP's */
	{ ALL, T_UFO | T_ECN, 4, false },
	/* USO: GUEST_USO4 for IPv4, GUEST_USO6 for IPv6 (the driver took
	 * IPv6 with USO4 alone) */
	{ CS | USO4, T_USO, 4, true },
	{ CS | USO4, T_USO, 6, false },
	{ CS | USO6, T_USO, 6, true },
	{ CS | USO6, T_USO, 4, false },
	{ USO4 | USO6, T_USO, 4, false },        /* USO needs GUEST_CSUM */
	{ CS | USO4 | USO6, T_USO, 0, false },
	/* UFO: either version */
	{ CS | UFO, T_UFO, 4, true },
	{ CS | UFO, T_UFO, 6, true },
	{ CS | USO4 | USO6, T_UFO, 4, false },
	/* unknown types */
	{ ALL, 2, 4, false },
	{ ALL, 6, 6, false },
	{ ALL, 0x7f, 4, false },
	{ ALL, T_TCP4, 5, false },
};

static void test_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *r = &rows[i];

		if (uvn_gso_type_ok(r->features, r->gso_type, r->ip) != r->ok)
			fail_msg("row %zu: features %#llx gso_type %#x IPv%u: want %s", i,
				 (unsigned long long)r->features, r->gso_type, r->ip,
				 r->ok ? "allowed" : "refused");
	}
}

/* One feature more or less changes nothing but its own cases: every type
 * is refused once its bit (or GUEST_CSUM) is taken out of everything. */
static void test_each_bit_needed(void **state)
{
	static const struct { uint8_t type; unsigned ip; uint64_t need; } c[] = {
		{ T_TCP4, 4, TSO4 }, { T_TCP6, 6, TSO6 }, { T_TCP4 | T_ECN, 4, TSO4 | ECN },
		{ T_TCP6 | T_ECN, 6, TSO6 | ECN }, { T_USO, 4, USO4 }, { T_USO, 6, USO6 },
		{ T_UFO, 4, UFO }, { T_UFO, 6, UFO },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		uint64_t need = c[i].need | CS;

		assert_true(uvn_gso_type_ok(ALL, c[i].type, c[i].ip));
		assert_true(uvn_gso_type_ok(need, c[i].type, c[i].ip));
		for (unsigned b = 0; b < 64; b++)
			if (need & F(b))
				assert_false(uvn_gso_type_ok(ALL & ~F(b), c[i].type, c[i].ip));
	}
}

static void test_ip_version(void **state)
{
	static const struct { uint8_t et[6]; unsigned len, want; } c[] = {
		{ { 0x08, 0x00 }, 14, 4 },
		{ { 0x86, 0xdd }, 14, 6 },
		{ { 0x08, 0x06 }, 60, 0 },                         /* ARP */
		{ { 0x81, 0x00, 0, 42, 0x08, 0x00 }, 18, 4 },      /* VLAN */
		{ { 0x88, 0xa8, 0, 42, 0x86, 0xdd }, 18, 6 },      /* 802.1ad */
		{ { 0x81, 0x00, 0, 42, 0x81, 0x00 }, 60, 0 },      /* QinQ: one tag only */
		{ { 0x81, 0x00, 0, 42, 0x08, 0x00 }, 17, 0 },      /* tag cut short */
		{ { 0x08, 0x00 }, 13, 0 },                         /* no whole Ethernet header */
	};
	uint8_t f[64];

	(void)state;
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		unsigned v;

		memset(f, 0xee, sizeof(f));
		memcpy(f + 12, c[i].et, sizeof(c[i].et));
		v = uvn_gso_ip_version(f, c[i].len);
		if (v != c[i].want)
			fail_msg("case %zu: IP version %u, want %u", i, v, c[i].want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_each_bit_needed),
		cmocka_unit_test(test_ip_version),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
