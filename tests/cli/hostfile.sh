#!/usr/bin/env bash
# hostfile.sh ZERO: `zero train --ranks N --hostfile FILE` refuses, before mpirun starts and
# within the host timeout, a hostfile it cannot use, naming the host or line: a name that does
# not resolve, a host whose launcher agent fails or does not answer, too few slots, a malformed
# or repeated line; and --hostfile where zero is not the launcher. The agents here are stand-ins
# (OMPI_MCA_plm_rsh_agent, as Open MPI reads it): one that hangs, one that fails as ssh does.
set -u
zero=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# expect REGEX MAX_SECONDS COMMAND...: fails with the message, quickly, and no rank started
expect() {
  local regex=$1 most=$2
  shift 2
  local start=$SECONDS out code
  out=$("$@" 2>&1)
  code=$?
  [ "$code" -ne 0 ] || fail "expected a refusal from: $*"$'\n'"$out"
  grep -qE -- "$regex" <<<"$out" || fail "exit $code but the output lacks /$regex/:"$'\n'"$out"
  grep -qE "^(launch|layout):|step 1" <<<"$out" && fail "ranks started although the hostfile was refused:"$'\n'"$out"
  [ $((SECONDS - start)) -le "$most" ] || fail "took $((SECONDS - start)) s, more than $most s: $*"
  echo "ok: /$regex/"
}
printf '#!/bin/sh\nsleep 60\n' >"$work/hangs" && chmod +x "$work/hangs"
printf '#!/bin/sh\necho "ssh: connect to host $1 port 22: No route to host" >&2\nexit 255\n' >"$work/unreachable"
chmod +x "$work/unreachable"
train=("$zero" train --steps 1 --sample 0)

printf 'localhost slots=1\nno-such-host.invalid slots=1\n' >"$work/h1"
expect 'no-such-host.invalid \(line 2\): the name does not resolve' 5 "${train[@]}" --ranks 2 --hostfile "$work/h1"
printf 'localhost slots=1   # this machine\n10.255.0.7 slots=1\n' >"$work/h2"
OMPI_MCA_plm_rsh_agent=$work/hangs expect '10.255.0.7: did not answer within 2 s' 6 "${train[@]}" --ranks 2 --hostfile "$work/h2" --host-timeout 2
OMPI_MCA_plm_rsh_agent="$work/unreachable : rsh" expect '10.255.0.7: .* failed \(exit 255: ssh: connect to host 10.255.0.7 port 22: No route to host\)' 5 \
  "${train[@]}" --ranks 2 --hostfile "$work/h2"
printf 'localhost slots=2\n' >"$work/h3"
expect 'ranks 3 but hostfile .* has 2 slot\(s\) on 1 host' 5 "${train[@]}" --ranks 3 --hostfile "$work/h3"
printf 'localhost slots=two\n' >"$work/h4"
expect 'line 1: .slots=two. is not a slot count' 5 "${train[@]}" --ranks 2 --hostfile "$work/h4"
printf 'localhost slots=1\nlocalhost slots=1\n' >"$work/h5"
expect 'line 2: host localhost is already listed on line 1' 5 "${train[@]}" --ranks 2 --hostfile "$work/h5"
printf '# nothing\n\n' >"$work/h6"
expect 'lists no hosts' 5 "${train[@]}" --ranks 2 --hostfile "$work/h6"
expect 'hostfile .*missing.* (does not exist|No such file)' 5 "${train[@]}" --ranks 2 --hostfile "$work/missing"
expect '--hostfile is for zero.s own launcher' 5 "${train[@]}" --hostfile "$work/h3"
expect '--hostfile is for zero.s own launcher' 5 "${train[@]}" --ranks 2 --comm threads --hostfile "$work/h3"
echo "ok: every unusable hostfile refused before mpirun, naming the host or line"
