/* SPDX-License-Identifier: MIT */
/* The receive filter's rules (filter.h): modes, own address, tables, overflow. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include <linux/virtio_net.h>

#include "net/device/filter.h"

static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
static const uint8_t own[6] = { 0x02, 0, 0, 0, 0, 0x01 };
static const uint8_t listed[6] = { 0x02, 0, 0, 0, 0, 0x02 };
static const uint8_t other[6] = { 0x02, 0, 0, 0, 0, 0x03 };
static const uint8_t mlisted[6] = { 0x01, 0x00, 0x5e, 0, 0, 0x01 };
static const uint8_t mother[6] = { 0x33, 0x33, 0, 0, 0, 0x01 };

static struct uvn_rx_filter f;

static void reset(void)
{
	memset(&f, 0, sizeof(f));
	uvn_rx_filter_reset(&f);
}

/* promisc off, own address and one entry in each table */
static void configured(void)
{
	reset();
	uvn_rx_filter_set_mode(&f, VIRTIO_NET_CTRL_RX_PROMISC, false);
	uvn_rx_filter_set_mac(&f, own);
	uvn_rx_filter_set_tables(&f, listed, 1, mlisted, 1);
}

static void test_reset_is_promiscuous(void **state)
{
	(void)state;
	reset();
	assert_true(uvn_rx_filter_pass(&f, other));
	assert_true(uvn_rx_filter_pass(&f, mother));
	assert_true(uvn_rx_filter_pass(&f, bcast));
	/* promisc off, nothing said yet: unicast passes (the address is not
	 * known), multicast not in the empty table does not */
	uvn_rx_filter_set_mode(&f, VIRTIO_NET_CTRL_RX_PROMISC, false);
	assert_true(uvn_rx_filter_pass(&f, other));
	assert_false(uvn_rx_filter_pass(&f, mother));
	assert_true(uvn_rx_filter_pass(&f, bcast));
}

static void test_tables(void **state)
{
	(void)state;
	configured();
	assert_true(uvn_rx_filter_pass(&f, own));
	assert_true(uvn_rx_filter_pass(&f, listed));
	assert_false(uvn_rx_filter_pass(&f, other));
	assert_true(uvn_rx_filter_pass(&f, mlisted));
	assert_false(uvn_rx_filter_pass(&f, mother));
	assert_true(uvn_rx_filter_pass(&f, bcast));
	/* a new table replaces the old */
	uvn_rx_filter_set_tables(&f, other, 1, NULL, 0);
	assert_false(uvn_rx_filter_pass(&f, listed));
	assert_true(uvn_rx_filter_pass(&f, other));
	assert_false(uvn_rx_filter_pass(&f, mlisted));
	/* promisc wins over everything */
	uvn_rx_filter_set_mode(&f, VIRTIO_NET_CTRL_RX_PROMISC, true);
	assert_true(uvn_rx_filter_pass(&f, mother));
	/* reset forgets */
	uvn_rx_filter_set_mode(&f, VIRTIO_NET_CTRL_RX_PROMISC, false);
	uvn_rx_filter_reset(&f);
	assert_true(uvn_rx_filter_pass(&f, mother));
}

static void test_modes(void **state)
{
	(void)state;
	configured();
	uvn_rx_filter_set_mode(&f, VIRTIO_NET_CTRL_RX_ALLMULTI, true);
	assert_true(uvn_rx_filter_pass(&f, mother));
	assert_false(uvn_rx_filter_pass(&f, other));
	uvn_rx_filter_set_mode(&f, VIRTIO_NET_CTRL_RX_NOMULTI, true); /* wins over allmulti */
	assert_false(uvn_rx_filter_pass(&f, mother));
	assert_false(uvn_rx_filter_pass(&f, mlisted));
	assert_true(uvn_rx_filter_pass(&f, bcast)); /* broadcast is not multicast here */
	uvn_rx_filter_set_mode(&f, VIRTIO_NET_CTRL_RX_ALLUNI, true);
	assert_true(uvn_rx_filter_pass(&f, other));
	uvn_rx_filter_set_mode(&f, VIRTIO_NET_CTRL_RX_NOUNI, true); /* wins over alluni */
	assert_false(uvn_rx_filter_pass(&f, own));
	assert_false(uvn_rx_filter_pass(&f, listed));
	uvn_rx_filter_set_mode(&f, VIRTIO_NET_CTRL_RX_NOBCAST, true);
	assert_false(uvn_rx_filter_pass(&f, bcast));
	uvn_rx_filter_set_mode(&f, VIRTIO_NET_CTRL_RX_NOBCAST, false);
	assert_true(uvn_rx_filter_pass(&f, bcast));
}

static void test_overflow_passes_the_class(void **state)
{
	uint8_t many[(UVN_RX_FILTER_MACS + 1) * 6];

	(void)state;
	configured();
	memset(many, 0x02, sizeof(many));
	uvn_rx_filter_set_tables(&f, many, UVN_RX_FILTER_MACS + 1, mlisted, 1);
	assert_true(uvn_rx_filter_pass(&f, other));
	assert_false(uvn_rx_filter_pass(&f, mother));
	for (unsigned i = 0; i < sizeof(many); i++)
		many[i] = i % 6 ? 0 : 0x01;
	uvn_rx_filter_set_tables(&f, listed, 1, many, UINT32_MAX);
	assert_false(uvn_rx_filter_pass(&f, other));
	assert_true(uvn_rx_filter_pass(&f, mother));
	/* exactly the most we keep: kept, and filtered by */
	uvn_rx_filter_set_tables(&f, many, UVN_RX_FILTER_MACS, NULL, 0);
	assert_false(uvn_rx_filter_pass(&f, other));
	assert_false(uvn_rx_filter_pass(&f, mother));
}

/* A whole state at once: what was there before does not linger. */
static void test_load(void **state)
{
	(void)state;
	configured();
	uvn_rx_filter_load(&f, UVN_RXF_ALLMULTI, NULL, other, 1, NULL, 0);
	assert_true(uvn_rx_filter_pass(&f, other));
	assert_true(uvn_rx_filter_pass(&f, mother));
	assert_true(uvn_rx_filter_pass(&f, listed)); /* own address unknown again */
	uvn_rx_filter_load(&f, UVN_RXF_NOBCAST | UVN_RXF_MAC, own, listed, 1, mlisted, 1);
	assert_true(uvn_rx_filter_pass(&f, own));
	assert_true(uvn_rx_filter_pass(&f, listed));
	assert_false(uvn_rx_filter_pass(&f, other));
	assert_false(uvn_rx_filter_pass(&f, bcast));
	assert_false(uvn_rx_filter_pass(&f, mother));
	uvn_rx_filter_load(&f, UVN_RXF_PROMISC, NULL, NULL, 0, NULL, 0);
	assert_true(uvn_rx_filter_pass(&f, bcast));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reset_is_promiscuous),
		cmocka_unit_test(test_tables),
		cmocka_unit_test(test_modes),
		cmocka_unit_test(test_overflow_passes_the_class),
		cmocka_unit_test(test_load),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
