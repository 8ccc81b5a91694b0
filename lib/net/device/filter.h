/* SPDX-License-Identifier: MIT */
/*
 * A virtio-net device's receive filter (VIRTIO_NET_F_CTRL_RX): the modes
 * and MAC tables a driver sets through its control queue, and the test of
 * a frame's destination against them. Written by the control path, read
 * by every data-path thread sending to the device: a sequence counter
 * (odd while a change is being written) lets readers see one whole state
 * without a lock; a reader racing a change tries again.
 */
#ifndef UVN_NET_DEVICE_FILTER_H
#define UVN_NET_DEVICE_FILTER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* Addresses kept per table; a driver that sends more gets that class of
 * frames unfiltered, as if it had asked for all of them. */
#define UVN_RX_FILTER_MACS 64

struct uvn_rx_filter {
	_Atomic uint32_t seq;
	_Atomic uint32_t flags;            /* UVN_RXF_* */
	_Atomic uint64_t mac;              /* the device's own (MAC_ADDR_SET), with UVN_RXF_MAC */
	_Atomic uint32_t nuni, nmulti;
	_Atomic uint64_t uni[UVN_RX_FILTER_MACS], multi[UVN_RX_FILTER_MACS];
};

/* VIRTIO_NET_CTRL_RX_* as bits (1 << cmd), then our own. */
#define UVN_RXF_PROMISC   (1u << 0)
#define UVN_RXF_ALLMULTI  (1u << 1)
#define UVN_RXF_ALLUNI    (1u << 2)
#define UVN_RXF_NOMULTI   (1u << 3)
#define UVN_RXF_NOUNI     (1u << 4)
#define UVN_RXF_NOBCAST   (1u << 5)
#define UVN_RXF_MAC       (1u << 8)   /* the device's own address is known */

/* As a device after reset: promiscuous, empty tables, no address. */
void uvn_rx_filter_reset(struct uvn_rx_filter *f);
/* VIRTIO_NET_CTRL_RX command @cmd (PROMISC..NOBCAST) switched @on. */
void uvn_rx_filter_set_mode(struct uvn_rx_filter *f, unsigned cmd, bool on);
/* VIRTIO_NET_CTRL_MAC_ADDR_SET. */
void uvn_rx_filter_set_mac(struct uvn_rx_filter *f, const uint8_t mac[6]);
/* VIRTIO_NET_CTRL_MAC_TABLE_SET: @nuni and @nmulti addresses as in the
 * command (6 bytes each); only the first UVN_RX_FILTER_MACS of each are read. */
void uvn_rx_filter_set_tables(struct uvn_rx_filter *f, const uint8_t *uni, uint32_t nuni,
			      const uint8_t *multi, uint32_t nmulti);

/* Replace the whole state at once (a filter learned from elsewhere, e.g.
 * QEMU's query-rx-filter): UVN_RXF_* @flags (UVN_RXF_MAC comes from @mac,
 * NULL: unknown) and both tables, as uvn_rx_filter_set_tables. */
void uvn_rx_filter_load(struct uvn_rx_filter *f, uint32_t flags, const uint8_t *mac,
			const uint8_t *uni, uint32_t nuni, const uint8_t *multi, uint32_t nmulti);

/* Does everything pass (promiscuous)? A hint for skipping the per-frame
 * test: a change racing it takes effect with the next burst. */
static inline bool uvn_rx_filter_open(const struct uvn_rx_filter *f)
{
	return atomic_load_explicit(&f->flags, memory_order_relaxed) & UVN_RXF_PROMISC;
}

/* May a frame to @dst be delivered? From any thread. */
bool uvn_rx_filter_pass(const struct uvn_rx_filter *f, const uint8_t *dst);

#endif
