/* SPDX-License-Identifier: MIT */
/* A vhost-user frontend's side of the socket, for the fuzzers that talk to
 * the backend (fuzz_vhost_user, fuzz_device). */
#ifndef UVN_FUZZ_VU_H
#define UVN_FUZZ_VU_H

#include <stddef.h>
#include <stdint.h>

#define FZ_VU_MAX_PAYLOAD 512u

/* Send a 12-byte header and @len payload bytes with @nfds fds attached
 * (nonblocking; a full socket drops the message). */
void fz_vu_send(int sock, const uint8_t hdr[12], const void *payload, uint32_t len,
		const int *fds, unsigned nfds);
/* Send request @req (flags: version 1) with @payload. */
void fz_vu_request(int sock, uint32_t req, const void *payload, uint32_t len, const int *fds,
		   unsigned nfds);
/* Read and drop the backend's replies, closing any fds they carry. If
 * @u64 is given, the payload of the last 8-byte reply is stored there.
 * @return replies read */
unsigned fz_vu_drain(int sock, uint64_t *u64);
/* fds open in this process. */
unsigned fz_count_fds(void);

#endif
