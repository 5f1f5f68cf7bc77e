#!/usr/bin/env bash
# Start baremm in QEMU paused, with a gdb stub on :1234, serial on this terminal.
#
#   tools/debug.sh [--cmdline 'tests=*'] [--smp N] [--mem 512M] [--cpu max] [--uefi] [--no-build]
#
# Then, in another terminal (from the repository root):
#   gdb -x tools/gdbinit
# QEMU exits when the kernel writes isa-debug-exit, or with Ctrl-A X.
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
        -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "debug.sh: unknown argument $1 (try --help)" >&2; exit 2 ;;
    esac
done

[ $build = 1 ] && make -s iso/baremm.iso
[ -f iso/baremm.iso ] || { echo "debug.sh: iso/baremm.iso missing (run make)" >&2; exit 1; }

tmp=$(mktemp -d /tmp/baremm-debug.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
args=(-machine q35 -cdrom iso/baremm.iso -boot d -nographic -serial mon:stdio -no-reboot
      -nic none -device isa-debug-exit,iobase=0xf4,iosize=0x04
      -smp "$smp" -m "$mem" -cpu "$cpu" -accel tcg -s -S)
if [ $have_cmdline = 1 ]; then
    printf '%s' "$cmdline" > "$tmp/cmdline.txt"
    args+=(-fw_cfg "name=opt/baremm/cmdline,file=$tmp/cmdline.txt")
fi
if [ $uefi = 1 ]; then
    cp /usr/share/OVMF/OVMF_VARS_4M.fd "$tmp/vars.fd"
    args+=(-drive if=pflash,format=raw,readonly=on,file=/usr/share/OVMF/OVMF_CODE_4M.fd
           -drive "if=pflash,format=raw,file=$tmp/vars.fd")
fi

cat >&2 <<MSG
debug.sh: QEMU is paused with a gdb stub on localhost:1234. In another terminal run:

    gdb -x tools/gdbinit

(from $(pwd)). Serial output appears here; Ctrl-A X quits QEMU, Ctrl-A C its monitor.
MSG
set +e
qemu-system-x86_64 "${args[@]}"
rc=$?
echo "debug.sh: QEMU exited with $rc (33 pass, 35 test failed, 37 bad option, 39 panic, 41 watchdog, 43 bench error)" >&2
exit $rc
