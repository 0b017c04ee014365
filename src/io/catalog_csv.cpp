// Catalogs as CSV (header row of column names; full float64 precision).
#include <charconv>
#include <string>

#include "catalog_columns.hpp"
#include "imflow/io/atomic_file.hpp"
#include "imflow/io/catalog.hpp"

namespace imflow {

std::string catalog_csv(const Catalog& catalog) {
  const auto& columns = detail::catalog_columns();
  std::string out;
  out.reserve((catalog.size() + 1) * columns.size() * 16);
  for (size_t c = 0; c < columns.size(); ++c) {
    if (c) out += ',';
    out += columns[c].name;
  }
  out += '\n';
  // std::to_chars: the shortest text that reads back to the same double (and fast).
  char number[40];
  for (const Source& source : catalog) {
    for (size_t c = 0; c < columns.size(); ++c) {
      const double value = columns[c].value(source);
      const auto result = columns[c].integer
                              ? std::to_chars(number, number + sizeof number, static_cast<long long>(value))
                              : std::to_chars(number, number + sizeof number, value);
      if (c) out += ',';
      out.append(number, result.ptr);
    }
    out += '\n';
  }
  return out;
}

void write_catalog_csv(const std::filesystem::path& path, const Catalog& catalog) {
  write_text_atomic(path, catalog_csv(catalog));
}

}  // namespace imflow
