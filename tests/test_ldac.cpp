// FITS_LDAC catalogs: the LDAC_IMHEAD header rules and the file's layout and values read back
// through CFITSIO (tests/ldac_peers_test.py compares them with SExtractor and SCAMP).
#include <fitsio.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/ldac_merge.hpp"
#include "imflow/kernels/aperture_geometry.hpp"
#include "imflow/errors.hpp"
#include "imflow/io/fits.hpp"
#include "imflow/io/ldac.hpp"
#include "imflow/io/wcs.hpp"
#include "io/catalog_output.hpp"
#include "test_helpers.hpp"

using namespace imflow;

namespace {
std::string card(const std::string& text) {
  std::string out = text;
  out.resize(80, ' ');
  return out;
}

bool has_key(const std::vector<std::string>& header, const std::string& key) {
  for (const std::string& record : header) {
    if (record.compare(0, 8, card(key).substr(0, 8)) == 0) return true;
  }
  return false;
}

std::string value(const std::vector<std::string>& header, const std::string& key) {
  for (const std::string& record : header) {
    if (record.compare(0, 8, card(key).substr(0, 8)) == 0) {
      const std::string text = record.substr(10, 20);
      return text.substr(text.find_first_not_of(' '), text.find_last_not_of(' ') + 1 - text.find_first_not_of(' '));
    }
  }
  return "";
}

// A cube extension's header, as fits_hdr2str gives it (END left out by read_fits_header_records).
const std::vector<std::string> kCubeHeader = {
    card("XTENSION= 'IMAGE   '"),       card("BITPIX  =                   16"),
    card("NAXIS   =                    3"), card("NAXIS1  =                  300"),
    card("NAXIS2  =                  200"), card("NAXIS3  =                    4"),
    card("PCOUNT  =                    0"), card("GCOUNT  =                    1"),
    card("EXTNAME = 'SCI     '"),       card("WCSAXES =                    3"),
    card("CTYPE1  = 'RA---TAN'"),       card("CTYPE2  = 'DEC--TAN'"),
    card("CTYPE3  = 'FREQ    '"),       card("CD1_1   =              -0.0001"),
    card("PC3_3   =                  1.0"), card("CRVAL3A =                1.4E9"),
    card("RADESYS = 'FK5     '"),       card("GAIN    =                  2.5"),
    card("COMMENT a comment"),
};
}  // namespace

TEST_CASE("LDAC_IMHEAD: a 2-D image header with the input's own cards", "[ldac]") {
  const auto header = ldac_image_header(kCubeHeader, 0, 0, false, {});
  REQUIRE(header.size() == 5 + 11 + 1);  // 8 of the 19 cards are structural
  for (const std::string& record : header) CHECK(record.size() == 80);
  CHECK(header[0] == card("SIMPLE  =                    T"));
  CHECK(header[1] == card("BITPIX  =                   16"));
  CHECK(header[2] == card("NAXIS   =                    2"));
  CHECK(header[3] == card("NAXIS1  =                  300"));  // the input's: no size given
  CHECK(header[4] == card("NAXIS2  =                  200"));
  CHECK(header.back() == card("END"));
  for (const char* gone : {"XTENSION", "NAXIS3", "PCOUNT", "GCOUNT"}) CHECK_FALSE(has_key(header, gone));
  // Not a cube plane: the WCS (axis 3 included) stays as written.
  for (const char* kept : {"EXTNAME", "WCSAXES", "CTYPE3", "CD1_1", "GAIN", "COMMENT"}) CHECK(has_key(header, kept));
}

TEST_CASE("LDAC_IMHEAD: a cube plane's WCS replaces the cube's; a size given wins", "[ldac]") {
  const std::vector<std::string> plane_wcs = {card("WCSAXES =                    2"), card("CTYPE1  = 'RA---TAN'"),
                                              card("CD1_1   =              -0.0002"), card("RADESYS = 'ICRS    '"),
                                              card("COMMENT from wcshdo")};
  const auto header = ldac_image_header(kCubeHeader, 150, 100, true, plane_wcs);
  CHECK(value(header, "NAXIS1") == "150");
  CHECK(value(header, "NAXIS2") == "100");
  for (const char* gone : {"CTYPE2", "CTYPE3", "PC3_3", "CRVAL3A"}) CHECK_FALSE(has_key(header, gone));
  CHECK(value(header, "WCSAXES") == "2");
  CHECK(value(header, "CD1_1") == "-0.0002");
  CHECK(value(header, "RADESYS") == "'FK5     '");  // the input's own, not the plane records' duplicate
  int comments = 0;
  for (const std::string& record : header) comments += record.starts_with("COMMENT");
  CHECK(comments == 1);
  CHECK(value(header, "GAIN") == "2.5");
}

TEST_CASE("LDAC_IMHEAD of a non-FITS input: float32 image of the given size", "[ldac]") {
  const auto header = ldac_image_header({}, 181, 217, false, {});
  REQUIRE(header.size() == 6);
  CHECK(value(header, "BITPIX") == "-32");
  CHECK(value(header, "NAXIS1") == "181");
  CHECK(value(header, "NAXIS2") == "217");
  CHECK(header.back() == card("END"));
}

TEST_CASE("a FITS_LDAC catalog reads back with SExtractor's names and conventions", "[ldac]") {
  test::TempDir dir("ldac_write");
  Catalog catalog(2);
  catalog[0].id = 1;
  catalog[0].x = 10.25;
  catalog[0].y = 3.5;
  catalog[0].xmin = 8;
  catalog[0].npix = 12;
  catalog[0].a = 2.0;
  catalog[0].b = 0.5;
  catalog[0].theta = -std::acos(-1.0) / 6;  // -30 degrees
  catalog[0].errx2 = 2.0;                   // error matrix [[2, 1], [1, 2]]: eigenvalues 3 and 1 at 45 degrees
  catalog[0].erry2 = 2.0;
  catalog[0].errxy = 1.0;
  catalog[0].flags = kFlagEdge | kFlagMaskedNeighbour;
  catalog[1].id = 2;
  catalog[1].a = catalog[1].b = 1.0;
  catalog[1].errx2 = 4.0;
  catalog[1].erry2 = 1.0;
  catalog[1].flags = kFlagMaskedNeighbour;
  const std::vector<std::string> header = ldac_image_header({}, 64, 32, false, {});
  const auto path = dir / "cat.ldac";
  write_catalog_ldac(path, catalog, header, {{"SRCFILE", "a.png", "", false}});

  fitsfile* file = nullptr;
  int status = 0, type = 0;
  fits_open_diskfile(&file, path.c_str(), READONLY, &status);
  REQUIRE(status == 0);
  char text[FLEN_VALUE] = "";
  fits_movabs_hdu(file, 2, &type, &status);
  fits_read_key(file, TSTRING, "EXTNAME", text, nullptr, &status);
  CHECK(std::string(text) == "LDAC_IMHEAD");
  fits_read_key(file, TSTRING, "TTYPE1", text, nullptr, &status);
  CHECK(std::string(text) == "Field Header Card");
  fits_read_key(file, TSTRING, "TDIM1", text, nullptr, &status);
  CHECK(std::string(text) == "(80,6)");
  std::vector<unsigned char> cell(80 * header.size());
  fits_read_tblbytes(file, 1, 1, static_cast<LONGLONG>(cell.size()), cell.data(), &status);
  std::string joined;
  for (const std::string& record : header) joined += record;
  CHECK(std::string(cell.begin(), cell.end()) == joined);

  fits_movabs_hdu(file, 3, &type, &status);
  fits_read_key(file, TSTRING, "EXTNAME", text, nullptr, &status);
  CHECK(std::string(text) == "LDAC_OBJECTS");
  fits_read_key(file, TSTRING, "SRCFILE", text, nullptr, &status);
  CHECK(std::string(text) == "a.png");
  auto column = [&](const char* name) {
    int number = 0;
    fits_get_colnum(file, CASESEN, const_cast<char*>(name), &number, &status);
    std::vector<double> values(2);
    fits_read_col(file, TDOUBLE, number, 1, 1, 2, nullptr, values.data(), nullptr, &status);
    return values;
  };
  CHECK(column("NUMBER") == std::vector<double>{1, 2});
  CHECK(column("X_IMAGE")[0] == 11.25);  // 1-based
  CHECK(column("Y_IMAGE")[0] == 4.5);
  CHECK(column("XMIN_IMAGE")[0] == 9);
  CHECK(column("ISOAREA_IMAGE")[0] == 12);
  CHECK(column("THETA_IMAGE")[0] == Approx(-30.0).epsilon(1e-14));  // degrees
  CHECK(column("ERRA_IMAGE")[0] == Approx(std::sqrt(3.0)).epsilon(1e-14));
  CHECK(column("ERRB_IMAGE")[0] == Approx(1.0).epsilon(1e-14));
  CHECK(column("ERRTHETA_IMAGE")[0] == Approx(45.0).epsilon(1e-14));
  CHECK(column("ERRA_IMAGE")[1] == 2.0);
  CHECK(column("ERRB_IMAGE")[1] == 1.0);
  CHECK(column("ERRTHETA_IMAGE")[1] == 0.0);
  CHECK(column("ELONGATION") == std::vector<double>{4.0, 1.0});
  CHECK(column("ELLIPTICITY") == std::vector<double>{0.75, 0.0});
  CHECK(column("FLAGS") == std::vector<double>{9, 1});  // edge: SExtractor's 8, masked neighbour: its 1
  int columns = 0;
  fits_get_num_cols(file, &columns, &status);
  CHECK(columns == 30);
  fits_close_file(file, &status);
  CHECK(status == 0);
}

TEST_CASE("LDAC FLAGS: SExtractor's 1 is FLUX_AUTO's crowding where FLUX_AUTO is measured", "[ldac]") {
  auto flags_of = [](const kernels::PhotometrySpec& spec, const Source& source, int32_t row_flags) {
    PhotometryTable table;
    table.spec = spec;
    const auto columns = detail::ldac_output_columns(&table);
    const auto flags = std::find_if(columns.begin(), columns.end(), [](const auto& c) { return c.name == "FLAGS"; });
    REQUIRE(flags != columns.end());
    std::vector<double> row(static_cast<size_t>(spec.stride()), 0.0);
    row[static_cast<size_t>(spec.flags_offset())] = row_flags;
    return detail::column_value(*flags, source, row.data(), 0.0, 0);
  };
  Source source;
  source.flags = kFlagEdge | kFlagMaskedNeighbour;
  kernels::PhotometrySpec automatic;
  automatic.auto_flux = true;
  CHECK(flags_of(automatic, source, 0) == 8);  // a non-finite neighbour alone is not SExtractor's 1 there
  CHECK(flags_of(automatic, source, kernels::kAutoCrowded) == 9);
  CHECK(flags_of(automatic, source, kernels::kAutoCrowded | kernels::kAperTrunc | kernels::kAperHasMasked) == 25);
  kernels::PhotometrySpec radius;  // FLUX_RADIUS needs FLUX_AUTO (SExtractor computes it too)
  radius.fractions = 1;
  radius.flux_fractions[0] = 0.5;
  CHECK(flags_of(radius, source, kernels::kAutoCrowded) == 9);
  CHECK(flags_of(radius, source, 0) == 8);
  kernels::PhotometrySpec apertures;  // no FLUX_AUTO: the non-finite neighbour stands in for 1
  apertures.apertures = 1;
  apertures.aperture_diameters[0] = 5.0;
  CHECK(flags_of(apertures, source, 0) == 9);
  CHECK(flags_of(apertures, source, kernels::kAperTrunc) == 25);
  source.flags = kFlagDeblended;
  CHECK(flags_of(apertures, source, 0) == 2);
}

TEST_CASE("LDAC KRON_RADIUS: kron_fact x the Kron radius, 0 where FLUX_AUTO is not positive (SExtractor's)", "[ldac]") {
  PhotometryTable table;
  table.spec.auto_flux = true;
  table.spec.kron_fact = 2.5;
  const auto columns = detail::ldac_output_columns(&table);
  const auto kron = std::find_if(columns.begin(), columns.end(), [](const auto& c) { return c.name == "KRON_RADIUS"; });
  REQUIRE(kron != columns.end());
  std::vector<double> row(static_cast<size_t>(table.spec.stride()), 0.0);
  const auto at = static_cast<size_t>(table.spec.auto_offset());
  row[at] = 1.6;  // r_k, the CSV's kron_radius
  for (const auto& [flux, expected] : {std::pair{120.0, 4.0}, std::pair{0.0, 0.0}, std::pair{-35.0, 0.0}}) {
    row[at + 1] = flux;
    CHECK(detail::column_value(*kron, Source{}, row.data(), 0.0, 0) == Approx(expected).epsilon(1e-15));
  }
}

TEST_CASE("read_fits_header_records: the HDU's cards without END, a bad file named", "[ldac]") {
  test::TempDir dir("ldac_header_read");
  test::write_fits(dir / "image.fits", -32, {4, 3}, std::vector<double>(12, 1.0));
  fitsfile* file = nullptr;
  int status = 0;
  fits_open_file(&file, (dir / "image.fits").c_str(), READWRITE, &status);
  fits_write_comment(file, "reduced by the pipeline", &status);
  fits_write_history(file, "flat-fielded", &status);
  fits_close_file(file, &status);
  REQUIRE(status == 0);
  const auto records = read_fits_header_records(dir / "image.fits", 0);
  REQUIRE(records.size() >= 7);
  // COMMENT and HISTORY too (SExtractor's LDAC_IMHEAD keeps them).
  CHECK(std::count_if(records.begin(), records.end(), [](const std::string& r) { return r.starts_with("COMMENT reduced"); }) == 1);
  CHECK(std::count_if(records.begin(), records.end(), [](const std::string& r) { return r.starts_with("HISTORY flat"); }) == 1);
  CHECK(records[0].starts_with("SIMPLE  ="));
  CHECK(records[3].starts_with("NAXIS1  =                    4"));
  for (const std::string& record : records) {
    CHECK(record.size() == 80);
    CHECK_FALSE(record.starts_with("END     "));
  }
  try {
    read_fits_header_records(dir / "image.fits", 3);
    FAIL("HDU 3 does not exist");
  } catch (const InputError& error) {
    CHECK(std::string(error.what()).find("image.fits") != std::string::npos);
  }
}

TEST_CASE("a multi-extension file's HDU catalogs merge into one FITS_LDAC file", "[ldac]") {
  test::TempDir dir("ldac_mef");
  auto ldac = [&](const std::string& name, int sources) {
    Catalog catalog(static_cast<size_t>(sources));
    for (int i = 0; i < sources; ++i) catalog[static_cast<size_t>(i)].id = i + 1;
    const auto path = dir / name;
    write_catalog_ldac(path, catalog, ldac_image_header({}, 8, 8, false, {}), {});
    return path.string();
  };
  auto item = [](const std::string& file, int hdu, int plane, const std::string& status, const std::string& output) {
    nlohmann::json record = {{"file", file}, {"hdu", hdu}, {"plane", plane}, {"status", status}};
    record["outputs"] = output.empty() ? nlohmann::json::array() : nlohmann::json::array({output + ".cat.csv", output});
    return record;
  };
  nlohmann::json summary;
  summary["items"] = {
      item("in/mef.fits", 2, 0, "ok", ldac("mef.hdu2.ldac", 3)),  // HDU order, not item order
      item("in/mef.fits", 1, 0, "ok", ldac("mef.hdu1.ldac", 2)),
      item("in/primary.fits", 0, 0, "ok", ldac("primary.ldac", 1)),  // HDU 0 has its own primary.ldac
      item("in/primary.fits", 1, 0, "ok", ldac("primary.hdu1.ldac", 4)),
      item("in/broken.fits", 1, 0, "ok", ldac("broken.hdu1.ldac", 1)),
      item("in/broken.fits", 2, 0, "failed", ""),
      item("in/cube.fits", 0, 0, "ok", ldac("cube.p0.ldac", 1)),
      item("in/cube.fits", 0, 1, "ok", ldac("cube.p1.ldac", 1)),
      item("in/single.fits", 0, 0, "ok", ldac("single.ldac", 1)),
  };
  CHECK(write_mef_ldacs(summary) == 2);
  CHECK_FALSE(std::filesystem::exists(dir / "broken.ldac"));
  CHECK_FALSE(std::filesystem::exists(dir / "cube.ldac"));
  auto rows_per_pair = [](const std::filesystem::path& path) {
    fitsfile* file = nullptr;
    int status = 0, hdus = 0, type = 0;
    fits_open_diskfile(&file, path.c_str(), READONLY, &status);
    fits_get_num_hdus(file, &hdus, &status);
    std::vector<long> rows;
    for (int hdu = 2; hdu <= hdus; ++hdu) {
      char name[FLEN_VALUE] = "";
      long count = 0;
      fits_movabs_hdu(file, hdu, &type, &status);
      fits_read_key(file, TSTRING, "EXTNAME", name, nullptr, &status);
      CHECK(std::string(name) == (hdu % 2 == 0 ? "LDAC_IMHEAD" : "LDAC_OBJECTS"));
      fits_get_num_rows(file, &count, &status);
      if (hdu % 2 == 1) rows.push_back(count);
    }
    fits_close_file(file, &status);
    CHECK(status == 0);
    return rows;
  };
  CHECK(rows_per_pair(dir / "mef.ldac") == std::vector<long>{2, 3});
  CHECK(rows_per_pair(dir / "primary.mef.ldac") == std::vector<long>{1, 4});
  CHECK(rows_per_pair(dir / "primary.ldac") == std::vector<long>{1});  // HDU 0's own file is untouched
}

TEST_CASE("a tile-compressed image's header CFITSIO cannot convert is translated by the convention", "[ldac][wcs]") {
  // As astropy's comp.fits: ZTENSION after the other cards, where CFITSIO 4.2's fits_convert_hdr2str
  // makes a header that does not start with XTENSION and fails (status 252).
  test::TempDir dir("ldac_compressed_header");
  const auto path = dir / "comp.fits";
  fitsfile* file = nullptr;
  int status = 0;
  fits_create_diskfile(&file, path.c_str(), &status);
  fits_create_img(file, BYTE_IMG, 0, nullptr, &status);
  fits_set_compression_type(file, RICE_1, &status);
  long naxes[2] = {40, 30};
  fits_create_img(file, SHORT_IMG, 2, naxes, &status);
  std::vector<short> pixels(40 * 30, 7);
  fits_write_img(file, TSHORT, 1, 40 * 30, pixels.data(), &status);
  double crval1 = 150.0, crval2 = 2.0, crpix = 1.0, cdelt1 = -0.001, cdelt2 = 0.001;
  fits_write_key(file, TSTRING, "CTYPE1", const_cast<char*>("RA---TAN"), nullptr, &status);
  fits_write_key(file, TSTRING, "CTYPE2", const_cast<char*>("DEC--TAN"), nullptr, &status);
  fits_write_key(file, TDOUBLE, "CRVAL1", &crval1, nullptr, &status);
  fits_write_key(file, TDOUBLE, "CRVAL2", &crval2, nullptr, &status);
  fits_write_key(file, TDOUBLE, "CRPIX1", &crpix, nullptr, &status);
  fits_write_key(file, TDOUBLE, "CRPIX2", &crpix, nullptr, &status);
  fits_write_key(file, TDOUBLE, "CDELT1", &cdelt1, nullptr, &status);
  fits_write_key(file, TDOUBLE, "CDELT2", &cdelt2, nullptr, &status);
  fits_close_file(file, &status);
  REQUIRE(status == 0);
  // ZTENSION at the end of the table's header.
  fits_open_diskfile(&file, path.c_str(), READWRITE, &status);
  int type = 0;
  fits_movabs_hdu(file, 2, &type, &status);
  int missing = 0;
  fits_delete_key(file, "ZTENSION", &missing);  // CFITSIO 4.2 writes none for an extension
  fits_write_key(file, TSTRING, "ZTENSION", const_cast<char*>("IMAGE"), "Image extension", &status);
  char* header = nullptr;
  int keys = 0, convert_status = 0;
  fits_convert_hdr2str(file, 1, nullptr, 0, &header, &keys, &convert_status);
  if (header != nullptr) fits_free_memory(header, &status);
  fits_close_file(file, &status);
  REQUIRE(status == 0);
  CHECK(convert_status != 0);  // the case the fallback is for

  const auto records = read_fits_header_records(path, 1);
  std::vector<std::string> found;
  for (const std::string& record : records) found.push_back(record.substr(0, 8));
  auto has = [&](const char* key) {
    std::string padded = key;
    padded.resize(8, ' ');
    return std::find(found.begin(), found.end(), padded) != found.end();
  };
  CHECK(value(records, "BITPIX") == "16");
  CHECK(value(records, "NAXIS") == "2");
  CHECK(value(records, "NAXIS1") == "40");
  CHECK(value(records, "NAXIS2") == "30");
  CHECK(value(records, "XTENSION") == "'IMAGE   '");
  for (const char* gone : {"ZIMAGE", "ZBITPIX", "ZNAXIS1", "ZTILE1", "ZCMPTYPE", "TTYPE1", "TFORM1", "TFIELDS", "ZNAME1", "ZVAL1"}) {
    INFO(gone);
    CHECK_FALSE(has(gone));
  }
  CHECK(has("CTYPE1"));
  // The WCS reads through the same path: the sky position of pixel (1, 1), 1-based, is CRVAL.
  const ImageWcs wcs = ImageWcs::read_fits(path, 1, 0);
  REQUIRE(wcs.equatorial());
  Catalog catalog(1);
  wcs.set_sky_positions(catalog);
  CHECK(catalog[0].ra == Approx(150.0).margin(1e-12));
  CHECK(catalog[0].dec == Approx(2.0).margin(1e-12));
}
