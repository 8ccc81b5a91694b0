/* SPDX-License-Identifier: MIT */
/*
 * uvnetd's --forward sink, the receiver uvnet-perf's stream tx rows measure:
 * it reads every byte of every frame (each byte changes what it sums), up
 * to the frame's length and no further (a segment that claims more runs
 * into a guard page), counts the frames and frees them. rxonly, the pps
 * rows' receiver, frees them unread.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "switch/forward.h"

/* A frame of three segments, the last one claiming 50 bytes past the frame. */
static const unsigned seg_len[3] = { 37, 64, 100 };
#define FRAME_LEN 201u
#define OVERCLAIM 50u

struct env {
	struct uvn_fwd f;
	struct uvn_fwd_worker *w;
	struct uvn_pkt_pool *descs;
	uint8_t *map, *frame;       /* the frame ends where the guard page begins */
	size_t page;
};

static struct env *env_new(enum uvn_fwd_mode mode)
{
	struct env *e = calloc(1, sizeof(*e));
	struct uvn_pkt_pool_cfg dc = { .count = 8, .name = "borrowed" };

	assert_non_null(e);
	e->w = calloc(1, sizeof(*e->w));
	assert_non_null(e->w);
	assert_int_equal(uvn_fwd_init(&e->f, mode, 0), 0);
	assert_int_equal(uvn_pkt_pool_create(&dc, &e->descs), 0);
	e->page = (size_t)sysconf(_SC_PAGESIZE);
	e->map = mmap(NULL, 2 * e->page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(e->map != MAP_FAILED);
	assert_int_equal(mprotect(e->map + e->page, e->page, PROT_NONE), 0);
	e->frame = e->map + e->page - FRAME_LEN;
	return e;
}

static void env_free(struct env *e)
{
	assert_int_equal(uvn_pkt_pool_avail(e->descs), 8); /* every frame freed */
	uvn_fwd_fini(&e->f);
	uvn_pkt_pool_destroy(e->descs);
	munmap(e->map, 2 * e->page);
	free(e->w);
	free(e);
}

/* One frame over e->frame, as a borrowed guest frame arrives, through the mode's path. */
static void sink_one(struct env *e)
{
	struct uvn_pkt *p = uvn_pkt_alloc(e->descs);
	size_t off = 0;

	assert_non_null(p);
	for (unsigned i = 0; i < 3; i++) {
		p->seg[i].iov_base = e->frame + off;
		p->seg[i].iov_len = seg_len[i] + (i == 2 ? OVERCLAIM : 0);
		off += seg_len[i];
	}
	p->nseg = 3;
	p->len = FRAME_LEN;
	uvn_fwd_burst(&e->f, e->w, NULL, &p, 1);
}

static void sink_reads_every_byte(void **state)
{
	struct env *e = env_new(UVN_FWD_SINK);

	(void)state;
	memset(e->frame, 0, FRAME_LEN);
	for (unsigned k = 0; k < FRAME_LEN; k++) {
		uint64_t before = e->w->sink_sum;

		e->frame[k] = 1;
		sink_one(e);
		if (e->w->sink_sum == before)
			fail_msg("byte %u of the frame was not read", k);
		e->frame[k] = 0;
	}
	assert_int_equal(e->w->st.sunk, FRAME_LEN);
	env_free(e);
}

static void rxonly_reads_nothing(void **state)
{
	struct env *e = env_new(UVN_FWD_RXONLY);

	(void)state;
	memset(e->frame, 0xff, FRAME_LEN);
	sink_one(e);
	sink_one(e);
	assert_int_equal(e->w->sink_sum, 0);
	assert_int_equal(e->w->st.sunk, 2);
	env_free(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sink_reads_every_byte),
		cmocka_unit_test(rxonly_reads_nothing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
