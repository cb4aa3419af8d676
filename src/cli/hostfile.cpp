#include "cli/hostfile.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <thread>

#include "common/error.h"
#include "common/input_file.h"

namespace zero::cli {
namespace {

int parse_slots(const std::string& word, const std::string& where) {
  const std::string value = word.substr(word.find('=') + 1);
  char* end = nullptr;
  const long k = std::strtol(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || k < 1 || k > 1 << 20) {
    throw ConfigError(cat("[cli] ", where, ": '", word, "' is not a slot count: write slots=K with K a whole number of at least 1"));
  }
  return static_cast<int>(k);
}

// The launcher agent mpirun will use to start its daemons, as argv: Open MPI 4's
// OMPI_MCA_plm_rsh_agent, Open MPI 5's PRTE_MCA_plm_ssh_agent, or ssh. Open MPI allows a list of
// fallbacks ("ssh : rsh"); the first is the one it tries.
std::vector<std::string> launcher_agent() {
  const char* set = std::getenv("OMPI_MCA_plm_rsh_agent");
  if (!set || !*set) set = std::getenv("PRTE_MCA_plm_ssh_agent");
  std::string text = set && *set ? set : "ssh";
  if (const auto colon = text.find(':'); colon != std::string::npos) text = text.substr(0, colon);
  std::istringstream words(text);
  std::vector<std::string> argv;
  for (std::string w; words >> w;) argv.push_back(w);
  if (argv.empty()) argv.push_back("ssh");
  return argv;
}

struct Probe {
  std::string host;
  pid_t pid = -1;
  int err_fd = -1;       // the agent's standard error, read as it comes
  std::string err;       // what it wrote there
  int status = -1;       // its wait status once it ended
  bool ended = false;
};

// Starts `AGENT [ssh options] HOST true` with no input, its output discarded, its error kept.
void start_probe(Probe& p, const std::vector<std::string>& agent, int timeout_seconds) {
  std::vector<std::string> cmd = agent;
  const std::string name = agent[0].substr(agent[0].rfind('/') + 1);
  if (name == "ssh") {  // no password prompt (a hang), and ssh's own connect timeout
    cmd.insert(cmd.end(), {"-o", "BatchMode=yes", "-o", cat("ConnectTimeout=", timeout_seconds)});
  }
  cmd.insert(cmd.end(), {p.host, "true"});
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw Error(cat("[cli] could not check host ", p.host, ": pipe failed (", std::strerror(errno), ")"));
  p.pid = ::fork();
  if (p.pid < 0) throw Error(cat("[cli] could not check host ", p.host, ": fork failed (", std::strerror(errno), ")"));
  if (p.pid == 0) {
    ::setpgid(0, 0);  // the agent and whatever it starts are killed together at the deadline
    const int null = ::open("/dev/null", O_RDWR);
    ::dup2(null, 0);
    ::dup2(null, 1);
    ::dup2(fds[1], 2);
    std::vector<char*> argv;
    for (auto& s : cmd) argv.push_back(s.data());
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    std::fprintf(stderr, "cannot run the launcher agent '%s': %s\n", argv[0], std::strerror(errno));
    ::_exit(127);
  }
  ::close(fds[1]);
  ::fcntl(fds[0], F_SETFL, O_NONBLOCK);  // read what has come, never wait for more
  p.err_fd = fds[0];
}

// Reads what the probes write and reaps those that end, until all have or the deadline passes;
// then kills the rest.
void wait_probes(std::vector<Probe>& probes, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    bool running = false;
    for (Probe& p : probes) {
      if (p.err_fd >= 0) {
        char buf[4096];
        ssize_t got;
        while ((got = ::read(p.err_fd, buf, sizeof buf)) > 0) p.err.append(buf, static_cast<std::size_t>(got));
        if (got == 0) {
          ::close(p.err_fd);
          p.err_fd = -1;
        }
      }
      if (!p.ended && ::waitpid(p.pid, &p.status, WNOHANG) == p.pid) p.ended = true;
      running = running || !p.ended || p.err_fd >= 0;
    }
    if (!running) return;
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (Probe& p : probes) {
    if (!p.ended) {
      ::kill(-p.pid, SIGKILL);
      ::waitpid(p.pid, &p.status, 0);
    }
    if (p.err_fd >= 0) ::close(p.err_fd);
    p.err_fd = -1;
  }
}

std::string last_line(const std::string& text) {
  std::string t = text;
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.pop_back();
  const auto nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

}  // namespace

std::vector<HostSlots> read_hostfile(const std::string& path) {
  const std::string text = read_input_file({path, "cli", "hostfile", 1 << 20});
  std::vector<HostSlots> hosts;
  std::map<std::string, int> seen;
  std::istringstream lines(text);
  int number = 0;
  for (std::string line; std::getline(lines, line);) {
    ++number;
    if (const auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string host;
    if (!(words >> host)) continue;
    const std::string where = cat("hostfile ", path, " line ", number);
    HostSlots h{host, 1, number};
    for (std::string w; words >> w;) {
      if (w.rfind("slots=", 0) == 0) h.slots = parse_slots(w, where);
      else if (w.rfind("max_slots=", 0) == 0 || w.rfind("max-slots=", 0) == 0) parse_slots(w, where);
      else throw ConfigError(cat("[cli] ", where, ": '", w, "' is not understood: a line is HOST [slots=K] [max_slots=K] (Open MPI's hostfile)"));
    }
    if (const auto it = seen.find(host); it != seen.end()) {
      throw ConfigError(cat("[cli] ", where, ": host ", host, " is already listed on line ", it->second, ": list each host once, with all its slots"));
    }
    seen[host] = number;
    hosts.push_back(h);
  }
  if (hosts.empty()) throw ConfigError(cat("[cli] hostfile ", path, " lists no hosts: write one HOST slots=K line per machine"));
  return hosts;
}

bool is_local_host(const std::string& host) {
  if (host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0) return true;
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return false;
  const std::string self = name;
  return host == self || host == self.substr(0, self.find('.'));
}

void check_hosts_reachable(const std::vector<HostSlots>& hosts, int timeout_seconds, const std::string& hostfile) {
  std::vector<std::string> problems;
  std::vector<Probe> probes;
  for (const HostSlots& h : hosts) {
    if (is_local_host(h.host)) continue;
    addrinfo* found = nullptr;
    if (const int rc = ::getaddrinfo(h.host.c_str(), nullptr, nullptr, &found); rc != 0) {
      problems.push_back(cat(h.host, " (line ", h.line, "): the name does not resolve (", ::gai_strerror(rc), ")"));
      continue;
    }
    ::freeaddrinfo(found);
    probes.emplace_back();
    probes.back().host = h.host;
  }
  const std::vector<std::string> agent = launcher_agent();
  for (Probe& p : probes) start_probe(p, agent, timeout_seconds);
  wait_probes(probes, std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds));
  for (const Probe& p : probes) {
    if (!p.ended) problems.push_back(cat(p.host, ": did not answer within ", timeout_seconds, " s (`", agent[0], " ", p.host, " true`)"));
    else if (!WIFEXITED(p.status) || WEXITSTATUS(p.status) != 0) {
      const std::string why = last_line(p.err);
      problems.push_back(cat(p.host, ": `", agent[0], " ", p.host, " true` failed (exit ", WIFEXITED(p.status) ? WEXITSTATUS(p.status) : 128 + WTERMSIG(p.status),
                             why.empty() ? "" : ": " + why, ")"));
    }
  }
  if (problems.empty()) return;
  std::string list;
  for (const std::string& s : problems) list += "\n  " + s;
  throw ConfigError(cat("[cli] hostfile ", hostfile, ": ", problems.size(), " host(s) cannot be reached, so mpirun could not start ranks there:", list,
                        "\nCheck that each host is up and that `", agent[0], " HOST true` works without a password (mpirun starts its "
                        "daemons that way), or remove the host from the hostfile; --host-timeout SECONDS waits longer"));
}

int most_ranks_on_one_host(const std::vector<HostSlots>& hosts, long long n) {
  std::vector<long long> placed(hosts.size(), 0);
  long long left = n;
  while (left > 0) {  // by slot: fill each host's slots in order; beyond all slots, wrap around
    for (std::size_t i = 0; i < hosts.size() && left > 0; ++i) {
      const long long take = std::min<long long>(hosts[i].slots, left);
      placed[i] += take;
      left -= take;
    }
  }
  return static_cast<int>(*std::max_element(placed.begin(), placed.end()));
}

}  // namespace zero::cli
