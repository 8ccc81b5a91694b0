#!/bin/bash
# tests/interop/lib/guest.sh - boot a Linux guest (Debian's kernel, busybox
# initramfs) in QEMU/TCG whose virtio-net NICs are served over vhost-user,
# run a guest script in it, and collect its results.
#
# Source it from a test (after lib/common.sh's uvn_test_init), or execute it:
#   guest.sh prepare            download/build what a boot needs (cached)
#   guest.sh run [OPTIONS]      boot once (same options as guest_run)
#
# Functions (see tests/interop/README.md for a worked example):
#   guest_prepare                     install/download/build (idempotent, locked)
#   guest_start [OPTIONS]             boot in the background; returns once QEMU runs
#   guest_wait  [--name N]            wait for power-off; returns the guest's status
#   guest_run   [OPTIONS]             guest_start + guest_wait
#   guest_stop  [--name N]            kill QEMU now
#   guest_watch [--name N] PID        abort the boot if PID dies (like --watch)
#   guest_result [N] KEY              print the last value of KEY (UVN_RESULT lines)
#   guest_feature [N] NIC BIT         print 0/1: virtio feature BIT negotiated on NIC
#   guest_dir [N]                     the guest's log dir
#
# OPTIONS:
#   --name N            instance name (default g0), several guests may run at once
#   --sock PATH         a vhost-user socket = one NIC; repeat for more NICs
#   --server            QEMU listens on the socket(s) (backend connects as client);
#                       default: QEMU connects to a listening backend
#   --mac MAC           MAC of the next NIC (default 52:54:00:a5:<guest#>:<nic#>)
#   --ip ADDR/PFX       address of the next NIC inside the guest (optional)
#   --queues N          queue pairs per NIC (mq=on when N > 1)
#   --mrg-rxbuf on|off  --packed on|off  --event-idx on|off  --indirect on|off
#   --nic-opt K=V       any other virtio-net-pci property, for every NIC
#   --msix              keep MSI-X (default vectors=0: QEMU 7.2 + TCG + vhost-user
#                       segfaults with MSI-X)
#   --mem MB            guest RAM, memfd share=on (default 256; or with a unit: 262304k)
#   --smp N             vCPUs (default 1)
#   --script FILE       guest script, run by /init as /uvn/test.sh
#   --file SRC[:DEST]   extra file in the guest (default DEST /uvn/files/<name>)
#   --env K=V           exported in the guest (repeatable)
#   --append ARGS       extra kernel command line
#   --qemu-arg ARG      extra QEMU argument (repeatable)
#   --accel SPEC        QEMU's -accel (default tcg), e.g. tcg,thread=single
#   --qmp PATH          a QMP socket QEMU listens on (server=on,wait=off)
#   --incoming URI      wait for a migration (-incoming URI) instead of booting
#   --watch PID         abort the boot if this process (the backend) dies
#   --timeout S         wall limit for the whole boot (default 300)
#
# Exit status of guest_wait/guest_run: the guest script's exit status (from
# "UVN_DONE rc=N"; 90-99 = harness error inside the guest), 124 timeout,
# 125 QEMU exited without the done marker, 126 a watched backend died.
#
# Environment: UVN_INTEROP_CACHE (default /var/tmp/uvnet-interop),
#   UVN_GUEST_KERNEL_PKG (default: what linux-image-amd64 depends on),
#   UVN_GUEST_TOOLS (default "ethtool iperf3"), UVN_GUEST_EXTRA_MODULES
#   (default "pktgen veth tun 8021q"), UVN_QEMU (default qemu-system-x86_64),
#   UVN_GUEST_VERBOSE=1 (copy the console to stderr), UVN_GUEST_PVH=0 (boot
#   the compressed bzImage instead of the extracted vmlinux).

# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

GUEST_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
GUEST_BOOT_MODULES="virtio_pci virtio_net"
GUEST_EXTRA_MODULES=${UVN_GUEST_EXTRA_MODULES-pktgen veth tun 8021q}
GUEST_TOOLS=${UVN_GUEST_TOOLS-ethtool iperf3}
UVN_QEMU=${UVN_QEMU:-qemu-system-x86_64}

# where each tool lives in its package, and the packages it needs
declare -A GUEST__TOOL_PATH=([ethtool]=sbin/ethtool [iperf3]=usr/bin/iperf3)
declare -A GUEST__TOOL_DEBS=([ethtool]="ethtool" [iperf3]="iperf3 libiperf0 libsctp1")

GUEST_VMLINUZ=
GUEST_INITRD=
declare -A GUEST_PID=() GUEST_DEADLINE=() GUEST_T0=() GUEST_WATCH=()
GUEST_COUNT=0

# ------------------------------------------------------------------ prepare
guest__deb() {   # guest__deb PKG  -> path of the cached .deb (downloads it)
	local pkg=$1 f
	mkdir -p "$UVN_CACHE/debs"
	f=$(compgen -G "$UVN_CACHE/debs/${pkg}_*.deb" | sort -V | tail -n 1) || true
	if [[ -z "$f" ]]; then
		(cd "$UVN_CACHE/debs" && apt-get download "$pkg" >>"$UVN_CACHE/debs/download.log" 2>&1) ||
			{ [[ $(id -u) == 0 ]] && apt-get update >>"$UVN_CACHE/debs/download.log" 2>&1 &&
				(cd "$UVN_CACHE/debs" && apt-get download "$pkg" >>"$UVN_CACHE/debs/download.log" 2>&1); } ||
			return 1
		f=$(compgen -G "$UVN_CACHE/debs/${pkg}_*.deb" | sort -V | tail -n 1) || return 1
	fi
	echo "$f"
}

guest__kernel_pkg() {
	local p=${UVN_GUEST_KERNEL_PKG:-} memo=$UVN_CACHE/kernel-pkg
	[[ -n "$p" ]] && { echo "$p"; return 0; }
	# apt-cache takes seconds: reuse the answer until apt's lists change
	if [[ -s "$memo" ]] && [[ -z "$(find /var/lib/apt/lists -maxdepth 1 -newer "$memo" -name '*Packages*' 2>/dev/null | head -n 1)" ]]; then
		cat "$memo"
		return 0
	fi
	p=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
	if [[ -z "$p" && $(id -u) == 0 ]]; then
		apt-get update >/dev/null 2>&1 || true
		p=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
	fi
	[[ -n "$p" ]] || return 1
	echo "$p" >"$memo"
	echo "$p"
}

# guest__copy_module_closure KROOT KVER MOD DESTDIR  - copy MOD and its
# dependencies (decompressed) into DESTDIR and write DESTDIR/MOD.order
guest__copy_module_closure() {
	local kroot=$1 kver=$2 mod=$3 dest=$4 line f b
	: >"$dest/$mod.order"
	while read -r line; do
		case $line in
		insmod\ *) ;;
		builtin\ *) continue ;;
		*) continue ;;
		esac
		f=$(awk '{print $2}' <<<"$line")
		b=$(basename "$f")
		b=${b%.xz}
		b=${b%.zst}
		b=${b%.gz}
		if [[ ! -f "$dest/$b" ]]; then
			case $f in
			*.xz) xz -dc "$f" >"$dest/$b" ;;
			*.zst) zstd -qdc "$f" >"$dest/$b" ;;
			*.gz) gzip -dc "$f" >"$dest/$b" ;;
			*) cp "$f" "$dest/$b" ;;
			esac
		fi
		echo "$b" >>"$dest/$mod.order"
	done < <(modprobe -d "$kroot" -S "$kver" --show-depends "$mod" 2>&1 || echo "missing $mod")
	grep -q . "$dest/$mod.order" || modprobe -d "$kroot" -S "$kver" --show-depends "$mod" 2>/dev/null |
		grep -q '^builtin' || { uvn_log "kernel module $mod not found"; return 1; }
}

# guest__add_tool ROOT STAGE TOOL  - copy a binary and its libraries
guest__add_tool() {
	local root=$1 stage=$2 tool=$3 bin libpath l missing
	bin=$stage/${GUEST__TOOL_PATH[$tool]}
	[[ -x "$bin" ]] || { uvn_log "tool $tool: $bin missing"; return 1; }
	libpath=$stage/usr/lib/x86_64-linux-gnu:$stage/lib/x86_64-linux-gnu
	missing=$(LD_LIBRARY_PATH=$libpath ldd "$bin" | awk '/not found/{print $1}')
	[[ -z "$missing" ]] || { uvn_log "tool $tool: libraries not found: $missing"; return 1; }
	cp "$bin" "$root/usr/bin/$tool"
	for l in $(LD_LIBRARY_PATH=$libpath ldd "$bin" | awk '/=> \//{print $3}'); do
		cp -L "$l" "$root/lib/x86_64-linux-gnu/"
	done
}

# guest__extract_vmlinux BZIMAGE OUT  - the uncompressed ELF kernel inside a
# bzImage (like the kernel's scripts/extract-vmlinux).  QEMU boots it through
# its PVH entry point, skipping the in-guest decompression that costs ~5 s
# under TCG.
guest__extract_vmlinux() {
	local bz=$1 out=$2 magic off dec
	for magic in xz zstd gzip; do
		case $magic in
		xz) off=$(LC_ALL=C grep -abo $'\xfd7zXZ' "$bz" | head -n 1 | cut -d: -f1); dec="xz -dc" ;;
		zstd) off=$(LC_ALL=C grep -abo $'\x28\xb5\x2f\xfd' "$bz" | head -n 1 | cut -d: -f1); dec="zstd -qdc" ;;
		gzip) off=$(LC_ALL=C grep -abo $'\x1f\x8b\x08' "$bz" | head -n 1 | cut -d: -f1); dec="gzip -dc" ;;
		esac
		[[ -n "$off" ]] || continue
		tail -c +"$((off + 1))" "$bz" | $dec >"$out.tmp" 2>/dev/null || true
		if [[ "$(head -c 4 "$out.tmp" | od -An -tx1 | tr -d ' ')" == 7f454c46 ]]; then
			mv -f "$out.tmp" "$out"
			return 0
		fi
	done
	rm -f "$out.tmp"
	return 1
}

guest__build_initramfs() {   # guest__build_initramfs KROOT KVER OUT
	local kroot=$1 kver=$2 out=$3 tmp R a m t d
	tmp=$(mktemp -d "$UVN_CACHE/build.XXXXXX")
	R=$tmp/root
	mkdir -p "$R"/{bin,sbin,usr/bin,usr/sbin,dev,proc,sys,tmp,run,etc,uvn,lib/modules,lib/x86_64-linux-gnu,lib64}
	cp /bin/busybox "$R/bin/busybox"
	for a in $("$R/bin/busybox" --list); do
		[[ "$a" == busybox || -e "$R/bin/$a" ]] || ln -s busybox "$R/bin/$a"
	done
	mknod -m 600 "$R/dev/console" c 5 1 2>/dev/null || true
	mknod -m 666 "$R/dev/null" c 1 3 2>/dev/null || true
	for m in $GUEST_BOOT_MODULES $GUEST_EXTRA_MODULES; do
		guest__copy_module_closure "$kroot" "$kver" "$m" "$R/lib/modules" || { rm -rf "$tmp"; return 1; }
	done
	echo "$GUEST_BOOT_MODULES" >"$R/lib/modules/boot.list"
	if [[ -n "$GUEST_TOOLS" ]]; then
		mkdir -p "$tmp/stage"
		for t in $GUEST_TOOLS; do
			for d in ${GUEST__TOOL_DEBS[$t]:-}; do
				d=$(compgen -G "$UVN_CACHE/debs/${d}_*.deb" | sort -V | tail -n 1) && dpkg -x "$d" "$tmp/stage"
			done
			guest__add_tool "$R" "$tmp/stage" "$t" || uvn_log "WARNING: guest will not have $t"
		done
		cp -L /lib64/ld-linux-x86-64.so.2 "$R/lib64/"
	fi
	printf 'root:x:0:0:root:/:/bin/sh\n' >"$R/etc/passwd"
	printf 'root:x:0:\n' >"$R/etc/group"
	install -m 755 "$GUEST_LIB_DIR/guest-init.sh" "$R/init"
	install -m 644 "$GUEST_LIB_DIR/guest-lib.sh" "$R/uvn/lib.sh"
	(cd "$R" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet | gzip -6) >"$tmp/initramfs.cpio.gz"
	# pad to 512 bytes so a second (per-boot) archive can be appended
	truncate -s "%512" "$tmp/initramfs.cpio.gz"
	mv -f "$tmp/initramfs.cpio.gz" "$out"
	rm -rf "$tmp"
}

# guest_prepare  - make sure QEMU, the kernel and the initramfs are ready.
# Sets GUEST_VMLINUZ and GUEST_INITRD.  Skips the test when impossible.
guest_prepare() {
	[[ -n "$GUEST_INITRD" && -f "$GUEST_INITRD" ]] && return 0
	uvn_deps qemu-system-x86 busybox-static kmod cpio xz-utils
	local lockfd kpkg kdeb kver t d stamp hash tmp
	uvn_lock lockfd guest
	kpkg=$(guest__kernel_pkg) || true
	if [[ -n "$kpkg" ]]; then
		kdeb=$(guest__deb "$kpkg") || kdeb=
	fi
	if [[ -z "${kdeb:-}" ]]; then   # offline: fall back to the newest cached kernel
		kdeb=$(compgen -G "$UVN_CACHE/debs/linux-image-*-amd64_*.deb" | sort -V | tail -n 1) ||
			{ uvn_unlock "$lockfd"; uvn_skip "cannot get a Debian linux-image package (apt-get download failed)"; }
		uvn_log "using cached kernel package $(basename "$kdeb")"
	fi
	for t in $GUEST_TOOLS; do
		for d in ${GUEST__TOOL_DEBS[$t]:-}; do
			guest__deb "$d" >/dev/null || uvn_log "WARNING: cannot download $d; guest will lack $t"
		done
	done
	# everything that goes into the initramfs is part of its stamp
	stamp=$(
		echo "kernel $(basename "$kdeb")"
		echo "busybox $(dpkg-query -W -f='${Version}' busybox-static)"
		echo "modules $GUEST_BOOT_MODULES / $GUEST_EXTRA_MODULES"
		echo "tools $GUEST_TOOLS"
		for t in $GUEST_TOOLS; do for d in ${GUEST__TOOL_DEBS[$t]:-}; do
			basename "$(compgen -G "$UVN_CACHE/debs/${d}_*.deb" | sort -V | tail -n 1)" 2>/dev/null || echo "$d missing"
		done; done
		sha256sum "$GUEST_LIB_DIR/guest-init.sh" "$GUEST_LIB_DIR/guest-lib.sh" | cut -c1-64
		declare -f guest__build_initramfs guest__copy_module_closure guest__add_tool | sha256sum | cut -c1-64
	)
	hash=$(sha256sum <<<"$stamp" | cut -c1-16)
	GUEST_INITRD=$UVN_CACHE/initramfs-$hash.cpio.gz
	kver=$(basename "$kdeb" | sed -E 's/^linux-image-(.*)_[^_]*_amd64\.deb$/\1/')
	GUEST_VMLINUZ=$UVN_CACHE/vmlinux-$kver
	[[ "${UVN_GUEST_PVH:-1}" == 1 ]] || GUEST_VMLINUZ=$UVN_CACHE/vmlinuz-$kver
	if [[ ! -f "$GUEST_INITRD" || ! -f "$GUEST_VMLINUZ" ]]; then
		uvn_log "unpacking $(basename "$kdeb")"
		tmp=$(mktemp -d "$UVN_CACHE/kernel.XXXXXX")
		if ! dpkg -x "$kdeb" "$tmp" || ! depmod -b "$tmp" "$kver"; then
			rm -rf "$tmp"
			uvn_unlock "$lockfd"
			uvn_die "cannot unpack $kdeb"
		fi
		if [[ ! -f "$GUEST_VMLINUZ" ]]; then
			if [[ "${UVN_GUEST_PVH:-1}" == 1 ]] && grep -qx 'CONFIG_PVH=y' "$tmp/boot/config-$kver" &&
				guest__extract_vmlinux "$tmp/boot/vmlinuz-$kver" "$GUEST_VMLINUZ"; then
				uvn_log "kernel: uncompressed vmlinux (QEMU boots it through PVH)"
			else
				cp "$tmp/boot/vmlinuz-$kver" "$GUEST_VMLINUZ.tmp" && mv -f "$GUEST_VMLINUZ.tmp" "$GUEST_VMLINUZ"
			fi
		fi
		if [[ ! -f "$GUEST_INITRD" ]]; then
			uvn_log "building guest initramfs ($kver, stamp $hash)"
			if ! guest__build_initramfs "$tmp" "$kver" "$GUEST_INITRD"; then
				rm -rf "$tmp"
				uvn_unlock "$lockfd"
				uvn_die "initramfs build failed"
			fi
			printf '%s\n' "$stamp" >"$GUEST_INITRD.stamp"
			# keep the 3 newest initramfs images
			ls -1t "$UVN_CACHE"/initramfs-*.cpio.gz | tail -n +4 | while read -r t; do rm -f "$t" "$t.stamp"; done
			uvn_log "initramfs ready: $GUEST_INITRD ($(du -k "$GUEST_INITRD" | cut -f1) KiB)"
		fi
		rm -rf "$tmp"
	fi
	uvn_unlock "$lockfd"
}

# ------------------------------------------------------------------ launch
guest__sq() { printf "'%s'" "${1//\'/\'\\\'\'}"; }   # single-quote for the guest's sh

guest_start() {
	local name=g0 server=0 queues=1 mrg= packed= evidx= indirect= msix=0 mem=256 smp=1
	local timeout=300 script= append= watch= accel=tcg qmp= incoming=
	local -a socks=() macs=() ips=() envs=() files=() nicopts=() qargs=()
	while (($#)); do
		case $1 in
		--name) name=$2; shift 2 ;;
		--sock) socks+=("$2"); shift 2 ;;
		--server) server=1; shift ;;
		--mac) macs+=("$2"); shift 2 ;;
		--ip) ips+=("$2"); shift 2 ;;
		--queues) queues=$2; shift 2 ;;
		--mrg-rxbuf) mrg=$2; shift 2 ;;
		--packed) packed=$2; shift 2 ;;
		--event-idx) evidx=$2; shift 2 ;;
		--indirect) indirect=$2; shift 2 ;;
		--nic-opt) nicopts+=("$2"); shift 2 ;;
		--msix) msix=1; shift ;;
		--mem) mem=$2; shift 2 ;;
		--smp) smp=$2; shift 2 ;;
		--script) script=$2; shift 2 ;;
		--file) files+=("$2"); shift 2 ;;
		--env) envs+=("$2"); shift 2 ;;
		--append) append=$2; shift 2 ;;
		--qemu-arg) qargs+=("$2"); shift 2 ;;
		--accel) accel=$2; shift 2 ;;
		--qmp) qmp=$2; shift 2 ;;
		--incoming) incoming=$2; shift 2 ;;
		--watch) watch=$2; shift 2 ;;
		--timeout) timeout=$2; shift 2 ;;
		*) uvn_die "guest_start: unknown option $1" ;;
		esac
	done
	((${#socks[@]} >= 1)) || uvn_die "guest_start: need at least one --sock"
	[[ -z "${GUEST_PID[$name]:-}" ]] || uvn_die "guest $name is already running"
	[[ -z "$script" || -f "$script" ]] || uvn_die "guest script $script not found"
	guest_prepare
	local gi=$GUEST_COUNT
	GUEST_COUNT=$((GUEST_COUNT + 1))
	local dir=$UVN_LOG_DIR/guest-$name
	rm -rf "$dir"
	mkdir -p "$dir"

	# the per-boot archive: /uvn/env, /uvn/test.sh, extra files
	local st=$UVN_RUN/guest-$name.d i f src dst kv
	rm -rf "$st"
	mkdir -p "$st/uvn/files"
	for i in "${!socks[@]}"; do
		[[ -n "${macs[$i]:-}" ]] || macs[$i]=$(printf '52:54:00:a5:%02x:%02x' "$gi" "$i")
	done
	{
		echo "export UVN_NICS=${#socks[@]} UVN_GUEST_NAME=$(guest__sq "$name") UVN_QUEUES=$queues"
		for i in "${!socks[@]}"; do
			echo "export UVN_MAC$i=${macs[$i]}"
			[[ -n "${ips[$i]:-}" ]] && echo "export UVN_IP$i=$(guest__sq "${ips[$i]}")"
		done
		for kv in "${envs[@]}"; do
			[[ "$kv" =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || uvn_die "--env $kv: want NAME=VALUE"
			echo "export ${kv%%=*}=$(guest__sq "${kv#*=}")"
		done
	} >"$st/uvn/env"
	[[ -n "$script" ]] && cp "$script" "$st/uvn/test.sh"
	for f in "${files[@]}"; do
		src=${f%%:*}
		dst=/uvn/files/$(basename "$src")
		[[ "$f" == *:* ]] && dst=${f#*:}
		mkdir -p "$st$(dirname "$dst")"
		cp -L "$src" "$st$dst"
	done
	cp "$st/uvn/env" "$dir/guest-env.sh"
	(cd "$st" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet | gzip -1) >"$dir/extra.cpio.gz"
	local initrd=$UVN_RUN/guest-$name.initrd
	cat "$GUEST_INITRD" "$dir/extra.cpio.gz" >"$initrd"

	# NICs
	local -a nicargs=()
	local chardev dev s
	for i in "${!socks[@]}"; do
		s=${socks[$i]}
		chardev="socket,id=chr$i,path=$s"
		if ((server)); then
			rm -f "$s"
			chardev+=",server=on,wait=off"
		else
			[[ -S "$s" ]] || uvn_die "guest $name: vhost-user socket $s does not exist (is the backend listening?)"
		fi
		dev="virtio-net-pci,netdev=net$i,mac=${macs[$i]},romfile="
		((queues > 1)) && dev+=",mq=on"
		((msix)) && dev+=",vectors=$((2 * queues + 2))" || dev+=",vectors=0"
		[[ -n "$mrg" ]] && dev+=",mrg_rxbuf=$mrg"
		[[ -n "$packed" ]] && dev+=",packed=$packed"
		[[ -n "$evidx" ]] && dev+=",event_idx=$evidx"
		[[ -n "$indirect" ]] && dev+=",indirect_desc=$indirect"
		for kv in "${nicopts[@]}"; do dev+=",$kv"; done
		nicargs+=(-chardev "$chardev" -netdev "vhost-user,id=net$i,chardev=chr$i,queues=$queues" -device "$dev")
	done
	[[ -n "$qmp" ]] && qargs+=(-qmp "unix:$qmp,server=on,wait=off")
	[[ -n "$incoming" ]] && qargs+=(-incoming "$incoming")
	local msize=$mem
	[[ "$mem" =~ ^[0-9]+$ ]] && msize=${mem}M
	local -a cmd=("$UVN_QEMU" -name "uvn-$name" -accel "$accel" -M pc -m "$msize" -smp "$smp"
		-object "memory-backend-memfd,id=mem0,size=$msize,share=on" -numa node,memdev=mem0
		-nodefaults -no-user-config -display none -no-reboot -monitor none
		-serial "file:$dir/console.log" -serial "file:$dir/results.log"
		-kernel "$GUEST_VMLINUZ" -initrd "$initrd"
		-append "console=ttyS0 panic=-1 loglevel=4 ipv6.disable=1 $append"
		"${nicargs[@]}" "${qargs[@]}")
	printf '%q ' "${cmd[@]}" >"$dir/qemu.cmd"
	echo >>"$dir/qemu.cmd"
	: >"$dir/console.log"
	: >"$dir/results.log"
	local pid
	uvn_spawn pid "qemu guest $name" "$dir/qemu.log" /dev/null "${cmd[@]}"
	GUEST_PID[$name]=$pid
	GUEST_T0[$name]=$SECONDS
	GUEST_DEADLINE[$name]=$((SECONDS + timeout))
	GUEST_WATCH[$name]=$watch
	uvn_log "guest $name: ${#socks[@]} NIC(s) $( ((server)) && echo 'QEMU=server' || echo 'QEMU=client')" \
		"queues=$queues mrg_rxbuf=${mrg:-default} packed=${packed:-default} event_idx=${evidx:-default}" \
		"indirect=${indirect:-default}, console: $dir/console.log"
	if [[ "${UVN_GUEST_VERBOSE:-0}" == 1 ]]; then
		local tpid
		uvn_spawn tpid "console tail $name" /dev/stderr /dev/null tail -n +1 -f "$dir/console.log" --pid="$pid"
	fi
	if ((server)); then   # QEMU creates the listening sockets before it blocks waiting for a client
		for s in "${socks[@]}"; do
			uvn_wait_for 30 "QEMU to listen on $s" guest__sock_or_dead "$s" "$pid" ||
				uvn_die "guest $name: QEMU did not create $s"
			uvn_alive "$pid" || { tail -n 20 "$dir/qemu.log" >&2; uvn_die "guest $name: QEMU exited at start"; }
		done
	fi
}
guest__sock_or_dead() { [[ -S "$1" ]] || ! uvn_alive "$2"; }

guest_dir() { echo "$UVN_LOG_DIR/guest-${1:-g0}"; }

# guest_wait [--name N]  - wait for the guest to power off (or time out)
guest_wait() {
	local name=g0
	[[ "${1:-}" == --name ]] && name=$2
	local pid=${GUEST_PID[$name]:-} dir rc=0 qrc=0 why= w
	[[ -n "$pid" ]] || uvn_die "guest_wait: guest $name is not running"
	dir=$(guest_dir "$name")
	while uvn_alive "$pid"; do
		if ((SECONDS >= GUEST_DEADLINE[$name])); then
			why=timeout
			break
		fi
		w=${GUEST_WATCH[$name]}
		if [[ -n "$w" ]] && ! uvn_alive "$w"; then
			why=backend
			break
		fi
		uvn_sleep 0.2
	done
	if [[ -n "$why" ]]; then
		uvn_log "guest $name: $([[ $why == timeout ]] && echo "timed out after $((SECONDS - GUEST_T0[$name]))s" ||
			echo "watched backend pid $w died"), killing QEMU"
		uvn_kill "$pid" 5
		qrc=killed
	else
		uvn_reap "$pid" || qrc=$?
	fi
	unset "GUEST_PID[$name]"
	local done_line
	done_line=$(tr -d '\r' <"$dir/results.log" | grep -a '^UVN_DONE ' | tail -n 1) || true
	uvn_log "guest $name: QEMU exit status $qrc after $((SECONDS - GUEST_T0[$name]))s"
	tr -d '\r' <"$dir/results.log" | grep -a '^UVN_RESULT ' | sed 's/^/    /' >&2 || true
	if [[ -n "$done_line" ]]; then
		rc=$(sed -E 's/.*rc=([0-9]+).*/\1/' <<<"$done_line")
		uvn_log "guest $name: $done_line"
	else
		case $why in timeout) rc=124 ;; backend) rc=126 ;; *) rc=125 ;; esac
		uvn_log "guest $name: no UVN_DONE marker (status $rc); last console lines:"
		tail -n 25 "$dir/console.log" | tr -d '\r' | sed 's/^/    | /' >&2
		[[ -s "$dir/qemu.log" ]] && { uvn_log "qemu.log:"; tail -n 20 "$dir/qemu.log" | sed 's/^/    | /' >&2; }
	fi
	if ((rc != 0)) && [[ -n "$done_line" ]]; then
		uvn_log "guest $name: last console lines:"
		tail -n 25 "$dir/console.log" | tr -d '\r' | sed 's/^/    | /' >&2
	fi
	return "$rc"
}

# guest_watch [--name N] PID  - abort the boot if PID (a backend started
# after the guest, e.g. one that connects to QEMU --server) dies
guest_watch() {
	local name=g0
	[[ "${1:-}" == --name ]] && { name=$2; shift 2; }
	GUEST_WATCH[$name]=$1
}

# guest_run [OPTIONS]  - boot, wait, return the guest's status
guest_run() {
	local name=g0 i
	for ((i = 1; i <= $#; i++)); do [[ "${!i}" == --name ]] && { i=$((i + 1)); name=${!i}; }; done
	guest_start "$@"
	guest_wait --name "$name"
}

# guest_stop [--name N]  - kill the guest now
guest_stop() {
	local name=g0
	[[ "${1:-}" == --name ]] && name=$2
	[[ -n "${GUEST_PID[$name]:-}" ]] || return 0
	uvn_kill "${GUEST_PID[$name]}" 5
	unset "GUEST_PID[$name]"
}

# guest_result [NAME] KEY  - print the last value reported for KEY
# (status 1 when the guest never reported it)
guest_result() {
	local name=g0 key
	if (($# >= 2)); then name=$1; key=$2; else key=$1; fi
	tr -d '\r' <"$(guest_dir "$name")/results.log" | awk -v k="$key=" '
		$1 == "UVN_RESULT" { for (i = 2; i <= NF; i++) if (index($i, k) == 1) { v = substr($i, length(k) + 1); found = 1 } }
		END { if (!found) exit 1; print v }'
}

# guest_feature [NAME] NIC BIT  - print 0/1 for a negotiated virtio feature bit
guest_feature() {
	local name=g0
	if (($# >= 3)); then name=$1; shift; fi
	local f
	f=$(guest_result "$name" "nic$1.features") || return 1
	echo "${f:$2:1}"
}

# ------------------------------------------------------------------ main
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
	case ${1:-} in
	prepare)
		uvn_test_init guest-prepare
		guest_prepare
		echo "kernel:    $GUEST_VMLINUZ"
		echo "initramfs: $GUEST_INITRD"
		;;
	run)
		shift
		uvn_test_init "guest-run-$$"
		guest_run "$@"
		;;
	*)
		sed -n '2,/^# shellcheck source/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
		exit 2
		;;
	esac
fi
