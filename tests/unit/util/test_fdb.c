/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "switch/fdb.h"
#include "util/sys.h"

#define SEC 1000000000ull

static void test_learn_lookup_move_age(void **state)
{
	struct uvn_fdb f;
	uint64_t now = 1000 * SEC;

	(void)state;
	assert_int_equal(uvn_fdb_init(&f, 64, 300 * SEC), 0);
	assert_int_equal(uvn_fdb_lookup(&f, 0x020000000001ull, now), UVN_FDB_NO_PORT);
	uvn_fdb_learn(&f, 0x020000000001ull, 3, now);
	assert_int_equal(uvn_fdb_lookup(&f, 0x020000000001ull, now), 3);
	uvn_fdb_learn(&f, 0x020000000001ull, 5, now + SEC); /* the address moved */
	assert_int_equal(uvn_fdb_lookup(&f, 0x020000000001ull, now + SEC), 5);
	assert_int_equal(f.moved, 1);
	assert_int_equal(uvn_fdb_lookup(&f, 0x020000000001ull, now + 302 * SEC), UVN_FDB_NO_PORT);
	uvn_fdb_learn(&f, 0x020000000002ull, 1, now);
	uvn_fdb_flush_port(&f, 1);
	assert_int_equal(uvn_fdb_lookup(&f, 0x020000000002ull, now), UVN_FDB_NO_PORT);
	uvn_fdb_fini(&f);
}

static void test_full_table_stays_bounded(void **state)
{
	struct uvn_fdb f;
	uint64_t now = 1000 * SEC;

	(void)state;
	assert_int_equal(uvn_fdb_init(&f, 16, 300 * SEC), 0);
	for (uint64_t m = 1; m <= 100; m++)
		uvn_fdb_learn(&f, m, (uint16_t)(m % 7), now);
	assert_true(f.full > 0);
	/* everything that was stored is found on the right port */
	unsigned found = 0;
	for (uint64_t m = 1; m <= 100; m++) {
		uint16_t p = uvn_fdb_lookup(&f, m, now);

		if (p != UVN_FDB_NO_PORT) {
			assert_int_equal(p, m % 7);
			found++;
		}
	}
	assert_int_equal(found, 16);
	/* once aged, slots are reused */
	uvn_fdb_learn(&f, 1000, 2, now + 400 * SEC);
	assert_int_equal(uvn_fdb_lookup(&f, 1000, now + 400 * SEC), 2);
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
		cmocka_unit_test(test_cpulist),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
