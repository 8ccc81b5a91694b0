/* SPDX-License-Identifier: MIT */
/*
 * The ring's error values: above the errno range, each with its own text
 * and its stats slot where it always was; and an allocation that fails is
 * UVN_VQ_E_NOMEM, not "no free descriptors". Built with
 * -Wl,--wrap=calloc so the queue constructors' allocations can fail.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <linux/virtio_config.h>
#include <uvnet/virtqueue.h>

void *__real_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size);

/* 0: every calloc succeeds; n: the n-th from now fails (once). */
static unsigned fail_in;
static unsigned callocs;

void *__wrap_calloc(size_t n, size_t size)
{
	callocs++;
	if (fail_in && --fail_in == 0)
		return NULL;
	return __real_calloc(n, size);
}

static void errors_above_errno(void **state)
{
	(void)state;
	assert_string_equal(uvn_vq_strerror(0), "ok");
	for (int e = UVN_VQ_E_HEAD_RANGE; e < UVN_VQ_E__END; e++) {
		assert_true(e > 4095);
		assert_string_not_equal(uvn_vq_strerror(-e), "unknown virtqueue error");
		assert_string_equal(uvn_vq_strerror(-e), uvn_vq_strerror(e));
		for (int o = UVN_VQ_E_HEAD_RANGE; o < e; o++)
			assert_string_not_equal(uvn_vq_strerror(o), uvn_vq_strerror(e));
	}
	/* -errno values are not ring errors. */
	assert_string_equal(uvn_vq_strerror(-EPERM), "unknown virtqueue error");
	assert_string_equal(uvn_vq_strerror(-ENOMEM), "unknown virtqueue error");
	assert_string_equal(uvn_vq_strerror(-UVN_VQ_ERR_BASE), "unknown virtqueue error");
	assert_string_equal(uvn_vq_strerror(-UVN_VQ_E__END), "unknown virtqueue error");
	assert_true(UVN_VQ_E__COUNT <= UVN_VQ_ERR_SLOTS);
	assert_int_not_equal(UVN_VQ_E_NOMEM, UVN_VQ_E_NOSPC);
}

/* The err_* rows of the stats table point at the slots the header names. */
static void stats_slots(void **state)
{
	static const struct { const char *name; int err; unsigned slot; } rows[] = {
		{ "err_head_range", UVN_VQ_E_HEAD_RANGE, 1 },
		{ "err_avail_idx", UVN_VQ_E_AVAIL_IDX, 12 },
		{ "err_used_id", UVN_VQ_E_USED_ID, 15 },
		{ "err_base", UVN_VQ_E_BASE, 19 },
		{ "err_chain_long", UVN_VQ_E_CHAIN_LONG, 20 },
	};

	(void)state;
	for (unsigned i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct uvn_stat_desc *d = uvn_vq_stats_desc;

		while (d->name && strcmp(d->name, rows[i].name))
			d++;
		assert_non_null(d->name);
		assert_int_equal(UVN_VQ_ERR_SLOT(rows[i].err), rows[i].slot);
		assert_int_equal(d->offset, offsetof(struct uvn_vq_stats, err) +
						    rows[i].slot * sizeof(uint64_t));
	}
}

static void *ring_for(bool packed, unsigned num)
{
	struct uvn_vq_layout lay;
	void *ring;

	assert_int_equal(uvn_vq_layout(packed, num, &lay), 0);
	ring = aligned_alloc(64, (lay.size + 63) & ~(size_t)63);
	assert_non_null(ring);
	return ring;
}

/* Every allocation of uvn_vq_drv_create() failing in turn: NOMEM each
 * time, nothing leaked (ASan), and the same call then succeeds. */
static void drv_create_nomem(void **state)
{
	(void)state;
	for (unsigned packed = 0; packed < 2; packed++) {
		struct uvn_vq_drv_cfg c = { .num = 64, .ring = ring_for(packed, 64),
					    .features = 1ull << VIRTIO_F_VERSION_1 |
							(packed ? 1ull << VIRTIO_F_RING_PACKED : 0) };
		struct uvn_vq_drv *vq = NULL;
		unsigned n;

		callocs = 0;
		assert_int_equal(uvn_vq_drv_create(&c, &vq), 0);
		uvn_vq_drv_destroy(vq);
		n = callocs;
		assert_true(n >= 4);
		for (unsigned k = 1; k <= n; k++) {
			fail_in = k;
			vq = NULL;
			assert_int_equal(uvn_vq_drv_create(&c, &vq), -UVN_VQ_E_NOMEM);
			assert_null(vq);
			assert_int_equal(fail_in, 0);
		}
		assert_int_equal(uvn_vq_drv_create(&c, &vq), 0);
		uvn_vq_drv_destroy(vq);
		free(c.ring);
	}
}

static void *xlate(void *ctx, uint64_t addr, uint64_t *len)
{
	(void)ctx;
	(void)len;
	return (void *)(uintptr_t)addr;
}

static void dev_create_nomem(void **state)
{
	struct uvn_vq_layout lay;
	char *ring = ring_for(false, 64);
	struct uvn_vq_dev_cfg c = { .num = 64, .features = 1ull << VIRTIO_F_VERSION_1,
				    .xlate = xlate };
	struct uvn_vq_dev *vq = NULL;

	(void)state;
	uvn_vq_layout(false, 64, &lay);
	c.desc = ring + lay.desc;
	c.driver = ring + lay.driver;
	c.device = ring + lay.device;
	fail_in = 1;
	assert_int_equal(uvn_vq_dev_create(&c, &vq), -UVN_VQ_E_NOMEM);
	assert_null(vq);
	assert_int_equal(uvn_vq_dev_create(&c, &vq), 0);
	uvn_vq_dev_destroy(vq);
	free(ring);
}

int main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test(errors_above_errno),
		cmocka_unit_test(stats_slots),
		cmocka_unit_test(drv_create_nomem),
		cmocka_unit_test(dev_create_nomem),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
