#!/usr/bin/env bash
# zero as a library, from outside: installs the build into a fresh prefix, builds examples/mlp (a
# model zero does not ship) from a copy outside the source tree against the installed copy only,
# and trains it under stages 0-3 on 2 thread ranks and under mpirun -np 2. The final weights must
# be the same bits everywhere and within NumPy's rounding of the same training from the same
# initial weights (mlp_reference.py), and the loss must fall. Also compiles the public headers
# with the installed paths alone, and the example with one g++ line from pkg-config.
#   install_example.sh SOURCE_DIR BUILD_DIR CXX [MPIRUN...]   (no MPIRUN: the mpirun run is skipped)
set -euo pipefail
src=$(cd "$1" && pwd) build=$(cd "$2" && pwd) cxx=$3
shift 3
mpirun=("$@")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
# The installed headers, CMake package and zero.pc name neither the source tree nor the build tree
# (the copy is relocatable; the archive's own strings, __FILE__ in its messages, are not paths it reads).
if grep -rlF --exclude='*.a' -e "$src" -e "$build" "$prefix"; then fail "the files above in the installed copy name $src or $build"; fi
[ -f "$prefix/lib/libzero.a" ] || fail "no libzero.a under $prefix/lib"

# Every installed public header compiles with the installed include paths alone (one translation
# unit: the internal headers they need are installed too).
for h in "$prefix"/include/zero/*.h; do echo "#include \"zero/$(basename "$h")\""; done >"$tmp/all_headers.cpp"
"$cxx" -std=c++20 -fsyntax-only -I"$prefix/include" -I"$prefix/include/zero/internal" "$tmp/all_headers.cpp" ||
  fail "the installed public headers do not compile with $prefix's include paths alone"

# The example, copied out of the source tree, configured against the prefix only.
cp -r "$src/examples/mlp" "$tmp/mlp"
cmake -S "$tmp/mlp" -B "$tmp/mlp-build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null
grep -qxF "zero_DIR:PATH=$prefix/lib/cmake/zero" "$tmp/mlp-build/CMakeCache.txt" || fail "find_package(zero) found another copy than $prefix"
cmake --build "$tmp/mlp-build" -j2 >/dev/null
# Proof that it compiled against the prefix: its compile commands name the prefix's headers and
# no path of the source or build tree.
grep -qF -- "-isystem $prefix/include " "$tmp/mlp-build/compile_commands.json" || fail "the example's compile commands lack $prefix/include"
if grep -F -e "$src" -e "$build" "$tmp/mlp-build/compile_commands.json"; then fail "the example compiled with paths of zero's tree"; fi

run() {  # prints "<checksum> <first loss> <last loss>" of one run
  local out
  out=$("$@" 2>&1) || fail "exit $? from $*: $out"
  sed -nE 's/.*loss ([0-9.]+) -> ([0-9.]+) .*checksum ([0-9a-f]{16})$/\3 \1 \2/p' <<<"$out" | grep . || fail "no result line from $*: $out"
}
export OMP_NUM_THREADS=1
results=()
for stage in 0 1 2 3; do results+=("stage $stage threads: $(run "$tmp/mlp-build/mlp_classifier" --stage "$stage" --ranks 2)"); done
mkdir "$tmp/weights"
results+=("stage 3 threads, weights saved: $(run "$tmp/mlp-build/mlp_classifier" --stage 3 --ranks 2 --steps 60 --save "$tmp/weights")")
/usr/bin/python3 "$src/tests/library/mlp_reference.py" "$tmp/weights" 60 || fail "the engine's weights are not NumPy's"
if [ ${#mpirun[@]} -gt 0 ]; then
  for stage in 0 3; do results+=("stage $stage mpi: $(run "${mpirun[@]}" -np 2 "$tmp/mlp-build/mlp_classifier" --stage "$stage")"); done
fi

# pkg-config: one g++ command builds the example from the installed copy too.
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
# shellcheck disable=SC2046
"$cxx" -O2 "$tmp/mlp/main.cpp" "$tmp/mlp/classifier.cpp" -o "$tmp/mlp_pc" $(pkg-config --cflags --libs zero) ||
  fail "the example does not build with pkg-config --cflags --libs zero: $(pkg-config --cflags --libs zero)"
results+=("stage 2 threads, pkg-config build: $(run "$tmp/mlp_pc" --stage 2 --ranks 2)")

printf '%s\n' "${results[@]}"
read -r sum0 first0 last0 <<<"${results[0]#*: }"
for r in "${results[@]}"; do
  read -r sum first last <<<"${r#*: }"
  [ "$sum" = "$sum0" ] || fail "final weights differ: ${r%%:*} gives $sum, stage 0 threads $sum0"
  [ "$first $last" = "$first0 $last0" ] || fail "losses differ: ${r%%:*} gives $first -> $last, stage 0 threads $first0 -> $last0"
done
python3 -c "import sys; f, l = map(float, sys.argv[1:]); sys.exit(0 if l < 0.5 * f else 1)" "$first0" "$last0" ||
  fail "the loss did not fall by half: $first0 -> $last0"
echo "ok: ${#results[@]} runs, the same weights ($sum0), loss $first0 -> $last0"
