// Output writing for the astronomy results; each file is written atomically.
#include "writer.hpp"

#include <spdlog/spdlog.h>
#include <tbb/parallel_for_each.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>

#include "imflow/errors.hpp"
#include "imflow/io/catalog.hpp"
#include "imflow/io/fits.hpp"
#include "imflow/io/input_format.hpp"
#include "imflow/io/ldac.hpp"
#include "imflow/trace.hpp"
#include "imflow/version.hpp"
#include "input_limits.hpp"
#include "mri_outputs.hpp"
#include "stages.hpp"

namespace imflow {

namespace fs = std::filesystem;

fs::path output_stem(const ItemRef& ref, const fs::path& output_dir) {
  if (!is_contained_relative(ref.relative)) {
    throw OutputError(ref.path.string() + ": relative path '" + ref.relative.string() +
                      "' would place outputs outside the output directory");
  }
  return output_dir / ref.relative.parent_path() / output_name(ref.relative.filename().string(), ref.hdu, ref.plane, ref.planes);
}

std::vector<FitsCard> provenance_cards(const WorkItem& item) {
  std::vector<FitsCard> cards = {
      {"ORIGIN", std::string("imflow ") + kVersion, "software that wrote this file", false},
      {"SRCFILE", item.ref.relative.string(), "input file, relative to the input directory", false},
      {"SRCHDU", std::to_string(item.ref.hdu), "input HDU, 0-based (0 = primary)", true, false, true},
      {"SRCPLANE", std::to_string(item.ref.plane), "input plane of a cube, 0-based", true, false, true},
  };
  if (!item.ref.extname.empty()) cards.push_back({"SRCEXT", item.ref.extname, "EXTNAME of the input HDU", false});
  // FITS has no NaN numeric value (an all-NaN image has a NaN background): write those as text.
  auto number = [&](const char* key, double value, const char* comment) {
    // %.17g: std::to_string's fixed 6 decimals wrote 0.000000 for a background of 1e-11 (flux-calibrated images).
    char text[32];
    std::snprintf(text, sizeof text, "%.17g", value);
    cards.push_back({key, std::isfinite(value) ? std::string(text) : std::string("NaN"), comment, std::isfinite(value)});
  };
  if (item.background) {
    const bool mesh = item.background->meshes > 0;
    number("BKG_MED", item.background->median, mesh ? "mesh background: global level (SEP globalback)"
                                                    : "kappa-sigma clipped median");
    number("BKG_STD", item.background->std, mesh ? "mesh background: global rms (SEP globalrms)"
                                                 : "kappa-sigma clipped std (ddof 0)");
  }
  if (item.threshold) number("THRESH", *item.threshold, "segmentation threshold");
  if (item.gain) number("GAIN", *item.gain, "e-/ADU of the error columns' Poisson term (0: none)");
  if (item.photometry && item.photometry->zeropoint) number("MAGZERO", *item.photometry->zeropoint, "zeropoint of the mag columns");
  return cards;
}

namespace {
fs::path with_suffix(const fs::path& stem, const std::string& suffix) { return fs::path(stem.string() + suffix); }
}  // namespace

void check_output_parents(const fs::path& stem, const fs::path& output_dir) {
  // Every directory between OUT and the file must be a real directory (or not exist yet):
  // a symlink planted there would send the outputs elsewhere.
  fs::path current = output_dir;
  for (const fs::path& part : stem.parent_path().lexically_relative(output_dir)) {
    if (part.empty() || part == ".") continue;
    if (part == "..") throw OutputError(stem.string() + ": outside the output directory");
    current /= part;
    std::error_code error;
    const fs::file_status status = fs::symlink_status(current, error);
    if (error || !fs::exists(status)) return;  // created by the writer below
    if (!fs::is_directory(status)) {
      throw OutputError(current.string() + ": is a symlink or not a directory; outputs are only written to "
                        "real directories below the output directory");
    }
  }
}

void write_catalog_files(const fs::path& stem, const Catalog& catalog, const PhotometryTable* photometry,
                         const std::vector<FitsCard>& cards, const OutputConfig& output, std::vector<fs::path>& written,
                         const std::function<std::vector<std::string>()>& ldac_header,
                         const CatalogCsvText* device_csv) {
  struct CatalogFile {
    const char* part;  // its name in the trace
    fs::path path;
    std::function<void(const fs::path&)> write;
    std::atomic<bool> done{false};
  };
  std::vector<std::unique_ptr<CatalogFile>> files;
  const auto add = [&](const char* format, const char* part, const char* suffix,
                       std::function<void(const fs::path&)> write) {
    if (!output.wants(format)) return;
    files.push_back(std::make_unique<CatalogFile>());
    files.back()->part = part;
    files.back()->path = with_suffix(stem, suffix);
    files.back()->write = std::move(write);
  };
  add("csv", "catalog csv", ".cat.csv", [&](const fs::path& path) { write_catalog_csv(path, catalog, photometry, device_csv); });
  add("fits", "catalog fits", ".cat.fits", [&](const fs::path& path) { write_catalog_fits(path, catalog, cards, photometry); });
  // STEM.ldac: SCAMP names its output header STEM.head, the name SWarp looks for beside STEM.fits.
  add("ldac", "catalog ldac", ".ldac", [&](const fs::path& path) { write_catalog_ldac(path, catalog, ldac_header(), cards, photometry); });
  const TraceStage* stage = TraceStage::open();  // also the stage of the files written on helpers
  const auto write = [stage](CatalogFile& file) {
    TracePart part(file.part, stage);
    file.write(file.path);
    file.done = true;
  };
  // `written` lists the files finished, also when another one fails.
  const auto list_done = [&] {
    for (const auto& file : files) {
      if (file->done) written.push_back(file->path);
    }
  };
  try {
    if (files.size() > 1 && catalog.size() > kCatalogBlockRows) {
      // Each file is itself made in parallel blocks; the files are written at once.
      tbb::parallel_for_each(files.begin(), files.end(), [&](const std::unique_ptr<CatalogFile>& file) { write(*file); });
    } else {
      for (const auto& file : files) write(*file);
    }
  } catch (...) {
    list_done();
    throw;
  }
  list_done();
}

ImageWcs output_wcs(const ItemRef& ref, bool has_catalog, const OutputConfig& output,
                    const std::vector<std::string>* header_records) {
  const bool uses_wcs = has_catalog || output.wants("labels") || output.wants("bgsub") || output.wants("fits_image");
  if (!uses_wcs) return {};
  ImageWcs wcs = header_records != nullptr && !header_records->empty() ? ImageWcs::from_records(*header_records, ref.plane)
                                                                        : ImageWcs::of_item(ref);
  if (!wcs.problem().empty()) spdlog::warn("{}: no sky coordinates: {}", item_name(ref), wcs.problem());
  if (!wcs.note().empty()) spdlog::warn("{}: sky coordinates: {}", item_name(ref), wcs.note());
  return wcs;
}

std::vector<FitsCard> image_cards(const WorkItem& item, const ImageWcs& wcs) {
  std::vector<FitsCard> cards = provenance_cards(item);
  for (const std::string& record : wcs.image_records()) cards.push_back({"", record, "", false, true});
  return cards;
}

void write_item_catalog(const fs::path& stem, const WorkItem& item, Catalog& catalog, const ImageWcs& wcs,
                        const OutputConfig& output, std::vector<fs::path>& written) {
  {
    TracePart part("sky positions");
    wcs.set_sky_positions(catalog);
  }
  std::vector<FitsCard> cards = provenance_cards(item);
  for (FitsCard& card : wcs.catalog_cards()) cards.push_back(std::move(card));
  const auto ldac_header = [&] {
    // The header output_wcs already read; read here only when that failed (this throws, naming the file).
    std::vector<std::string> records = wcs.header_records();
    if (records.empty() && is_fits_input(item.ref.path)) records = read_fits_header_records(item.ref.path, item.ref.hdu);
    const bool cube_plane = item.ref.planes > 1;
    std::vector<std::string> header = ldac_image_header(records, item.plane_width(), item.plane_height(), cube_plane,
                                                        cube_plane ? wcs.image_records() : std::vector<std::string>{});
    LdacExtraction extraction{std::nullopt, std::nullopt, item.threshold, item.gain.value_or(0.0)};
    if (item.background) extraction.background = item.background->median, extraction.rms = item.background->std;
    add_ldac_extraction_keywords(header, extraction);
    return header;
  };
  const PhotometryTable* photometry = item.photometry ? &*item.photometry : nullptr;
  write_catalog_files(stem, catalog, photometry, cards, output, written, ldac_header, item.catalog_csv.get());
}

namespace {
// The item's outputs, each path appended to `written` once its file is complete.
void write_all_outputs(WorkItem& item, const OutputConfig& output, std::vector<fs::path>& written) {
  const fs::path stem = output_stem(item.ref, output.dir);
  check_output_parents(stem, output.dir);
  // Without a catalog file the catalog is only counted (the summary's nsources): no sky positions.
  const bool catalog_files = item.catalog.has_value() && output.wants_catalog_files();
  const ImageWcs wcs = [&] {
    TracePart part("wcs");
    return output_wcs(item.ref, catalog_files, output, &item.fits_header);
  }();
  if (catalog_files) write_item_catalog(stem, item, *item.catalog, wcs, output, written);
  const bool labels = item.nlabels && output.wants("labels"), bgsub = item.background && output.wants("bgsub");
  const bool fits_images = labels || bgsub || output.wants("fits_image");
  const std::vector<FitsCard> cards = fits_images ? image_cards(item, wcs) : std::vector<FitsCard>{};
  if (labels) {
    TracePart part("labels image");
    const fs::path path = with_suffix(stem, ".labels.fits");
    write_fits_labels(path, {item.labels.data(), item.pixels.width(), item.pixels.height()}, cards);
    written.push_back(path);
  }
  if (bgsub) {
    TracePart part("bgsub image");
    ImageBuffer subtracted;
    subtracted.resize(item.pixels.width(), item.pixels.height());
    // The mesh background's map when the background step made one, else the global median; in
    // dual-image mode the measurement image's own.
    const bool dual = item.dual_image && item.measure_background;
    const std::vector<float>& back = dual ? item.measure_background_map : item.background_map;
    const bool map = static_cast<int64_t>(back.size()) == item.pixels.size();
    const float median = static_cast<float>((dual ? item.measure_background : item.background)->median);
    for (int64_t i = 0; i < item.pixels.size(); ++i)
      subtracted.data()[i] = item.pixels.data()[i] - (map ? back[i] : median);
    const fs::path path = with_suffix(stem, ".bgsub.fits");
    write_fits_image(path, subtracted.view(), cards);
    written.push_back(path);
  }
  if (output.wants("fits_image")) {
    TracePart part("fits image");
    const fs::path path = with_suffix(stem, ".image.fits");
    write_fits_image(path, item.pixels.view(), cards);
    written.push_back(path);
  }
  if (output.wants("png")) {
    TracePart part("png");
    const fs::path path = with_suffix(stem, ".image.png");
    write_png_output(item, path, output.png_compression);
    written.push_back(path);
  }
}
}  // namespace

void remove_outputs(const std::vector<fs::path>& written) {
  std::error_code ignored;
  for (const fs::path& path : written) fs::remove(path, ignored);
}

std::vector<fs::path> write_outputs(WorkItem& item, const OutputConfig& output) {
  std::vector<fs::path> written;
  try {
    write_all_outputs(item, output, written);
    return written;
  } catch (...) {
    // An item has all its outputs or none: the files this call finished go when a later one fails
    // (the failed one never replaced its final name: AtomicOutput removed its temporary file).
    remove_outputs(written);
    throw;
  }
}

}  // namespace imflow
