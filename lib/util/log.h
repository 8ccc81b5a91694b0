/* SPDX-License-Identifier: MIT */
/*
 * Logging. Control-path messages go to stderr through uvn_log(). Errors
 * caused by a peer go through UVN_LOG_PEER(), rate-limited per call site so
 * a hostile peer cannot flood the log. Data-path debug messages
 * (UVN_DP_DEBUG) are compiled out unless UVN_DATAPATH_DEBUG is defined.
 */
#ifndef UVN_UTIL_LOG_H
#define UVN_UTIL_LOG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

enum uvn_log_level { UVN_LOG_ERR, UVN_LOG_WARN, UVN_LOG_INFO, UVN_LOG_DEBUG };

/* Messages above this level are dropped (default: UVN_LOG_INFO; env UVN_LOG=
 * error|warning|info|debug, a prefix of 3 letters or more, or 0..3). */
extern int uvn_log_level;

void uvn_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Would a message at @level be printed? (to skip building expensive ones) */
bool uvn_log_enabled(int level);

#define UVN_ERR(...) uvn_log(UVN_LOG_ERR, __VA_ARGS__)
#define UVN_WARN(...) uvn_log(UVN_LOG_WARN, __VA_ARGS__)
#define UVN_INFO(...) uvn_log(UVN_LOG_INFO, __VA_ARGS__)
#define UVN_DEBUG(...) uvn_log(UVN_LOG_DEBUG, __VA_ARGS__)

/* Allows a burst of messages per interval; counts what it suppressed. */
struct uvn_ratelimit {
	_Atomic uint64_t window_start_ns;
	_Atomic unsigned count;
	_Atomic unsigned suppressed;
};

bool uvn_ratelimit_ok(struct uvn_ratelimit *rl);

/* A peer violated the protocol: log at most a few per second per call site. */
#define UVN_LOG_PEER(...)                                             \
	do {                                                          \
		static struct uvn_ratelimit uvn_rl_;                  \
		if (uvn_ratelimit_ok(&uvn_rl_))                       \
			uvn_log(UVN_LOG_WARN, __VA_ARGS__);           \
	} while (0)

#ifdef UVN_DATAPATH_DEBUG
#define UVN_DP_DEBUG(...) uvn_log(UVN_LOG_DEBUG, __VA_ARGS__)
#else
#define UVN_DP_DEBUG(...) do { } while (0)
#endif

#endif
