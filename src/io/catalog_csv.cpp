// Catalogs as CSV (header row of column names; full float64 precision).
#include <cstdio>
#include <sstream>

#include "catalog_columns.hpp"
#include "imflow/io/atomic_file.hpp"
#include "imflow/io/catalog.hpp"

namespace imflow {

std::string catalog_csv(const Catalog& catalog) {
  const auto& columns = detail::catalog_columns();
  std::ostringstream out;
  for (size_t c = 0; c < columns.size(); ++c) out << (c ? "," : "") << columns[c].name;
  out << '\n';
  char number[40];
  for (const Source& source : catalog) {
    for (size_t c = 0; c < columns.size(); ++c) {
      const double value = columns[c].value(source);
      if (columns[c].integer) {
        std::snprintf(number, sizeof number, "%lld", static_cast<long long>(value));
      } else {
        std::snprintf(number, sizeof number, "%.17g", value);
      }
      out << (c ? "," : "") << number;
    }
    out << '\n';
  }
  return out.str();
}

void write_catalog_csv(const std::filesystem::path& path, const Catalog& catalog) {
  write_text_atomic(path, catalog_csv(catalog));
}

}  // namespace imflow
