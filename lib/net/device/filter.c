/* SPDX-License-Identifier: MIT */
/*
 * The receive filter's rules, as the virtio spec gives them for CTRL_RX
 * and CTRL_MAC (and as QEMU's device applies them): promiscuous passes
 * everything; broadcast passes unless NOBCAST; multicast passes with
 * ALLMULTI, never with NOMULTI, else when in the multicast table; unicast
 * passes with ALLUNI, never with NOUNI, else when it is the device's own
 * address or in the unicast table. Our device has no config space: its
 * own address is known only once the driver sets it (MAC_ADDR_SET), and
 * until then unicast frames pass, so a driver that never said its address
 * still gets its own frames.
 */
#include <string.h>

#include "net/device/filter.h"

#define RELAXED memory_order_relaxed
#define OVERFLOWED (UVN_RX_FILTER_MACS + 1)  /* a table count: the table was too long */

static uint64_t key(const uint8_t *m)
{
	return (uint64_t)m[0] << 40 | (uint64_t)m[1] << 32 | (uint64_t)m[2] << 24 |
	       (uint64_t)m[3] << 16 | (uint64_t)m[4] << 8 | m[5];
}

/* One writer (the control path) brackets each change. */
static void write_begin(struct uvn_rx_filter *f)
{
	atomic_store_explicit(&f->seq, atomic_load_explicit(&f->seq, RELAXED) + 1, RELAXED);
	atomic_thread_fence(memory_order_release);
}

static void write_end(struct uvn_rx_filter *f)
{
	atomic_store_explicit(&f->seq, atomic_load_explicit(&f->seq, RELAXED) + 1,
			      memory_order_release);
}

void uvn_rx_filter_reset(struct uvn_rx_filter *f)
{
	write_begin(f);
	atomic_store_explicit(&f->flags, UVN_RXF_PROMISC, RELAXED);
	atomic_store_explicit(&f->nuni, 0, RELAXED);
	atomic_store_explicit(&f->nmulti, 0, RELAXED);
	write_end(f);
}

void uvn_rx_filter_set_mode(struct uvn_rx_filter *f, unsigned cmd, bool on)
{
	uint32_t fl = atomic_load_explicit(&f->flags, RELAXED), bit = 1u << cmd;

	write_begin(f);
	atomic_store_explicit(&f->flags, on ? fl | bit : fl & ~bit, RELAXED);
	write_end(f);
}

void uvn_rx_filter_set_mac(struct uvn_rx_filter *f, const uint8_t mac[6])
{
	write_begin(f);
	atomic_store_explicit(&f->mac, key(mac), RELAXED);
	atomic_store_explicit(&f->flags, atomic_load_explicit(&f->flags, RELAXED) | UVN_RXF_MAC,
			      RELAXED);
	write_end(f);
}

static void set_table(_Atomic uint64_t *t, _Atomic uint32_t *n, const uint8_t *macs, uint32_t count)
{
	if (count > UVN_RX_FILTER_MACS) {
		atomic_store_explicit(n, OVERFLOWED, RELAXED);
		return;
	}
	for (uint32_t i = 0; i < count; i++)
		atomic_store_explicit(&t[i], key(macs + 6 * i), RELAXED);
	atomic_store_explicit(n, count, RELAXED);
}

void uvn_rx_filter_set_tables(struct uvn_rx_filter *f, const uint8_t *uni, uint32_t nuni,
			      const uint8_t *multi, uint32_t nmulti)
{
	write_begin(f);
	set_table(f->uni, &f->nuni, uni, nuni);
	set_table(f->multi, &f->nmulti, multi, nmulti);
	write_end(f);
}

void uvn_rx_filter_load(struct uvn_rx_filter *f, uint32_t flags, const uint8_t *mac,
			const uint8_t *uni, uint32_t nuni, const uint8_t *multi, uint32_t nmulti)
{
	flags &= ~UVN_RXF_MAC;
	write_begin(f);
	if (mac) {
		atomic_store_explicit(&f->mac, key(mac), RELAXED);
		flags |= UVN_RXF_MAC;
	}
	atomic_store_explicit(&f->flags, flags, RELAXED);
	set_table(f->uni, &f->nuni, uni, nuni);
	set_table(f->multi, &f->nmulti, multi, nmulti);
	write_end(f);
}

static bool in_table(const _Atomic uint64_t *t, uint32_t n, uint64_t k)
{
	if (n > UVN_RX_FILTER_MACS)
		return true; /* overflowed: the whole class passes */
	for (uint32_t i = 0; i < n; i++)
		if (atomic_load_explicit(&t[i], RELAXED) == k)
			return true;
	return false;
}

static bool decide(const struct uvn_rx_filter *f, uint32_t fl, const uint8_t *dst)
{
	uint64_t k;

	if (fl & UVN_RXF_PROMISC)
		return true;
	k = key(dst);
	if (k == 0xffffffffffffull)
		return !(fl & UVN_RXF_NOBCAST);
	if (k >> 40 & 1) { /* multicast, from the one read of dst: a sender may rewrite it */
		if (fl & (UVN_RXF_ALLMULTI | UVN_RXF_NOMULTI))
			return !(fl & UVN_RXF_NOMULTI);
		return in_table(f->multi, atomic_load_explicit(&f->nmulti, RELAXED), k);
	}
	if (fl & (UVN_RXF_ALLUNI | UVN_RXF_NOUNI))
		return !(fl & UVN_RXF_NOUNI);
	if (!(fl & UVN_RXF_MAC) || atomic_load_explicit(&f->mac, RELAXED) == k)
		return true;
	return in_table(f->uni, atomic_load_explicit(&f->nuni, RELAXED), k);
}

bool uvn_rx_filter_pass(const struct uvn_rx_filter *f, const uint8_t *dst)
{
	for (;;) {
		uint32_t s = atomic_load_explicit(&f->seq, memory_order_acquire);
		uint32_t fl = atomic_load_explicit(&f->flags, RELAXED);
		bool pass;

		if (fl & UVN_RXF_PROMISC && !(s & 1))
			return true; /* the common case: one flag, no table */
		pass = decide(f, fl, dst);
		atomic_thread_fence(memory_order_acquire);
		if (!(s & 1) && atomic_load_explicit(&f->seq, RELAXED) == s)
			return pass;
	}
}
