/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "switch/fdb.h"
#include "util/sys.h"

#define SEC 1000000000ull
#define K(mac) uvn_fdb_key(0, (mac))

static void test_learn_lookup_move_age(void **state)
{
	struct uvn_fdb f;
	uint64_t now = 1000 * SEC;

	(void)state;
	assert_int_equal(uvn_fdb_init(&f, 64, 300 * SEC), 0);
	assert_int_equal(uvn_fdb_lookup(&f, K(0x020000000001ull), now), UVN_FDB_NO_PORT);
	uvn_fdb_learn(&f, K(0x020000000001ull), 3, now);
	assert_int_equal(uvn_fdb_lookup(&f, K(0x020000000001ull), now), 3);
	uvn_fdb_learn(&f, K(0x020000000001ull), 5, now + SEC); /* the address moved */
	assert_int_equal(uvn_fdb_lookup(&f, K(0x020000000001ull), now + SEC), 5);
	assert_int_equal(f.moved, 1);
	assert_int_equal(uvn_fdb_lookup(&f, K(0x020000000001ull), now + 302 * SEC), UVN_FDB_NO_PORT);
	uvn_fdb_learn(&f, K(0x020000000002ull), 1, now);
	uvn_fdb_flush_port(&f, 1);
	assert_int_equal(uvn_fdb_lookup(&f, K(0x020000000002ull), now), UVN_FDB_NO_PORT);
	uvn_fdb_fini(&f);
}

static void test_full_table_stays_bounded(void **state)
{
	struct uvn_fdb f;
	uint64_t now = 1000 * SEC;

	(void)state;
	assert_int_equal(uvn_fdb_init(&f, 16, 300 * SEC), 0);
	for (uint64_t m = 1; m <= 100; m++)
		uvn_fdb_learn(&f, K(m), (uint16_t)(m % 7), now);
	assert_true(f.full > 0);
	/* everything that was stored is found on the right port */
	unsigned found = 0;
	for (uint64_t m = 1; m <= 100; m++) {
		uint16_t p = uvn_fdb_lookup(&f, K(m), now);

		if (p != UVN_FDB_NO_PORT) {
			assert_int_equal(p, m % 7);
			found++;
		}
	}
	assert_int_equal(found, 16);
	/* once aged, slots are reused */
	uvn_fdb_learn(&f, K(1000), 2, now + 400 * SEC);
	assert_int_equal(uvn_fdb_lookup(&f, K(1000), now + 400 * SEC), 2);
	uvn_fdb_fini(&f);
}


/* The same address in two VLANs is two entries, on two ports. */
static void test_vlan_keys(void **state)
{
	struct uvn_fdb f;
	uint64_t now = 1000 * SEC, mac = 0x020000000001ull;

	(void)state;
	assert_int_equal(uvn_fdb_init(&f, 64, 300 * SEC), 0);
	assert_int_equal(uvn_fdb_learn(&f, uvn_fdb_key(10, mac), 1, now), UVN_FDB_LEARNED);
	assert_int_equal(uvn_fdb_learn(&f, uvn_fdb_key(20, mac), 2, now), UVN_FDB_LEARNED);
	assert_int_equal(uvn_fdb_lookup(&f, uvn_fdb_key(10, mac), now), 1);
	assert_int_equal(uvn_fdb_lookup(&f, uvn_fdb_key(20, mac), now), 2);
	assert_int_equal(uvn_fdb_lookup(&f, uvn_fdb_key(0, mac), now), UVN_FDB_NO_PORT);
	assert_int_equal(uvn_fdb_lookup(&f, uvn_fdb_key(30, mac), now), UVN_FDB_NO_PORT);
	assert_int_equal(f.moved, 0);
	assert_int_equal(uvn_fdb_key_vlan(uvn_fdb_key(4094, mac)), 4094);
	assert_true(uvn_fdb_key_mac(uvn_fdb_key(4094, mac)) == mac);
	/* the all-zero address in VLAN 0 is a key like any other, not an empty slot */
	assert_int_equal(uvn_fdb_learn(&f, uvn_fdb_key(0, 0), 3, now), UVN_FDB_LEARNED);
	assert_int_equal(uvn_fdb_lookup(&f, uvn_fdb_key(0, 0), now), 3);
	/* del and flush by port */
	assert_int_equal(uvn_fdb_del(&f, uvn_fdb_key(10, mac), now), 0);
	assert_int_equal(uvn_fdb_del(&f, uvn_fdb_key(10, mac), now), -ENOENT);
	assert_int_equal(uvn_fdb_lookup(&f, uvn_fdb_key(10, mac), now), UVN_FDB_NO_PORT);
	assert_int_equal(uvn_fdb_lookup(&f, uvn_fdb_key(20, mac), now), 2);
	assert_int_equal(uvn_fdb_port_count(&f, 1), 0);
	assert_int_equal(uvn_fdb_flush(&f, 2, false, now), 1);
	assert_int_equal(uvn_fdb_lookup(&f, uvn_fdb_key(20, mac), now), UVN_FDB_NO_PORT);
	assert_int_equal(uvn_fdb_lookup(&f, uvn_fdb_key(0, 0), now), 3);
	/* learned again after a delete: a new entry, counted again */
	assert_int_equal(uvn_fdb_learn(&f, uvn_fdb_key(10, mac), 1, now), UVN_FDB_LEARNED);
	assert_int_equal(uvn_fdb_port_count(&f, 1), 1);
	uvn_fdb_fini(&f);
}

/* Static entries: never aged, never moved by learning, not flushed with
 * the learned ones, gone with their port; no second entry ahead of them. */
static void test_static(void **state)
{
	struct uvn_fdb f;
	struct uvn_fdb_info info;
	uint64_t now = 1000 * SEC, key = K(0x020000000009ull);
	unsigned seen = 0;

	(void)state;
	assert_int_equal(uvn_fdb_init(&f, 64, 300 * SEC), 0);
	assert_int_equal(uvn_fdb_learn(&f, key, 1, now), UVN_FDB_LEARNED);
	assert_int_equal(uvn_fdb_port_count(&f, 1), 1);
	assert_int_equal(uvn_fdb_add_static(&f, key, 4, now), 0);
	assert_int_equal(uvn_fdb_port_count(&f, 1), 0); /* static: not a learned address */
	assert_int_equal(uvn_fdb_port_count(&f, 4), 0);
	assert_int_equal(uvn_fdb_lookup(&f, key, now), 4);
	assert_int_equal(uvn_fdb_learn(&f, key, 1, now + SEC), UVN_FDB_PINNED);
	assert_int_equal(uvn_fdb_learn(&f, key, 4, now + SEC), UVN_FDB_KNOWN);
	assert_int_equal(uvn_fdb_lookup(&f, key, now + 10000 * SEC), 4);
	assert_int_equal(f.moved, 0);
	assert_int_equal(uvn_fdb_flush(&f, UVN_FDB_NO_PORT, false, now), 0);
	assert_int_equal(uvn_fdb_lookup(&f, key, now), 4);
	for (unsigned i = 0; i <= f.mask; i++) {
		if (uvn_fdb_get(&f, i, now + 5 * SEC, &info)) {
			assert_true(info.key == key && info.port == 4 && info.is_static);
			seen++;
		}
	}
	assert_int_equal(seen, 1);
	uvn_fdb_flush_port(&f, 4);
	assert_int_equal(uvn_fdb_lookup(&f, key, now), UVN_FDB_NO_PORT);
	uvn_fdb_fini(&f);
}

/* A stale entry ahead of a static one in its probe run is not taken for a
 * second, learned copy of the address that would hide the static one. */
/* The slot @key takes alone in a fresh two-slot table. */
static unsigned slot_of(uint64_t key, uint64_t now)
{
	struct uvn_fdb f;
	struct uvn_fdb_info info;
	unsigned at = 99;

	assert_int_equal(uvn_fdb_init(&f, 2, 300 * SEC), 0);
	uvn_fdb_learn(&f, key, 1, now);
	for (unsigned i = 0; i <= f.mask; i++)
		if (uvn_fdb_get(&f, i, now, &info))
			at = i;
	uvn_fdb_fini(&f);
	return at;
}

static void test_static_not_shadowed(void **state)
{
	struct uvn_fdb f;
	uint64_t now = 1000 * SEC, key = K(0x020000000042ull), m = 1;

	(void)state;
	/* an address whose slot is the first of the static one's run */
	while (slot_of(K(m), now) != slot_of(key, now))
		m++;
	assert_int_equal(uvn_fdb_init(&f, 2, 300 * SEC), 0);
	assert_int_equal(uvn_fdb_learn(&f, K(m), 1, now), UVN_FDB_LEARNED);
	assert_int_equal(uvn_fdb_add_static(&f, key, 2, now), 0);
	/* the learned one ages out: its stale slot comes first in the run */
	assert_int_equal(uvn_fdb_learn(&f, key, 3, now + 400 * SEC), UVN_FDB_PINNED);
	assert_int_equal(uvn_fdb_lookup(&f, key, now + 400 * SEC), 2);
	uvn_fdb_fini(&f);
}

/* mac-limit: a port at its limit learns nothing more and moves nothing,
 * so it can neither fill the table nor take another port's addresses;
 * its aged entries give way (at most one recount a second). */
static void test_limit(void **state)
{
	struct uvn_fdb f;
	uint64_t now = 1000 * SEC;

	(void)state;
	assert_int_equal(uvn_fdb_init(&f, 256, 300 * SEC), 0);
	uvn_fdb_set_limit(&f, 1, 4);
	for (uint64_t m = 0; m < 20; m++)
		assert_int_equal(uvn_fdb_learn(&f, K(0x0200000b0000ull + m), 2, now), UVN_FDB_LEARNED);
	for (uint64_t m = 0; m < 4; m++)
		assert_int_equal(uvn_fdb_learn(&f, K(0x0200000a0000ull + m), 1, now), UVN_FDB_LEARNED);
	assert_int_equal(uvn_fdb_port_count(&f, 1), 4);
	/* a flood of new sources: none learned, each counted */
	for (uint64_t m = 100; m < 1100; m++)
		assert_int_equal(uvn_fdb_learn(&f, K(0x0200000a0000ull + m), 1, now), UVN_FDB_LIMITED);
	assert_int_equal(f.port[1].limited, 1000);
	assert_int_equal(f.limited, 1000);
	assert_int_equal(uvn_fdb_port_count(&f, 1), 4);
	/* another port's address, sent from the port at its limit: not moved */
	assert_int_equal(uvn_fdb_learn(&f, K(0x0200000b0003ull), 1, now), UVN_FDB_LIMITED);
	for (uint64_t m = 0; m < 20; m++)
		assert_int_equal(uvn_fdb_lookup(&f, K(0x0200000b0000ull + m), now), 2);
	/* its own known addresses still refresh */
	assert_int_equal(uvn_fdb_learn(&f, K(0x0200000a0001ull), 1, now + 2 * SEC), UVN_FDB_KNOWN);
	/* other ports learn on: the limit is per port */
	assert_int_equal(uvn_fdb_learn(&f, K(0x0200000c0000ull), 3, now), UVN_FDB_LEARNED);
	/* once three of its four aged out, three new ones fit, not four */
	now += 301 * SEC;
	assert_int_equal(uvn_fdb_learn(&f, K(0x0200000a0001ull), 1, now), UVN_FDB_KNOWN);
	for (uint64_t m = 200; m < 203; m++)
		assert_int_equal(uvn_fdb_learn(&f, K(0x0200000a0000ull + m), 1, now), UVN_FDB_LEARNED);
	assert_int_equal(uvn_fdb_learn(&f, K(0x0200000a0000ull + 203), 1, now), UVN_FDB_LIMITED);
	assert_int_equal(uvn_fdb_port_count(&f, 1), 4);
	/* static entries do not count against it */
	assert_int_equal(uvn_fdb_add_static(&f, K(0x0200000d0000ull), 1, now), 0);
	assert_int_equal(uvn_fdb_port_count(&f, 1), 4);
	/* flushed: room again */
	assert_int_equal(uvn_fdb_flush(&f, 1, false, now), 4);
	assert_int_equal(uvn_fdb_port_count(&f, 1), 0);
	assert_int_equal(uvn_fdb_learn(&f, K(0x0200000a0000ull + 203), 1, now), UVN_FDB_LEARNED);
	uvn_fdb_fini(&f);
}

/* Port 0 too: an empty slot points at no port, so filling one takes
 * nothing from port 0's count (it did: port 0's limit never held). */
static void test_limit_port0(void **state)
{
	struct uvn_fdb f;
	uint64_t now = 1000 * SEC;

	(void)state;
	assert_int_equal(uvn_fdb_init(&f, 256, 300 * SEC), 0);
	uvn_fdb_set_limit(&f, 0, 3);
	for (uint64_t m = 0; m < 3; m++)
		assert_int_equal(uvn_fdb_learn(&f, K(0x0200000a0000ull + m), 0, now), UVN_FDB_LEARNED);
	assert_int_equal(uvn_fdb_learn(&f, K(0x0200000b0000ull), 2, now), UVN_FDB_LEARNED);
	assert_int_equal(uvn_fdb_port_count(&f, 0), 3);
	assert_int_equal(uvn_fdb_learn(&f, K(0x0200000a0003ull), 0, now), UVN_FDB_LIMITED);
	uvn_fdb_fini(&f);
}

/* Workers read the clock once a burst: an entry another one stored with a
 * time a little ahead of ours is fresh, not aged out (and not reused). */
static void test_clock_skew(void **state)
{
	struct uvn_fdb f;
	uint64_t now = 1000 * SEC;

	(void)state;
	assert_int_equal(uvn_fdb_init(&f, 64, 300 * SEC), 0);
	uvn_fdb_set_limit(&f, 1, 1);
	assert_int_equal(uvn_fdb_learn(&f, K(1), 1, now + 1000), UVN_FDB_LEARNED);
	assert_int_equal(uvn_fdb_lookup(&f, K(1), now), 1);
	/* port 1 is at its limit: its entry is not given up as aged */
	assert_int_equal(uvn_fdb_learn(&f, K(2), 1, now + 2 * SEC), UVN_FDB_LIMITED);
	assert_int_equal(uvn_fdb_lookup(&f, K(1), now), 1);
	uvn_fdb_fini(&f);
}

/* Two workers learn at once, on ports with and without a limit, moving
 * addresses between them: each port's count stays within its limit (by at
 * most the one learn per worker that may race past it) and never wraps,
 * and it is the number of entries the port holds, give or take the same. */
#define RACE_ROUNDS 200000

struct racer {
	struct uvn_fdb *f;
	uint32_t seed;
};

static void *race(void *arg)
{
	struct racer *r = arg;

	for (unsigned i = 0; i < RACE_ROUNDS; i++) {
		uint32_t x = r->seed = r->seed * 1103515245u + 12345u;

		/* 512 addresses, 4 ports; ports 0 and 1 limited */
		uvn_fdb_learn(r->f, K(0x020000000000ull + (x >> 8) % 512), (uint16_t)(x >> 24 & 3),
			      1000 * SEC + i);
	}
	return NULL;
}

static void test_concurrent_limit(void **state)
{
	struct uvn_fdb f;
	struct racer r[2] = { { &f, 1 }, { &f, 2 } };
	pthread_t t[2];
	unsigned held[4] = { 0 };
	struct uvn_fdb_info info;

	(void)state;
	assert_int_equal(uvn_fdb_init(&f, 1024, 300 * SEC), 0);
	uvn_fdb_set_limit(&f, 0, 8);
	uvn_fdb_set_limit(&f, 1, 50);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, race, &r[i]), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	for (unsigned i = 0; i <= f.mask; i++)
		if (uvn_fdb_get(&f, i, 1000 * SEC + RACE_ROUNDS, &info))
			held[info.port]++;
	assert_true(uvn_fdb_port_count(&f, 0) <= 8 + 2);
	assert_true(uvn_fdb_port_count(&f, 1) <= 50 + 2);
	for (uint16_t p = 0; p < 4; p++) {
		assert_true(uvn_fdb_port_count(&f, p) <= 512);
		assert_true(uvn_fdb_port_count(&f, p) + 2 >= held[p] &&
			    held[p] + 2 >= uvn_fdb_port_count(&f, p));
	}
	assert_true(f.port[0].limited > 0 && f.port[1].limited > 0);
	uvn_fdb_fini(&f);
}

static void test_cpulist(void **state)
{
	int cpus[8];

	(void)state;
	assert_int_equal(uvn_parse_cpulist("0,2-4", cpus, 8), 4);
	assert_int_equal(cpus[0], 0);
	assert_int_equal(cpus[3], 4);
	assert_int_equal(uvn_parse_cpulist("3-1", cpus, 8), -22);
	assert_int_equal(uvn_parse_cpulist("1,", cpus, 8), 1);
	assert_int_equal(uvn_parse_cpulist("a", cpus, 8), -22);
	assert_int_equal(uvn_parse_cpulist("0-9", cpus, 8), -22);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_learn_lookup_move_age),
		cmocka_unit_test(test_full_table_stays_bounded),
		cmocka_unit_test(test_vlan_keys),
		cmocka_unit_test(test_static),
		cmocka_unit_test(test_static_not_shadowed),
		cmocka_unit_test(test_limit),
		cmocka_unit_test(test_limit_port0),
		cmocka_unit_test(test_clock_skew),
		cmocka_unit_test(test_concurrent_limit),
		cmocka_unit_test(test_cpulist),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
