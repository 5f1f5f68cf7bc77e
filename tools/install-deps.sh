#!/usr/bin/env bash
# Check for the tools baremm needs to build, boot and test; install what is missing on
# Debian/Ubuntu (apt-get), or say what is missing anywhere else. Idempotent: does nothing
# when every tool is present, whatever the distribution or package manager.
#
# It checks tools, not package names: a hand-built QEMU or another distribution's GRUB
# counts. Variables (also read by tools/baremm and tools/debug.sh):
#   BAREMM_QEMU        QEMU binary (default qemu-system-x86_64 on PATH)
#   BAREMM_OVMF_CODE   UEFI firmware code (default /usr/share/OVMF/OVMF_CODE_4M.fd)
#   BAREMM_OVMF_VARS   UEFI variable store template (default /usr/share/OVMF/OVMF_VARS_4M.fd)
#   QEMU_NEED          oldest QEMU major version accepted (the Makefile passes 10 for
#                      test/perf-check/seeds, 8 for run/bench/debug)
# QEMU versions: x2APIC under TCG needs 8; deterministic mode (-icount) with more than one
# CPU needs 10 (older ones hang with -icount plus IPIs). Debian 12's QEMU is 7.2, so on
# bookworm QEMU 10 comes from bookworm-backports.
set -euo pipefail

qemu=${BAREMM_QEMU:-qemu-system-x86_64}
ovmf_code=${BAREMM_OVMF_CODE:-/usr/share/OVMF/OVMF_CODE_4M.fd}
ovmf_vars=${BAREMM_OVMF_VARS:-/usr/share/OVMF/OVMF_VARS_4M.fd}
qemu_need=${QEMU_NEED:-10}

have() { command -v "$1" >/dev/null 2>&1; }
grub_dir() {	# a GRUB platform directory (i386-pc, x86_64-efi) in any usual place
    local d
    for d in /usr/lib/grub /usr/lib/grub2 /usr/share/grub /usr/share/grub2 /usr/local/lib/grub; do
        [ -f "$d/$1/moddep.lst" ] && return 0
    done
    return 1
}

zydis_present() {	# the decoder library the cost model links (model/model.mk: -lZydis)
    local d
    for d in /usr/include /usr/local/include; do
        [ -f "$d/Zydis/Zydis.h" ] && return 0
    done
    return 1
}

# what: "description|Debian package" for every missing tool
missing=() optional=()
check() {	# check required|optional "test command" "what it is" "debian package"
    if ! eval "$2"; then
        if [ "$1" = required ]; then missing+=("$3|$4"); else optional+=("$3|$4"); fi
    fi
}
check required "have nasm" "nasm (assembler)" nasm
check required "have gcc || have \"\${CC:-gcc}\"" "gcc (C compiler)" gcc
check required "have ld" "ld (binutils)" binutils
check required "have make" "make" make
check required "[ -e /usr/lib/x86_64-linux-gnu/libc.a ] || [ -e /usr/lib64/libc.a ]" \
    "static C library (the native panel's static programs: tools/baremm panel-check)" libc6-dev
check required "zydis_present" "Zydis x86 decoder library and headers (the cost-model plugin)" libzydis-dev
check optional "have cpio" "cpio (tools/baremm native-panel: the Linux guest's initramfs)" cpio
check required "have python3" "python3" python3
check required "have grub-mkrescue || have grub2-mkrescue" "grub-mkrescue" grub-common
check required "grub_dir i386-pc" "GRUB BIOS modules (i386-pc)" grub-pc-bin
check required "grub_dir x86_64-efi" "GRUB UEFI modules (x86_64-efi)" grub-efi-amd64-bin
check required "have xorriso" "xorriso (ISO writer for grub-mkrescue)" xorriso
check required "have mformat" "mformat (mtools, EFI image for grub-mkrescue)" mtools
# a path of the user's choice is never "fixed" by installing a package
ovmf_pkg=ovmf
[ -z "${BAREMM_OVMF_CODE:-}${BAREMM_OVMF_VARS:-}" ] || ovmf_pkg=
check required "[ -f \"\$ovmf_code\" ] && [ -f \"\$ovmf_vars\" ]" \
    "OVMF firmware $ovmf_code and $ovmf_vars (or set BAREMM_OVMF_CODE/BAREMM_OVMF_VARS)" "$ovmf_pkg"
check optional "have clang" "clang (the clang build check)" clang
check optional "have gdb" "gdb (make debug)" gdb
check optional "have gnuplot" "gnuplot (tools/baremm plot)" gnuplot-nox

qemu_major=
qemu_state=ok
if ! have "$qemu"; then
    qemu_state=missing
else
    qemu_major=$("$qemu" --version 2>/dev/null | sed -n 's/.*version \([0-9]*\)\..*/\1/p' | head -n1)
    if [ -z "$qemu_major" ]; then
        qemu_state=unknown
    elif [ "$qemu_major" -lt "$qemu_need" ]; then
        qemu_state=old
    fi
fi

qemu_msg() {
    case $qemu_state in
    missing) echo "QEMU: $qemu not found (set BAREMM_QEMU to a qemu-system-x86_64 of version $qemu_need or later)" ;;
    unknown) echo "QEMU: cannot read the version of $qemu ('$qemu --version')" ;;
    old) echo "QEMU: $qemu is version $qemu_major; this needs $qemu_need or later (x2APIC under TCG needs 8, -icount with SMP needs 10; older ones hang). Install a newer QEMU or set BAREMM_QEMU to one" ;;
    esac
}

can_install=0
if have apt-get && { [ "$(id -u)" = 0 ] || have sudo; }; then
    can_install=1
fi
if [ ${#missing[@]} -eq 0 ] && [ $qemu_state = ok ]; then
    [ ${#optional[@]} -eq 0 ] && exit 0
    if [ $can_install = 0 ]; then
        for m in "${optional[@]}"; do echo "install-deps: optional, not found: ${m%%|*}" >&2; done
        exit 0
    fi
fi

report_missing() {
    for m in "${missing[@]}"; do echo "install-deps: missing: ${m%%|*}" >&2; done
    [ $qemu_state = ok ] || echo "install-deps: $(qemu_msg)" >&2
}

if ! have apt-get; then
    report_missing
    echo "install-deps: no apt-get here: install the tools above with your package manager" >&2
    exit 1
fi
# something only the user can fix: a BAREMM_* path that is wrong
for m in "${missing[@]}"; do
    if [ -z "${m##*|}" ]; then
        report_missing
        exit 1
    fi
done
if [ $qemu_state != ok ] && [ -n "${BAREMM_QEMU:-}" ]; then
    report_missing
    exit 1
fi

SUDO=
if [ "$(id -u)" != 0 ]; then
    if have sudo; then
        SUDO=sudo
    else
        report_missing
        echo "install-deps: not root and no sudo: install the packages above as root" >&2
        exit 1
    fi
fi

pkgs=()
for m in "${missing[@]}" "${optional[@]}"; do
    for p in ${m##*|}; do pkgs+=("$p"); done
done
want_qemu=0
# BAREMM_QEMU names a QEMU of the user's choice: never replace it with a package
if [ $qemu_state != ok ] && [ -z "${BAREMM_QEMU:-}" ]; then
    want_qemu=1
fi

# Debian 12: add bookworm-backports for QEMU 10 (same mirror and key as the existing
# Debian source).
if [ $want_qemu = 1 ] && grep -q 'bookworm' /etc/os-release 2>/dev/null; then
    src=/etc/apt/sources.list.d/baremm-backports.sources
    if [ ! -f "$src" ]; then
        uri=$(grep -h '^URIs:.*debian$' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n1 | awk '{print $2}')
        key=$(grep -h '^Signed-By:' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n1 | awk '{print $2}')
        [ -n "$uri" ] || uri=http://deb.debian.org/debian
        [ -n "$key" ] || key=/usr/share/keyrings/debian-archive-keyring.gpg
        printf 'Types: deb\nURIs: %s\nSuites: bookworm-backports\nComponents: main\nSigned-By: %s\n' \
            "$uri" "$key" | $SUDO tee "$src" >/dev/null
    fi
fi

echo "install-deps: installing ${pkgs[*]}$([ $want_qemu = 1 ] && echo ' qemu-system-x86')" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q >/dev/null
if [ ${#pkgs[@]} -gt 0 ]; then
    if ! $SUDO apt-get install -y -q --no-install-recommends "${pkgs[@]}" >/dev/null; then
        # an optional tool that does not exist here must not stop the build
        [ ${#missing[@]} -eq 0 ] || { report_missing; exit 1; }
        echo "install-deps: could not install the optional ${optional[*]%%|*}" >&2
    fi
fi
if [ $want_qemu = 1 ]; then
    policy=$(apt-cache policy qemu-system-x86)   # not piped into grep -q: pipefail + SIGPIPE
    if grep -q bookworm-backports <<<"$policy"; then
        $SUDO apt-get install -y -q --no-install-recommends -t bookworm-backports qemu-system-x86 >/dev/null
    else
        $SUDO apt-get install -y -q --no-install-recommends qemu-system-x86 >/dev/null
    fi
fi

# check again: what the packages gave must be enough
qemu_state=ok
if ! have "$qemu"; then
    qemu_state=missing
else
    qemu_major=$("$qemu" --version 2>/dev/null | sed -n 's/.*version \([0-9]*\)\..*/\1/p' | head -n1)
    { [ -n "$qemu_major" ] && [ "$qemu_major" -ge "$qemu_need" ]; } || qemu_state=old
fi
if [ $qemu_state != ok ]; then
    echo "install-deps: after installing: $(qemu_msg)" >&2
    exit 1
fi
