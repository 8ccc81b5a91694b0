/* SPDX-License-Identifier: MIT */
/*
 * Programs uvnet-perf runs (dpdk-testpmd, gnuplot): when one is missing,
 * uvnet-perf names the Debian packages that have it and stops. It never
 * installs anything itself (a packaged tool must not run apt-get);
 * scripts/perf installs what the options it is given need.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf.h"
#include "proc.h"

static bool in_path(const char *prog)
{
	char buf[PATH_MAX];
	const char *path = getenv("PATH");

	if (strchr(prog, '/'))
		return access(prog, X_OK) == 0;
	for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
		size_t n = strcspn(p, ":");

		snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, p, prog);
		if (access(buf, X_OK) == 0)
			return true;
		p += n + (p[n] == ':');
	}
	return false;
}

int pt_need(const struct pt_opts *o, const char *prog, const char *pkgs)
{
	(void)o;
	if (in_path(prog))
		return 0;
	fprintf(stderr, "uvnet-perf: %s not found: install the Debian packages %s"
		" (scripts/perf does it for the options that need them)\n", prog, pkgs);
	return -1;
}

/* Which of @pkgs dpkg does not know as installed (into @missing). @return -1 without dpkg */
static int missing_pkgs(const char *pkgs, char *missing, size_t n)
{
	char list[256], out[256];

	missing[0] = 0;
	snprintf(list, sizeof(list), "%s", pkgs);
	for (char *tok = strtok(list, " "); tok; tok = strtok(NULL, " ")) {
		char *argv[] = { (char *)"dpkg-query", (char *)"-W", (char *)"-f=${Status}", tok, NULL };
		int r = pt_capture(argv, out, sizeof(out));

		if (r == 127 || r < 0)
			return -1;
		if (!strstr(out, "ok installed"))
			snprintf(missing + strlen(missing), n - strlen(missing), "%s%s",
				 missing[0] ? " " : "", tok);
	}
	return 0;
}

int pt_need_pkgs(const struct pt_opts *o, const char *pkgs)
{
	char missing[256];

	(void)o;
	if (missing_pkgs(pkgs, missing, sizeof(missing)) || !missing[0])
		return 0;
	fprintf(stderr, "uvnet-perf: missing Debian packages: %s"
		" (scripts/perf installs them for the options that need them)\n", missing);
	return -1;
}
