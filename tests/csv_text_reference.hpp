// The device's CSV text of a catalog (cuda/catalog_text.cu) made on the host from the same cells
// (imflow/kernels/csv_row_text.hpp): every cell followed by its separator, ra, dec and errtheta
// left empty, and each row's marks.
#pragma once
#include <cstdint>
#include <string>

#include "imflow/catalog_text.hpp"
#include "imflow/kernels/csv_row_text.hpp"
#include "imflow/source.hpp"

namespace test {

inline imflow::CatalogCsvText csv_text_as_device_writes(const imflow::Catalog& catalog) {
  namespace k = imflow::kernels;
  imflow::CatalogCsvText out;
  std::string text;
  const uint64_t* powers = k::shortest_decimal_powers();
  char cell[k::kCsvNumberChars];
  for (const imflow::Source& source : catalog) {
    const uint64_t start = text.size();
    uint64_t ra_at = 0, errtheta_at = 0;
    for (int c = 0; c < k::kCsvRowCells; ++c) {
      if (c == k::kCsvRaCell) ra_at = text.size() - start;
      if (c == k::kCsvErrthetaCell) errtheta_at = text.size() - start;
      text.append(cell, k::write_csv_cell(cell, source, c, powers));
      text += c + 1 < k::kCsvRowCells ? ',' : '\n';
    }
    out.rows.push_back(imflow::CatalogCsvText::row_mark(start, ra_at, errtheta_at));
  }
  out.set_text(text);
  return out;
}

}  // namespace test
