/* SPDX-License-Identifier: MIT */
/*
 * One benchmark run: a memfd holding a control page, the ring and one
 * 64-byte buffer per queue entry; the driver process keeps the ring full of
 * buffers (writing each one first, reading the device's answer back), the
 * device process reads each buffer and writes it over, both in bursts,
 * polling. The device maps the memfd at its own address and translates.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/virtio_config.h>
#include <linux/virtio_ring.h>
#include <uvnet/virtqueue.h>

#include "ringbench.h"

#define PAGE 4096u
#define WARMUP_S 0.05

struct rb_ctl {
	struct rb_cfg cfg;
	uint64_t drv_base;
	size_t size, ring_off, pool_off;
	_Alignas(64) _Atomic int ready;     /* the driver created its half (zeroed the ring) */
	_Atomic int dev_ready;
	_Atomic int stop;                   /* the driver is done: the device leaves */
	_Alignas(64) struct rb_result res;
	uint64_t calls;
	char err[160];
};

double rb_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

void rb_pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		fprintf(stderr, "uvnet-ringbench: cannot pin to CPU %d: %s\n", cpu, strerror(errno));
}

int rb_fork(void)
{
	pid_t parent = getpid(), pid;

	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
	}
	return pid;
}

static uint64_t features(const struct rb_cfg *c)
{
	return 1ull << VIRTIO_F_VERSION_1 | (c->packed ? 1ull << VIRTIO_F_RING_PACKED : 0) |
	       (c->event_idx ? 1ull << VIRTIO_RING_F_EVENT_IDX : 0) |
	       (c->in_order ? 1ull << VIRTIO_F_IN_ORDER : 0);
}

static _Noreturn void child_fail(struct rb_ctl *ctl, const char *what, int err)
{
	snprintf(ctl->err, sizeof(ctl->err), "%s: %s", what, uvn_vq_strerror(err));
	atomic_store(&ctl->stop, 1);
	_exit(1);
}

/* ------------------------------------------------------------------ driver */

struct drv {
	struct rb_ctl *ctl;
	struct uvn_vq_drv *vq;
	uint8_t *pool;
	uint64_t *stamp;        /* per buffer: what the device must answer */
	uint16_t *free;
	unsigned nfree;
	uint64_t seq, bad;
};

static unsigned drv_refill(struct drv *d, unsigned batch)
{
	unsigned n = 0;

	while (n < batch && d->nfree) {
		unsigned i = d->free[--d->nfree];
		uint64_t *b = (uint64_t *)(d->pool + (size_t)i * RB_BUF_SIZE);
		struct uvn_sg sg = { .addr = (uint64_t)(uintptr_t)b, .len = RB_BUF_SIZE };
		int ret;

		/* The driver writes the whole buffer, like a sender filling a packet. */
		for (unsigned w = 0; w < RB_BUF_SIZE / 8; w++)
			b[w] = d->seq + w;
		d->stamp[i] = d->seq++;
		ret = uvn_vq_drv_add(d->vq, &sg, 0, 1, &d->stamp[i], 0);
		if (ret)
			child_fail(d->ctl, "add", ret);
		n++;
	}
	return n;
}

static unsigned drv_reclaim(struct drv *d, unsigned batch)
{
	struct uvn_vq_done done[256];
	int n = uvn_vq_drv_get_used(d->vq, done, batch);

	if (n < 0)
		child_fail(d->ctl, "get_used", n);
	for (int k = 0; k < n; k++) {
		uint64_t *s = done[k].token;
		unsigned i = (unsigned)(s - d->stamp);
		const uint64_t *b = (const uint64_t *)(d->pool + (size_t)i * RB_BUF_SIZE);

		/* Read the device's answer: the reply costs a cache miss, as it would. */
		d->bad += b[0] != ~*s;
		d->free[d->nfree++] = (uint16_t)i;
	}
	return (unsigned)n;
}

/* Poll for cfg->seconds after a warm-up; @return buffers reclaimed while measured. */
static void drv_measure(struct drv *d)
{
	const struct rb_cfg *c = &d->ctl->cfg;
	double t0 = rb_now(), start = t0 + WARMUP_S, end = start + c->seconds, t = t0;
	uint64_t counted = 0;
	bool on = false;

	while (t < end) {
		unsigned got = drv_reclaim(d, c->batch);

		if (on)
			counted += got;
		if (drv_refill(d, c->batch))
			uvn_vq_drv_kick_prepare(d->vq);
		t = rb_now();
		if (!on && t >= start) {
			on = true;
			start = t;
			end = t + c->seconds;
		}
	}
	d->ctl->res.bufs = counted;
	d->ctl->res.secs = t - start;
}

static _Noreturn void driver_main(struct rb_ctl *ctl)
{
	const struct rb_cfg *c = &ctl->cfg;
	struct uvn_vq_drv_cfg vc = { .num = c->qsize, .features = features(c),
				     .ring = (uint8_t *)ctl + ctl->ring_off };
	struct drv d = { .ctl = ctl, .pool = (uint8_t *)ctl + ctl->pool_off };
	int ret;

	rb_pin(c->cpus[0]);
	ret = uvn_vq_drv_create(&vc, &d.vq);
	if (ret)
		child_fail(ctl, "drv_create", ret);
	d.stamp = calloc(c->qsize, sizeof(*d.stamp));
	d.free = calloc(c->qsize, sizeof(*d.free));
	if (!d.stamp || !d.free)
		child_fail(ctl, "driver", UVN_VQ_E_NOMEM);
	for (unsigned i = 0; i < c->qsize; i++)
		d.free[d.nfree++] = (uint16_t)i;
	uvn_vq_drv_disable_cb(d.vq);
	atomic_store(&ctl->ready, 1);
	while (!atomic_load(&ctl->dev_ready))
		if (atomic_load(&ctl->stop))
			_exit(1); /* the device failed to start and said why */
	drv_measure(&d);
	if (d.bad)
		snprintf(ctl->err, sizeof(ctl->err), "%llu buffers came back without the device's answer",
			 (unsigned long long)d.bad);
	ctl->res.kicks = uvn_vq_drv_stats(d.vq)->notify;
	atomic_store(&ctl->stop, 1);
	uvn_vq_drv_destroy(d.vq);
	free(d.stamp);
	free(d.free);
	exit(d.bad ? 1 : 0);
}

/* ------------------------------------------------------------------ device */

struct devmap {
	uint64_t drv_base;
	uint8_t *base;
	size_t size;
};

static void *xlate(void *ctx, uint64_t addr, uint64_t *len)
{
	const struct devmap *m = ctx;
	uint64_t off = addr - m->drv_base;

	if (addr < m->drv_base || off >= m->size)
		return NULL;
	if (*len > m->size - off)
		*len = m->size - off;
	return m->base + off;
}

/* Read the buffer and answer in it: real work on both sides of the ring. */
static void serve(const struct iovec *iov)
{
	uint64_t *b = iov->iov_base, sum = 0;

	for (unsigned w = 1; w < RB_BUF_SIZE / 8; w++)
		sum += b[w];
	b[0] = ~b[0];
	for (unsigned w = 1; w < RB_BUF_SIZE / 8; w++)
		b[w] = sum;
}

static void device_loop(struct rb_ctl *ctl, struct uvn_vq_dev *vq)
{
	unsigned batch = ctl->cfg.batch;

	while (!atomic_load_explicit(&ctl->stop, memory_order_relaxed)) {
		struct uvn_vq_chain ch;
		struct iovec iov[4];
		unsigned k = 0;
		int ret = 0;

		while (k < batch && (ret = uvn_vq_dev_pop(vq, &ch, iov, 4)) == 1) {
			if (ch.nin != 1 || iov[0].iov_len != RB_BUF_SIZE)
				child_fail(ctl, "device: unexpected chain", UVN_VQ_E_INVAL);
			serve(iov);
			uvn_vq_dev_push(vq, &ch, RB_BUF_SIZE);
			k++;
		}
		if (k < batch && ret < 0)
			child_fail(ctl, "pop", ret);
		if (k)
			uvn_vq_dev_flush(vq);
	}
}

static _Noreturn void device_main(struct rb_ctl *inherited, int memfd)
{
	struct devmap m = { .drv_base = inherited->drv_base, .size = inherited->size };
	struct uvn_vq_dev_cfg vc = { .xlate = xlate, .xlate_ctx = &m, .avail_wrap = true,
				     .used_wrap = true };
	struct uvn_vq_layout lay;
	struct uvn_vq_dev *vq;
	struct rb_ctl *ctl;
	uint8_t *ring;
	int ret;

	/* Our own mapping, at an address the kernel picks while the
	 * inherited one still exists: never the driver's. */
	m.base = mmap(NULL, m.size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (m.base == MAP_FAILED)
		_exit(1);
	munmap(inherited, m.size);
	ctl = (struct rb_ctl *)m.base;
	rb_pin(ctl->cfg.cpus[1]);
	while (!atomic_load(&ctl->ready))
		if (atomic_load(&ctl->stop))
			_exit(1);
	uvn_vq_layout(ctl->cfg.packed, ctl->cfg.qsize, &lay);
	ring = m.base + ctl->ring_off;
	vc.num = ctl->cfg.qsize;
	vc.features = features(&ctl->cfg);
	vc.desc = ring + lay.desc;
	vc.driver = ring + lay.driver;
	vc.device = ring + lay.device;
	ret = uvn_vq_dev_create(&vc, &vq);
	if (ret)
		child_fail(ctl, "dev_create", ret);
	uvn_vq_dev_set_batch_used(vq, ctl->cfg.in_order);
	uvn_vq_dev_disable_notify(vq);
	atomic_store(&ctl->dev_ready, 1);
	device_loop(ctl, vq);
	ctl->calls = uvn_vq_dev_stats(vq)->notify;
	uvn_vq_dev_destroy(vq);
	exit(0);
}

/* ------------------------------------------------------------------ parent */

static struct rb_ctl *shm_create(const struct rb_cfg *cfg, int *fd_out)
{
	struct uvn_vq_layout lay;
	struct rb_ctl *ctl;
	size_t ring_off = PAGE, pool_off, size;
	int fd;

	if (uvn_vq_layout(cfg->packed, cfg->qsize, &lay))
		return NULL;
	pool_off = ring_off + ((lay.size + PAGE - 1) & ~(size_t)(PAGE - 1));
	size = pool_off + (size_t)cfg->qsize * RB_BUF_SIZE;
	fd = memfd_create("uvnet-ringbench", MFD_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (ftruncate(fd, (off_t)size) < 0 ||
	    (ctl = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
		close(fd);
		return NULL;
	}
	ctl->cfg = *cfg;
	ctl->drv_base = (uint64_t)(uintptr_t)ctl;
	ctl->size = size;
	ctl->ring_off = ring_off;
	ctl->pool_off = pool_off;
	*fd_out = fd;
	return ctl;
}

/*
 * Wait for both children. If one fails, the other is told to stop; past the
 * deadline both are killed. @return 0 if both exited 0.
 */
static int reap(struct rb_ctl *ctl, pid_t pid[2], double deadline)
{
	int bad = 0;

	while (pid[0] > 0 || pid[1] > 0) {
		for (int i = 0; i < 2; i++) {
			int st;

			if (pid[i] > 0 && waitpid(pid[i], &st, WNOHANG) == pid[i]) {
				pid[i] = 0;
				if (!WIFEXITED(st) || WEXITSTATUS(st)) {
					bad = 1;
					atomic_store(&ctl->stop, 1);
				}
			}
		}
		if (rb_now() >= deadline) {
			for (int i = 0; i < 2; i++) {
				if (pid[i] > 0) {
					kill(pid[i], SIGKILL);
					waitpid(pid[i], NULL, 0);
					pid[i] = 0;
				}
			}
			bad = 1;
		}
		poll(NULL, 0, 5);
	}
	return bad ? -1 : 0;
}

int rb_run(const struct rb_cfg *cfg, struct rb_result *out)
{
	pid_t pid[2] = { -1, -1 };
	struct rb_ctl *ctl;
	int fd, ret;

	ctl = shm_create(cfg, &fd);
	if (!ctl) {
		fprintf(stderr, "uvnet-ringbench: shared memory: %s\n", strerror(errno));
		return -1;
	}
	pid[0] = rb_fork();
	if (pid[0] == 0)
		driver_main(ctl);
	if (pid[0] > 0)
		pid[1] = rb_fork();
	if (pid[1] == 0)
		device_main(ctl, fd);
	if (pid[0] < 0 || pid[1] < 0)
		atomic_store(&ctl->stop, 1);
	ret = reap(ctl, pid, rb_now() + cfg->seconds + WARMUP_S + 30);
	if (ret || pid[0] < 0 || pid[1] < 0 || ctl->err[0]) {
		fprintf(stderr, "uvnet-ringbench: run failed: %s\n",
			ctl->err[0] ? ctl->err : "a process died or fork failed");
		ret = -1;
	} else {
		*out = ctl->res;
		out->calls = ctl->calls;
		out->mbufs_per_s = out->secs > 0 ? (double)out->bufs / out->secs / 1e6 : 0;
	}
	munmap(ctl, ctl->size);
	close(fd);
	return ret;
}
