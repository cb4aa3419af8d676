#!/usr/bin/env bash
# expect_failure.sh REGEX COMMAND...: passes if COMMAND exits non-zero and its output (stdout and
# stderr) matches the extended regular expression REGEX.
set -u
regex=$1
shift
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
echo "ok: exit $code with /$regex/"
