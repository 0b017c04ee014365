// Output writing for the astronomy results; each file is written atomically.
#include "writer.hpp"

#include <string>

#include "imflow/io/catalog.hpp"
#include "imflow/io/fits.hpp"
#include "imflow/io/input_format.hpp"
#include "imflow/version.hpp"
#include "mri_outputs.hpp"

namespace imflow {

namespace fs = std::filesystem;

fs::path output_stem(const ItemRef& ref, const fs::path& output_dir) {
  std::string name = strip_image_extension(ref.relative.filename().string());
  if (ref.hdu > 0) name += ".hdu" + std::to_string(ref.hdu);
  if (ref.planes > 1) name += ".p" + std::to_string(ref.plane);
  return output_dir / ref.relative.parent_path() / name;
}

namespace {
std::vector<FitsCard> provenance_cards(const WorkItem& item) {
  std::vector<FitsCard> cards = {
      {"ORIGIN", std::string("imflow ") + kVersion, "software that wrote this file", false},
      {"SRCFILE", item.ref.relative.string(), "input file, relative to the input directory", false},
      {"SRCHDU", std::to_string(item.ref.hdu), "input HDU, 0-based (0 = primary)", true},
      {"SRCPLANE", std::to_string(item.ref.plane), "input plane of a cube, 0-based", true},
  };
  if (item.background) {
    cards.push_back({"BKG_MED", std::to_string(item.background->median), "kappa-sigma clipped median", true});
    cards.push_back({"BKG_STD", std::to_string(item.background->std), "kappa-sigma clipped std (ddof 0)", true});
  }
  if (item.threshold) cards.push_back({"THRESH", std::to_string(*item.threshold), "segmentation threshold", true});
  return cards;
}

fs::path with_suffix(const fs::path& stem, const std::string& suffix) { return fs::path(stem.string() + suffix); }
}  // namespace

std::vector<fs::path> write_outputs(const WorkItem& item, const OutputConfig& output) {
  std::vector<fs::path> written;
  const fs::path stem = output_stem(item.ref, output.dir);
  const std::vector<FitsCard> cards = provenance_cards(item);
  if (item.catalog && output.wants("csv")) {
    written.push_back(with_suffix(stem, ".cat.csv"));
    write_catalog_csv(written.back(), *item.catalog);
  }
  if (item.catalog && output.wants("fits")) {
    written.push_back(with_suffix(stem, ".cat.fits"));
    write_catalog_fits(written.back(), *item.catalog, cards);
  }
  if (item.nlabels && output.wants("labels")) {
    written.push_back(with_suffix(stem, ".labels.fits"));
    write_fits_labels(written.back(), {item.labels.data(), item.pixels.width(), item.pixels.height()}, cards);
  }
  if (item.background && output.wants("bgsub")) {
    ImageBuffer subtracted;
    subtracted.resize(item.pixels.width(), item.pixels.height());
    const float median = static_cast<float>(item.background->median);
    for (int64_t i = 0; i < item.pixels.size(); ++i) subtracted.data()[i] = item.pixels.data()[i] - median;
    written.push_back(with_suffix(stem, ".bgsub.fits"));
    write_fits_image(written.back(), subtracted.view(), cards);
  }
  if (output.wants("fits_image")) {
    written.push_back(with_suffix(stem, ".image.fits"));
    write_fits_image(written.back(), item.pixels.view(), cards);
  }
  if (output.wants("png")) {
    written.push_back(with_suffix(stem, ".image.png"));
    write_png_output(item, written.back());
  }
  return written;
}

}  // namespace imflow
