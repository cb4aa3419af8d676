// `zero train --ranks N --hostfile FILE`: zero's own launcher across machines. The hostfile is
// Open MPI's (and DeepSpeed's): one host per line, `HOST slots=K`, `#` comments. Before mpirun
// starts, every host is checked: its name resolves, and the launcher agent mpirun will use (ssh,
// or OMPI_MCA_plm_rsh_agent) reaches it within a timeout. An unreachable host is then a clear
// error naming it within seconds, instead of mpirun's own failure after ssh's TCP timeout (two
// minutes) or a job that never starts.
#pragma once

#include <string>
#include <vector>

namespace zero::cli {

struct HostSlots {
  std::string host;
  int slots = 1;  // Open MPI's default when a line gives none
  int line = 0;   // in the hostfile, for messages
};

// The hosts of an Open MPI hostfile, in order. ConfigError naming the file and line for a line
// that is not `HOST [slots=K] [max_slots=K]`, a host listed twice, or a file without hosts.
std::vector<HostSlots> read_hostfile(const std::string& path);

// True for a name this machine answers to without a launcher (localhost, a loopback address,
// this machine's host name), as Open MPI treats them.
bool is_local_host(const std::string& host);

// Checks, in parallel, that each host that is not local resolves and answers the launcher agent
// (`AGENT HOST true`, BatchMode so that a password prompt is a failure, not a hang) within
// timeout_seconds. ConfigError naming every host that does not, with why (the agent's last line
// of error output, or the timeout), and what to do.
void check_hosts_reachable(const std::vector<HostSlots>& hosts, int timeout_seconds, const std::string& hostfile);

// How many of N ranks Open MPI's default mapping (by slot: fill each host's slots in order, then
// wrap) puts on its busiest host.
int most_ranks_on_one_host(const std::vector<HostSlots>& hosts, long long n);

}  // namespace zero::cli
