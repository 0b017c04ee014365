// Reliability units: output paths stay inside OUT, input limits, the manifest (resume validity,
// torn lines), and output-directory checks at the start of a run.
#include <catch2/catch.hpp>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <fstream>

#include "engine/input_limits.hpp"
#include "engine/manifest.hpp"
#include "engine/writer.hpp"
#include "imflow/engine.hpp"
#include "imflow/errors.hpp"
#include "test_helpers.hpp"

using namespace imflow;
namespace fs = std::filesystem;

namespace {
ItemRef ref_for(const fs::path& path, const fs::path& relative) {
  ItemRef ref;
  ref.path = path;
  ref.relative = relative;
  return ref;
}
void write_file(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }
}  // namespace

TEST_CASE("relative input paths cannot leave the output directory", "[reliability]") {
  CHECK(is_contained_relative("a.fits"));
  CHECK(is_contained_relative("night1/a.fits"));
  CHECK_FALSE(is_contained_relative(""));
  CHECK_FALSE(is_contained_relative("/etc/passwd"));
  CHECK_FALSE(is_contained_relative("../a.fits"));
  CHECK_FALSE(is_contained_relative("x/../../a.fits"));
  CHECK_FALSE(is_contained_relative("./a.fits"));
  CHECK(output_stem(ref_for("in/n/a.fits", "n/a.fits"), "out") == fs::path("out/n/a"));
  CHECK_THROWS_AS(output_stem(ref_for("in/../a.fits", "../a.fits"), "out"), OutputError);
  CHECK_THROWS_AS(output_stem(ref_for("/abs/a.fits", "/abs/a.fits"), "out"), OutputError);
}

TEST_CASE("a symlinked directory below OUT is not written through", "[reliability]") {
  test::TempDir dir("reliability_symlink");
  fs::create_directories(dir / "out");
  fs::create_directories(dir / "elsewhere");
  fs::create_directory_symlink(dir / "elsewhere", dir / "out" / "night");
  CHECK_THROWS_AS(check_output_parents(dir / "out" / "night" / "a", dir / "out"), OutputError);
  CHECK_NOTHROW(check_output_parents(dir / "out" / "new" / "deeper" / "a", dir / "out"));
}

TEST_CASE("FITS output keywords keep full precision (flux-calibrated images)", "[reliability]") {
  WorkItem item;
  item.background = BackgroundStats{};
  item.background->median = 1.6900000000000001e-11;
  item.background->std = 3.25e-13;
  item.threshold = 1.8525e-11;
  std::map<std::string, std::string> values;
  for (const FitsCard& card : provenance_cards(item)) values[card.key] = card.value;
  CHECK(std::stod(values["BKG_MED"]) == item.background->median);
  CHECK(std::stod(values["BKG_STD"]) == item.background->std);
  CHECK(std::stod(values["THRESH"]) == *item.threshold);
}

TEST_CASE("input files: size limit, special files", "[reliability]") {
  test::TempDir dir("reliability_limits");
  write_file(dir / "small.fits", std::string(1000, 'x'));
  CHECK_NOTHROW(check_input_file(dir / "small.fits", 1000, true));
  CHECK_THROWS_WITH(check_input_file(dir / "small.fits", 999, true), Catch::Contains("max_file_bytes"));
  REQUIRE(::mkfifo((dir / "pipe.fits").c_str(), 0600) == 0);
  CHECK_THROWS_WITH(check_input_file(dir / "pipe.fits", 1000, true), Catch::Contains("not a regular file"));
  fs::create_symlink(dir / "missing.fits", dir / "dangling.fits");
  CHECK_THROWS_AS(check_input_file(dir / "dangling.fits", 1000, true), InputError);
}

TEST_CASE("fingerprints are zlib CRC-32 of the bytes", "[reliability]") {
  test::TempDir dir("reliability_crc");
  write_file(dir / "check.txt", "123456789");
  const Fingerprint f = fingerprint_file(dir / "check.txt");
  CHECK(f.size == 9);
  CHECK(f.crc32 == 0xCBF43926u);  // the CRC-32 check value
  CHECK(Fingerprint::from_json(f.to_json()).same_content(f));
  // A file of 64 MiB and more is read in 8 MiB chunks on all threads, their CRCs combined: the
  // same as zlib's over the whole (a last chunk of 12,345 bytes).
  std::string large((size_t{72} << 20) + 12345, '\0');
  uint32_t state = 12345;
  for (char& c : large) c = static_cast<char>((state = state * 1664525u + 1013904223u) >> 24);
  write_file(dir / "large.bin", large);
  const Fingerprint g = fingerprint_file(dir / "large.bin");
  CHECK(g.size == large.size());
  CHECK(g.crc32 == crc32(0, reinterpret_cast<const Bytef*>(large.data()), static_cast<uInt>(large.size())));
  fs::remove(dir / "large.bin");
}

TEST_CASE("manifest: resume skips only unchanged items with intact outputs", "[reliability]") {
  test::TempDir dir("reliability_manifest");
  fs::create_directories(dir / "in");
  fs::create_directories(dir / "out");
  write_file(dir / "in" / "a.fits", "input a");
  write_file(dir / "in" / "b.fits", "input b");
  write_file(dir / "out" / "a.cat.csv", "x,y\n1,2\n");
  write_file(dir / "out" / "b.cat.csv", "x,y\n3,4\n");
  const ItemRef a = ref_for(dir / "in" / "a.fits", "a.fits"), b = ref_for(dir / "in" / "b.fits", "b.fits");
  {
    Manifest manifest(dir / "out", "key1", false, true);
    manifest.append(a, {dir / "out" / "a.cat.csv"}, {{"status", "ok"}, {"nsources", 1}});
    manifest.append(b, {dir / "out" / "b.cat.csv"}, {{"status", "ok"}, {"nsources", 2}});
  }
  std::ofstream(dir / "out" / "manifest.jsonl", std::ios::app) << "{\"file\":\"c.fits\",\"hd";  // torn by a crash
  {
    Manifest manifest(dir / "out", "key1", true, false);
    CHECK(manifest.previous_entries() == 2);
    CHECK(manifest.done_before(a).value("nsources", 0) == 1);
    CHECK(manifest.done_before(b).value("nsources", 0) == 2);
  }
  write_file(dir / "in" / "a.fits", "input A");                // same size, new content
  write_file(dir / "out" / "b.cat.csv", "x,y\n3,5\n");          // damaged output, same size
  {
    Manifest manifest(dir / "out", "key1", true, false);
    CHECK(manifest.done_before(a).is_null());
    CHECK(manifest.done_before(b).is_null());
  }
  CHECK_THROWS(Manifest(dir / "out", "key2", true, false));  // another pipeline
}

TEST_CASE("manifest: a .hdr/.img pair is redone when its .img changes", "[reliability]") {
  test::TempDir dir("reliability_pair");
  fs::create_directories(dir / "in");
  fs::create_directories(dir / "out");
  // Only names and bytes matter here: the manifest stats the .hdr and the .img beside it.
  write_file(dir / "in" / "v.hdr", "header");
  write_file(dir / "in" / "v.img", "voxels 1");
  write_file(dir / "out" / "v.p0.image.png", "png");
  const ItemRef v = ref_for(dir / "in" / "v.hdr", "v.hdr");
  {
    Manifest manifest(dir / "out", "key", false, true);
    manifest.append(v, {dir / "out" / "v.p0.image.png"}, {{"status", "ok"}, {"rank", 5}});
  }
  {
    Manifest manifest(dir / "out", "key", true, false);
    CHECK(manifest.done_before(v).value("rank", 0) == 5);
  }
  write_file(dir / "in" / "v.img", "voxels 22");  // new voxels, the header untouched
  {
    Manifest manifest(dir / "out", "key", true, false);
    CHECK(manifest.done_before(v).is_null());
  }
  {  // the manifest line holds the .img's fingerprint beside the .hdr's
    Manifest manifest(dir / "out", "key", false, true);
    manifest.append(v, {dir / "out" / "v.p0.image.png"}, {{"status", "ok"}, {"rank", 5}});
  }
  std::ifstream lines(dir / "out" / "manifest.jsonl");
  std::string line, last;
  while (std::getline(lines, line)) last = line;
  const Fingerprint pair = Fingerprint::from_json(nlohmann::json::parse(last).at("input"));
  REQUIRE(pair.data_files.size() == 1);
  CHECK(pair.data_files[0].size == 9);
  CHECK(pair.size == 6);
  CHECK_FALSE(stat_fingerprint(v.path).same_content(pair));  // an entry without the .img differs
}

TEST_CASE("output directory checks at the start of a run", "[reliability]") {
  test::TempDir dir("reliability_outdir");
  fs::create_directories(dir / "in");
  test::write_fits(dir / "in" / "a.fits", -32, {32, 32}, test::star_field(32, 32, 1, 2));
  Pipeline pipeline = test::pipeline_from("device: cpu\nsteps: [background, segment, label, measure]\n");
  pipeline.input.dir = dir / "in";
  pipeline.output.dir = dir / "in" / "out";
  CHECK_THROWS_AS(run_pipeline(pipeline, {}), ConfigError);  // outputs inside the input directory
  write_file(dir / "file", "x");
  pipeline.output.dir = dir / "file" / "out";
  CHECK_THROWS_AS(run_pipeline(pipeline, {}), OutputError);  // cannot be created
}

TEST_CASE("manifest: an item is redone when a companion file it uses changes", "[reliability]") {
  test::TempDir dir("reliability_companions");
  fs::create_directories(dir / "in");
  fs::create_directories(dir / "out");
  for (const char* name : {"a", "b"}) {
    write_file(dir / "in" / (std::string(name) + ".fits"), "image");
    write_file(dir / "in" / (std::string(name) + ".weight.fits"), "weights");
    write_file(dir / "out" / (std::string(name) + ".cat.csv"), "x,y\n");
  }
  // A weight map beside each image, and a flag map in the image's own file (EXTNAME DQ: nothing more to check).
  const std::vector<CompanionSpec> companions = {{"weight map", "{stem}.weight.fits"}, {"flag map", "DQ"}};
  const ItemRef a = ref_for(dir / "in" / "a.fits", "a.fits"), b = ref_for(dir / "in" / "b.fits", "b.fits");
  {
    Manifest manifest(dir / "out", "key", false, true, "manifest.jsonl", companions);
    manifest.append(a, {dir / "out" / "a.cat.csv"}, {{"status", "ok"}, {"nsources", 1}});
    manifest.append(b, {dir / "out" / "b.cat.csv"}, {{"status", "ok"}, {"nsources", 2}});
  }
  std::ifstream lines(dir / "out" / "manifest.jsonl");
  std::string line, last;
  while (std::getline(lines, line)) last = line;
  const nlohmann::json recorded = nlohmann::json::parse(last).at("companions");
  REQUIRE(recorded.size() == 1);
  CHECK(recorded[0].at("role") == "weight map");
  CHECK(recorded[0].at("path") == (dir / "in" / "b.weight.fits").generic_string());
  CHECK(Fingerprint::from_json(recorded[0]).same_content(stat_fingerprint(dir / "in" / "b.weight.fits")));
  {
    Manifest manifest(dir / "out", "key", true, false, "manifest.jsonl", companions);
    CHECK(manifest.done_before(a).value("nsources", 0) == 1);
    CHECK(manifest.done_before(b).value("nsources", 0) == 2);
  }
  write_file(dir / "in" / "a.weight.fits", "new weights");  // a's weight map replaced, its image untouched
  {
    Manifest manifest(dir / "out", "key", true, false, "manifest.jsonl", companions);
    CHECK(manifest.done_before(a).is_null());
    CHECK(manifest.done_before(b).value("nsources", 0) == 2);
  }
  fs::remove(dir / "in" / "b.weight.fits");  // gone: the item is redone (and fails there, naming it)
  {
    Manifest manifest(dir / "out", "key", true, false, "manifest.jsonl", companions);
    CHECK(manifest.done_before(b).is_null());
  }
  {  // a line written without the companions (no companion then) does not vouch for them
    Manifest manifest(dir / "out", "key", false, true);
    manifest.append(a, {dir / "out" / "a.cat.csv"}, {{"status", "ok"}, {"nsources", 1}});
  }
  Manifest manifest(dir / "out", "key", true, false, "manifest.jsonl", companions);
  CHECK(manifest.done_before(a).is_null());
}
