/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <uvnet/pkt.h>

static void test_pool_alloc_free(void **state)
{
	struct uvn_pkt_pool_cfg cfg = { .count = 4, .buf_size = 2048 };
	struct uvn_pkt_pool *pool;
	struct uvn_pkt *p[5];

	(void)state;
	assert_int_equal(uvn_pkt_pool_create(&cfg, &pool), 0);
	assert_int_equal(uvn_pkt_pool_avail(pool), 4);
	assert_int_equal(uvn_pkt_alloc_bulk(pool, p, 5), 0); /* all or none */
	assert_int_equal(uvn_pkt_pool_stats(pool)->alloc_fail, 1);
	assert_int_equal(uvn_pkt_alloc_bulk(pool, p, 4), 4);
	assert_null(uvn_pkt_alloc(pool));
	for (int i = 0; i < 4; i++) {
		assert_non_null(p[i]->buf);
		assert_int_equal(p[i]->refcnt, 1);
		for (int j = 0; j < i; j++)
			assert_ptr_not_equal(p[i]->buf, p[j]->buf);
	}
	uvn_pkt_set_buf(p[0], 100);
	assert_int_equal(p[0]->len, 100);
	assert_ptr_equal(p[0]->seg[0].iov_base, p[0]->buf);
	uvn_pkt_ref(p[0]);
	uvn_pkt_free(p[0]);
	assert_int_equal(uvn_pkt_pool_avail(pool), 0); /* still referenced */
	uvn_pkt_free_bulk(p, 4);
	assert_int_equal(uvn_pkt_pool_avail(pool), 4);
	/* LIFO: the last freed comes back first */
	assert_ptr_equal(uvn_pkt_alloc(pool), p[3]);
	uvn_pkt_free(p[3]);
	uvn_pkt_pool_destroy(pool);
}

static int completions;
static void on_complete(struct uvn_pkt_ubuf *u)
{
	(void)u;
	completions++;
}

static void test_ubuf_completes_once_on_last_ref(void **state)
{
	struct uvn_pkt_pool_cfg cfg = { .count = 4 };
	struct uvn_pkt_ubuf u = { .complete = on_complete, .refs = 1 };
	struct uvn_pkt_pool *pool;
	struct uvn_pkt *a, *b;

	(void)state;
	completions = 0;
	assert_int_equal(uvn_pkt_pool_create(&cfg, &pool), 0);
	a = uvn_pkt_alloc(pool);
	b = uvn_pkt_alloc(pool);
	a->ubuf = &u;
	uvn_pkt_ubuf_get(&u);
	b->ubuf = &u;
	uvn_pkt_ubuf_get(&u);
	uvn_pkt_ubuf_put(&u); /* the builder's reference */
	uvn_pkt_ref(a);       /* flooded twice */
	uvn_pkt_free(a);
	uvn_pkt_free(b);
	assert_int_equal(completions, 0);
	uvn_pkt_free_bulk(&a, 1); /* the bulk free completes borrowed memory too */
	assert_int_equal(completions, 1);
	assert_int_equal(uvn_pkt_pool_avail(pool), 4);
	uvn_pkt_pool_destroy(pool);
}

static void test_read_across_segments(void **state)
{
	struct uvn_pkt_pool_cfg cfg = { .count = 1 };
	char a[] = "hello ", b[] = "world";
	struct uvn_pkt_pool *pool;
	struct uvn_pkt *p;
	char out[16] = { 0 };

	(void)state;
	assert_int_equal(uvn_pkt_pool_create(&cfg, &pool), 0);
	p = uvn_pkt_alloc(pool);
	p->seg[0] = (struct iovec){ a, 6 };
	p->seg[1] = (struct iovec){ b, 5 };
	p->nseg = 2;
	p->len = 11;
	assert_int_equal(uvn_pkt_read(p, 4, out, 5), 5);
	assert_string_equal(out, "o wor");
	assert_int_equal(uvn_pkt_read(p, 8, out, 10), 3);
	uvn_pkt_free(p);
	uvn_pkt_pool_destroy(pool);
}

static void test_frag_pool_reuses_pages(void **state)
{
	size_t page = 4096;
	void *mem = aligned_alloc(page, 2 * page);
	struct uvn_frag_pool *fp;
	void *f[8];

	(void)state;
	assert_int_equal(uvn_frag_pool_create(mem, 2 * page, page, &fp), 0);
	assert_null(uvn_frag_alloc(fp, page + 1, 64));
	/* 1601 rounded up to 1664: two per page */
	for (int i = 0; i < 4; i++)
		assert_non_null(f[i] = uvn_frag_alloc(fp, 1601, 64));
	assert_int_equal((uintptr_t)f[1] - (uintptr_t)f[0], 1664);
	assert_null(uvn_frag_alloc(fp, 1601, 64)); /* both pages carved */
	assert_int_equal(uvn_frag_pool_stats(fp)->alloc_fail, 1);
	assert_int_equal(uvn_frag_pool_stats(fp)->frags_out, 4);
	uvn_frag_put(fp, f[0]);
	uvn_frag_put(fp, f[1]); /* first page free again */
	assert_ptr_equal(uvn_frag_alloc(fp, 64, 64), mem);
	uvn_frag_put(fp, mem);
	uvn_frag_get(fp, f[2]);
	uvn_frag_put(fp, f[2]);
	uvn_frag_put(fp, f[2]);
	uvn_frag_put(fp, f[3]);
	uvn_frag_pool_retire(fp);
	assert_int_equal(uvn_frag_pool_stats(fp)->frags_out, 0);
	assert_int_equal(uvn_frag_pool_stats(fp)->pages_used, 0);
	uvn_frag_pool_destroy(fp);
	free(mem);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pool_alloc_free),
		cmocka_unit_test(test_ubuf_completes_once_on_last_ref),
		cmocka_unit_test(test_read_across_segments),
		cmocka_unit_test(test_frag_pool_reuses_pages),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
