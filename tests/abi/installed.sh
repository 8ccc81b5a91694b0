#!/bin/bash
# SPDX-License-Identifier: MIT
# A program built the way a user of an installed uvnet builds it: install
# the build into a staging directory, compile the examples against it with
# nothing but pkg-config's flags (so only the installed headers and the
# exported symbols are there to use), and run them on the staged
# libuvnet.so.
# Usage: installed.sh MESON BUILD_DIR SOURCE_DIR LIBDIR CC [CFLAGS...]
#   LIBDIR: the configured prefix/libdir, absolute
set -euo pipefail
meson=$1 build=$2 src=$3 libdir=$4
shift 4
command -v pkg-config >/dev/null || { echo "SKIP: no pkg-config"; exit 77; }
stage=$(mktemp -d /tmp/uvnet-installed.XXXXXX)
echo_pid=
trap '[[ -n $echo_pid ]] && kill "$echo_pid" 2>/dev/null; rm -rf "$stage"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$meson" install -C "$build" --no-rebuild --quiet --destdir "$stage" --tags runtime,devel
# Only the staged uvnet.pc, its paths under the stage.
export PKG_CONFIG_LIBDIR=$stage$libdir/pkgconfig PKG_CONFIG_SYSROOT_DIR=$stage
cflags=$(pkg-config --cflags uvnet) libs=$(pkg-config --libs uvnet)
echo "pkg-config: $cflags $libs"
for ex in version_check hello_vhost echo_device; do
	"$@" -o "$stage/$ex" "$src/examples/$ex.c" $cflags $libs || fail "$ex does not build"
done

export LD_LIBRARY_PATH=$stage$libdir
# Whole output first: grep -q on a pipe can SIGPIPE ldd, which pipefail
# reports as a failure even when the line matched.
deps=$(ldd "$stage/version_check")
[[ $deps == *"=> $stage$libdir/libuvnet.so"* ]] ||
	fail "version_check does not load the staged libuvnet.so: $deps"
out=$("$stage/version_check") || fail "version_check: $out"
echo "$out"
# hello_vhost with no backend: the driver's open fails cleanly.
status=0
out=$("$stage/hello_vhost" "$stage/no-such.sock" 2>&1) || status=$?
echo "$out"
[[ $status == 1 && $out == *"cannot open $stage/no-such.sock"* ]] ||
	fail "hello_vhost without a backend: exit $status, want 1 and 'cannot open'"
# The two halves of a NIC, each through its public header only: hello_vhost
# (driver.h) sends 10 frames to echo_device (device.h), which sends them
# back and exits when hello_vhost leaves.
"$stage/echo_device" "$stage/echo.sock" >"$stage/echo.out" 2>&1 &
echo_pid=$!
for _ in $(seq 100); do [[ -S $stage/echo.sock ]] && break; sleep 0.05; done
out=$(timeout 20 "$stage/hello_vhost" "$stage/echo.sock" 10 2>&1) || fail "hello_vhost to echo_device: $out"
echo "$out" | tail -n 1
[[ $out == *"sent 10, received 10"* ]] || fail "hello_vhost to echo_device: $out"
for _ in $(seq 100); do kill -0 "$echo_pid" 2>/dev/null || break; sleep 0.05; done
wait "$echo_pid" || fail "echo_device: exit $?: $(cat "$stage/echo.out")"
echo_pid=
grep -q "echoed 10 frames" "$stage/echo.out" || fail "echo_device: $(cat "$stage/echo.out")"
