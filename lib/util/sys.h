/* SPDX-License-Identifier: MIT */
/* Time, CPU pinning and CPU accounting. */
#ifndef UVN_UTIL_SYS_H
#define UVN_UTIL_SYS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* In a spin loop: let the sibling hyperthread (or the host) run. */
static inline void uvn_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield" ::: "memory");
#endif
}

/* Monotonic time in nanoseconds. */
uint64_t uvn_now_ns(void);

/* A cheap running count for shares of time, busy / (busy + idle): the TSC
 * where there is one (a few ns to read, against ~20 for the clock; its
 * rate is fixed, not the core's clock), else nanoseconds. The rate is not
 * known to the caller, so only ratios of it mean anything. */
static inline uint64_t uvn_cycles(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __builtin_ia32_rdtsc();
#else
	return uvn_now_ns();
#endif
}

/* Pin the calling thread to @cpu. @return 0 or -errno. */
int uvn_pin_thread(int cpu);

/*
 * Parse a CPU list such as "0,2-3" into @cpus (at most @max entries).
 * @return the number of CPUs, or -EINVAL.
 */
int uvn_parse_cpulist(const char *s, int *cpus, int max);

/*
 * CPU time (user + system) of process @pid (0: ourselves) in nanoseconds,
 * from /proc/PID/stat. @return 0 or -errno.
 */
int uvn_proc_cpu_ns(pid_t pid, uint64_t *ns);

/* CPU time of the calling thread in nanoseconds. */
uint64_t uvn_thread_cpu_ns(void);

#endif
