// The one way zero reads a user's file and the one way it writes one (issue 12): a FIFO, a device
// or /proc/self/mem never hangs or crashes a read; an output never replaces a device, a FIFO, a
// directory or an input, and appears complete or not at all.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "common/error_of.h"
#include "common/input_file.h"
#include "common/number_text.h"
#include "common/output_file.h"

namespace zero {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() : path_(fs::temp_directory_path() / ("zero_io_test_" + std::to_string(::getpid()))) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  // Every entry's name, to see that no temporary file is left behind.
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(path_)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  fs::path path_;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void spit(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

using testing::error_of;

InputFile input(const std::string& path, std::uint64_t max = 1 << 20) { return {path, "data", "data file", max}; }

TEST(InputFile, ReadsARegularFileWhole) {
  const TempDir dir;
  std::string text(3 << 20, 'x');  // several read chunks
  text[12345] = 'y';
  spit(dir / "a.txt", text);
  EXPECT_EQ(read_input_file(input(dir / "a.txt", 4 << 20)), text);
  EXPECT_NE(read_input_file(input("/proc/self/status")).find("Pid:"), std::string::npos);  // stat says 0 bytes
}

TEST(InputFile, RefusesWhatIsNotARegularFileWithoutBlocking) {
  const TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  const std::string fifo = error_of([&] { read_input_file(input(dir / "fifo")); });  // no writer: open would block
  EXPECT_NE(fifo.find("[data] data file " + (dir / "fifo") + " is a FIFO (named pipe), not a regular file"), std::string::npos) << fifo;
  const std::string zero = error_of([] { read_input_file(input("/dev/zero")); });
  EXPECT_NE(zero.find("/dev/zero is a character device"), std::string::npos) << zero;
  const std::string folder = error_of([&] { read_input_file(input(dir / "")); });
  EXPECT_NE(folder.find("is a directory"), std::string::npos) << folder;
  fs::create_symlink("/dev/zero", dir / "link");
  EXPECT_NE(error_of([&] { check_input_file(input(dir / "link")); }).find("is a character device"), std::string::npos);
}

TEST(InputFile, EveryFailureNamesTheFile) {
  const TempDir dir;
  const std::string missing = error_of([&] { read_input_file(input(dir / "none.txt")); });
  EXPECT_NE(missing.find((dir / "none.txt") + " does not exist: check the path"), std::string::npos) << missing;
  const std::string mem = error_of([] { read_input_file(input("/proc/self/mem")); });  // regular, but reads fail
  EXPECT_NE(mem.find("/proc/self/mem could not be read after 0 bytes: Input/output error"), std::string::npos) << mem;
  spit(dir / "big.txt", std::string(101, 'b'));
  const std::string big = error_of([&] { read_input_file(input(dir / "big.txt", 100)); });
  EXPECT_NE(big.find("big.txt is 101 bytes, more than the 100 bytes zero reads from one data file"), std::string::npos) << big;
  EXPECT_EQ(read_input_file(input(dir / "big.txt", 101)).size(), 101u);
}

TEST(OutputFile, PublishesCompleteFilesOnlyOnCommit) {
  const TempDir dir;
  spit(dir / "out.json", "old");
  {
    OutputFile f({"--json", dir / "out.json"});
    f.write("new ");
    EXPECT_EQ(slurp(dir / "out.json"), "old");  // until the commit, the earlier file stays whole
    f.write("file");
    f.commit();
  }
  EXPECT_EQ(slurp(dir / "out.json"), "new file");
  {
    OutputFile abandoned({"--json", dir / "out.json"});  // a run that fails before its commit
    abandoned.write("half");
  }
  EXPECT_EQ(slurp(dir / "out.json"), "new file");
  EXPECT_EQ(dir.names(), std::vector<std::string>{"out.json"});  // no temporary file left
  write_output_file({"--svg", dir / "fresh.svg"}, "<svg/>");
  EXPECT_EQ(slurp(dir / "fresh.svg"), "<svg/>");
  struct stat st {};
  ASSERT_EQ(::stat((dir / "fresh.svg").c_str(), &st), 0);
  const mode_t mask = ::umask(0);
  ::umask(mask);
  EXPECT_EQ(st.st_mode & 0777, 0666 & ~mask);  // as a new file would be, not mkstemp's 0600
}

TEST(OutputFile, RefusesDevicesFifosDirectoriesAndLinksToThem) {
  const TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  fs::create_directories(dir / "empty");
  fs::create_directories(dir / "full");
  spit(dir / "full/keep.txt", "keep");
  fs::create_symlink("/dev/null", dir / "to_null");
  fs::create_symlink(dir / "full", dir / "to_dir");
  fs::create_symlink(dir / "nothing", dir / "dangling");
  const std::pair<std::string, std::string> cases[] = {
      {"/dev/null", "is a character device, not a regular file"}, {dir / "fifo", "is a FIFO (named pipe)"},
      {dir / "empty", "is a directory"}, {dir / "full", "is a directory"},
      {dir / "to_null", "is a symbolic link to a character device"}, {dir / "to_dir", "is a symbolic link to a directory"},
      {dir / "dangling", "is a symbolic link to a file that does not exist"}, {dir / "empty/", "names a directory"},
      {dir / "no/such/dir/m.jsonl", "its directory " + (dir / "no/such/dir") + " does not exist"}, {"", "is an empty path"}};
  for (const auto& [path, why] : cases) {
    const std::string e = error_of([&] { OutputFile f({"--metrics", path}); });
    EXPECT_NE(e.find("[output] --metrics " + path), std::string::npos) << e;
    EXPECT_NE(e.find(why), std::string::npos) << path << ": " << e;
    EXPECT_NE(error_of([&] { check_output_path({"--metrics", path}); }), "") << path;
  }
  struct stat st {};
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_TRUE(fs::is_directory(dir / "empty"));
  EXPECT_EQ(slurp(dir / "full/keep.txt"), "keep");
  EXPECT_TRUE(fs::is_fifo(dir / "fifo"));
}

TEST(OutputFile, ALinkToARegularFileReplacesTheFileAndKeepsTheLink) {
  const TempDir dir;
  spit(dir / "real.jsonl", "old");
  fs::create_symlink(dir / "real.jsonl", dir / "link.jsonl");
  write_output_file({"--metrics", dir / "link.jsonl"}, "new");
  EXPECT_TRUE(fs::is_symlink(dir / "link.jsonl"));
  EXPECT_EQ(slurp(dir / "real.jsonl"), "new");
}

TEST(OutputFile, RefusesAnInputOfTheRunByDeviceAndInode) {
  const TempDir dir;
  spit(dir / "data.txt", "precious");
  fs::create_hard_link(dir / "data.txt", dir / "other_name.txt");
  const std::vector<NamedPath> inputs = {{"the config file", ""}, {"the data file", dir / "data.txt"}};
  for (const std::string& path : {dir / "data.txt", dir / "other_name.txt", dir / "./data.txt"}) {
    const std::string e = error_of([&] { OutputFile f({"--metrics", path}, inputs); });
    EXPECT_NE(e.find("is the same file as the data file " + (dir / "data.txt")), std::string::npos) << e;
  }
  EXPECT_EQ(slurp(dir / "data.txt"), "precious");
  const std::string twice = error_of([&] { check_output_paths({{"--metrics", dir / "m"}, {"--trace", dir / "./m"}}); });
  EXPECT_NE(twice.find("--trace"), std::string::npos);
  EXPECT_NE(twice.find("is also named by another output flag"), std::string::npos) << twice;
}

TEST(OutputFile, AnUnwritableDirectoryFailsWhenTheFileIsMadeNotAtTheEnd) {
  // /proc/self refuses new files even to root: the error comes from the constructor.
  const std::string e = error_of([] { OutputFile f({"--trace", "/proc/self/zero_trace.json"}); });
  EXPECT_NE(e.find("[output] --trace /proc/self/zero_trace.json cannot be written: creating a file in /proc/self failed"),
            std::string::npos) << e;
}

TEST(OutputFile, ConcurrentWritersOfOnePathEachPublishTheirOwnWholeFile) {
  const TempDir dir;
  const std::string path = dir / "same.jsonl";
  std::vector<std::thread> writers;
  std::vector<std::string> errors(8);
  for (int w = 0; w < 8; ++w) {
    writers.emplace_back([&, w] {
      try {
        OutputFile f({"--metrics", path});
        for (int line = 0; line < 200; ++line) f.write(std::string(100, static_cast<char>('a' + w)) + "\n");
        f.commit();
      } catch (const std::exception& e) {
        errors[w] = e.what();
      }
    });
  }
  for (auto& t : writers) t.join();
  for (const std::string& e : errors) EXPECT_EQ(e, "");
  const std::string text = slurp(path);
  ASSERT_EQ(text.size(), 200u * 101);
  for (std::size_t i = 0; i < text.size(); ++i) {  // one writer's lines, none mixed in from another
    ASSERT_EQ(text[i], i % 101 == 100 ? '\n' : text[0]) << "byte " << i;
  }
  EXPECT_EQ(dir.names(), std::vector<std::string>{"same.jsonl"});
}

// --metrics grows a line per step (issue 21): what is written is in the file at once, so a run
// killed later keeps it; nothing happens to an earlier file until the first line.
TEST(OutputLog, EachWriteIsInTheFileAtOnceAndAnEarlierFileStaysUntilTheFirst) {
  const TempDir dir;
  spit(dir / "m.jsonl", "earlier run\n");
  {
    OutputLog log({"--metrics", dir / "m.jsonl"});
    EXPECT_EQ(slurp(dir / "m.jsonl"), "earlier run\n");  // a run that fails before its first step changes nothing
    log.write("step 1\n");
    EXPECT_EQ(slurp(dir / "m.jsonl"), "step 1\n");
    log.write("step 2\n");
    EXPECT_EQ(slurp(dir / "m.jsonl"), "step 1\nstep 2\n");  // before any sync or close
  }
  {
    OutputLog resumed({"--metrics", dir / "m.jsonl"}, {}, true);
    resumed.write("step 3\n");
    resumed.sync();
  }
  EXPECT_EQ(slurp(dir / "m.jsonl"), "step 1\nstep 2\nstep 3\n");
  { OutputLog unused({"--metrics", dir / "new.jsonl"}); }  // created, never written: removed again
  EXPECT_EQ(dir.names(), std::vector<std::string>{"m.jsonl"});  // and no temporary file
}

TEST(OutputLog, RefusesWhatOutputFileRefuses) {
  const TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  const std::string fifo = error_of([&] { OutputLog log({"--metrics", dir / "fifo"}); });
  EXPECT_NE(fifo.find("[output] --metrics " + (dir / "fifo") + " is a FIFO (named pipe)"), std::string::npos) << fifo;
  spit(dir / "data.txt", "precious");
  const std::vector<NamedPath> inputs = {{"the data file", dir / "data.txt"}};
  EXPECT_NE(error_of([&] { OutputLog log({"--metrics", dir / "data.txt"}, inputs); }).find("is the same file as the data file"),
            std::string::npos);
  EXPECT_EQ(slurp(dir / "data.txt"), "precious");
}

// Two runs appending to one file would interleave their steps: the second is refused at once,
// naming the first's pid, and the first's lines are untouched.
TEST(OutputLog, ASecondRunWritingTheSameFileIsRefusedNamingTheFirst) {
  const TempDir dir;
  int ready[2], done[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(done), 0);
  const pid_t first = ::fork();
  ASSERT_GE(first, 0);
  if (first == 0) {  // the first run: holds the file until told to end
    OutputLog log({"--metrics", dir / "m.jsonl"});
    log.write("first\n");
    char c = 1;
    (void)!::write(ready[1], &c, 1);
    (void)!::read(done[0], &c, 1);
    _exit(0);
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  const std::string e = error_of([&] { OutputLog second({"--metrics", dir / "m.jsonl"}); });
  (void)!::write(done[1], &c, 1);
  int status = 0;
  ::waitpid(first, &status, 0);
  EXPECT_NE(e.find("[output] --metrics " + (dir / "m.jsonl") + " is being written by another run (pid " + std::to_string(first) + ")"),
            std::string::npos) << e;
  EXPECT_EQ(slurp(dir / "m.jsonl"), "first\n");
}

TEST(NumberText, ReadsNumbersOfAnyLengthWithoutThrowing) {
  EXPECT_EQ(*parse_decimal("80"), 80.0L);
  EXPECT_EQ(*parse_decimal("1.5e3"), 1500.0L);
  EXPECT_EQ(*parse_decimal(".5"), 0.5L);
  EXPECT_EQ(*parse_decimal("5."), 5.0L);
  EXPECT_TRUE(std::isinf(*parse_decimal("1e99999")));
  EXPECT_EQ(*parse_decimal("1e-99999"), 0.0L);
  EXPECT_TRUE(std::isinf(*parse_decimal(std::string(100000, '9'))));
  for (const char* bad : {"", ".", "e5", "5e", "1..2", "--1", "0x10", "1 "}) EXPECT_FALSE(parse_decimal(bad)) << bad;
  EXPECT_EQ(decimal_length("80GiB"), 2u);
  EXPECT_EQ(decimal_length("5eB"), 1u);
  EXPECT_EQ(quote_input(std::string(50, '7')), "'" + std::string(40, '7') + "...' (50 characters)");
}

}  // namespace
}  // namespace zero
