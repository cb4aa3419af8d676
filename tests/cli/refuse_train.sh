#!/usr/bin/env bash
# refuse_train.sh ZERO REGEX ARGS...: `ZERO train --ranks 2 --steps 2 --sample 0 ARGS...` must fail
# with output matching the extended regular expression REGEX, before any rank starts (no line of
# rank 1).
set -u
zero=$1 regex=$2
shift 2
if msg=$("$zero" train --ranks 2 --steps 2 --sample 0 "$@" 2>&1); then echo "FAILED: ran: $*"; exit 1; fi
grep -qE -- "$regex" <<<"$msg" || { echo "FAILED: $*: $msg"; exit 1; }
! grep -q "rank 1" <<<"$msg" || { echo "FAILED: ranks started: $msg"; exit 1; }
