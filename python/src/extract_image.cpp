// imflow.extract_image: a pipeline (YAML text) over one in-memory float32 image by the engine's CPU
// stage (process_in_memory), the catalog as the FITS catalog's columns (names, units, values).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <tbb/task_arena.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "arrays.hpp"
#include "bindings.hpp"
#include "imflow/errors.hpp"
#include "imflow/in_memory.hpp"
#include "imflow/io/fits.hpp"
#include "imflow/pipeline.hpp"
#include "src/engine/writer.hpp"      // provenance_cards: the FITS catalog's header keywords
#include "src/io/catalog_output.hpp"  // catalog_output_columns: the CSV and FITS catalog's columns

namespace nb = nanobind;

namespace imflow::python {

namespace {
// The catalog column `column` of every source, as the FITS table stores it (integers truncated).
template <typename T>
nb::object column_array(const detail::OutputColumn& column, const Catalog& catalog, const PhotometryTable* photometry) {
  const double zeropoint = photometry && photometry->zeropoint ? *photometry->zeropoint : 0.0;
  std::vector<T> values(catalog.size());
  for (size_t i = 0; i < catalog.size(); ++i) {
    const double* row = photometry ? photometry->row(i) : nullptr;
    values[i] = static_cast<T>(detail::column_value(column, catalog[i], row, zeropoint, 0));
  }
  return nb::cast(to_numpy(std::move(values), {catalog.size()}));
}

nb::object column_of(const detail::OutputColumn& column, const Catalog& catalog, const PhotometryTable* photometry) {
  switch (column.form) {
    case 'I': return column_array<int16_t>(column, catalog, photometry);
    case 'J': return column_array<int32_t>(column, catalog, photometry);
    case 'K': return column_array<int64_t>(column, catalog, photometry);
    default: return column_array<double>(column, catalog, photometry);
  }
}

// Runs `yaml_text`'s steps on `image` (threads <= 0: all cores). Returns a dict: names, units,
// descriptions and columns (NumPy arrays) of the catalog, cards ((key, value text, numeric) of the
// FITS catalog's header keywords of the results) and warnings.
nb::dict extract_image(const std::string& yaml_text, const std::string& source_name, const Image& image, int threads) {
  const Pipeline pipeline = parse_pipeline(yaml_text, source_name);
  WorkItem item;
  {
    nb::gil_scoped_release unlocked;
    ItemRef ref;
    ref.path = "<array>";  // names the image in messages; no file: header keywords fall back to the pipeline's values
    item.reset(std::move(ref));
    item.pixels.resize(static_cast<int64_t>(image.shape(1)), static_cast<int64_t>(image.shape(0)));
    std::memcpy(item.pixels.data(), image.data(), image.size() * sizeof(float));
    tbb::task_arena arena(threads > 0 ? threads : tbb::task_arena::automatic);
    arena.execute([&] { process_in_memory(pipeline, item); });
  }
  if (!item.catalog) {
    throw ConfigError(source_name + ": the pipeline makes no catalog (its steps end without measure)");
  }
  const PhotometryTable* photometry = item.photometry ? &*item.photometry : nullptr;
  nb::list names, units, descriptions, columns, cards, warnings;
  for (const detail::OutputColumn& column : detail::catalog_output_columns(photometry)) {
    names.append(column.name);
    units.append(column.unit);
    descriptions.append(column.description);
    columns.append(column_of(column, *item.catalog, photometry));
  }
  for (const FitsCard& card : provenance_cards(item)) {
    if (card.key.rfind("SRC", 0) == 0) continue;  // the input file, HDU and plane: none here
    cards.append(nb::make_tuple(card.key, card.value, card.numeric, card.comment));
  }
  for (const std::string& warning : item.warnings) warnings.append(warning);
  nb::dict out;
  out["names"] = names;
  out["units"] = units;
  out["descriptions"] = descriptions;
  out["columns"] = columns;
  out["cards"] = cards;
  out["warnings"] = warnings;
  return out;
}
}  // namespace

void bind_extract_image(nb::module_& module) {
  module.def("extract_image", &extract_image, nb::arg("yaml_text"), nb::arg("source_name"), nb::arg("image"),
             nb::arg("threads"),
             "Run a pipeline's steps (YAML text) on a float32 image on the CPU: the catalog's columns as a dict.");
}

}  // namespace imflow::python
