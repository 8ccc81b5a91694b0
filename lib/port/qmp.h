/* SPDX-License-Identifier: MIT */
/*
 * A guest's receive filter learned from QEMU. With vhost-user, QEMU keeps
 * the virtio-net control queue: the modes and MAC tables a guest sets
 * never reach the backend. QEMU tells them on its QMP monitor instead (a
 * NIC_RX_FILTER_CHANGED event, then query-rx-filter answers with the
 * state), which is how libvirt programs macvtap filters. This client
 * follows one NIC's filter into a struct uvn_rx_filter: connected on the
 * control loop, reconnecting every second while QEMU is away, the filter
 * open (promiscuous) whenever its state is unknown.
 */
#ifndef UVN_PORT_QMP_H
#define UVN_PORT_QMP_H

#include <stdint.h>

struct uvn_loop;
struct uvn_rx_filter;
struct uvn_qmp;

struct uvn_qmp_stats {
	uint64_t updates;   /* filter states applied */
	uint64_t errors;    /* malformed answers, error replies, broken connections */
	uint64_t connects;  /* sessions started */
};

/*
 * Follow NIC @nic (its QEMU id, the device's id=; NULL: the only NIC QEMU
 * reports) through the QMP socket at @path, writing @f; @who names the
 * port in logs. Handlers are light: they touch only @f and their own state.
 * @return 0 or -errno
 */
int uvn_qmp_create(struct uvn_loop *loop, const char *path, const char *nic,
		   struct uvn_rx_filter *f, const char *who, struct uvn_qmp **out);
void uvn_qmp_destroy(struct uvn_qmp *q);
/* From any thread. */
void uvn_qmp_stats(const struct uvn_qmp *q, struct uvn_qmp_stats *st);

#endif
