#!/bin/bash
# Linux reference side of baremm's mm benchmarks: build ref.c as /init of an initramfs,
# boot a stock Debian kernel in the same QEMU as baremm, print the results as a table.
# See tools/linux-ref/README.md.
#
#   tools/linux-ref/run.sh                 # the default matrix (4 boots, see below)
#   tools/linux-ref/run.sh boot SMP MODE [ONLY] [EXTRA_APPEND]
#        SMP = 1|2, MODE = icount|tcg|model:PROFILE, ONLY = all|pf|sparse|seed002|zap
#   tools/linux-ref/run.sh table LOG...    # table from saved serial logs
#   tools/linux-ref/run.sh figures LOG     # one boot's medians as reference.json figures
#
# Environment: LREF_OUT (output directory, default results/linux-ref-<timestamp>),
# LREF_KERNEL (default: newest /boot/vmlinuz-*), LREF_TIMEOUT (seconds per boot, 1800),
# LREF_CPU (QEMU -cpu, default max; max,-erms,-fsrm makes Linux clear pages with rep stosq),
# BAREMM_MODEL_ARGS (further cost-model plugin arguments, e.g. core=ooo; in the log name).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
ICOUNT="shift=0,sleep=off,align=off"
BASE_APPEND="console=ttyS0 quiet transparent_hugepage=never"

need_root() { [ "$(id -u)" = 0 ] && echo "" || echo sudo; }

install_deps() {
	local pkgs=()
	command -v gcc >/dev/null || pkgs+=(gcc libc6-dev)
	[ -e /usr/lib/x86_64-linux-gnu/libc.a ] || pkgs+=(libc6-dev)
	command -v cpio >/dev/null || pkgs+=(cpio)
	command -v gzip >/dev/null || pkgs+=(gzip)
	command -v qemu-system-x86_64 >/dev/null || pkgs+=(qemu-system-x86)
	ls /boot/vmlinuz-* >/dev/null 2>&1 || pkgs+=(linux-image-amd64)
	if [ ${#pkgs[@]} -gt 0 ]; then
		echo "linux-ref: installing ${pkgs[*]}" >&2
		$(need_root) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${pkgs[@]}" >&2
	fi
	# QEMU >= 8 is needed for -icount with -smp 2 (QEMU 7.2 hangs on IPIs there;
	# README.md: tools/install-deps.sh installs QEMU 10 from bookworm-backports)
	local v
	v=$(qemu-system-x86_64 --version | sed -n 's/.*version \([0-9]*\)\..*/\1/p')
	if [ "${v:-0}" -lt 8 ]; then
		echo "linux-ref: QEMU $v is too old for -icount -smp 2; run tools/install-deps.sh" >&2
		exit 1
	fi
}

kernel() {
	if [ -n "${LREF_KERNEL:-}" ]; then echo "$LREF_KERNEL"; return; fi
	ls /boot/vmlinuz-* | sort -V | tail -1
}

build_initrd() {
	local out=$1 tmp
	tmp=$(mktemp -d)
	gcc -static -O2 -pthread -Wall -Wextra -o "$tmp/init" "$HERE/ref.c"
	(cd "$tmp" && echo init | cpio -o -H newc --quiet | gzip -9 >"$out/initrd.gz")
	cp "$tmp/init" "$out/init"
	rm -rf "$tmp"
}

# The cost-model plugin's arguments for MODE model:PROFILE (docs/COSTMODEL.md); its figures
# go to LOG.model. The plugin reads page tables through the direct map at Linux's default
# page_offset_base, so KASLR is off, and walks 4 levels, so 5-level paging is off.
model_args() {
	local profile=$1 log=$2 so="$ROOT/build/model/costmodel.so" cfg
	case "$profile" in */* | *.cfg) cfg=$profile ;; *) cfg="$ROOT/model/profiles/$profile.cfg" ;; esac
	[ -f "$so" ] || { echo "linux-ref: $so missing: run make" >&2; exit 1; }
	[ -f "$cfg" ] || { echo "linux-ref: no cost-model profile $cfg" >&2; exit 1; }
	# BAREMM_MODEL_ARGS: further plugin arguments, as for baremm (core=ooo, causal=off)
	echo "-plugin $so,profile=$cfg,out=$log.model${BAREMM_MODEL_ARGS:+,$BAREMM_MODEL_ARGS}"
}

# boot OUT SMP MODE ONLY EXTRA -> OUT/linux-smpSMP-MODE-ONLY.log
boot() {
	local out=$1 smp=$2 mode=$3 only=$4 extra=${5:-} log append
	local -a ic=() plug=()
	[ "$mode" = icount ] && ic=(-icount "$ICOUNT")
	append="$BASE_APPEND $extra"
	case "$mode" in
	model:*) ic=(-icount "$ICOUNT"); append="$append nokaslr no5lvl" ;;
	icount | tcg) ;;
	*) echo "linux-ref: MODE must be icount, tcg or model:PROFILE (got $mode)" >&2; exit 2 ;;
	esac
	[ "$only" != all ] && append="$append lref_only=$only"
	local margs=
	[ "${mode%%:*}" = model ] && margs=${BAREMM_MODEL_ARGS:-}
	log="$out/linux-smp$smp-${mode/:/-}${margs:+-$(echo "$margs" | tr -c 'a-zA-Z0-9=\n' _)}-$only${LREF_CPU:+-$(echo "$LREF_CPU" | tr -c 'a-zA-Z0-9=\n' _)}${extra:+-$(echo "$extra" | tr -c 'a-zA-Z0-9=\n' _)}.log"
	# shellcheck disable=SC2207
	[ "${mode%%:*}" = model ] && { rm -f "$log.model"; plug=($(model_args "${mode#model:}" "$log")); }
	local cmd=(qemu-system-x86_64 -machine q35 -cpu "${LREF_CPU:-max}" -m 512M -smp "$smp"
		-kernel "$(kernel)" -initrd "$out/initrd.gz" -append "$append"
		-nographic -no-reboot "${ic[@]}" "${plug[@]}")
	echo "linux-ref: ${cmd[*]}" >&2
	echo "# ${cmd[*]}" >"$log"
	timeout "${LREF_TIMEOUT:-1800}" "${cmd[@]}" </dev/null 2>&1 | tr -d '\r' >>"$log" || true
	if ! grep -q '^LREF-END' "$log"; then
		echo "linux-ref: boot did not finish, see $log" >&2
		grep LREF-ERROR "$log" >&2 || tail -5 "$log" >&2
		return 1
	fi
	echo "$log"
}

# table LOG...: one row per result line, median instructions (icount) or TSC ticks (tcg);
# a model boot's rows are the cost model's figures (LOG.model), in model cycles.
table() {
	printf '%-22s %-28s %-5s %-7s %12s %12s %12s\n' bench case smp mode median min max
	local f smp mode
	for f in "$@"; do
		smp=$(sed -n 's/.* -smp \([0-9]*\) .*/\1/p' "$f" | head -1)
		if grep -q -- '-plugin' "$f"; then mode=model
		elif grep -q -- '-icount' "$f"; then mode=icount; else mode=tcg; fi
		if [ "$mode" = model ]; then
			# the plugin prints raw runs; baremm's log parser computes the figures
			"$ROOT/tools/baremm" parse --model-output "$f.model" | grep '^bench=lref[.]'
		else
			grep '^LREF bench=' "$f" | cut -d' ' -f2-
		fi | awk -v smp="$smp" -v mode="$mode" '{
			for (i = 1; i <= NF; i++) { k = index($i, "="); v[substr($i, 1, k - 1)] = substr($i, k + 1) }
			sub(/^lref[.]/, "", v["bench"])
			printf "%-22s %-28s %-5s %-7s %12s %12s %12s\n", v["bench"], v["case"], smp, mode, v["median"], v["min"], v["max"]
		}'
	done
}

# figures LOG: the medians of one boot as the "figures" object of a set in
# reference.json ("<bench> <case>": median; a model boot's from LOG.model)
figures() {
	table "$1" | awk 'NR > 1 { printf "%s\"%s %s\": %s", (n++ ? ",\n" : "{\n"), $1, $2, $5 }
		END { print "\n}" }'
}

main() {
	local cmd=${1:-matrix}
	case "$cmd" in
	table) shift; table "$@"; return ;;
	figures) figures "$2"; return ;;
	boot | matrix) ;;
	*) sed -n '2,14p' "$0"; exit 2 ;;
	esac
	install_deps
	local out=${LREF_OUT:-$ROOT/results/linux-ref-$(date +%Y%m%d-%H%M%S)}
	mkdir -p "$out"
	build_initrd "$out"
	echo "linux-ref: kernel $(kernel), output $out" >&2
	local logs=()
	if [ "$cmd" = boot ]; then
		logs+=("$(boot "$out" "${2:-1}" "${3:-icount}" "${4:-all}" "${5:-}")")
	else
		# deterministic: everything on 1 CPU, the zaps with a second CPU; then plain TCG
		logs+=("$(boot "$out" 1 icount all)")
		logs+=("$(boot "$out" 2 icount zap)")
		logs+=("$(boot "$out" 2 tcg zap)")
		logs+=("$(boot "$out" 1 tcg all)")
	fi
	table "${logs[@]}" | tee "$out/table.txt"
}

main "$@"
exit
