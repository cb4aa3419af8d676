#include "checkpoint/directory.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "checkpoint/manifest.h"
#include "common/input_file.h"

namespace zero::checkpoint {
namespace fs = std::filesystem;
namespace {

bool exists_here(const fs::path& p) {  // the entry itself, a dangling symlink included
  std::error_code ec;
  return fs::exists(fs::symlink_status(p, ec));
}

std::string trimmed(std::string s) {
  const auto space = [](unsigned char c) { return std::isspace(c) != 0; };
  s.erase(s.begin(), std::find_if_not(s.begin(), s.end(), space));
  s.erase(std::find_if_not(s.rbegin(), s.rend(), space).base(), s.end());
  return s;
}

std::string printable(const std::string& s) {  // for quoting a file's bytes in a message
  std::string out = s.substr(0, 100);
  for (char& c : out)
    if (!std::isprint(static_cast<unsigned char>(c))) c = '?';
  return s.size() > 100 ? out + "..." : out;
}

std::string step_list(const std::vector<std::int64_t>& steps) {  // "step-00000004, step-00000006"
  std::string out;
  for (std::size_t i = 0; i < steps.size() && i < 5; ++i) out += cat(i ? ", " : "", step_dir_name(steps[i]));
  if (steps.size() > 5) out += cat(" and ", steps.size() - 5, " more");
  return out;
}

}  // namespace

std::string read_checkpoint_file(const std::string& path, const std::string& role, std::uint64_t max_bytes) {
  try {
    return read_input_file({path, "checkpoint", role, max_bytes});
  } catch (const Error& e) {
    throw CheckpointError(cat(e.what(), ". The checkpoint is damaged or incomplete: restore the file, or use another checkpoint"));
  }
}

std::int64_t step_of(const std::string& name) {
  if (name.size() != 13 || name.rfind("step-", 0) != 0) return -1;
  if (!std::all_of(name.begin() + 5, name.end(), [](unsigned char c) { return std::isdigit(c) != 0; })) return -1;
  return std::stoll(name.substr(5));
}

std::string read_latest(const std::string& dir) {
  const fs::path path = fs::path(dir) / "latest";
  if (!exists_here(path)) return "";
  const std::string name = trimmed(read_checkpoint_file(path.string(), "'latest' file", 4096));
  if (step_of(name) < 0) {
    throw CheckpointError(cat("[checkpoint] ", path.string(), " holds '", printable(name), "', not the name of one of ", dir,
                              "'s step-NNNNNNNN checkpoints: it is damaged or was edited. Write the newest complete step's ",
                              "name into it (e.g. step-00000020), or use one of the step-* directories"));
  }
  return name;
}

std::string find_checkpoint(const std::string& path) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (!fs::is_directory(st)) {
    const char* what = fs::exists(st) ? " is not a directory" : " does not exist";
    throw CheckpointError(cat("[checkpoint] ", path, what, ": a checkpoint is a directory. ",
                              "Pass the directory given to --save, or one of its step-* directories"));
  }
  if (exists_here(fs::path(path) / "manifest.json")) return path;  // the reader then checks its type
  const std::string name = read_latest(path);
  if (name.empty()) {
    throw CheckpointError(cat("[checkpoint] no checkpoint in ", path, ": it has neither manifest.json nor a 'latest' file. ",
                              "Pass the directory given to --save, or one of its step-* directories"));
  }
  const fs::path dir = fs::path(path) / name;
  if (!exists_here(dir / "manifest.json")) {
    throw CheckpointError(cat("[checkpoint] ", (fs::path(path) / "latest").string(), " names ", name, ", but ",
                              (dir / "manifest.json").string(),
                              " does not exist: the checkpoint was removed. Resume from one of the step-* directories"));
  }
  return dir.string();
}

std::vector<std::int64_t> complete_steps(const std::string& dir) {
  std::vector<std::int64_t> steps;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::int64_t s = step_of(it->path().filename().string());
    std::error_code type_ec;
    if (s >= 0 && it->is_directory(type_ec) && exists_here(it->path() / "manifest.json")) steps.push_back(s);
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

std::int64_t own_step(const std::string& dir, const std::string& checkpoint) {
  fs::path c = fs::path(checkpoint).lexically_normal();
  if (c.filename().empty()) c = c.parent_path();  // a trailing slash
  const std::int64_t step = step_of(c.filename().string());
  const fs::path parent = c.has_parent_path() ? c.parent_path() : fs::path(".");
  std::error_code ec;
  return step >= 0 && fs::equivalent(parent, dir, ec) ? step : -1;
}

std::string check_history(const std::string& dir, const std::string& resumed) {
  // Only what `latest` has published counts: a step directory past it is a save that was killed
  // before `latest` named it, which the run that reaches that step again replaces.
  const std::string newest = read_latest(dir);
  if (newest.empty()) return "";
  if (resumed.empty()) {
    return cat("[checkpoint] ", dir, " already holds checkpoints (latest: ", newest, "): add --resume ", dir,
               " to continue that run, or save to another directory");
  }
  const std::int64_t from = own_step(dir, resumed);
  if (from < 0) {
    return cat("[checkpoint] --save ", dir, " already holds checkpoints of another run (latest: ", newest,
               ") and this run resumes from ", resumed, ": the two runs' checkpoints would mix, and --keep would prune ",
               "the other run's. Save to a new directory, or --resume ", dir, " to continue the run it holds");
  }
  const std::int64_t published = step_of(newest);
  if (published <= from) return "";
  std::vector<std::int64_t> later;
  for (std::int64_t s : complete_steps(dir))
    if (s > from && s < published) later.push_back(s);
  later.push_back(published);
  return cat("[checkpoint] --resume ", resumed, " goes back to step ", from, ", but --save ", dir, " holds later checkpoints (",
             step_list(later), "; latest ", newest, "): saving there would replace them with another history. To fork the ",
             "run from step ", from, ", pass a new --save directory; to continue it, --resume ", dir, " (its latest)");
}

namespace {

// Whether `d` is a checkpoint (step-N with a manifest) or a save directory (a `latest` naming a
// step, or zero's lock file): files zero writes or prunes there.
bool is_checkpoint_directory(const fs::path& d) {
  if (step_of(d.filename().string()) >= 0 && exists_here(d / "manifest.json")) return true;
  if (exists_here(d / "lock")) {
    try {
      if (read_checkpoint_file((d / "lock").string(), "lock file", 4096).rfind("zero ", 0) == 0) return true;
    } catch (const Error&) {
    }
  }
  try {
    return !read_latest(d.string()).empty();
  } catch (const Error&) {
    return false;  // a `latest` that is not zero's: not a save directory
  }
}

}  // namespace

void check_outside_checkpoints(const std::string& what, const std::string& path) {
  std::error_code ec;
  fs::path p = fs::absolute(path, ec);
  p = fs::weakly_canonical(p, ec);
  for (fs::path d = p.parent_path(); !d.empty(); d = d.parent_path()) {
    if (is_checkpoint_directory(d)) {
      throw CheckpointError(cat("[output] ", what, " ", path, " is inside the checkpoint directory ", d.string(),
                                ": written there, it would overwrite the checkpoint's files or be removed when --keep prunes a ",
                                "step. Write it outside ", d.string()));
    }
    if (d == d.root_path()) break;
  }
}

}  // namespace zero::checkpoint
