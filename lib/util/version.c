/* SPDX-License-Identifier: MIT */
/*
 * The release this library was built as, for programs that want the one
 * they run with (the <uvnet/version.h> macros give the one they were
 * built against), and the struct layout that release promises them.
 */
#include <uvnet/driver.h>
#include <uvnet/version.h>

/*
 * Structs a program allocates and the library fills or reads keep their
 * size across releases (on LP64): a new field takes its room from the
 * struct's reserved tail, whose length goes down to match. Structs the
 * library allocates and hands out by pointer only grow at the end.
 */
#define SAME_SIZE(type, bytes)                                              \
	_Static_assert(sizeof(void *) != 8 || sizeof(struct type) == (bytes), \
		       "struct " #type " must stay " #bytes " bytes: take new fields from reserved[]")

SAME_SIZE(uvn_drv_cfg, 256);
SAME_SIZE(uvn_drv_link_stats, 128);
SAME_SIZE(uvn_drv_rxq_stats, 256);
SAME_SIZE(uvn_drv_txq_stats, 256);
SAME_SIZE(uvn_drv_mem_info, 128);
SAME_SIZE(uvn_vq_drv_cfg, 96);
SAME_SIZE(uvn_vq_dev_cfg, 96);
SAME_SIZE(uvn_pkt_pool_cfg, 64);
/* Arrays of these cross the API: their size is part of it. */
SAME_SIZE(uvn_sg, 16);
SAME_SIZE(uvn_vq_done, 16);
SAME_SIZE(uvn_vq_chain, 16);
SAME_SIZE(uvn_vq_layout, 32);
SAME_SIZE(uvn_stat_desc, 16);

_Static_assert(UVN_VQ_E__COUNT <= UVN_VQ_ERR_SLOTS,
	       "a new error kind needs a slot of uvn_vq_stats::err: raise UVN_VQ_ERR_SLOTS (an ABI change)");
/* Ring errors and -errno values never meet (virtqueue.h). */
_Static_assert(UVN_VQ_ERR_BASE > 4095 && UVN_VQ_E_HEAD_RANGE > UVN_VQ_ERR_BASE,
	       "ring errors must stay above the errno range (MAX_ERRNO 4095)");
/* Slots keep their numbers: the first and last of release 0 where they were. */
_Static_assert(UVN_VQ_ERR_SLOT(UVN_VQ_E_HEAD_RANGE) == 1 && UVN_VQ_ERR_SLOT(UVN_VQ_E_BASE) == 19,
	       "uvn_vq_stats::err slots moved: an ABI change");

const char *uvn_version(void)
{
	return UVN_VERSION_STRING;
}

unsigned uvn_version_number(void)
{
	return UVN_VERSION_NUMBER;
}
