// The merged catalog's prefixed rows: the parallel blocks give exactly the serial text.
#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

#include "engine/prefixed_rows.hpp"

using imflow::append_prefixed_rows;

namespace {
std::string joined(const std::string& first, const std::vector<std::string>& more) {
  std::string text = first;
  for (const std::string& block : more) text += block;
  return text;
}
}  // namespace

TEST_CASE("prefixed rows: every non-empty line, with or without a final newline", "[summary]") {
  std::string out = "kept\n";
  std::vector<std::string> more;
  CHECK(append_prefixed_rows("1,2\n\n3,4", "f.fits,0,0,", out, more) == 2);
  CHECK(out == "kept\nf.fits,0,0,1,2\nf.fits,0,0,3,4\n");
  CHECK(more.empty());
  out.clear();
  CHECK(append_prefixed_rows("", "p,", out, more) == 0);
  CHECK(append_prefixed_rows("\n\n", "p,", out, more) == 0);
  CHECK(out.empty());
}

TEST_CASE("prefixed rows in parallel blocks equal the serial ones", "[summary]") {
  // ~6 MB of rows of random lengths, some empty, cut into 1 MiB blocks; with and without a final
  // newline, and cut in the middle of a line; then a small text after the blocks.
  std::mt19937 random(7);
  std::string rows;
  for (int line = 0; rows.size() < (size_t{6} << 20); ++line) {
    const int length = random() % 13 == 0 ? 0 : 1 + static_cast<int>(random() % 400);
    for (int c = 0; c < length; ++c) rows += static_cast<char>('0' + (line + c) % 10);
    rows += '\n';
  }
  for (const std::string& text : {rows, rows + "9,9,9", rows.substr(0, (size_t{3} << 20) + 17)}) {
    std::string serial = "header\n", parallel = "header\n";
    std::vector<std::string> serial_more, parallel_more;
    const int64_t lines = append_prefixed_rows(text, "\"a,b.fits\",1,2,", serial, serial_more, text.size() + 1);
    CHECK(serial_more.empty());
    CHECK(append_prefixed_rows(text, "\"a,b.fits\",1,2,", parallel, parallel_more, 1) == lines);
    CHECK(parallel_more.size() > 2);
    CHECK(parallel == "header\n");
    CHECK(lines > 10000);
    CHECK(append_prefixed_rows("x\ny", "p,", serial, serial_more, 1000) == 2);
    CHECK(append_prefixed_rows("x\ny", "p,", parallel, parallel_more, 1000) == 2);
    CHECK(joined(parallel, parallel_more) == joined(serial, serial_more));
  }
}
