/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the packed ring's device-side chain walker (fuzz_ring.c). */
#include "fuzz_ring.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fz_run(data, size, true);
}
