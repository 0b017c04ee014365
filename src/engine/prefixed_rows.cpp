// append_prefixed_rows (prefixed_rows.hpp): large texts in blocks of about a MiB, each block's
// output built (and its pages first touched) by the thread that prefixes it.
#include "prefixed_rows.hpp"

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cstring>
#include <utility>

namespace imflow {

namespace {
constexpr size_t kBlockBytes = size_t{1} << 20;

int64_t append_lines(std::string_view text, std::string_view prefix, std::string& out) {
  int64_t lines = 0;
  out.reserve(out.size() + text.size() + prefix.size() * (text.size() / 64 + 1));
  for (size_t begin = 0; begin < text.size();) {
    const void* found = std::memchr(text.data() + begin, '\n', text.size() - begin);
    const size_t end = found != nullptr ? static_cast<size_t>(static_cast<const char*>(found) - text.data()) : text.size();
    if (end > begin) {
      out.append(prefix);
      out.append(text.substr(begin, end - begin));
      out += '\n';
      ++lines;
    }
    begin = end + 1;
  }
  return lines;
}
}  // namespace

int64_t append_prefixed_rows(std::string_view rows, std::string_view prefix, std::string& out,
                             std::vector<std::string>& more, size_t parallel_bytes) {
  if (rows.size() < parallel_bytes) return append_lines(rows, prefix, more.empty() ? out : more.back());
  std::vector<std::string_view> blocks;  // whole lines each
  for (size_t begin = 0; begin < rows.size();) {
    size_t end = std::min(rows.size(), begin + kBlockBytes);
    if (end < rows.size()) {
      const void* found = std::memchr(rows.data() + end, '\n', rows.size() - end);
      end = found != nullptr ? static_cast<size_t>(static_cast<const char*>(found) - rows.data()) + 1 : rows.size();
    }
    blocks.push_back(rows.substr(begin, end - begin));
    begin = end;
  }
  std::vector<std::string> texts(blocks.size());
  std::vector<int64_t> lines(blocks.size(), 0);
  // Isolated: a thread waiting here must not pick up unrelated work (e.g. a flow graph's next item).
  tbb::this_task_arena::isolate([&] {
    tbb::parallel_for(size_t{0}, blocks.size(), [&](size_t b) { lines[b] = append_lines(blocks[b], prefix, texts[b]); });
  });
  int64_t total = 0;
  for (size_t b = 0; b < blocks.size(); ++b) {
    total += lines[b];
    more.push_back(std::move(texts[b]));
  }
  return total;
}

}  // namespace imflow
