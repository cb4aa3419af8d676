// check_svg FILE GROUPS: exits 0 if FILE is well-formed XML whose root is <svg> and holds exactly
// GROUPS elements with class 'bar-group' (one per stage), else prints why and exits 1.
// A small tag-balance parser: enough for the SVG zero writes (no DTDs, no CDATA).
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

int fail(const std::string& why) {
  std::printf("FAIL: %s\n", why.c_str());
  return 1;
}

int main(int argc, char** argv) {
  if (argc != 3) return fail("usage: check_svg FILE GROUPS");
  std::ifstream in(argv[1]);
  if (!in) return fail(std::string("cannot open ") + argv[1]);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string s = ss.str();
  std::vector<std::string> open;
  int groups = 0;
  bool saw_root = false;
  for (std::size_t i = s.find('<'); i != std::string::npos; i = s.find('<', i + 1)) {
    const std::size_t end = s.find('>', i);
    if (end == std::string::npos) return fail("unterminated tag");
    const std::string tag = s.substr(i + 1, end - i - 1);
    if (tag.empty()) return fail("empty tag");
    if (tag[0] == '?' || tag[0] == '!') continue;
    if (tag[0] == '/') {
      const std::string name = tag.substr(1);
      if (open.empty() || open.back() != name) return fail("mismatched </" + name + ">");
      open.pop_back();
      continue;
    }
    const std::string name = tag.substr(0, tag.find_first_of(" \t\n/"));
    if (open.empty()) {
      if (saw_root) return fail("more than one root element");
      if (name != "svg") return fail("root element is <" + name + ">, not <svg>");
      saw_root = true;
    }
    if (tag.find("class='bar-group'") != std::string::npos) ++groups;
    if (tag.back() != '/') open.push_back(name);
  }
  if (!saw_root) return fail("no <svg> element");
  if (!open.empty()) return fail("<" + open.back() + "> is never closed");
  if (groups != std::stoi(argv[2])) return fail("found " + std::to_string(groups) + " bar groups, expected " + argv[2]);
  std::printf("ok: well-formed SVG with %d bar groups\n", groups);
  return 0;
}
