#!/usr/bin/env bash
# Start baremm in QEMU paused, with a gdb stub on 127.0.0.1:1234 (BAREMM_GDB_PORT; not reachable from other
# machines), serial on this terminal.
#
#   tools/debug.sh [--cmdline 'tests=*'] [--smp N] [--mem 512M] [--cpu max] [--uefi] [--no-build]
#
# Then, in another terminal (from the repository root):
#   gdb -x tools/gdbinit
# QEMU exits when the kernel writes isa-debug-exit, or with Ctrl-A X. The exit status is
# tools/baremm's: 0 pass, 11 test failed, 12 bad option, 13 panic, 14 watchdog, 15 bench
# error, QEMU's own status otherwise. BAREMM_QEMU, BAREMM_OVMF_CODE, BAREMM_OVMF_VARS
# choose QEMU and the UEFI firmware.
set -euo pipefail
cd "$(dirname "$0")/.."

cmdline= ; have_cmdline=0; smp=2; mem=512M; cpu=max; uefi=0; build=1
while [ $# -gt 0 ]; do
    case "$1" in
        --cmdline) cmdline="$2"; have_cmdline=1; shift 2 ;;
        --smp) smp="$2"; shift 2 ;;
        --mem) mem="$2"; shift 2 ;;
        --cpu) cpu="$2"; shift 2 ;;
        --uefi) uefi=1; shift ;;
        --no-build) build=0; shift ;;
        -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "debug.sh: unknown argument $1 (try --help)" >&2; exit 2 ;;
    esac
done

[ $build = 1 ] && make -s iso/baremm.iso
[ -f iso/baremm.iso ] || { echo "debug.sh: iso/baremm.iso does not exist (run make, or drop --no-build)" >&2; exit 1; }
qemu=${BAREMM_QEMU:-qemu-system-x86_64}
port=${BAREMM_GDB_PORT:-1234}
ovmf_code=${BAREMM_OVMF_CODE:-/usr/share/OVMF/OVMF_CODE_4M.fd}
ovmf_vars=${BAREMM_OVMF_VARS:-/usr/share/OVMF/OVMF_VARS_4M.fd}
command -v "$qemu" >/dev/null || { echo "debug.sh: $qemu not found (set BAREMM_QEMU)" >&2; exit 1; }

tmp=$(mktemp -d /tmp/baremm-debug.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
args=(-machine q35 -cdrom iso/baremm.iso -boot d -nographic -serial mon:stdio -no-reboot
      -nic none -device isa-debug-exit,iobase=0xf4,iosize=0x04
      -smp "$smp" -m "$mem" -cpu "$cpu" -accel tcg -gdb "tcp:127.0.0.1:$port" -S)
if [ $have_cmdline = 1 ]; then
    printf '%s' "$cmdline" > "$tmp/cmdline.txt"
    args+=(-fw_cfg "name=opt/baremm/cmdline,file=$tmp/cmdline.txt")
fi
if [ $uefi = 1 ]; then
    for f in "$ovmf_code" "$ovmf_vars"; do
        [ -f "$f" ] || { echo "debug.sh: $f does not exist (set BAREMM_OVMF_CODE/BAREMM_OVMF_VARS)" >&2; exit 1; }
    done
    cp "$ovmf_vars" "$tmp/vars.fd"
    args+=(-drive "if=pflash,format=raw,readonly=on,file=$ovmf_code"
           -drive "if=pflash,format=raw,file=$tmp/vars.fd")
fi

cat >&2 <<MSG
debug.sh: QEMU is paused with a gdb stub on 127.0.0.1:$port (this machine only). In another terminal run:

    gdb -x tools/gdbinit

(from $(pwd)). Serial output appears here; Ctrl-A X quits QEMU, Ctrl-A C its monitor.
MSG
set +e
"$qemu" "${args[@]}"
rc=$?
# isa-debug-exit makes QEMU exit (code << 1) | 1: map it to the kernel's status
case $rc in
33) st=pass; out=0 ;;
35) st=test_failed; out=11 ;;
37) st=bad_option; out=12 ;;
39) st=panic; out=13 ;;
41) st=watchdog; out=14 ;;
43) st=bench_error; out=15 ;;
*) st="no status (QEMU quit or failed)"; out=$rc; [ $out = 0 ] && out=17 ;;
esac
echo "debug.sh: QEMU exited with $rc: $st; exit status $out" >&2
exit $out
