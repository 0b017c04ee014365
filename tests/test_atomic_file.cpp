// AtomicFileWriter: the file appears under its final name only complete (an unnamed file linked
// into place where the filesystem has them, else a temporary name renamed), replaces an existing
// file atomically, and leaves nothing behind when not committed.
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "imflow/errors.hpp"
#include "imflow/io/atomic_file.hpp"
#include "test_helpers.hpp"

using namespace imflow;
using test::TempDir;
namespace fs = std::filesystem;

namespace {
std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename().string());
  return names;
}

std::string contents(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Whether this directory's filesystem makes unnamed files (and /proc links them).
bool unnamed_files_here(const fs::path& dir) {
#if defined(O_TMPFILE)
  if (::access("/proc/self/fd", X_OK) != 0) return false;
  const int fd = ::open(dir.c_str(), O_TMPFILE | O_WRONLY, 0666);
  if (fd < 0) return false;
  ::close(fd);
  return true;
#else
  (void)dir;
  return false;
#endif
}
}  // namespace

TEST_CASE("AtomicFileWriter publishes a file only when it is committed", "[io]") {
  const auto temp = GENERATE(AtomicFileWriter::TempFile::unnamed_where_possible, AtomicFileWriter::TempFile::named);
  TempDir dir("atomic_file_writer");
  const fs::path path = dir.path() / "sub" / "out.csv";  // the parent is made
  AtomicFileWriter writer(path, temp);
  const bool unnamed = temp == AtomicFileWriter::TempFile::unnamed_where_possible && unnamed_files_here(dir.path() / "sub");
  CHECK(writer.unnamed() == unnamed);
  writer.write("a,b\n");
  writer.write(std::string(100000, 'x'));
  CHECK_FALSE(fs::exists(path));
  const std::vector<std::string> before = entries(dir.path() / "sub");
  if (unnamed) {
    CHECK(before.empty());  // no name at all until the commit
  } else {
    REQUIRE(before.size() == 1);
    CHECK(before[0].rfind(".out.csv.tmp-", 0) == 0);
  }
  writer.commit();
  CHECK(contents(path) == "a,b\n" + std::string(100000, 'x'));
  CHECK(entries(dir.path() / "sub") == std::vector<std::string>{"out.csv"});
  // Permissions as a plain create gives them: 0666 less the umask.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == (0666 & ~mask));
}

TEST_CASE("AtomicFileWriter replaces an existing file atomically", "[io]") {
  const auto temp = GENERATE(AtomicFileWriter::TempFile::unnamed_where_possible, AtomicFileWriter::TempFile::named);
  TempDir dir("atomic_file_replace");
  const fs::path path = dir.path() / "out.png";
  write_text_atomic(path, "old contents");
  {
    AtomicFileWriter writer(path, temp);
    writer.write("new");
    CHECK(contents(path) == "old contents");  // the old file stays whole until the commit
    writer.commit();
  }
  CHECK(contents(path) == "new");
  CHECK(entries(dir.path()) == std::vector<std::string>{"out.png"});
}

TEST_CASE("AtomicFileWriter leaves nothing behind when not committed", "[io]") {
  const auto temp = GENERATE(AtomicFileWriter::TempFile::unnamed_where_possible, AtomicFileWriter::TempFile::named);
  TempDir dir("atomic_file_abandon");
  const fs::path kept = dir.path() / "kept.csv";
  write_text_atomic(kept, "kept");
  {
    AtomicFileWriter fresh(dir.path() / "fresh.csv", temp);
    fresh.write("half");
    AtomicFileWriter over(kept, temp);
    over.write("half");
  }  // an error between writing and committing
  CHECK(entries(dir.path()) == std::vector<std::string>{"kept.csv"});
  CHECK(contents(kept) == "kept");
}

TEST_CASE("AtomicFileWriter names the output it cannot create", "[io]") {
  TempDir dir("atomic_file_error");
  write_text_atomic(dir.path() / "plain", "a file, not a directory");
  const fs::path path = dir.path() / "plain" / "out.csv";
  try {
    AtomicFileWriter writer(path);
    FAIL("no error for an output under a regular file");
  } catch (const OutputError& error) {
    CHECK(std::string(error.what()).find((dir.path() / "plain").string()) != std::string::npos);
  }
}
