#!/usr/bin/env bash
# expect_output.sh [--exit CODE] REGEX COMMAND...: passes if COMMAND exits with CODE (default 0;
# "nonzero" for any failure) and its output, stdout and stderr together, matches REGEX: a Perl
# regular expression over the whole output in which '.' also matches a newline, as in CMake's
# PASS_REGULAR_EXPRESSION (which ignores the exit code, so zero's tests use this instead).
set -u
want=0
if [ "${1:-}" = "--exit" ]; then
  want=$2
  shift 2
fi
regex=$1
shift
out=$("$@" 2>&1)
code=$?
if [ "$want" = nonzero ]; then
  [ "$code" -ne 0 ]
else
  [ "$code" -eq "$want" ]
fi
if [ $? -ne 0 ]; then
  echo "FAIL: expected exit $want, got $code from: $*"
  echo "$out"
  exit 1
fi
if ! REGEX="$regex" perl -0777 -e 'my $s = <STDIN>; exit(($s =~ /$ENV{REGEX}/s) ? 0 : 1)' <<<"$out"; then
  echo "FAIL: exit $code but the output lacks /$regex/:"
  echo "$out"
  exit 1
fi
echo "ok: exit $code with /$regex/"
