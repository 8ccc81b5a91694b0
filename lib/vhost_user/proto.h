/* SPDX-License-Identifier: MIT */
/*
 * The vhost-user wire format, defined once (QEMU docs/interop/vhost-user.rst).
 * Layouts the Linux UAPI already has (struct vhost_vring_state,
 * vhost_vring_addr, VHOST_F_LOG_ALL, VHOST_VRING_F_LOG) come from
 * <linux/vhost_types.h>; the ones specific to vhost-user are here, each
 * with its size asserted. All numbers are in host byte order.
 *
 * UVN_VU_REQUESTS is the one table of the requests we speak: the codec
 * (msg.c) turns it into the size/fd/reply rules it validates against, the
 * backend (backend.c) into its dispatch table, and a frontend can use the
 * same rules to validate replies.
 */
#ifndef UVN_VHOST_USER_PROTO_H
#define UVN_VHOST_USER_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include <linux/vhost_types.h>

/* Header flags. */
#define VHOST_USER_VERSION 0x1u
#define VHOST_USER_VERSION_MASK 0x3u
#define VHOST_USER_REPLY_MASK (1u << 2)
#define VHOST_USER_NEED_REPLY_MASK (1u << 3)
#define VHOST_USER_FLAGS_KNOWN (VHOST_USER_VERSION_MASK | VHOST_USER_REPLY_MASK | \
				VHOST_USER_NEED_REPLY_MASK)

/* SET_VRING_KICK/CALL/ERR payload: ring index in bits 0-7, bit 8 "no fd, poll". */
#define VHOST_USER_VRING_IDX_MASK 0xffu
#define VHOST_USER_VRING_NOFD_MASK (1u << 8)

/* The feature bit that announces protocol features: a bit NUMBER, not a mask. */
#define VHOST_USER_F_PROTOCOL_FEATURES 30

/* Protocol feature bit numbers. */
enum {
	VHOST_USER_PROTOCOL_F_MQ = 0,
	VHOST_USER_PROTOCOL_F_LOG_SHMFD = 1,
	VHOST_USER_PROTOCOL_F_RARP = 2,
	VHOST_USER_PROTOCOL_F_REPLY_ACK = 3,
	VHOST_USER_PROTOCOL_F_NET_MTU = 4,
	VHOST_USER_PROTOCOL_F_BACKEND_REQ = 5,
	VHOST_USER_PROTOCOL_F_CROSS_ENDIAN = 6,
	VHOST_USER_PROTOCOL_F_CRYPTO_SESSION = 7,
	VHOST_USER_PROTOCOL_F_PAGEFAULT = 8,
	VHOST_USER_PROTOCOL_F_CONFIG = 9,
	VHOST_USER_PROTOCOL_F_BACKEND_SEND_FD = 10,
	VHOST_USER_PROTOCOL_F_HOST_NOTIFIER = 11,
	VHOST_USER_PROTOCOL_F_INFLIGHT_SHMFD = 12,
	VHOST_USER_PROTOCOL_F_RESET_DEVICE = 13,
	VHOST_USER_PROTOCOL_F_INBAND_NOTIFICATIONS = 14,
	VHOST_USER_PROTOCOL_F_CONFIGURE_MEM_SLOTS = 15,
	VHOST_USER_PROTOCOL_F_STATUS = 16,
};

/* Front-end request ids. */
enum {
	VHOST_USER_NONE = 0,
	VHOST_USER_GET_FEATURES = 1,
	VHOST_USER_SET_FEATURES = 2,
	VHOST_USER_SET_OWNER = 3,
	VHOST_USER_RESET_OWNER = 4,
	VHOST_USER_SET_MEM_TABLE = 5,
	VHOST_USER_SET_LOG_BASE = 6,
	VHOST_USER_SET_LOG_FD = 7,
	VHOST_USER_SET_VRING_NUM = 8,
	VHOST_USER_SET_VRING_ADDR = 9,
	VHOST_USER_SET_VRING_BASE = 10,
	VHOST_USER_GET_VRING_BASE = 11,
	VHOST_USER_SET_VRING_KICK = 12,
	VHOST_USER_SET_VRING_CALL = 13,
	VHOST_USER_SET_VRING_ERR = 14,
	VHOST_USER_GET_PROTOCOL_FEATURES = 15,
	VHOST_USER_SET_PROTOCOL_FEATURES = 16,
	VHOST_USER_GET_QUEUE_NUM = 17,
	VHOST_USER_SET_VRING_ENABLE = 18,
	VHOST_USER_SEND_RARP = 19,
	VHOST_USER_NET_SET_MTU = 20,
	VHOST_USER_SET_BACKEND_REQ_FD = 21,
	VHOST_USER_IOTLB_MSG = 22,
	VHOST_USER_SET_VRING_ENDIAN = 23,
	VHOST_USER_GET_CONFIG = 24,
	VHOST_USER_SET_CONFIG = 25,
	VHOST_USER_GET_INFLIGHT_FD = 31,
	VHOST_USER_SET_INFLIGHT_FD = 32,
	VHOST_USER_RESET_DEVICE = 34,
	VHOST_USER_VRING_KICK = 35,
	VHOST_USER_GET_MAX_MEM_SLOTS = 36,
	VHOST_USER_ADD_MEM_REG = 37,
	VHOST_USER_REM_MEM_REG = 38,
	VHOST_USER_SET_STATUS = 39,
	VHOST_USER_GET_STATUS = 40,
	VHOST_USER_REQUEST_MAX = 41, /* ids below this fit the tables */
};

/* Regions SET_MEM_TABLE carries; more come with ADD_MEM_REG. */
#define VHOST_MEMORY_BASELINE_NREGIONS 8
/* Memory slots we announce with GET_MAX_MEM_SLOTS. */
#define VHOST_USER_MAX_RAM_SLOTS 32
/* The largest device config space GET/SET_CONFIG carry. */
#define VHOST_USER_MAX_CONFIG_SIZE 256
/* Dirty log granularity. */
#define VHOST_LOG_PAGE 0x1000u

struct uvn_vu_hdr {
	uint32_t request;
	uint32_t flags;
	uint32_t size; /* payload bytes that follow */
};

struct uvn_vu_region {
	uint64_t guest_phys_addr;
	uint64_t memory_size;
	uint64_t userspace_addr;
	uint64_t mmap_offset;
};

struct uvn_vu_memory {
	uint32_t nregions;
	uint32_t padding;
	struct uvn_vu_region regions[VHOST_MEMORY_BASELINE_NREGIONS];
};

struct uvn_vu_mem_reg {
	uint64_t padding;
	struct uvn_vu_region region;
};

struct uvn_vu_log {
	uint64_t mmap_size;
	uint64_t mmap_offset;
};

/* GET/SET_INFLIGHT_FD: the in-flight region (vhost-user.rst "Inflight
 * description"); 24 bytes as QEMU, DPDK and libvhost-user send it. */
struct uvn_vu_inflight {
	uint64_t mmap_size;
	uint64_t mmap_offset;
	uint16_t num_queues;
	uint16_t queue_size;
	uint32_t padding;
};

struct uvn_vu_config {
	uint32_t offset;
	uint32_t size;
	uint32_t flags;
	uint8_t region[VHOST_USER_MAX_CONFIG_SIZE];
};

union uvn_vu_payload {
	uint64_t u64;
	struct vhost_vring_state state;
	struct vhost_vring_addr addr;
	struct uvn_vu_memory memory;
	struct uvn_vu_mem_reg mem_reg;
	struct uvn_vu_log log;
	struct uvn_vu_config config;
	struct uvn_vu_inflight inflight;
};

#define UVN_VU_HDR_SIZE 12u
#define UVN_VU_MEMORY_HDR_SIZE offsetof(struct uvn_vu_memory, regions)
#define UVN_VU_CONFIG_HDR_SIZE offsetof(struct uvn_vu_config, region)

_Static_assert(sizeof(struct uvn_vu_hdr) == UVN_VU_HDR_SIZE, "header is 12 bytes");
_Static_assert(sizeof(struct vhost_vring_state) == 8, "vring state is 8 bytes");
_Static_assert(sizeof(struct vhost_vring_addr) == 40, "vring address is 40 bytes");
_Static_assert(sizeof(struct uvn_vu_region) == 32, "memory region is 32 bytes");
_Static_assert(UVN_VU_MEMORY_HDR_SIZE == 8, "memory table header is 8 bytes");
_Static_assert(sizeof(struct uvn_vu_memory) == 8 + 8 * 32, "memory table is 264 bytes");
_Static_assert(sizeof(struct uvn_vu_mem_reg) == 40, "single memory region is 40 bytes");
_Static_assert(sizeof(struct uvn_vu_log) == 16, "log description is 16 bytes");
_Static_assert(sizeof(struct uvn_vu_inflight) == 24, "inflight description is 24 bytes");
_Static_assert(UVN_VU_CONFIG_HDR_SIZE == 12, "config header is 12 bytes");
_Static_assert(sizeof(struct uvn_vu_config) == 12 + 256, "config is 268 bytes");
_Static_assert(sizeof(union uvn_vu_payload) == 272, "payload union: 268 bytes, 8-aligned");

/* How a request's payload size is checked. */
enum uvn_vu_size_rule {
	UVN_VU_SZ_EXACT,     /* exactly .size bytes */
	UVN_VU_SZ_MEMORY,    /* 8 + 32 * nregions, 1 <= nregions <= 8 */
	UVN_VU_SZ_CONFIG,    /* 12 + config.size, config.size <= 256 */
};

/* Which fds a request may carry (at most 8 ever). */
enum uvn_vu_fd_rule {
	UVN_VU_FD_NONE,      /* none */
	UVN_VU_FD_ONE,       /* exactly one */
	UVN_VU_FD_NOFD_BIT,  /* one, or none when bit 8 of the u64 payload is set */
	UVN_VU_FD_OPTIONAL,  /* none or one, which the receiver closes unused */
	UVN_VU_FD_PER_REGION,/* one per memory region */
};

/* What the back-end answers. */
enum uvn_vu_reply_rule {
	UVN_VU_REPLY_ACK,    /* nothing, or a u64 ack when NEED_REPLY and REPLY_ACK */
	UVN_VU_REPLY_U64,    /* always a u64 */
	UVN_VU_REPLY_STATE,  /* always a vring state */
	UVN_VU_REPLY_CONFIG, /* always a config (size 0 = failure) */
	UVN_VU_REPLY_INFLIGHT, /* always an inflight description, with one fd
				* unless mmap_size is 0 (declined) */
};

#define U64_SZ sizeof(uint64_t)
#define STATE_SZ sizeof(struct vhost_vring_state)
#define ADDR_SZ sizeof(struct vhost_vring_addr)
#define LOG_SZ sizeof(struct uvn_vu_log)
#define MEMREG_SZ sizeof(struct uvn_vu_mem_reg)
#define INFLIGHT_SZ sizeof(struct uvn_vu_inflight)

/*
 * X(NAME, size rule, size, fd rule, reply rule); the id is VHOST_USER_##NAME.
 * Requests not listed are refused (their features are never offered: IOTLB,
 * postcopy, in-band notifications, the backend channel, RESET_DEVICE).
 * GET/SET_CONFIG are listed only to be declined well. NET_SET_MTU is a
 * u64, the MTU the frontend gives the guest (protocol feature NET_MTU).
 * SEND_RARP (a u64 whose first 6 bytes are a MAC) is a back-end-only
 * request: backend.c checks and answers it outside this table.
 */
#define UVN_VU_REQUESTS(X)                                                        \
	X(GET_FEATURES,          UVN_VU_SZ_EXACT,  0,         UVN_VU_FD_NONE,      UVN_VU_REPLY_U64)    \
	X(SET_FEATURES,          UVN_VU_SZ_EXACT,  U64_SZ,    UVN_VU_FD_NONE,      UVN_VU_REPLY_ACK)    \
	X(SET_OWNER,             UVN_VU_SZ_EXACT,  0,         UVN_VU_FD_NONE,      UVN_VU_REPLY_ACK)    \
	X(RESET_OWNER,           UVN_VU_SZ_EXACT,  0,         UVN_VU_FD_NONE,      UVN_VU_REPLY_ACK)    \
	X(SET_MEM_TABLE,         UVN_VU_SZ_MEMORY, 0,         UVN_VU_FD_PER_REGION, UVN_VU_REPLY_ACK)   \
	X(SET_LOG_BASE,          UVN_VU_SZ_EXACT,  LOG_SZ,    UVN_VU_FD_ONE,       UVN_VU_REPLY_U64)    \
	X(SET_LOG_FD,            UVN_VU_SZ_EXACT,  0,         UVN_VU_FD_ONE,       UVN_VU_REPLY_ACK)    \
	X(SET_VRING_NUM,         UVN_VU_SZ_EXACT,  STATE_SZ,  UVN_VU_FD_NONE,      UVN_VU_REPLY_ACK)    \
	X(SET_VRING_ADDR,        UVN_VU_SZ_EXACT,  ADDR_SZ,   UVN_VU_FD_NONE,      UVN_VU_REPLY_ACK)    \
	X(SET_VRING_BASE,        UVN_VU_SZ_EXACT,  STATE_SZ,  UVN_VU_FD_NONE,      UVN_VU_REPLY_ACK)    \
	X(GET_VRING_BASE,        UVN_VU_SZ_EXACT,  STATE_SZ,  UVN_VU_FD_NONE,      UVN_VU_REPLY_STATE)  \
	X(SET_VRING_KICK,        UVN_VU_SZ_EXACT,  U64_SZ,    UVN_VU_FD_NOFD_BIT,  UVN_VU_REPLY_ACK)    \
	X(SET_VRING_CALL,        UVN_VU_SZ_EXACT,  U64_SZ,    UVN_VU_FD_NOFD_BIT,  UVN_VU_REPLY_ACK)    \
	X(SET_VRING_ERR,         UVN_VU_SZ_EXACT,  U64_SZ,    UVN_VU_FD_NOFD_BIT,  UVN_VU_REPLY_ACK)    \
	X(GET_PROTOCOL_FEATURES, UVN_VU_SZ_EXACT,  0,         UVN_VU_FD_NONE,      UVN_VU_REPLY_U64)    \
	X(SET_PROTOCOL_FEATURES, UVN_VU_SZ_EXACT,  U64_SZ,    UVN_VU_FD_NONE,      UVN_VU_REPLY_ACK)    \
	X(GET_QUEUE_NUM,         UVN_VU_SZ_EXACT,  0,         UVN_VU_FD_NONE,      UVN_VU_REPLY_U64)    \
	X(SET_VRING_ENABLE,      UVN_VU_SZ_EXACT,  STATE_SZ,  UVN_VU_FD_NONE,      UVN_VU_REPLY_ACK)    \
	X(NET_SET_MTU,           UVN_VU_SZ_EXACT,  U64_SZ,    UVN_VU_FD_NONE,      UVN_VU_REPLY_ACK)    \
	X(GET_CONFIG,            UVN_VU_SZ_CONFIG, 0,         UVN_VU_FD_NONE,      UVN_VU_REPLY_CONFIG) \
	X(SET_CONFIG,            UVN_VU_SZ_CONFIG, 0,         UVN_VU_FD_NONE,      UVN_VU_REPLY_ACK)    \
	X(GET_MAX_MEM_SLOTS,     UVN_VU_SZ_EXACT,  0,         UVN_VU_FD_NONE,      UVN_VU_REPLY_U64)    \
	X(ADD_MEM_REG,           UVN_VU_SZ_EXACT,  MEMREG_SZ, UVN_VU_FD_ONE,       UVN_VU_REPLY_ACK)    \
	X(REM_MEM_REG,           UVN_VU_SZ_EXACT,  MEMREG_SZ, UVN_VU_FD_OPTIONAL,  UVN_VU_REPLY_ACK)    \
	X(SET_STATUS,            UVN_VU_SZ_EXACT,  U64_SZ,    UVN_VU_FD_NONE,      UVN_VU_REPLY_ACK)    \
	X(GET_STATUS,            UVN_VU_SZ_EXACT,  0,         UVN_VU_FD_NONE,      UVN_VU_REPLY_U64)    \
	X(GET_INFLIGHT_FD,       UVN_VU_SZ_EXACT,  INFLIGHT_SZ, UVN_VU_FD_NONE,    UVN_VU_REPLY_INFLIGHT) \
	X(SET_INFLIGHT_FD,       UVN_VU_SZ_EXACT,  INFLIGHT_SZ, UVN_VU_FD_ONE,     UVN_VU_REPLY_ACK)

#endif
