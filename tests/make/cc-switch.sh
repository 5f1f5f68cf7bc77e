#!/bin/sh
# `make CC=clang` after a gcc build must rebuild every kernel object with clang (the
# Makefile's flags stamp), not link the gcc objects: build with gcc, then with clang in the
# same build directory, and check that every C object's .comment section names clang and
# none names GCC. A second clang make must compile nothing. The clang build is also the
# check that the kernel builds with clang under -Wall -Wextra -Werror.
# Usage: tests/make/cc-switch.sh [BUILD_DIR]   (default: build/cc-switch, removed first)
set -eu
cd "$(dirname "$0")/../.."
d=${1:-build/cc-switch}
mkdir -p "$(dirname "$d")"
rm -rf "$d"
fail() { echo "FAIL cc-switch: $*"; exit 1; }

make -s -j2 CC=gcc BUILD="$d" "$d/baremm.elf" >"$d.gcc.log" 2>&1 || { cat "$d.gcc.log"; fail "gcc build failed"; }
n_src=$(ls arch/x86_64/*.c kernel/*.c mm/*.c bench/*.c | wc -l)
n_gcc=0
for o in $(find "$d" -name '*.o'); do
	[ -f "${o%.o}.d" ] || continue		# C objects only (-MMD); NASM writes no .comment
	readelf -p .comment "$o" 2>/dev/null | grep -q 'GCC:' && n_gcc=$((n_gcc + 1))
done
[ "$n_gcc" -eq "$n_src" ] || fail "gcc build: $n_gcc of $n_src C objects name GCC"

make -s -j2 CC=clang BUILD="$d" "$d/baremm.elf" >"$d.clang.log" 2>&1 || { cat "$d.clang.log"; fail "clang build failed"; }
n_clang=0
for o in $(find "$d" -name '*.o'); do
	[ -f "${o%.o}.d" ] || continue
	c=$(readelf -p .comment "$o" 2>/dev/null)
	echo "$c" | grep -q 'GCC:' && fail "$o still holds gcc code after make CC=clang: $(echo "$c" | grep GCC:)"
	echo "$c" | grep -q 'clang' || fail "$o: no clang in .comment"
	n_clang=$((n_clang + 1))
done
[ "$n_clang" -eq "$n_src" ] || fail "clang build: $n_clang of $n_src C objects"

again=$(make -s -j2 CC=clang BUILD="$d" "$d/baremm.elf" 2>&1)
[ -z "$again" ] || fail "a second make CC=clang rebuilt something: $again"
echo "PASS cc-switch ($n_src C objects: gcc, then all rebuilt by make CC=clang; a second make compiles nothing)"
rm -rf "$d" "$d.gcc.log" "$d.clang.log"
