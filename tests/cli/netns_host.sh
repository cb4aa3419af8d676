#!/bin/sh
# netns_host.sh NAMESPACE COMMAND...: runs COMMAND inside the network namespace NAMESPACE and in a
# UTS namespace of its own whose host name is NAMESPACE (with '-' for '_'), as netns_rsh.sh does for the other
# "hosts": so that Open MPI, which tells hosts apart by name, sees each namespace as a host.
# ZERO_NETNS_CPUS ("NAMESPACE=CPULIST ...", optional) keeps it on its own cores, as netns_rsh.sh does.
ns=$1
shift
cpus=
for c in $ZERO_NETNS_CPUS; do
  if [ "${c%%=*}" = "$ns" ]; then cpus="taskset -c ${c#*=}"; fi
done
exec $cpus ip netns exec "$ns" unshare --uts /bin/sh -c 'hostname "$0" && exec "$@"' "$(echo "$ns" | tr _ -)" "$@"
