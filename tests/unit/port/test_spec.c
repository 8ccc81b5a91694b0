/* SPDX-License-Identifier: MIT */
/* A port spec's OPTS (uvn_port_spec_conf): what each sets, what is refused. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "port/port.h"

static void test_defaults(void **state)
{
	struct uvn_port_conf c;

	(void)state;
	assert_int_equal(uvn_port_spec_conf("vhost-user:/tmp/a.sock", &c), 0);
	assert_int_equal(c.mtu, 0);
	assert_int_equal(c.mac_limit, 0);
	assert_int_equal(c.max_pps, 0);
	assert_int_equal(c.vlan.tag, 0);
	assert_false(c.vlan.trunk);
	/* Not a trunk: every VLAN passes. */
	assert_true(uvn_port_vlan_allowed(&c.vlan, 1));
	assert_true(uvn_port_vlan_allowed(&c.vlan, UVN_VLAN_MAX));
}

static void test_values(void **state)
{
	struct uvn_port_conf c;

	(void)state;
	assert_int_equal(uvn_port_spec_conf("tap:t0,mtu=9000,vlan=10,mac-limit=4,max-kpps=7", &c), 0);
	assert_int_equal(c.mtu, 9000);
	assert_int_equal(c.vlan.tag, 10);
	assert_int_equal(c.mac_limit, 4);
	assert_int_equal(c.max_pps, 7000);
	assert_int_equal(uvn_port_spec_conf("vhost-user:/s,queues=2,mtu=68", &c), 0);
	assert_int_equal(c.mtu, 68);
	assert_int_equal(uvn_port_spec_conf("vhost-user:/s,mtu=9702", &c), 0);
	assert_int_equal(c.mtu, 9702);
}

static void test_trunks(void **state)
{
	struct uvn_port_conf c;

	(void)state;
	assert_int_equal(uvn_port_spec_conf("tap:t0,trunks=10:20:100-102:4094", &c), 0);
	assert_true(c.vlan.trunk);
	assert_int_equal(c.vlan.tag, 0);
	for (unsigned v = 0; v <= UVN_VLAN_MAX; v++) {
		bool in = v == 10 || v == 20 || (v >= 100 && v <= 102) || v == 4094;

		assert_int_equal(uvn_port_vlan_allowed(&c.vlan, v), in);
	}
	assert_int_equal(uvn_port_spec_conf("tap:t0,trunks=5-5", &c), 0);
	assert_true(uvn_port_vlan_allowed(&c.vlan, 5));
	assert_false(uvn_port_vlan_allowed(&c.vlan, 6));
}

static void test_refused(void **state)
{
	static const char *const bad[] = {
		"tap:t0,mtu=67", "tap:t0,mtu=9703", "tap:t0,mtu=", "tap:t0,mtu=1500x", "tap:t0,mtu=-1500",
		"tap:t0,vlan=0", "tap:t0,vlan=4095", "tap:t0,vlan=+5", "tap:t0,vlan=10,vlan=20",
		"tap:t0,trunks=", "tap:t0,trunks=0", "tap:t0,trunks=4095", "tap:t0,trunks=20-10",
		"tap:t0,trunks=10-", "tap:t0,trunks=a", "tap:t0,vlan=10,trunks=20",
		"tap:t0,trunks=20,vlan=10", "tap:t0,trunks=10,trunks=20", "tap:t0,mac-limit=0",
		"tap:t0,mac-limit=65537", "vhost-user:/s,queues=0", "vhost-user:/s,queues=17",
		"vhost-user:/s,queues= 2", "tap:t0,max-kpps=100001", "vhost-user:/s,nic=a",
		"vhost-user:/s,qmp=", "vhost-user:/s,nic=", "tap:t0,qmp=/q",
	};
	struct uvn_port_conf c;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (uvn_port_spec_conf(bad[i], &c) != -EINVAL)
			fail_msg("accepted '%s'", bad[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_trunks),
		cmocka_unit_test(test_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
