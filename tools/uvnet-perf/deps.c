/* SPDX-License-Identifier: MIT */
/*
 * Programs uvnet-perf runs (dpdk-testpmd, gnuplot), installed from Debian
 * when missing: through the source tree's scripts/deps.sh when uvnet-perf
 * runs from a build directory, else apt-get directly. Never silently: the
 * user is told what is being installed and why.
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

static int install(const char *pkgs)
{
	char script[PATH_MAX], list[256], out[4096], *argv[16];
	unsigned n = 0;

	snprintf(list, sizeof(list), "%s", pkgs);
	snprintf(script, sizeof(script), "%s/scripts/deps.sh", UVN_SOURCE_ROOT);
	if (access(script, X_OK) == 0) {
		argv[n++] = script;
	} else {
		argv[n++] = (char *)"apt-get";
		argv[n++] = (char *)"install";
		argv[n++] = (char *)"-y";
		argv[n++] = (char *)"--no-install-recommends";
	}
	for (char *tok = strtok(list, " "); tok && n < 15; tok = strtok(NULL, " "))
		argv[n++] = tok;
	argv[n] = NULL;
	if (pt_capture(argv, out, sizeof(out)) != 0) {
		fprintf(stderr, "uvnet-perf: installing %s failed:\n%s\n", pkgs, out);
		return -1;
	}
	return 0;
}

int pt_need(const struct pt_opts *o, const char *prog, const char *pkgs)
{
	if (in_path(prog))
		return 0;
	if (o->no_install || geteuid() != 0) {
		fprintf(stderr, "uvnet-perf: %s not found; install the Debian packages %s%s\n", prog,
			pkgs, o->no_install ? "" : " (as root uvnet-perf does it itself)");
		return -1;
	}
	fprintf(stderr, "uvnet-perf: %s not found: installing the Debian packages %s\n", prog, pkgs);
	if (install(pkgs) || !in_path(prog)) {
		fprintf(stderr, "uvnet-perf: %s is still missing\n", prog);
		return -1;
	}
	return 0;
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

	if (missing_pkgs(pkgs, missing, sizeof(missing)) || !missing[0])
		return 0;
	if (o->no_install || geteuid() != 0) {
		fprintf(stderr, "uvnet-perf: missing Debian packages: %s%s\n", missing,
			o->no_install ? "" : " (as root uvnet-perf installs them itself)");
		return -1;
	}
	fprintf(stderr, "uvnet-perf: installing the Debian packages %s\n", missing);
	return install(missing);
}
