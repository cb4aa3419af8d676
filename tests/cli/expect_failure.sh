#!/usr/bin/env bash
# expect_failure.sh REGEX COMMAND...: passes if COMMAND exits non-zero and its output (stdout and
# stderr) matches the extended regular expression REGEX. With EXPECT_ABSENT=PATH in the
# environment, PATH must not exist afterwards (no partial output left as if complete).
set -u
regex=$1
shift
[ -n "${EXPECT_ABSENT:-}" ] && rm -f "$EXPECT_ABSENT"
out=$("$@" 2>&1)
code=$?
if [ "$code" -eq 0 ]; then
  echo "FAIL: expected a non-zero exit from: $*"
  echo "$out"
  exit 1
fi
if ! grep -qE -- "$regex" <<<"$out"; then
  echo "FAIL: exit $code but the output lacks /$regex/:"
  echo "$out"
  exit 1
fi
if [ -n "${EXPECT_ABSENT:-}" ] && [ -e "$EXPECT_ABSENT" ]; then
  echo "FAIL: $EXPECT_ABSENT was left behind"
  exit 1
fi
echo "ok: exit $code with /$regex/"
