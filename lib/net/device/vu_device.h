/* SPDX-License-Identifier: MIT */
/*
 * The inside of <uvnet/device.h> for uvnet's own users (uvnetd's vhost-user
 * port, the tests): the per-ring netdev queues behind the public counters
 * (`uvnetd ctl show queues` prints them all), the session, and the receive
 * filter the control queue writes.
 */
#ifndef UVN_NET_DEVICE_VU_DEVICE_H
#define UVN_NET_DEVICE_VU_DEVICE_H

#include <uvnet/device.h>

#include "net/device/netdev.h"
#include "vhost_user/backend.h"

struct uvn_rx_filter;

/* Ring @ring's netdev queue and vhost-user queue while it is ready, else NULL. */
struct uvn_netdev_q *uvn_dev_netq(struct uvn_dev *d, unsigned ring);
const struct uvn_netdev_q *uvn_dev_netq_const(const struct uvn_dev *d, unsigned ring);
struct uvn_vu_queue *uvn_dev_vu_queue(const struct uvn_dev *d, unsigned ring);

/* The session, NULL without one. */
struct uvn_vu_backend *uvn_dev_backend(const struct uvn_dev *d);

/* The filter the control queue's receive-mode and MAC commands set (NULL:
 * acknowledged only). The owner applies it to what it sends; set it while
 * no session runs. */
void uvn_dev_set_rx_filter(struct uvn_dev *d, struct uvn_rx_filter *f);

#endif
