// ConcurrentFileWriter: ranges written by many threads at once, through the mapping and through
// pwrite() mixed, give exactly the bytes laid out; a range the file may not hold is an error code.
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <tbb/parallel_for.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <fstream>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "imflow/io/concurrent_file_writer.hpp"
#include "test_helpers.hpp"

using imflow::ConcurrentFileWriter;

namespace {
struct Range {
  uint64_t offset;
  std::string bytes;
};

// 400 ranges of 0..40,000 random bytes laid end to end, and the file they make.
std::vector<Range> make_ranges(std::string& whole) {
  std::mt19937 rng(11);
  std::vector<Range> ranges;
  for (int i = 0; i < 400; ++i) {
    std::string bytes(rng() % 40001, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    ranges.push_back({whole.size(), bytes});
    whole += bytes;
  }
  return ranges;
}

// The range in one to three pieces.
std::vector<std::string_view> pieces_of(const std::string& bytes, size_t i) {
  const std::string_view all(bytes);
  const size_t a = all.size() / 3, b = 2 * all.size() / 3;
  if (i % 3 == 0) return {all};
  if (i % 3 == 1) return {all.substr(0, a), all.substr(a)};
  return {all.substr(0, a), all.substr(a, b - a), all.substr(b)};
}

std::string fill(const std::filesystem::path& path, size_t reserve) {
  std::string whole;
  const std::vector<Range> ranges = make_ranges(whole);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  REQUIRE(fd >= 0);
  {
    ConcurrentFileWriter file(fd, reserve);
    CHECK(file.mapped() == (reserve != 0));
    // Every range once, in shuffled order across threads; odd ones through pwrite().
    std::vector<size_t> order(ranges.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), std::mt19937(5));
    std::vector<int> failures(ranges.size(), -1);
    tbb::parallel_for(size_t{0}, order.size(), [&](size_t k) {
      const size_t i = order[k];
      const std::vector<std::string_view> pieces = pieces_of(ranges[i].bytes, i);
      failures[i] = i % 2 ? file.write_at(ranges[i].offset, pieces) : file.copy_at(ranges[i].offset, pieces);
    });
    CHECK(std::all_of(failures.begin(), failures.end(), [](int f) { return f == 0; }));
  }
  ::close(fd);
  CHECK(test::read_text(path) == whole);
  return whole;
}
}  // namespace

TEST_CASE("ranges written by many threads at once make exactly the file laid out", "[unit][io]") {
  test::TempDir dir("concurrent_file_writer");
  SECTION("through the mapping and pwrite") { fill(dir / "mapped.bin", size_t{256} << 30); }
  SECTION("ranges past the mapping go through pwrite") { fill(dir / "small_map.bin", size_t{1} << 20); }
  SECTION("without a mapping") { fill(dir / "unmapped.bin", 0); }
}

TEST_CASE("a range the file may not hold is an error code, not a signal", "[unit][io]") {
  // A file-size limit refuses the blocks as a full filesystem would: fallocate fails before any
  // page is touched, so the copy returns EFBIG instead of raising SIGBUS. In a child process, whose
  // limit does not reach the tests.
  test::TempDir dir("concurrent_file_writer_limit");
  const std::filesystem::path path = dir / "limited.bin";
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    std::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{1 << 20, 1 << 20};
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ::setrlimit(RLIMIT_FSIZE, &limit) != 0) ::_exit(2);
    ConcurrentFileWriter file(fd);
    const std::string bytes(4096, 'x');
    const std::string_view pieces[] = {bytes};
    const bool inside = file.copy_at(4096, pieces) == 0;
    const int beyond = file.copy_at(size_t{2} << 20, pieces);
    ::_exit(inside && beyond == EFBIG ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("a full filesystem fails a copy with ENOSPC, not a signal", "[unit][io]") {
  // A 64 KiB tmpfs of the child's own (a user and mount namespace): the file grows to the range's
  // end, but its pages cannot all be had; faulting them in reports it, fallocate names it.
  test::TempDir dir("concurrent_file_writer_full");
  const std::filesystem::path mount_point = dir / "small";
  std::filesystem::create_directories(mount_point);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // The namespace's root is this user (files can be made only by a mapped user).
    const std::string uid = std::to_string(::getuid()), gid = std::to_string(::getgid());
    const auto put = [](const char* path, const std::string& text) {
      const int out = ::open(path, O_WRONLY);
      const bool written = out >= 0 && ::write(out, text.data(), text.size()) == static_cast<ssize_t>(text.size());
      if (out >= 0) ::close(out);
      return written;
    };
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0 || !put("/proc/self/setgroups", "deny") ||
        !put("/proc/self/uid_map", "0 " + uid + " 1") || !put("/proc/self/gid_map", "0 " + gid + " 1") ||
        ::mount("tmpfs", mount_point.c_str(), "tmpfs", 0, "size=64k") != 0) {
      ::_exit(3);
    }
    const int fd = ::open((mount_point / "full.bin").c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) ::_exit(2);
    ConcurrentFileWriter file(fd);
    const std::string bytes(size_t{16} << 10, 'x'), more(size_t{128} << 10, 'y');
    const std::string_view fits[] = {bytes}, too_much[] = {more};
    const bool inside = file.copy_at(0, fits) == 0;
    const int beyond = file.copy_at(size_t{32} << 10, too_much);
    ::_exit(inside && beyond == ENOSPC ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));  // not killed by SIGBUS
  if (WEXITSTATUS(status) == 3) {
    WARN("not run: this machine gives a process no tmpfs of its own (user and mount namespaces)");
    return;
  }
  CHECK(WEXITSTATUS(status) == 0);
}

namespace {
// This process's resident pages of files and shared memory (kB in /proc/self/status), in bytes.
size_t resident_file_bytes() {
  std::ifstream status("/proc/self/status");
  size_t total = 0;
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("RssFile:", 0) == 0 || line.rfind("RssShmem:", 0) == 0) total += std::stoull(line.substr(9)) * 1024;
  }
  return total;
}
}  // namespace

TEST_CASE("ranges copied through the mapping do not stay in the process's resident memory", "[unit][io]") {
  // 64 MiB copied from one 1 MiB buffer: the pages are in the file, not mapped into the process.
  test::TempDir dir("concurrent_file_writer_rss");
  const std::filesystem::path path = dir / "big.bin";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  REQUIRE(fd >= 0);
  const std::string block(size_t{1} << 20, 'r');
  const std::string_view pieces[] = {block};
  const size_t before = resident_file_bytes();
  {
    ConcurrentFileWriter file(fd);
    REQUIRE(file.mapped());
    for (uint64_t i = 0; i < 64; ++i) REQUIRE(file.copy_at(i << 20, pieces) == 0);
    CHECK(resident_file_bytes() < before + (size_t{8} << 20));
  }
  ::close(fd);
  CHECK(std::filesystem::file_size(path) == size_t{64} << 20);
  CHECK(test::read_text(path) == std::string(size_t{64} << 20, 'r'));
}
