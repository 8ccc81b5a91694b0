/* SPDX-License-Identifier: MIT */
/*
 * uvnet-hostile's session: connect, negotiate, one memfd of guest memory
 * shared as one region (gpa == uva == our address, as our driver does),
 * rings laid out by hand, and raw requests for what the library would not
 * send.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <uvnet/virtqueue.h>

#include "hfe.h"

volatile sig_atomic_t hfe_stop;

double hfe_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Every attack sets up, then loops while this says so: its first call
 * tells a test that the attack is under way ("ready" on stdout). */
bool hfe_running(double end)
{
	static atomic_flag said = ATOMIC_FLAG_INIT;

	if (!atomic_flag_test_and_set(&said)) {
		puts("ready");
		fflush(stdout);
	}
	return !hfe_stop && hfe_now() < end;
}

void hfe_sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

void hfe_log(const char *fmt, ...)
{
	va_list ap;

	fputs("uvnet-hostile: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int hfe_count(struct hfe *h, int r)
{
	if (r == -EIO)
		h->nacks++;
	else if (r)
		h->errs++;
	return r;
}

bool hfe_alive(struct hfe *h)
{
	return h->fe && uvn_vu_fe_check(h->fe) == 0;
}

void *hfe_alloc(struct hfe *h, size_t size, size_t align)
{
	size_t at = (h->mem_used + align - 1) & ~(align - 1);

	if (at + size > h->mem_len)
		return NULL;
	h->mem_used = at + size;
	return h->mem + at;
}

/* A frame the switch takes and drops: source and destination are our own
 * MAC, so it goes back to the port it came from, i.e. nowhere. */
static void write_frame(uint8_t *p)
{
	static const uint8_t mac[6] = { 0x02, 0x48, 0x4f, 0x53, 0x54, 0x01 };

	memset(p, 0, HFE_FRAME_LEN);
	memcpy(p + HFE_HDR_LEN, mac, 6);
	memcpy(p + HFE_HDR_LEN + 6, mac, 6);
	p[HFE_HDR_LEN + 12] = 0x88; /* local experimental ethertype */
	p[HFE_HDR_LEN + 13] = 0xb5;
}

int hfe_open(struct hfe *h, const char *path, uint64_t want, uint64_t proto_want, size_t mem_len,
	     bool no_mem)
{
	struct uvn_vu_fe_cfg fc = { .path = path, .timeout_ms = 2000, .name = "hostile" };
	struct uvn_mem_region_desc reg;
	int r;

	memset(h, 0, sizeof(*h));
	h->path = path;
	h->memfd = -1;
	h->rx.kick = h->rx.call = h->tx.kick = h->tx.call = h->ctrl.kick = h->ctrl.call = -1;
	r = uvn_vu_fe_connect(&fc, &h->fe);
	if (r)
		return r;
	r = uvn_vu_fe_set_owner(h->fe);
	if (!r)
		r = uvn_vu_fe_negotiate(h->fe, proto_want, &h->offered, &h->pairs);
	if (r)
		return r;
	h->proto = uvn_vu_fe_protocol_features(h->fe);
	h->features = (want | HFE_F(VIRTIO_F_VERSION_1)) & h->offered;
	r = uvn_vu_fe_set_features(h->fe, h->features);
	if (r)
		return r;
	h->memfd = memfd_create("uvnet-hostile", MFD_CLOEXEC);
	if (h->memfd < 0 || ftruncate(h->memfd, (off_t)mem_len))
		return -errno;
	h->mem = mmap(NULL, mem_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, h->memfd, 0);
	if (h->mem == MAP_FAILED) {
		h->mem = NULL;
		return -errno;
	}
	h->mem_len = mem_len;
	h->frame = hfe_alloc(h, HFE_FRAME_LEN, 64);
	write_frame(h->frame);
	if (no_mem)
		return 0;
	reg = (struct uvn_mem_region_desc){ .gpa = (uintptr_t)h->mem, .size = mem_len,
					    .uva = (uintptr_t)h->mem };
	return uvn_vu_fe_set_mem(h->fe, &reg, &h->memfd, 1);
}

static void close_ring(struct hring *r)
{
	if (r->kick >= 0)
		close(r->kick);
	if (r->call >= 0)
		close(r->call);
	r->kick = r->call = -1;
}

void hfe_close(struct hfe *h)
{
	if (h->fe)
		uvn_vu_fe_destroy(h->fe);
	h->fe = NULL;
	close_ring(&h->rx);
	close_ring(&h->tx);
	close_ring(&h->ctrl);
	/* The memory is not unmapped: an attack may have shrunk it under us,
	 * and exit takes it anyway. */
	if (h->memfd >= 0)
		close(h->memfd);
	h->memfd = -1;
}

int hfe_ring_describe(struct hfe *h, struct hring *r, unsigned base)
{
	struct uvn_vq_layout l;
	uint64_t a = (uintptr_t)r->mem;
	int ret;

	uvn_vq_layout(r->packed, r->num, &l);
	ret = uvn_vu_fe_set_vring_num(h->fe, r->idx, r->num);
	if (!ret)
		ret = uvn_vu_fe_set_vring_base(h->fe, r->idx, base);
	if (!ret)
		ret = uvn_vu_fe_set_vring_addr(h->fe, r->idx, a + l.desc, a + l.driver, a + l.device);
	if (!ret)
		ret = uvn_vu_fe_set_vring_call(h->fe, r->idx, r->call);
	if (!ret)
		ret = uvn_vu_fe_set_vring_kick(h->fe, r->idx, r->kick);
	return ret;
}

int hfe_ring(struct hfe *h, struct hring *r, unsigned idx, unsigned num, bool fds)
{
	struct uvn_vq_layout l;

	r->idx = idx;
	r->num = num;
	r->packed = h->features & HFE_F(VIRTIO_F_RING_PACKED);
	r->avail_idx = 0;
	if (uvn_vq_layout(r->packed, num, &l))
		return -EINVAL;
	r->mem = hfe_alloc(h, l.size, 4096);
	if (!r->mem)
		return -ENOMEM;
	memset(r->mem, 0, l.size);
	if (r->packed) {
		r->pdesc = (struct vring_packed_desc *)(r->mem + l.desc);
	} else {
		r->desc = (struct vring_desc *)(r->mem + l.desc);
		r->avail = (struct vring_avail *)(r->mem + l.driver);
		r->used = (struct vring_used *)(r->mem + l.device);
	}
	r->kick = r->call = -1;
	if (fds) {
		r->kick = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		r->call = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (r->kick < 0 || r->call < 0)
			return -errno;
	}
	/* Packed: the device starts at position 0 with wrap counter 1. */
	return hfe_ring_describe(h, r, r->packed ? 1u << 15 : 0);
}

int hfe_enable(struct hfe *h, struct hring *r, bool on)
{
	int ret = uvn_vu_fe_set_vring_enable(h->fe, r->idx, on);

	if (!ret)
		r->on = on;
	return ret;
}

void hfe_split_post(struct hring *r, uint16_t id, uint64_t addr, uint32_t len, bool write)
{
	r->desc[id] = (struct vring_desc){ .addr = addr, .len = len,
					   .flags = write ? VRING_DESC_F_WRITE : 0 };
	r->avail->ring[r->avail_idx % r->num] = id;
	r->avail_idx++;
	atomic_store_explicit((_Atomic uint16_t *)&r->avail->idx, r->avail_idx,
			      memory_order_release);
}

void hfe_kick(const struct hring *r)
{
	uint64_t one = 1;

	if (r->kick >= 0 && write(r->kick, &one, sizeof(one)) < 0) {
		/* a full eventfd counter: the backend does not read it */
	}
}

int hfe_pair(struct hfe *h, unsigned num, unsigned rx_bufs, bool fds)
{
	int r = hfe_ring(h, &h->rx, 0, num, fds);

	if (!r)
		r = hfe_ring(h, &h->tx, 1, num, fds);
	for (unsigned i = 0; !r && i < rx_bufs && i < num; i++) {
		uint8_t *b = hfe_alloc(h, HFE_RXBUF, 64);

		if (!b)
			return -ENOMEM;
		hfe_split_post(&h->rx, (uint16_t)i, (uintptr_t)b, HFE_RXBUF, true);
	}
	if (!r)
		r = hfe_enable(h, &h->rx, true);
	if (!r)
		r = hfe_enable(h, &h->tx, true);
	if (!r)
		hfe_kick(&h->rx);
	return r;
}

int hfe_start(struct hfe *h, const char *path, uint64_t want, size_t mem_len, unsigned num)
{
	int r = hfe_open(h, path, want, HFE_F(VHOST_USER_PROTOCOL_F_REPLY_ACK), mem_len, false);

	return r ? r : hfe_pair(h, num, num, true);
}

int hfe_raw_state(struct hfe *h, uint32_t request, unsigned idx, unsigned num)
{
	struct uvn_vu_msg m;

	uvn_vu_msg_init(&m, request, VHOST_USER_VERSION, sizeof(struct vhost_vring_state));
	m.p.state.index = idx;
	m.p.state.num = num;
	return hfe_count(h, uvn_vu_fe_request(h->fe, &m, NULL));
}

int hfe_raw_fd(struct hfe *h, uint32_t request, unsigned idx, int fd)
{
	struct uvn_vu_msg m;

	uvn_vu_msg_init(&m, request, VHOST_USER_VERSION, sizeof(uint64_t));
	m.p.u64 = idx | (fd < 0 ? VHOST_USER_VRING_NOFD_MASK : 0);
	if (fd >= 0) {
		m.fds[0] = fd;
		m.nfds = 1;
	}
	return hfe_count(h, uvn_vu_fe_request(h->fe, &m, NULL));
}
