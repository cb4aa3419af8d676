#!/usr/bin/env bash
# expect_success.sh REGEX... -- COMMAND...: passes if COMMAND exits 0 and its output (stdout and
# stderr) matches every extended regular expression given before the "--".
set -u
regexes=()
while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do regexes+=("$1"); shift; done
shift  # the "--"
out=$("$@" 2>&1) || { status=$?; printf 'FAIL: exit %s from: %s\n%s\n' "$status" "$*" "$out"; exit 1; }
for r in "${regexes[@]}"; do
  grep -qE -- "$r" <<<"$out" || { printf 'FAIL: exit 0 but the output lacks /%s/:\n%s\n' "$r" "$out"; exit 1; }
done
echo "ok: exit 0 with ${#regexes[@]} patterns"
