#!/bin/sh
# netns_rsh.sh [SSH-OPTIONS] HOST COMMAND...: Open MPI's launcher agent (OMPI_MCA_plm_rsh_agent)
# for "hosts" that are network namespaces of this machine: where mpirun would run `ssh HOST
# COMMAND`, this runs COMMAND (a shell command line, as ssh would) inside the namespace that
# holds HOST's address. ZERO_NETNS_HOSTS lists them: "ADDRESS=NAMESPACE ADDRESS=NAMESPACE".
# The command runs in a UTS namespace of its own, with the network namespace's name as its host
# name ('-' for '_'): Open MPI tells hosts apart by name, and with the machine's one name on both "hosts" two
# ranks a host crash in MPI_Comm_split_type (one rank a host happens to work). mpirun's own side
# takes the same care (netns_host.sh).
while [ $# -gt 0 ]; do
  case $1 in
    -x|-T|-q|-n|-a|-A) shift ;;
    -o|-p|-l|-i) shift 2 ;;
    -*) shift ;;
    *) break ;;
  esac
done
host=$1
shift
# netns_cpus NAMESPACE: "taskset -c LIST" where ZERO_NETNS_CPUS gives the namespace cores, else nothing
netns_cpus() {
  for c in $ZERO_NETNS_CPUS; do
    if [ "${c%%=*}" = "$1" ]; then echo "taskset -c ${c#*=}"; return; fi
  done
}
for pair in $ZERO_NETNS_HOSTS; do
  if [ "${pair%%=*}" = "$host" ]; then
    exec $(netns_cpus "${pair#*=}") ip netns exec "${pair#*=}" unshare --uts /bin/sh -c "hostname '$(echo "${pair#*=}" | tr _ -)' && $*"
  fi
done
echo "netns_rsh.sh: no namespace for host '$host' in ZERO_NETNS_HOSTS='$ZERO_NETNS_HOSTS'" >&2
exit 255
