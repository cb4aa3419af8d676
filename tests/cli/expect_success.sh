#!/usr/bin/env bash
# expect_success.sh REGEX COMMAND...: passes if COMMAND exits zero and its output (stdout and
# stderr) matches the extended regular expression REGEX (across lines: . matches a newline).
set -u
regex=$1
shift
out=$("$@" 2>&1)
code=$?
if [ "$code" -ne 0 ]; then
  echo "FAIL: exit $code from: $*"
  echo "$out"
  exit 1
fi
if ! grep -zqE -- "$regex" <<<"$out"; then
  echo "FAIL: exit 0 but the output lacks /$regex/:"
  echo "$out"
  exit 1
fi
echo "ok: /$regex/"
