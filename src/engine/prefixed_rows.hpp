// The merged catalog's rows: each non-empty line of an item's catalog text prefixed by the item's
// columns, in parallel blocks for large catalogs (a mosaic's million rows).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace imflow {

// Append `prefix` + line + '\n' for every non-empty line of `rows` (lines end at '\n'; the last
// one may not) to the text `out` followed by `more` (to more.back(), or to `out` while `more` is
// empty). Texts of at least `parallel_bytes` are cut into blocks at line ends, each prefixed by a
// thread of its own into a new string appended to `more`. Returns the lines appended.
inline constexpr size_t kParallelPrefixBytes = size_t{8} << 20;
int64_t append_prefixed_rows(std::string_view rows, std::string_view prefix, std::string& out,
                             std::vector<std::string>& more, size_t parallel_bytes = kParallelPrefixBytes);

}  // namespace imflow
