// Sky coordinates of FITS images through WCSLIB (include/imflow/io/wcs.hpp).
#include <fitsio.h>
#include <wcslib/wcs.h>
#include <wcslib/wcsfix.h>
#include <wcslib/wcshdr.h>
#include <wcslib/wcsmath.h>
#include <wcslib/wcsutil.h>
#include <wcslib/sph.h>
#include <wcslib/wcstrig.h>

#include <tbb/blocked_range.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <utility>

#include "fits_records.hpp"
#include "fits_status.hpp"
#include "imflow/errors.hpp"
#include "imflow/io/fits.hpp"
#include "wcs_lookup_distortions.hpp"
#include "imflow/io/input_format.hpp"
#include "imflow/io/wcs.hpp"

namespace imflow {

namespace fs = std::filesystem;

struct ImageWcs::Parsed {
  int count = 0;
  wcsprm* all = nullptr;
  Parsed() = default;
  Parsed(const Parsed&) = delete;
  Parsed& operator=(const Parsed&) = delete;
  ~Parsed() {
    if (all != nullptr) wcsvfree(&count, &all);
  }
};

ImageWcs::ImageWcs() = default;
ImageWcs::~ImageWcs() = default;
// wcs_ points into parsed_: a moved-from ImageWcs has neither.
ImageWcs::ImageWcs(ImageWcs&& other) noexcept { *this = std::move(other); }
ImageWcs& ImageWcs::operator=(ImageWcs&& other) noexcept {
  parsed_ = std::move(other.parsed_);
  wcs_ = std::exchange(other.wcs_, nullptr);
  header_ = std::move(other.header_);
  naxes_ = std::move(other.naxes_);
  plane_ = other.plane_;
  plane_pixel_ = std::move(other.plane_pixel_);
  header_records_ = std::move(other.header_records_);
  problem_ = std::move(other.problem_);
  note_ = std::move(other.note_);
  radesys_ = std::move(other.radesys_);
  equinox_ = other.equinox_;
  lng_ = std::exchange(other.lng_, -1);
  lat_ = std::exchange(other.lat_, -1);
  to_equatorial_ = std::exchange(other.to_equatorial_, std::nullopt);
  return *this;
}

namespace {
constexpr size_t kRecord = detail::kRecordLength;
// Catalogs of more rows get their sky positions on all threads (a mosaic's million rows take
// ~20 ms on one, NaN without a WCS included).
constexpr size_t kParallelSkyRows = size_t{1} << 16;

std::string wcslib_text(int status) {
  return status > 0 && status <= WCSERR_BAD_WORLD_COORD ? wcs_errmsg[status] : "status " + std::to_string(status);
}

// Every description in the header, parsed by WCSLIB; null (and `problem` set) if it cannot parse it.
std::unique_ptr<ImageWcs::Parsed> parse_header(std::string header, std::string& problem) {
  auto parsed = std::make_unique<ImageWcs::Parsed>();
  int rejected = 0;
  const int records = static_cast<int>(header.size() / kRecord);
  if (const int status = wcspih(header.data(), records, WCSHDR_all, 0, &rejected, &parsed->count, &parsed->all); status != 0) {
    problem = "WCSLIB cannot parse the header (" + wcslib_text(status) + ")";
    return nullptr;
  }
  return parsed;
}

// The alternate ' ' (primary) description, used in place: not copied with wcssub, which in WCSLIB
// 7.12 wrote past its buffer copying an HST header's distortions (SIP with 'Lookup' tables).
wcsprm* primary_of(const ImageWcs::Parsed& parsed) {
  for (int i = 0; i < parsed.count; ++i) {
    if (parsed.all[i].alt[0] == ' ' || parsed.all[i].alt[0] == '\0') return &parsed.all[i];
  }
  return nullptr;
}

// The rotation from galactic or ecliptic axes to equatorial FK5 J2000 (WCSLIB's sphx2s Euler
// angles: the equatorial longitude and colatitude of the axes' pole, and the axes' longitude of
// the equatorial pole), as astropy's Galactic -> FK5 (its north galactic pole and longitude of
// the celestial pole), and for the mean ecliptic of J2000 IAU 2006's obliquity (84381.406"): within
// 0.03" of astropy's BarycentricMeanEcliptic -> FK5, which also applies the frame bias.
std::optional<std::array<double, 5>> equatorial_rotation(const wcsprm& wcs) {
  std::array<double, 5> euler{};
  if (std::strcmp(wcs.lngtyp, "GLON") == 0 && std::strcmp(wcs.lattyp, "GLAT") == 0) {
    euler = {192.8594812065348, 90.0 - 27.12825118085622, 122.9319185680026, 0.0, 0.0};
  } else if (std::strcmp(wcs.lngtyp, "ELON") == 0 && std::strcmp(wcs.lattyp, "ELAT") == 0) {
    euler = {270.0, 84381.406 / 3600.0, 90.0, 0.0, 0.0};
  } else {
    return std::nullopt;
  }
  euler[3] = cosd(euler[1]);
  euler[4] = sind(euler[1]);
  return euler;
}
}  // namespace

std::vector<std::string> ImageWcs::image_records() const {
  std::vector<std::string> records;
  if (wcs_ == nullptr || wcs_->naxis < 2) return records;
  // A 2-D WCS is written as it is; a cube's plane through a copy of axes 1-2 (wcssub, which is
  // avoided where it can be: see primary_of).
  wcsprm sub{};
  sub.flag = -1;
  int axes[2] = {1, 2}, count = 2;
  if (wcs_->naxis > 2 && wcssub(1, wcs_, &count, axes, &sub) != 0) {
    wcsfree(&sub);
    return records;
  }
  int keys = 0;
  char* text = nullptr;
  if (wcshdo(WCSHDO_none | WCSHDO_P17, wcs_->naxis > 2 ? &sub : wcs_, &keys, &text) == 0) {
    for (int k = 0; k < keys; ++k) records.emplace_back(text + static_cast<size_t>(k) * kRecord, kRecord);
  }
  wcsdealloc(text);
  wcsfree(&sub);
  return records;
}

ImageWcs ImageWcs::from_header(std::string header, const std::vector<int64_t>& naxes, int64_t plane) {
  ImageWcs result;
  std::unique_ptr<Parsed> parsed = parse_header(detail::without_lookup_distortions(header, result.note_), result.problem_);
  wcsprm* primary = parsed ? primary_of(*parsed) : nullptr;
  if (primary == nullptr) {  // no WCS keywords at all, or a problem
    result.note_.clear();
    return result;
  }
  std::vector<int> lengths;
  for (int64_t n : naxes) lengths.push_back(static_cast<int>(std::min<int64_t>(n, std::numeric_limits<int>::max())));
  // The fixes astropy.wcs applies by default (no unsafe unit translations); a fix that fails
  // leaves the keyword as it was, as in astropy (which warns).
  int fixes[NWCSFIX];
  wcsfix(0, lengths.size() >= static_cast<size_t>(primary->naxis) ? lengths.data() : nullptr, primary, fixes);
  if (const int status = wcsset(primary); status != 0) {
    result.problem_ = "WCSLIB rejects the WCS (" + wcslib_text(status) + ")";
    result.note_.clear();
    return result;
  }
  result.parsed_ = std::move(parsed);
  result.wcs_ = primary;
  result.header_ = std::move(header);  // kept for the copies other threads convert with
  result.naxes_ = naxes;
  result.plane_ = plane;
  const wcsprm& wcs = *primary;
  // Pixel coordinates of every axis, 1-based: axes 1-2 per source, axes 3+ the plane's, 1 for
  // axes the header has beyond NAXIS (WCSAXES > NAXIS).
  result.plane_pixel_.assign(static_cast<size_t>(wcs.naxis), 1.0);
  int64_t rest = plane;
  for (size_t axis = 2; axis < naxes.size() && axis < result.plane_pixel_.size(); ++axis) {
    result.plane_pixel_[axis] = 1.0 + static_cast<double>(rest % std::max<int64_t>(1, naxes[axis]));
    rest /= std::max<int64_t>(1, naxes[axis]);
  }
  if (wcs.lng < 0 || wcs.lat < 0) return result;
  if (std::strcmp(wcs.lngtyp, "RA") == 0 && std::strcmp(wcs.lattyp, "DEC") == 0) {
    result.lng_ = wcs.lng;
    result.lat_ = wcs.lat;
    result.radesys_ = wcs.radesys;
    result.equinox_ = undefined(wcs.equinox) ? 0.0 : wcs.equinox;
  } else if ((result.to_equatorial_ = equatorial_rotation(wcs))) {
    result.lng_ = wcs.lng;
    result.lat_ = wcs.lat;
    result.radesys_ = "FK5";
    result.equinox_ = 2000.0;
  }
  return result;
}

ImageWcs ImageWcs::read_fits(const fs::path& path, int hdu, int64_t plane) {
  std::vector<std::string> records;
  try {
    records = read_fits_header_records(path, hdu);  // a tile-compressed image's as the image's
  } catch (const InputError& error) {
    ImageWcs result;
    result.problem_ = error.what();
    return result;
  }
  return from_records(std::move(records), plane);
}

ImageWcs ImageWcs::from_records(std::vector<std::string> records, int64_t plane) {
  // The axis lengths from NAXIS and NAXISn (at most 9 axes, as CFITSIO reads them).
  std::vector<int64_t> naxes;
  std::string text;
  for (const std::string& record : records) {
    text += record;
    const std::string key = record.substr(0, 8);
    if (record.compare(8, 2, "= ") != 0) continue;
    if (key == "NAXIS   ") naxes.assign(static_cast<size_t>(std::clamp(std::atoi(record.c_str() + 10), 0, 9)), 0);
    else if (key.starts_with("NAXIS") && key[5] >= '1' && key[5] <= '9' && key[6] == ' ') {
      const size_t axis = static_cast<size_t>(key[5] - '1');
      if (axis < naxes.size()) naxes[axis] = std::atoll(record.c_str() + 10);
    }
  }
  ImageWcs result = from_header(std::move(text), naxes, plane);
  result.header_records_ = std::move(records);
  return result;
}

ImageWcs ImageWcs::of_item(const ItemRef& ref) {
  if (!is_fits_input(ref.path)) return {};
  return read_fits(ref.path, ref.hdu, ref.plane);
}

bool ImageWcs::equatorial() const { return wcs_ != nullptr && lng_ >= 0 && lat_ >= 0; }

void ImageWcs::set_sky_positions(Catalog& catalog) const {
  if (catalog.size() <= kParallelSkyRows) {
    set_sky_positions(catalog, 0, catalog.size());
    return;
  }
  // Each thread converts its blocks with an ImageWcs of its own, parsed from the same header
  // (without a WCS, each sets its blocks' NaN).
  tbb::enumerable_thread_specific<ImageWcs> own([this] { return equatorial() ? from_header(header_, naxes_, plane_) : ImageWcs{}; });
  tbb::this_task_arena::isolate([&] {  // a waiting thread takes no other item's task meanwhile
    tbb::parallel_for(tbb::blocked_range<size_t>(0, catalog.size(), kParallelSkyRows / 4),
                      [&](const tbb::blocked_range<size_t>& rows) {
                        own.local().set_sky_positions(catalog, rows.begin(), rows.end());
                      });
  });
}

void ImageWcs::set_sky_positions(Catalog& catalog, size_t first_row, size_t end_row) const {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  if (!equatorial()) {
    for (size_t i = first_row; i < end_row; ++i) catalog[i].ra = catalog[i].dec = kNaN;
    return;
  }
  // wcsp2s in blocks: its scratch arrays stay small however large the catalog is.
  constexpr size_t kBlock = 4096;
  const size_t n = static_cast<size_t>(wcs_->naxis);
  std::vector<double> pixel(kBlock * n), image(kBlock * n), world(kBlock * n), phi(kBlock), theta(kBlock);
  std::vector<double> ra(kBlock), dec(kBlock);
  std::vector<int> status(kBlock);
  for (size_t first = first_row; first < end_row; first += kBlock) {
    const size_t count = std::min(kBlock, end_row - first);
    for (size_t i = 0; i < count; ++i) {
      std::copy(plane_pixel_.begin(), plane_pixel_.end(), pixel.begin() + static_cast<std::ptrdiff_t>(i * n));
      pixel[i * n] = catalog[first + i].x + 1.0;  // FITS pixel coordinates are 1-based
      pixel[i * n + 1] = catalog[first + i].y + 1.0;
    }
    // Status 8 (some coordinates invalid) is per coordinate, in `status`; other codes fail all.
    const int result = wcsp2s(wcs_, static_cast<int>(count), static_cast<int>(n), pixel.data(), image.data(),
                              phi.data(), theta.data(), world.data(), status.data());
    for (size_t i = 0; i < count; ++i) {
      ra[i] = world[i * n + static_cast<size_t>(lng_)];
      dec[i] = world[i * n + static_cast<size_t>(lat_)];
    }
    if (to_equatorial_) {  // galactic or ecliptic longitude and latitude to RA and Dec, in place
      sphx2s(to_equatorial_->data(), static_cast<int>(count), 0, 1, 1, ra.data(), dec.data(), ra.data(), dec.data());
    }
    for (size_t i = 0; i < count; ++i) {
      Source& source = catalog[first + i];
      const bool valid = (result == 0 || result == WCSERR_BAD_PIX) && status[i] == 0 &&
                         std::isfinite(source.x) && std::isfinite(source.y);
      source.ra = valid ? ra[i] : kNaN;
      source.dec = valid ? dec[i] : kNaN;
    }
  }
}

std::vector<FitsCard> ImageWcs::catalog_cards() const {
  if (!equatorial()) return {};
  std::vector<FitsCard> cards;
  if (!radesys_.empty()) cards.push_back({"RADESYS", radesys_, "frame of the ra, dec columns (the image's)", false});
  if (equinox_ > 0.0) cards.push_back({"EQUINOX", std::to_string(equinox_), "equinox of the ra, dec columns", true});
  return cards;
}

}  // namespace imflow
