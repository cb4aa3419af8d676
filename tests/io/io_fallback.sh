#!/usr/bin/env bash
# The buffered fallback of src/io/ on a file system that refuses O_DIRECT: a ramfs mounted in a
# mount namespace of this test's own (nothing outside sees it). Skipped (exit 77) where the
# machine does not let this user make one (not root, or no CAP_SYS_ADMIN in a container).
# Usage: io_fallback.sh <async_file_test binary>
set -euo pipefail
test_binary=$1
unshare -m true 2>/dev/null || { echo "skipped: cannot make a mount namespace here"; exit 77; }
exec unshare -m bash -c '
  set -euo pipefail
  dir=$(mktemp -d)
  mount --make-rprivate / 2>/dev/null || true
  mount -t ramfs none "$dir" || { echo "skipped: cannot mount a ramfs here"; exit 77; }
  ZERO_TEST_NO_DIRECT_DIR=$dir "$0" --gtest_filter=AsyncFile.BufferedFallbackWithOneLine
  rc=$?
  umount "$dir"; rmdir "$dir"
  exit $rc' "$test_binary"
