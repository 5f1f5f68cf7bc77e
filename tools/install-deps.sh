#!/usr/bin/env bash
# Install the Debian packages baremm needs to build, boot and test.
# Idempotent: does nothing when everything is already present.
# QEMU comes from bookworm-backports (QEMU 10): Debian 12's QEMU 7.2 has no x2APIC
# under TCG and hangs with -icount plus IPIs (see docs/ARCHITECTURE.md).
set -euo pipefail

need_qemu_major=8
pkgs=(nasm grub-pc-bin grub-efi-amd64-bin grub-common xorriso mtools ovmf gcc make
      binutils python3 clang lld gdb gnuplot-nox)

missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

qemu_ok=0
if command -v qemu-system-x86_64 >/dev/null 2>&1; then
    v=$(qemu-system-x86_64 --version | sed -n 's/.*version \([0-9]*\)\..*/\1/p' | head -n1)
    [ -n "$v" ] && [ "$v" -ge "$need_qemu_major" ] && qemu_ok=1
fi

[ ${#missing[@]} -eq 0 ] && [ $qemu_ok = 1 ] && exit 0

if [ "$(id -u)" != 0 ]; then
    SUDO=sudo
else
    SUDO=
fi

# Debian 12 only: add bookworm-backports for QEMU 10 (same mirror and key as the
# existing Debian source).
if [ $qemu_ok = 0 ] && grep -q 'bookworm' /etc/os-release 2>/dev/null; then
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

[ $qemu_ok = 1 ] || missing_q=qemu-system-x86
echo "install-deps: installing ${missing[*]} ${missing_q:-}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q >/dev/null
[ ${#missing[@]} -eq 0 ] || $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
if [ $qemu_ok = 0 ]; then
    policy=$(apt-cache policy qemu-system-x86)   # not piped into grep -q: pipefail + SIGPIPE
    if grep -q bookworm-backports <<<"$policy"; then
        $SUDO apt-get install -y -q --no-install-recommends -t bookworm-backports qemu-system-x86 >/dev/null
    else
        $SUDO apt-get install -y -q --no-install-recommends qemu-system-x86 >/dev/null
    fi
fi
command -v qemu-system-x86_64 >/dev/null || { echo "install-deps: qemu-system-x86_64 missing after install" >&2; exit 1; }
