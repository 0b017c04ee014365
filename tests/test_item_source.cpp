// ItemSource scans files in parallel batches: the items still come in list order, numbered in
// sequence, one failed item per unreadable file, the last item of every file marked; the input
// directory's walk lists what the patterns match.
#include <catch2/catch.hpp>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>
#include <tbb/task_arena.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "engine/item_source.hpp"
#include "imflow/engine.hpp"
#include "imflow/io/input_format.hpp"
#include "test_helpers.hpp"

using namespace imflow;
namespace fs = std::filesystem;

TEST_CASE("parallel scanning keeps the file order", "[engine][source]") {
  const fs::path dir = fs::temp_directory_path() / "imflow_item_source";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::vector<fs::path> files;
  std::vector<int> planes_of;  // items expected per file; 0: a failed item
  for (int f = 0; f < 150; ++f) {
    char name[32];
    std::snprintf(name, sizeof name, "f%03d.fits", f);
    files.push_back(dir / name);
    if (f % 17 == 5) {  // not FITS
      std::ofstream(files.back()) << "not a FITS file\n";
      planes_of.push_back(0);
    } else if (f % 11 == 3) {  // a cube of 3 planes
      test::write_fits(files.back(), -32, {4, 3, 3}, std::vector<double>(36, 1.0));
      planes_of.push_back(3);
    } else {
      test::write_fits(files.back(), -32, {5, 4}, std::vector<double>(20, 2.0));
      planes_of.push_back(1);
    }
  }
  tbb::task_arena arena(4);
  arena.execute([&] {
    ItemSource source(files, dir);
    ItemRef ref;
    int64_t expected_index = 0;
    for (size_t f = 0; f < files.size(); ++f) {
      INFO("file " << f);
      const int items = planes_of[f] == 0 ? 1 : planes_of[f];
      for (int p = 0; p < items; ++p) {
        REQUIRE(source.next(ref));
        CHECK(ref.index == expected_index++);
        CHECK(ref.path == files[f]);
        CHECK(ref.file_index == static_cast<int64_t>(f));
        CHECK(ref.plane == (planes_of[f] == 0 ? 0 : p));
        CHECK(ref.error.empty() == (planes_of[f] != 0));
        CHECK(ref.last_of_file == (p == items - 1));
      }
    }
    CHECK_FALSE(source.next(ref));
    CHECK(source.files_listed() == files.size());
  });
  fs::remove_all(dir);
}

TEST_CASE("files whose outputs would have the same names: the first keeps them, the others fail", "[engine][source]") {
  test::TempDir dir("item_source_clash");
  fs::create_directories(dir / "sub");
  std::vector<fs::path> files = {dir / "m.fits", dir / "m.fit", dir / "n.fits", dir / "sub" / "m.fits", dir / "m.fits.fz"};
  for (const fs::path& file : files) test::write_fits(file, -32, {5, 4}, std::vector<double>(20, 2.0));
  ItemSource source(files, dir.path());
  ItemRef ref;
  std::vector<std::string> errors;
  while (source.next(ref)) errors.push_back(ref.error);
  REQUIRE(errors.size() == files.size());
  CHECK(errors[0].empty());
  CHECK_THAT(errors[1], Catch::Contains("m.fit") && Catch::Contains("same names") && Catch::Contains((dir / "m.fits").string()));
  CHECK(errors[2].empty());
  CHECK(errors[3].empty());  // another directory: other output names
  CHECK_THAT(errors[4], Catch::Contains("m.fits.fz") && Catch::Contains("same names"));
}

TEST_CASE("a file named as another's HDU or plane outputs fails, only when that HDU or plane exists", "[engine][source]") {
  test::TempDir dir("item_source_plane_clash");
  // m.fits: primary + HDU 1 (outputs m.* and m.hdu1.*); c.fits: a cube of 3 planes (c.p0 .. c.p2);
  // s.fits: one plane (s.*, no suffix).
  test::write_fits(dir / "m.fits", -32, {5, 4}, std::vector<double>(20, 2.0));
  test::write_fits(dir / "m.fits", -32, {5, 4}, std::vector<double>(20, 3.0), 1.0, 0.0, nullptr, false);
  test::write_fits(dir / "c.fits", -32, {4, 3, 3}, std::vector<double>(36, 1.0));
  test::write_fits(dir / "s.fits", -32, {5, 4}, std::vector<double>(20, 2.0));
  const std::vector<std::string> names = {"c.p1.fits", "c.p3.fits", "m.hdu1.fits", "m.hdu1.fits.gz",
                                          "m.hdu2.fits", "m.hdu1.p0.fits", "s.p0.fits", "m.fits", "c.fits", "s.fits"};
  std::vector<fs::path> files;
  for (const std::string& name : names) {
    files.push_back(dir / name);
    if (!fs::exists(files.back())) test::write_fits(files.back(), -32, {5, 4}, std::vector<double>(20, 2.0));
  }
  ItemSource source(files, dir.path());
  ItemRef ref;
  std::map<std::string, std::string> error_of;  // first item's error per file
  while (source.next(ref)) error_of.emplace(ref.path.filename().string(), ref.error);
  REQUIRE(error_of.size() == names.size());
  CHECK_THAT(error_of["c.p1.fits"], Catch::Contains("same names (c.p1.*)") && Catch::Contains("plane 1 of " + (dir / "c.fits").string()));
  CHECK(error_of["c.p3.fits"].empty());  // c.fits has planes 0-2
  CHECK_THAT(error_of["m.hdu1.fits"], Catch::Contains("same names (m.hdu1.*)") && Catch::Contains("HDU 1 of " + (dir / "m.fits").string()));
  // m.hdu1.fits.gz has the same name as m.hdu1.fits: that clash is reported first.
  CHECK_THAT(error_of["m.hdu1.fits.gz"], Catch::Contains("same names") && Catch::Contains((dir / "m.hdu1.fits").string()));
  CHECK(error_of["m.hdu2.fits"].empty());     // m.fits has no HDU 2
  CHECK(error_of["m.hdu1.p0.fits"].empty());  // HDU 1 of m.fits is one plane: m.hdu1.*, no .p0
  CHECK(error_of["s.p0.fits"].empty());       // s.fits is one plane: s.*
  CHECK(error_of["m.fits"].empty());
  CHECK(error_of["c.fits"].empty());
  CHECK(error_of["s.fits"].empty());
}


TEST_CASE("input.extnames selects FITS image HDUs by EXTNAME (HST/JWST SCI, ERR, DQ layouts)", "[engine][source]") {
  test::TempDir dir("item_source_extnames");
  // hst.fits: empty primary, SCI, ERR, DQ, SCI (a second chip); wht.fits: primary image, then WHT.
  const fs::path hst = dir / "hst.fits", wht = dir / "wht.fits";
  test::write_empty_primary(hst);
  for (const char* name : {"SCI", "ERR", "DQ", "sci "}) {
    test::write_fits(hst, -32, {5, 4}, std::vector<double>(20, 1.0), 1.0, 0.0, nullptr, false);
    test::name_last_hdu(hst, name);
  }
  test::write_fits(wht, -32, {5, 4}, std::vector<double>(20, 1.0));
  test::write_fits(wht, -32, {5, 4}, std::vector<double>(20, 1.0), 1.0, 0.0, nullptr, false);
  test::name_last_hdu(wht, "WHT");
  test::write_fits(dir / "plain.fits", -32, {5, 4}, std::vector<double>(20, 1.0));
  const std::vector<fs::path> files = {hst, wht, dir / "plain.fits"};
  auto items = [&](std::vector<std::string> extnames) {
    ItemSource source(files, dir.path());
    source.set_extnames(std::move(extnames));
    std::vector<std::string> listed;  // "file:hdu" or "file:error"
    ItemRef ref;
    while (source.next(ref)) listed.push_back(ref.path.filename().string() + ":" + (ref.error.empty() ? std::to_string(ref.hdu) : ref.error));
    return listed;
  };
  CHECK(items({}) == std::vector<std::string>{"hst.fits:1", "hst.fits:2", "hst.fits:3", "hst.fits:4", "wht.fits:0", "wht.fits:1",
                                              "plain.fits:0"});
  const auto sci = items({"Sci"});  // case and trailing blanks do not matter
  REQUIRE(sci.size() == 4);
  CHECK(sci[0] == "hst.fits:1");
  CHECK(sci[1] == "hst.fits:4");
  CHECK_THAT(sci[2], Catch::Contains("wht.fits") && Catch::Contains("no image HDU with EXTNAME SCI") &&
                         Catch::Contains("0 (no EXTNAME), 1 WHT"));
  CHECK_THAT(sci[3], Catch::Contains("plain.fits") && Catch::Contains("0 (no EXTNAME)"));
  CHECK(items({"SCI", "WHT"})[2] == "wht.fits:1");
}

TEST_CASE("default patterns list every format's extensions, ignoring case; names lose the longest one", "[engine][source]") {
  test::TempDir dir("source_patterns");
  for (const char* name : {"A.FITS", "b.Fit.Gz", "c.nii.GZ", "d.PNG", "e.txt", "f.hdr", "g.fz", "h.fits.bz2", "notes.fits.txt"}) {
    std::ofstream(dir / name) << "x";
  }
  InputConfig input;
  input.dir = dir.path();
  input.patterns = default_input_patterns();
  std::vector<std::string> listed;
  for (const auto& file : list_input_files(input)) listed.push_back(file.filename().string());
  CHECK(listed == std::vector<std::string>{"A.FITS", "b.Fit.Gz", "c.nii.GZ", "d.PNG", "f.hdr", "g.fz", "h.fits.bz2"});
  CHECK(std::string(input_format_for("A.FITS")->name) == "fits");
  CHECK(std::string(input_format_for("b.Fit.Gz")->name) == "fits");
  CHECK(std::string(input_format_for("c.nii.GZ")->name) == "nifti");
  CHECK(std::string(input_format_for("d.PNG")->name) == "png");
  CHECK(input_format_for("e.txt") == nullptr);
  CHECK(input_format_for(".png") == nullptr);
  CHECK(strip_image_extension("c.nii.GZ") == "c");
  CHECK(strip_image_extension("m.fits.fz") == "m");
  CHECK(strip_image_extension("frame-r-001.fits.bz2") == "frame-r-001");
  CHECK(whole_file_compressed("x.FITS.GZ"));
  CHECK(whole_file_compressed("x.fits.bz2"));
  CHECK_FALSE(whole_file_compressed("x.fits.fz"));  // tile-compressed: read by tiles, not inflated whole
  CHECK(strip_image_extension("a.b.png") == "a.b");
  CHECK(strip_image_extension("noext") == "noext");
  CHECK(strip_image_extension(".png") == ".png");
}

TEST_CASE("the walk lists subdirectories with recursive, warns about a matching directory without it", "[engine][source]") {
  test::TempDir dir("source_walk");
  fs::create_directories(dir / "night1" / "deeper");
  fs::create_directories(dir / "cube.fits");  // a directory whose name matches
  for (const char* name : {"a.fits", "night1/b.fits", "night1/deeper/c.fits", "cube.fits/d.fits"}) std::ofstream(dir / name) << "x";
  fs::create_directory_symlink(dir / "night1", dir / "link.fits");  // never followed
  InputConfig input;
  input.dir = dir.path();
  input.patterns = {"*.fits"};
  const auto listed = [&] {
    std::vector<std::string> names;
    for (const auto& file : list_input_files(input)) names.push_back(fs::relative(file, dir.path()).string());
    return names;
  };
  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(8);
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("capture", sink));
  const std::vector<std::string> flat = listed();
  const std::vector<std::string> flat_warnings = sink->last_formatted();
  input.recursive = true;
  const std::vector<std::string> deep = listed();
  const size_t warnings_after_deep = sink->last_formatted().size();
  spdlog::set_default_logger(previous);
  CHECK(flat == std::vector<std::string>{"a.fits"});
  REQUIRE(flat_warnings.size() == 2);  // the directory and the symlink to one, in listing order
  const std::string both = flat_warnings[0] + flat_warnings[1];
  CHECK_THAT(both, Catch::Contains("cube.fits: a directory, not read") && Catch::Contains("link.fits: a directory, not read"));
  CHECK(deep == std::vector<std::string>{"a.fits", "cube.fits/d.fits", "night1/b.fits", "night1/deeper/c.fits"});
  CHECK(warnings_after_deep == 2);  // nothing new: recursive walks them
}
