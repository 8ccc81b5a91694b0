/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "util/log.h"

int uvn_log_level = -1;

static const char *const level_name[] = { "error", "warning", "info", "debug" };

/* UVN_LOG: a level's name (or its first letters: err, warn, ...) or its
 * number 0..3. Anything else is said once, and info it is. */
static int level_from_env(void)
{
	const char *e = getenv("UVN_LOG");
	size_t n = e ? strlen(e) : 0;

	if (!e || !n)
		return UVN_LOG_INFO;
	if (n == 1 && e[0] >= '0' && e[0] <= '3')
		return e[0] - '0';
	for (int i = 0; i < 4; i++)
		if (n >= 3 && !strncasecmp(e, level_name[i], n))
			return i;
	fprintf(stderr, "uvnet warning: UVN_LOG=%s: not error, warning, info, debug or 0..3;"
		" logging at info\n", e);
	return UVN_LOG_INFO;
}

static int current_level(void)
{
	if (uvn_log_level < 0)
		uvn_log_level = level_from_env();
	return uvn_log_level;
}

bool uvn_log_enabled(int level)
{
	return level <= current_level();
}

void uvn_log(int level, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	if (level > current_level())
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	/* One write per message so lines from threads do not interleave. */
	fprintf(stderr, "uvnet %s: %s\n", level_name[level < 0 ? 0 : level > 3 ? 3 : level], buf);
}

#define RL_INTERVAL_NS 1000000000ull
#define RL_BURST 5

bool uvn_ratelimit_ok(struct uvn_ratelimit *rl)
{
	struct timespec ts;
	uint64_t now, start;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	start = atomic_load_explicit(&rl->window_start_ns, memory_order_relaxed);
	if (now - start >= RL_INTERVAL_NS) {
		unsigned missed = atomic_exchange(&rl->suppressed, 0);

		atomic_store(&rl->window_start_ns, now);
		atomic_store(&rl->count, 0);
		if (missed)
			uvn_log(UVN_LOG_WARN, "(%u similar messages suppressed)", missed);
	}
	if (atomic_fetch_add(&rl->count, 1) < RL_BURST)
		return true;
	atomic_fetch_add(&rl->suppressed, 1);
	return false;
}
