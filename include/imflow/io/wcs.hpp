// Sky coordinates of FITS images through WCSLIB: the primary WCS of an image HDU (parsed and
// fixed as astropy.wcs does: wcspih with every non-standard form accepted, then wcsfix), the
// sky position of catalog centroids, and the plane's WCS as header records for 2-D outputs.
#pragma once
#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "imflow/io/fits.hpp"
#include "imflow/source.hpp"
#include "imflow/work_item.hpp"

struct wcsprm;

namespace imflow {

class ImageWcs {
 public:
  ImageWcs();  // no WCS
  ~ImageWcs();
  ImageWcs(ImageWcs&&) noexcept;
  ImageWcs& operator=(ImageWcs&&) noexcept;

  // The primary WCS (alternate ' ') of HDU `hdu` at plane `plane` of a cube (its 0-based index
  // over axes 3+). A header without a WCS that WCSLIB accepts gives an empty ImageWcs whose
  // problem() says why; a file CFITSIO cannot read throws InputError.
  static ImageWcs read_fits(const std::filesystem::path& path, int hdu, int64_t plane);
  // The same from a header text (80-character records, as fits_hdr2str makes) of an image with
  // axis lengths `naxes`.
  static ImageWcs from_header(std::string header, const std::vector<int64_t>& naxes, int64_t plane);
  // The same from the HDU's header records (read_fits_header_records').
  static ImageWcs from_records(std::vector<std::string> records, int64_t plane);
  // read_fits for a FITS item, an empty ImageWcs for other formats.
  static ImageWcs of_item(const ItemRef& ref);

  // Celestial axes that give RA/Dec: equatorial (RA/DEC), or galactic (GLON/GLAT) or ecliptic
  // (ELON/ELAT) rotated to equatorial FK5 J2000.
  bool equatorial() const;
  const std::string& problem() const { return problem_; }
  // Something the positions leave out (distortion lookup tables), worth a warning; empty if none.
  const std::string& note() const { return note_; }
  // RADESYS ('ICRS', 'FK5', ...) and EQUINOX of the equatorial axes (empty / 0 when not given);
  // FK5 and 2000 for galactic or ecliptic axes.
  const std::string& radesys() const { return radesys_; }
  double equinox() const { return equinox_; }

  // Set every source's ra and dec (degrees, the image's RADESYS/EQUINOX, no precession; FK5 J2000
  // from galactic or ecliptic axes) from its 0-based centroid (x, y); NaN without such a WCS or
  // where the projection is undefined. A large catalog (a mosaic's) is converted on all threads.
  void set_sky_positions(Catalog& catalog) const;

  // The 2-D WCS of the plane (image axes 1 and 2) as 80-character header records for an output
  // image of the same plane; empty without a WCS or when axes 1-2 are coupled with axes 3+.
  // Made on each call (wcssub + wcshdo): only image outputs need it.
  std::vector<std::string> image_records() const;
  // Cards describing the catalog's ra/dec columns (RADESYS, EQUINOX) for its FITS table.
  std::vector<FitsCard> catalog_cards() const;
  // The header records read_fits parsed (read_fits_header_records'), for outputs that copy the
  // image's header (the FITS_LDAC catalog); empty when not read from a file or unreadable.
  const std::vector<std::string>& header_records() const { return header_records_; }

  // The wcsprm structs WCSLIB's header parser allocated (freed with wcsvfree).
  struct Parsed;

 private:
  // set_sky_positions for the sources [first, end) through this object's WCSLIB structs, which
  // one thread at a time may use.
  void set_sky_positions(Catalog& catalog, size_t first, size_t end) const;

  std::unique_ptr<Parsed> parsed_;
  wcsprm* wcs_ = nullptr;  // the primary description, one of parsed_'s
  // What from_header parsed, for the copies other threads convert with (WCSLIB writes scratch
  // space and error records inside the structs while it converts).
  std::string header_;
  std::vector<int64_t> naxes_;
  int64_t plane_ = 0;
  std::vector<double> plane_pixel_;  // 1-based pixel coordinates of every axis; axes 1-2 per source
  std::vector<std::string> header_records_;
  std::string problem_;
  std::string note_;
  std::string radesys_;
  double equinox_ = 0.0;
  int lng_ = -1, lat_ = -1;  // world axes of the celestial longitude and latitude
  std::optional<std::array<double, 5>> to_equatorial_;  // galactic/ecliptic: sphx2s's Euler angles
};

}  // namespace imflow
