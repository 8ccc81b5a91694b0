/* SPDX-License-Identifier: MIT */
/*
 * Negotiation and session-wide requests: features, protocol features,
 * owner, queue count, status, the MTU, the RARP after a migration, and the
 * config space we decline.
 */
#include <errno.h>
#include <string.h>

#include "internal.h"
#include "util/log.h"

/* Bits that belong to vhost-user, not to the virtio device. */
#define VHOST_ONLY_FEATURES ((1ull << VHOST_USER_F_PROTOCOL_FEATURES) | (1ull << VHOST_F_LOG_ALL))

static bool any_started(const struct uvn_vu_backend *b)
{
	for (unsigned i = 0; i < b->queue_num; i++)
		if (b->q[i].started)
			return true;
	return false;
}

int vu_h_GET_FEATURES(struct uvn_vu_backend *b, struct uvn_vu_msg *m, struct uvn_vu_msg *reply)
{
	(void)m;
	/* QEMU uses this as a sync point at any time: no state change. */
	reply->hdr.size = sizeof(uint64_t);
	reply->p.u64 = b->offered;
	return 0;
}

int vu_h_SET_FEATURES(struct uvn_vu_backend *b, struct uvn_vu_msg *m, struct uvn_vu_msg *reply)
{
	uint64_t f = m->p.u64, virtio = f & ~VHOST_ONLY_FEATURES;
	bool changed = !b->features_set || virtio != (b->features & ~VHOST_ONLY_FEATURES);
	int ret;

	(void)reply;
	if (f & ~b->offered)
		return vu_conn_error(b, &b->st.err_feature,
				     "SET_FEATURES 0x%llx has bits never offered (0x%llx)",
				     (unsigned long long)f, (unsigned long long)(f & ~b->offered));
	/* Only LOG_ALL may change while rings run (migration starts/stops). */
	if (changed && any_started(b))
		return vu_conn_error(b, &b->st.err_order,
				     "SET_FEATURES changes virtio features while rings are started");
	vu_pause_all(b);
	if (changed) {
		ret = b->ops->set_features(b->ctx, virtio);
		if (ret < 0) {
			vu_resume_all(b);
			return vu_conn_error(b, &b->st.err_feature, "device refused features 0x%llx",
					     (unsigned long long)virtio);
		}
	}
	b->features = f;
	b->features_set = true;
	/* Without PROTOCOL_FEATURES there is no SET_VRING_ENABLE: rings are
	 * enabled as soon as they start. */
	if (!uvn_has_feature(f, VHOST_USER_F_PROTOCOL_FEATURES))
		for (unsigned i = 0; i < b->queue_num; i++)
			b->q[i].enabled = true;
	vu_resume_all(b);
	vu_log(b, UVN_LOG_DEBUG, "features 0x%llx", (unsigned long long)f);
	return 0;
}

int vu_h_SET_OWNER(struct uvn_vu_backend *b, struct uvn_vu_msg *m, struct uvn_vu_msg *reply)
{
	(void)m;
	(void)reply;
	b->owner = true;
	return 0;
}

int vu_h_RESET_OWNER(struct uvn_vu_backend *b, struct uvn_vu_msg *m, struct uvn_vu_msg *reply)
{
	(void)m;
	(void)reply;
	/* Deprecated: vhost-user.rst recommends disabling the rings and
	 * nothing more (discarding the session's state led to bugs). */
	for (unsigned i = 0; i < b->queue_num; i++)
		vu_queue_stop(b, &b->q[i]);
	return 0;
}

int vu_h_GET_PROTOCOL_FEATURES(struct uvn_vu_backend *b, struct uvn_vu_msg *m,
			       struct uvn_vu_msg *reply)
{
	(void)m;
	reply->hdr.size = sizeof(uint64_t);
	reply->p.u64 = b->proto_offered;
	return 0;
}

int vu_h_SET_PROTOCOL_FEATURES(struct uvn_vu_backend *b, struct uvn_vu_msg *m,
			       struct uvn_vu_msg *reply)
{
	(void)reply;
	if (m->p.u64 & ~b->proto_offered)
		return vu_conn_error(b, &b->st.err_feature,
				     "SET_PROTOCOL_FEATURES 0x%llx has bits never offered",
				     (unsigned long long)m->p.u64);
	b->proto = m->p.u64;
	return 0;
}

int vu_h_GET_QUEUE_NUM(struct uvn_vu_backend *b, struct uvn_vu_msg *m, struct uvn_vu_msg *reply)
{
	(void)m;
	/* For net devices QEMU and DPDK count queue PAIRS here (QEMU compares
	 * it with -netdev vhost-user,queues=N). */
	reply->hdr.size = sizeof(uint64_t);
	reply->p.u64 = b->queue_num >= 2 ? b->queue_num / 2 : 1;
	return 0;
}

int vu_h_SET_STATUS(struct uvn_vu_backend *b, struct uvn_vu_msg *m, struct uvn_vu_msg *reply)
{
	(void)reply;
	if (m->p.u64 > UINT8_MAX)
		return vu_req_error(b, &b->st.err_size, "SET_STATUS 0x%llx is not a status byte",
				    (unsigned long long)m->p.u64);
	b->status = (uint8_t)m->p.u64;
	if (b->ops->set_status)
		b->ops->set_status(b->ctx, b->status);
	return 0;
}

int vu_h_GET_STATUS(struct uvn_vu_backend *b, struct uvn_vu_msg *m, struct uvn_vu_msg *reply)
{
	(void)m;
	reply->hdr.size = sizeof(uint64_t);
	reply->p.u64 = b->status;
	return 0;
}

/*
 * We never offer VHOST_USER_PROTOCOL_F_CONFIG: QEMU masks it for
 * virtio-net and serves the config space itself (MAC, status, MTU). A
 * frontend that asks anyway gets what vhost-user.rst defines as failure
 * (GET_CONFIG: a reply with an empty payload; SET_CONFIG: a NACK when it
 * wants an ack), and the connection lives.
 */
int vu_h_GET_CONFIG(struct uvn_vu_backend *b, struct uvn_vu_msg *m, struct uvn_vu_msg *reply)
{
	(void)m;
	reply->hdr.size = 0;
	return vu_req_error(b, &b->st.err_feature, "GET_CONFIG declined: CONFIG was not offered");
}

int vu_h_SET_CONFIG(struct uvn_vu_backend *b, struct uvn_vu_msg *m, struct uvn_vu_msg *reply)
{
	(void)m;
	(void)reply;
	return vu_req_error(b, &b->st.err_feature, "SET_CONFIG declined: CONFIG was not offered");
}

/*
 * QEMU's vhost-user net sends this after a migration, on the destination,
 * for a guest without GUEST_ANNOUNCE (and repeats it with each round of
 * its announce timer): the device announces the guest's MAC in its place.
 * The payload is a u64 whose first 6 bytes, in memory order, are the MAC.
 */
int vu_h_SEND_RARP(struct uvn_vu_backend *b, struct uvn_vu_msg *m, struct uvn_vu_msg *reply)
{
	uint8_t mac[6];

	(void)reply;
	if (!uvn_has_feature(b->proto, VHOST_USER_PROTOCOL_F_RARP) || !b->ops->send_rarp)
		return vu_req_error(b, &b->st.err_feature, "SEND_RARP without protocol feature RARP");
	memcpy(mac, &m->p.u64, sizeof(mac));
	/* A multicast source is no station's address: nothing to announce. */
	if (mac[0] & 1)
		return vu_req_error(b, &b->st.err_size, "SEND_RARP with a multicast MAC");
	vu_log(b, UVN_LOG_INFO, "SEND_RARP %02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2],
	       mac[3], mac[4], mac[5]);
	b->ops->send_rarp(b->ctx, mac);
	return 0;
}

/* The smallest MTU VIRTIO_NET_F_MTU allows (virtio spec, device-types/net). */
#define MIN_MTU 68

/*
 * QEMU sends this when its virtio-net device has host_mtu=N and the guest
 * took VIRTIO_NET_F_MTU, each time the device starts, before SET_FEATURES
 * (so the offer, not the features set, is what says F_MTU). With
 * REPLY_ACK it waits for our answer and, on a refusal, does not start the
 * device: an MTU over the port's is a misconfiguration that should stop
 * there, not become frames dropped one by one.
 */
int vu_h_NET_SET_MTU(struct uvn_vu_backend *b, struct uvn_vu_msg *m, struct uvn_vu_msg *reply)
{
	uint64_t mtu = m->p.u64;

	(void)reply;
	if (!uvn_has_feature(b->proto, VHOST_USER_PROTOCOL_F_NET_MTU))
		return vu_req_error(b, &b->st.err_feature,
				    "NET_SET_MTU without protocol feature NET_MTU");
	if (mtu < MIN_MTU || mtu > b->mtu_max)
		return vu_req_error(b, &b->st.err_mtu,
				    "NET_SET_MTU %llu refused: the port takes an MTU of %u to %u"
				    " (its mtu=; the frontend's host_mtu must not be larger)",
				    (unsigned long long)mtu, MIN_MTU, b->mtu_max);
	b->mtu = (uint32_t)mtu;
	vu_log(b, UVN_LOG_INFO, "guest MTU %u (the port's: %u)", b->mtu, b->mtu_max);
	return 0;
}
