/* SPDX-License-Identifier: MIT */
/*
 * Check that the libuvnet.so a program runs with is the release it was
 * built against, then lay out a ring (and fail to: a ring error) and send
 * a packet through a pool:
 * all through the public API, e.g. built against an installed uvnet:
 *   cc version_check.c $(pkg-config --cflags --libs uvnet)
 */
#include <stdio.h>
#include <string.h>

#include <uvnet/driver.h>
#include <uvnet/version.h>

int main(void)
{
	struct uvn_pkt_pool_cfg pc = { .count = 4, .buf_size = 2048, .name = "example" };
	struct uvn_pkt_pool *pool;
	struct uvn_vq_layout lay;
	struct uvn_pkt *p;
	char text[6] = "";
	int err;

	printf("built against uvnet %s, running with %s\n", UVN_VERSION_STRING, uvn_version());
	if (strcmp(uvn_version(), UVN_VERSION_STRING) || uvn_version_number() != UVN_VERSION_NUMBER) {
		fprintf(stderr, "the library is another release than the headers\n");
		return 1;
	}
	err = uvn_vq_layout(false, 256, &lay);
	if (err) {
		fprintf(stderr, "uvn_vq_layout: %s\n", uvn_vq_strerror(err));
		return 1;
	}
	printf("a split ring of 256 takes %zu bytes\n", lay.size);
	/* Ring errors are never errno values: their range starts above 4095. */
	err = uvn_vq_layout(false, 3, &lay);
	if (err != -UVN_VQ_E_INVAL || err > -UVN_VQ_ERR_BASE) {
		fprintf(stderr, "uvn_vq_layout of 3 entries: %d, not -UVN_VQ_E_INVAL\n", err);
		return 1;
	}
	printf("a split ring of 3 entries: %s\n", uvn_vq_strerror(err));
	err = uvn_pkt_pool_create(&pc, &pool);
	if (err) {
		fprintf(stderr, "uvn_pkt_pool_create: %s\n", strerror(-err));
		return 1;
	}
	p = uvn_pkt_alloc(pool);
	if (!p) {
		fprintf(stderr, "uvn_pkt_alloc: pool empty\n");
		return 1;
	}
	uvn_pkt_set_buf(p, 5);
	memcpy(p->buf, "hello", 5);
	uvn_pkt_read(p, 0, text, 5);
	printf("packet of %u bytes: %s\n", p->len, text);
	uvn_pkt_free(p);
	uvn_pkt_pool_destroy(pool);
	return 0;
}
