/* SPDX-License-Identifier: MIT */
/*
 * The control virtqueue: one command at a time, class + command + data in
 * readable buffers and the ack byte in a writable one, all in the arena;
 * the answer is awaited with the configured timeout. A backend that never
 * answers leaves the command in its ring: the queue is then not used again
 * (its buffer is still the backend's), and later commands fail at once.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>

#include "net/driver/drv.h"
#include "util/log.h"

#define ACK_OFF 128u

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int drv_ctrl_cmd(struct uvn_drv *d, uint8_t class, uint8_t cmd, const void *data, size_t len)
{
	struct drv_ring *r = &d->ctrl;
	uint8_t *b = d->ctrl_buf;
	volatile uint8_t *ack = b + ACK_OFF;
	struct uvn_sg sg[3];
	unsigned nout = 0;
	int64_t deadline = now_ms() + d->cfg.timeout_ms;
	struct uvn_vq_done done;
	int err = drv_err(d), n;

	if (err < 0)
		return err;
	if (!d->has_ctrl)
		return -ENOTSUP;
	if (d->ctrl_dead)
		return -ETIMEDOUT;
	if (len > ACK_OFF - 2)
		return -EINVAL;
	b[0] = class;
	b[1] = cmd;
	if (len)
		memcpy(b + 2, data, len);
	*ack = 0xff; /* neither VIRTIO_NET_OK nor VIRTIO_NET_ERR */
	sg[nout++] = (struct uvn_sg){ drv_addr(b), 2 };
	if (len)
		sg[nout++] = (struct uvn_sg){ drv_addr(b + 2), (uint32_t)len };
	sg[nout] = (struct uvn_sg){ drv_addr(b + ACK_OFF), 1 };
	n = uvn_vq_drv_add(r->vq, sg, nout, 1, b, UVN_VQ_ADD_NO_INDIRECT);
	if (n)
		return n == -UVN_VQ_E_NOSPC ? -EBUSY : drv_ring_error(d, r, n);
	/* Always kick: this is the slow path, and a device that took an earlier
	 * command without asking for kicks again (avail_event left behind)
	 * would otherwise never see this one. */
	uvn_vq_drv_kick_prepare(r->vq);
	if (r->kick_fd >= 0) {
		uint64_t one = 1;

		if (write(r->kick_fd, &one, sizeof(one)) < 0)
			return -errno;
	}
	for (;;) {
		int left = (int)(deadline - now_ms());
		struct pollfd p = { .fd = r->call_fd, .events = POLLIN };

		n = uvn_vq_drv_get_used(r->vq, &done, 1);
		if (n < 0)
			return drv_ring_error(d, r, n);
		if (n == 1)
			break;
		err = uvn_drv_check(d);
		if (err)
			return err;
		if (left <= 0) {
			d->ctrl_dead = true;
			UVN_ERR("uvnet driver %s: no answer on the control queue within %u ms "
				"(class %u command %u)", d->path, d->cfg.timeout_ms, class, cmd);
			return -ETIMEDOUT;
		}
		/* The call fd wakes us if the backend signals; poll often if not. */
		if (poll(&p, p.fd >= 0 ? 1 : 0, left < 1 ? left : 1) > 0) {
			uint64_t v;

			if (read(r->call_fd, &v, sizeof(v)) < 0)
				(void)0;
		}
	}
	if (done.len < 1 || *ack == 0xff) {
		UVN_WARN("uvnet driver %s: control command %u/%u came back without an ack", d->path,
			 class, cmd);
		return -EPROTO;
	}
	return *ack == VIRTIO_NET_OK ? 0 : -EIO;
}

/* The application's commands: one at a time with the reconnect thread's
 * replay, and none while the link is down (its replay sends the state). */
static int app_cmd(struct uvn_drv *d, uint8_t class, uint8_t cmd, const void *data, size_t len)
{
	int ret;

	pthread_mutex_lock(&d->ctrl_lock);
	ret = drv_err(d) < 0 ? drv_err(d) : !uvn_drv_link_up(d) ? -EAGAIN
		: drv_ctrl_cmd(d, class, cmd, data, len);
	if (!ret) {
		if (class == VIRTIO_NET_CTRL_MQ)
			d->pairs_on = le16toh(*(const uint16_t *)data);
		else if (class == VIRTIO_NET_CTRL_RX)
			d->promisc = *(const uint8_t *)data;
		else if (class == VIRTIO_NET_CTRL_MAC) {
			memcpy(d->cfg.mac, data, 6);
			d->cfg.mac_set = true;
		}
	}
	pthread_mutex_unlock(&d->ctrl_lock);
	return ret;
}

int uvn_drv_set_queue_pairs(struct uvn_drv *d, unsigned pairs)
{
	uint16_t n = htole16((uint16_t)pairs);

	if (!(d->features & (1ull << VIRTIO_NET_F_MQ)))
		return pairs == 1 ? 0 : -ENOTSUP;
	if (pairs == 0 || pairs > d->pairs)
		return -EINVAL;
	return app_cmd(d, VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET, &n, sizeof(n));
}

int uvn_drv_set_promisc(struct uvn_drv *d, bool on)
{
	uint8_t v = on;

	if (!(d->features & (1ull << VIRTIO_NET_F_CTRL_RX)))
		return -ENOTSUP;
	return app_cmd(d, VIRTIO_NET_CTRL_RX, VIRTIO_NET_CTRL_RX_PROMISC, &v, 1);
}

int uvn_drv_set_mac(struct uvn_drv *d, const uint8_t mac[6])
{
	if (!(d->features & (1ull << VIRTIO_NET_F_CTRL_MAC_ADDR)))
		return -ENOTSUP;
	return app_cmd(d, VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_ADDR_SET, mac, 6);
}
