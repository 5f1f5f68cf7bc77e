#!/bin/sh
# The ISOs must be byte-identical wherever and whenever they are built: the checkout's
# sources (tracked and untracked files, as they are now, without ignored ones) are copied
# into a fresh directory whose path differs in length, and the ELF, the flat image and both
# ISOs built there, a second or more later, must equal the checkout's own (built first if needed).
# Usage: tests/make/reproducible-iso.sh
set -eu
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d "${TMPDIR:-/tmp}/baremm-repro.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL reproducible-iso: $*"; exit 1; }
targets="build/baremm.elf build/baremm.bin iso/baremm.iso build/baremm-qemu.iso"

make -s -j2 $targets >"$tmp/here.log" 2>&1 || { cat "$tmp/here.log"; fail "build here failed"; }
copy="$tmp/a-copy-in-a-directory-of-another-length"
mkdir -p "$copy"
git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | tar -x -C "$copy"
sleep 1		# a field dated by the clock would now differ
# The copy has no .git: give it the epoch and build id the checkout used.
make -s -j2 -C "$copy" SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}" \
	BUILD_ID="$(cat build/.build_id)" $targets >"$tmp/copy.log" 2>&1 \
	|| { cat "$tmp/copy.log"; fail "build in $copy failed"; }
for f in $targets; do
	cmp -s "$f" "$copy/$f" || fail "$f differs between two builds ($(cmp -l "$f" "$copy/$f" | wc -l) bytes; $(cmp "$f" "$copy/$f" | head -n 1))"
done
echo "PASS reproducible-iso (built again in another directory: ELF, flat image and both ISOs byte-identical)"
