// ImageWcs (WCSLIB): sky positions of centroids and the WCS records for 2-D outputs, on headers
// whose answers are known in closed form, and from the header records a read hands over;
// tests/wcs_reference_test.py checks real headers against astropy.wcs.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <fitsio.h>

#include "imflow/io/fits.hpp"
#include "imflow/io/wcs.hpp"
#include "test_helpers.hpp"

using imflow::Catalog;
using imflow::ImageWcs;

namespace {
// FITS header text: each "KEY = value" padded to an 80-character record, then END.
std::string header(const std::vector<std::string>& cards) {
  std::string text;
  for (const std::string& card : cards) text += card + std::string(80 - card.size(), ' ');
  return text + "END" + std::string(77, ' ');
}

const std::vector<std::string> kTan = {
    "SIMPLE  = T", "BITPIX  = -32", "NAXIS   = 2", "NAXIS1  = 100", "NAXIS2  = 80",
    "CTYPE1  = 'RA---TAN'", "CTYPE2  = 'DEC--TAN'", "CRPIX1  = 50.0", "CRPIX2  = 40.0",
    "CRVAL1  = 150.0", "CRVAL2  = 2.0", "CDELT1  = -0.0002", "CDELT2  = 0.0002", "RADESYS = 'ICRS'"};

// The TAN header's WCS with other axis types on axes 1 and 2.
ImageWcs tan_wcs_with_types(const char* ctype1, const char* ctype2) {
  std::vector<std::string> cards = kTan;
  cards[5] = std::string("CTYPE1  = '") + ctype1 + "'";
  cards[6] = std::string("CTYPE2  = '") + ctype2 + "'";
  return ImageWcs::from_header(header(cards), {100, 80}, 0);
}

Catalog at(std::initializer_list<std::pair<double, double>> positions) {
  Catalog catalog;
  for (auto [x, y] : positions) {
    catalog.emplace_back();
    catalog.back().x = x;
    catalog.back().y = y;
  }
  return catalog;
}
}  // namespace

TEST_CASE("a TAN WCS puts the reference pixel at CRVAL and follows the projection off it", "[wcs]") {
  const ImageWcs wcs = ImageWcs::from_header(header(kTan), {100, 80}, 0);
  REQUIRE(wcs.equatorial());
  CHECK(wcs.problem().empty());
  CHECK(wcs.radesys() == "ICRS");
  // 0-based centroid (49, 39) is FITS pixel (50, 40) = CRPIX.
  Catalog catalog = at({{49.0, 39.0}, {49.0, 39.0 + 100.0}, {49.0 + 100.0, 39.0}});
  wcs.set_sky_positions(catalog);
  CHECK(catalog[0].ra == Approx(150.0).margin(1e-12));
  CHECK(catalog[0].dec == Approx(2.0).margin(1e-12));
  // 100 pixels up: intermediate (0, 0.02 deg); gnomonic: dec = crval2 + atan(eta) exactly on the meridian.
  const double eta = 0.02 * M_PI / 180.0;
  CHECK(catalog[1].ra == Approx(150.0).margin(1e-12));
  CHECK(catalog[1].dec == Approx(2.0 + std::atan(eta) * 180.0 / M_PI).margin(1e-12));
  // 100 pixels along +x: CDELT1 < 0, so RA decreases (east is left).
  CHECK(catalog[2].ra < 150.0);
  CHECK(catalog[2].dec < 2.0);  // a great circle off the equator-parallel line bends towards the equator
}

TEST_CASE("without an equatorial WCS the sky positions are NaN and nothing is reported", "[wcs]") {
  SECTION("no WCS keywords") {
    const ImageWcs wcs = ImageWcs::from_header(header({"SIMPLE  = T", "BITPIX  = 16", "NAXIS   = 2", "NAXIS1  = 10", "NAXIS2  = 10"}),
                                               {10, 10}, 0);
    CHECK_FALSE(wcs.equatorial());
    CHECK(wcs.problem().empty());
    Catalog catalog = at({{1.0, 2.0}});
    catalog[0].ra = catalog[0].dec = 5.0;
    wcs.set_sky_positions(catalog);
    CHECK(std::isnan(catalog[0].ra));
    CHECK(std::isnan(catalog[0].dec));
    CHECK(wcs.catalog_cards().empty());
  }
  SECTION("supergalactic axes: a WCS, but not RA/Dec") {
    const ImageWcs wcs = tan_wcs_with_types("SLON-TAN", "SLAT-TAN");
    CHECK_FALSE(wcs.equatorial());
    CHECK(wcs.problem().empty());
    CHECK_FALSE(wcs.image_records().empty());  // still copied into image outputs
  }
}

TEST_CASE("galactic and ecliptic axes give RA/Dec in FK5 J2000, as astropy converts them", "[wcs]") {
  // astropy 6: SkyCoord(150, 2, frame=...).fk5 (the header's CRVAL at CRPIX), and the galactic
  // centre; the ecliptic within astropy's frame bias (0.03").
  struct Case {
    const char *ctype1, *ctype2;
    double ra, dec, tolerance;
  };
  for (const Case& axes : {Case{"GLON-TAN", "GLAT-TAN", 63.371041510411125, 53.89469734779182, 1e-9},
                           Case{"ELON-TAN", "ELAT-TAN", 152.81184243545755, 13.34340166339585, 0.03 / 3600}}) {
    INFO(axes.ctype1);
    const ImageWcs wcs = tan_wcs_with_types(axes.ctype1, axes.ctype2);
    REQUIRE(wcs.equatorial());
    CHECK(wcs.radesys() == "FK5");
    CHECK(wcs.equinox() == 2000.0);
    Catalog catalog = at({{49.0, 39.0}});
    wcs.set_sky_positions(catalog);
    CHECK(catalog[0].ra == Approx(axes.ra).margin(axes.tolerance));
    CHECK(catalog[0].dec == Approx(axes.dec).margin(axes.tolerance));
    const std::vector<std::string> records = wcs.image_records();  // outputs keep the image's axes
    CHECK(std::any_of(records.begin(), records.end(), [&](const std::string& r) { return r.find(axes.ctype1) != std::string::npos; }));
  }
  std::vector<std::string> centre = kTan;
  centre[5] = "CTYPE1  = 'GLON-CAR'";
  centre[6] = "CTYPE2  = 'GLAT-CAR'";
  centre[9] = "CRVAL1  = 0.0";
  centre[10] = "CRVAL2  = 0.0";
  Catalog catalog = at({{49.0, 39.0}});
  ImageWcs::from_header(header(centre), {100, 80}, 0).set_sky_positions(catalog);
  CHECK(catalog[0].ra == Approx(266.4049962340225).margin(1e-9));
  CHECK(catalog[0].dec == Approx(-28.936172403391783).margin(1e-9));
}

TEST_CASE("a WCS that WCSLIB rejects is reported, and gives NaN positions", "[wcs]") {
  const ImageWcs wcs = tan_wcs_with_types("RA---QQQ", "DEC--QQQ");
  CHECK_FALSE(wcs.equatorial());
  CHECK_FALSE(wcs.problem().empty());
  Catalog catalog = at({{1.0, 2.0}});
  wcs.set_sky_positions(catalog);
  CHECK(std::isnan(catalog[0].ra));
}

TEST_CASE("a cube's plane picks its world coordinate on axis 3; the image records keep axes 1-2", "[wcs]") {
  std::vector<std::string> cards = kTan;
  cards[2] = "NAXIS   = 3";
  cards.insert(cards.begin() + 5, "NAXIS3  = 4");
  for (const char* card : {"CTYPE3  = 'FREQ'", "CRPIX3  = 1.0", "CRVAL3  = 1.4E9", "CDELT3  = 1.0E6", "CUNIT3  = 'Hz'"}) {
    cards.emplace_back(card);
  }
  const ImageWcs plane2 = ImageWcs::from_header(header(cards), {100, 80, 4}, 2);
  REQUIRE(plane2.equatorial());
  Catalog catalog = at({{49.0, 39.0}});
  plane2.set_sky_positions(catalog);
  CHECK(catalog[0].ra == Approx(150.0).margin(1e-12));
  CHECK(catalog[0].dec == Approx(2.0).margin(1e-12));
  // The 2-D records: two axes, celestial, no FREQ axis.
  std::string records;
  for (const std::string& record : plane2.image_records()) {
    CHECK(record.size() == 80);
    records += record;
  }
  CHECK(records.find("WCSAXES =                    2") != std::string::npos);
  CHECK(records.find("'RA---TAN'") != std::string::npos);
  CHECK(records.find("FREQ") == std::string::npos);
  // Round trip: the records parse to the same sky positions for the 2-D output.
  const ImageWcs output = ImageWcs::from_header(records + "END" + std::string(77, ' '), {100, 80}, 0);
  Catalog again = at({{10.5, 70.25}}), original = at({{10.5, 70.25}});
  output.set_sky_positions(again);
  plane2.set_sky_positions(original);
  CHECK(again[0].ra == Approx(original[0].ra).margin(1e-12));
  CHECK(again[0].dec == Approx(original[0].dec).margin(1e-12));
}

TEST_CASE("a non-finite centroid gets NaN sky coordinates, the others are unaffected", "[wcs]") {
  const ImageWcs wcs = ImageWcs::from_header(header(kTan), {100, 80}, 0);
  Catalog catalog = at({{std::nan(""), 3.0}, {49.0, 39.0}});
  wcs.set_sky_positions(catalog);
  CHECK(std::isnan(catalog[0].ra));
  CHECK(catalog[1].ra == Approx(150.0).margin(1e-12));
}

TEST_CASE("distortion lookup tables (HST 'Lookup') are left out with a note; SIP beside them still applies", "[wcs]") {
  // An HST ACS-like header: TAN-SIP plus Paper IV lookup tables (CPDIS, D2IMDIS) whose tables sit in
  // other HDUs. WCSLIB 7.12's wcssub wrote past its buffer copying such a WCS (astropy's
  // dist_lookup.fits.gz aborted the run); WCSLIB rejects 'Lookup' anyway.
  std::vector<std::string> sip = kTan;
  sip[5] = "CTYPE1  = 'RA---TAN-SIP'";
  sip[6] = "CTYPE2  = 'DEC--TAN-SIP'";
  for (const char* card : {"A_ORDER = 2", "B_ORDER = 2", "A_2_0   = 1.0E-5", "B_0_2   = -2.0E-5", "A_1_1   = 3.0E-6"}) sip.push_back(card);
  std::vector<std::string> lookup = sip;
  for (const char* card : {"D2IMERR1= 0.0030", "D2IMDIS1= 'Lookup  '", "D2IM1   = 'EXTVER: 1'", "D2IM1   = 'NAXES: 2'",
                           "D2IM1   = 'AXIS.1: 1'", "D2IM1   = 'AXIS.2: 2'", "CPERR1  = 0.0600", "CPDIS1  = 'Lookup  '",
                           "DP1     = 'EXTVER: 1'", "DP1     = 'NAXES: 2'", "DP1     = 'AXIS.1: 1'", "DP1     = 'AXIS.2: 2'",
                           "CPERR2  = 0.0700", "CPDIS2  = 'Lookup  '", "DP2     = 'EXTVER: 2'", "DP2     = 'NAXES: 2'",
                           "DP2     = 'AXIS.1: 1'", "DP2     = 'AXIS.2: 2'", "D2IMEXT = 'new_wfc_d2i.fits'"}) {
    lookup.push_back(card);
  }
  const ImageWcs plain = ImageWcs::from_header(header(sip), {100, 80}, 0);
  const ImageWcs wcs = ImageWcs::from_header(header(lookup), {100, 80}, 0);
  REQUIRE(plain.equatorial());
  CHECK(plain.note().empty());
  REQUIRE(wcs.equatorial());
  CHECK(wcs.problem().empty());
  CHECK_THAT(wcs.note(), Catch::Contains("Lookup") && Catch::Contains("0.07 pixels"));  // max(0.06 + 0.003, 0.07)
  Catalog with_sip = at({{10.0, 70.0}, {90.0, 5.0}}), with_lookup = with_sip;
  plain.set_sky_positions(with_sip);
  wcs.set_sky_positions(with_lookup);
  for (size_t i = 0; i < with_sip.size(); ++i) {
    CHECK(with_lookup[i].ra == with_sip[i].ra);
    CHECK(with_lookup[i].dec == with_sip[i].dec);
  }
  // SIP moved the corner (x - crpix = -40 px: A_2_0 x^2 = 0.016 px) off the pure TAN position.
  Catalog tan = at({{10.0, 70.0}});
  ImageWcs::from_header(header(kTan), {100, 80}, 0).set_sky_positions(tan);
  CHECK(tan[0].ra != with_sip[0].ra);
  CHECK(wcs.image_records().size() > 10);  // the 2-D records (SIP's A_/B_ included) for image outputs
}

TEST_CASE("a mosaic-sized catalog gets on all threads the positions each source gets alone", "[wcs]") {
  // TAN-SIP: WCSLIB converts distortions through scratch space inside its structs.
  std::vector<std::string> sip = kTan;
  sip[5] = "CTYPE1  = 'RA---TAN-SIP'";
  sip[6] = "CTYPE2  = 'DEC--TAN-SIP'";
  for (const char* card : {"A_ORDER = 2", "B_ORDER = 2", "A_2_0   = 1.0E-5", "B_0_2   = -2.0E-5", "A_1_1   = 3.0E-6"}) sip.push_back(card);
  const ImageWcs wcs = ImageWcs::from_header(header(sip), {100, 80}, 0);
  REQUIRE(wcs.equatorial());
  Catalog catalog(300'000);
  for (size_t i = 0; i < catalog.size(); ++i) {
    catalog[i].x = static_cast<double>(i % 997) * 0.1;
    catalog[i].y = static_cast<double>(i % 787) * 0.1;
  }
  catalog[123'456].x = std::nan("");
  wcs.set_sky_positions(catalog);
  size_t differ = 0;
  for (size_t i = 0; i < catalog.size(); i += 7) {
    Catalog alone = at({{catalog[i].x, catalog[i].y}});
    wcs.set_sky_positions(alone);
    const bool same = (alone[0].ra == catalog[i].ra && alone[0].dec == catalog[i].dec) ||
                      (std::isnan(alone[0].ra) && std::isnan(catalog[i].ra));
    differ += same ? 0 : 1;
  }
  CHECK(differ == 0);
  CHECK(std::isnan(catalog[123'456].ra));
  CHECK(catalog[0].ra != catalog[1].ra);
  // Without a WCS every row gets NaN, whatever it held.
  ImageWcs{}.set_sky_positions(catalog);
  CHECK(std::all_of(catalog.begin(), catalog.end(), [](const imflow::Source& s) { return std::isnan(s.ra) && std::isnan(s.dec); }));
}

TEST_CASE("a read's header records give the WCS that reading the file again gives", "[wcs]") {
  test::TempDir dir("wcs_read_records");
  const auto path = dir / "cube.fits";
  test::write_fits(path, -32, {30, 20, 3}, std::vector<double>(1800, 1.0));
  fitsfile* file = nullptr;
  int status = 0;
  fits_open_file(&file, path.c_str(), READWRITE, &status);
  for (auto [key, text] : {std::pair{"CTYPE1", "RA---TAN"}, {"CTYPE2", "DEC--TAN"}, {"CTYPE3", "FREQ"}}) {
    fits_update_key(file, TSTRING, key, const_cast<char*>(text), nullptr, &status);
  }
  for (auto [key, value] : {std::pair{"CRPIX1", 15.0}, {"CRPIX2", 10.0}, {"CRPIX3", 1.0}, {"CRVAL1", 210.5},
                            {"CRVAL2", -31.25}, {"CRVAL3", 1.4e9}, {"CDELT1", -0.0003}, {"CDELT2", 0.0003},
                            {"CDELT3", 1.0e6}}) {
    fits_update_key(file, TDOUBLE, key, &value, nullptr, &status);
  }
  fits_close_file(file, &status);
  REQUIRE(status == 0);

  std::vector<std::string> records;
  imflow::ReadLimits limits;
  limits.header_records = &records;
  imflow::ImageBuffer pixels;
  imflow::read_fits_plane(path, 0, 2, pixels, limits);
  CHECK(records == imflow::read_fits_header_records(path, 0));
  const ImageWcs from_read = ImageWcs::from_records(records, 2), from_file = ImageWcs::read_fits(path, 0, 2);
  REQUIRE(from_read.equatorial());
  CHECK(from_read.header_records() == from_file.header_records());
  CHECK(from_read.image_records() == from_file.image_records());
  Catalog a = at({{3.5, 7.25}, {29.0, 0.0}, {14.0, 9.0}}), b = a;
  from_read.set_sky_positions(a);
  from_file.set_sky_positions(b);
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].ra == b[i].ra);
    CHECK(a[i].dec == b[i].dec);
  }
  CHECK(a[2].ra == Approx(210.5).margin(1e-12));  // CRPIX (15, 10) is 0-based (14, 9)
  CHECK(a[2].dec == Approx(-31.25).margin(1e-12));
}
