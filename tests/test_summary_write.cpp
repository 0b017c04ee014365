// The run summary written from records serialized when added: the same bytes as dumping
// to_json(), items in input order; metrics.csv rows made when added or at the end, the same.
#include <catch2/catch.hpp>

#include <fstream>
#include <regex>

#include "engine/mri_outputs.hpp"
#include "engine/summary_merge.hpp"
#include "imflow/summary.hpp"
#include "test_helpers.hpp"

namespace {
using nlohmann::json;

// Peak RSS can grow between two calls: the one value that may differ.
std::string without_peak_rss(const std::string& text) {
  static const std::regex peak("\"peak_rss_megabytes\": [0-9.e+-]+");
  return std::regex_replace(text, peak, "\"peak_rss_megabytes\": X");
}

json record(const std::string& file, int64_t hdu, int64_t plane, const std::string& status, json metrics) {
  json r = {{"file", file}, {"hdu", hdu}, {"plane", plane}, {"status", status}, {"width", 4}, {"height", 3},
            {"seconds", {{"read", 0.25}, {"svd_reconstruct", 1.5e-05}}}, {"outputs", {"out/" + file + ".png"}}};
  if (status != "ok") r["error"] = file + ": broken \xff\xfe bytes";  // not UTF-8: replaced when written
  if (!metrics.is_null()) r["metrics"] = std::move(metrics);
  return r;
}

json svd_metrics(double rank, json psnr) {
  return {{"rank", rank}, {"rel_frobenius_error", 0.0123456789012}, {"psnr_db", std::move(psnr)},
          {"energy_kept", 0.99}, {"compression_ratio", 0.5}, {"singular_values", 3.0}, {"sigma_1", 7.0}};
}

json with_zeroed_pixels(json metrics, double zeroed) {
  metrics["zeroed_pixels"] = zeroed;
  return metrics;
}

// Records added out of input order, one skipped (parsed back from text, as the manifest gives it:
// unsigned integers), one failed, one without metrics, one file name that needs CSV quoting.
void fill(imflow::RunSummary& summary) {
  summary.set_context({{"device", "cpu"}, {"input", "in/\xc3\xbc"}, {"threads", 2}, {"pipeline", "p.yaml"}});
  summary.set("tiling", {{"size", 0}, {"halo", 0}});
  const std::vector<imflow::StageTime> times = {{"read", 0.25}};
  summary.add_record(record("b.png", 0, 0, "ok", svd_metrics(2, 30.5)), true, 100, 12, times);
  summary.add_record(record("a.nii", 0, 1, "ok", with_zeroed_pixels(svd_metrics(2, nullptr), 5)), true, 100, 12, times);
  summary.add_record(record("c.png", 0, 0, "failed", nullptr), false, 0, 0, times);
  summary.add_record(record("a.nii", 0, 0, "ok", svd_metrics(3, 25.0)), true, 100, 12, times);
  summary.add_skipped(json::parse(record("a,b.png", 0, 0, "ok", svd_metrics(1, 20.0)).dump()));
  summary.add_record(record("d.fits", 1, 0, "ok", nullptr), true, 100, 12, times);
  summary.set_stop_reason("interrupted by a signal; items in flight were finished");
  summary.finish(2.0);
}
}  // namespace

TEST_CASE("summary.json from the stored records is to_json().dump(2), items in input order", "[summary]") {
  test::TempDir dir("summary_write");
  imflow::RunSummary summary;
  fill(summary);
  summary.write(dir / "summary.json");
  const std::string written = test::read_text(dir / "summary.json");
  const std::string dumped = summary.to_json().dump(2, ' ', false, json::error_handler_t::replace) + "\n";
  CHECK(without_peak_rss(written) == without_peak_rss(dumped));
  const json parsed = json::parse(written);
  REQUIRE(parsed["items"].size() == 6);
  std::vector<std::string> order;
  for (const auto& item : parsed["items"]) order.push_back(item["file"].get<std::string>() + ":" + item["plane"].dump());
  CHECK(order == std::vector<std::string>{"a,b.png:0", "a.nii:0", "a.nii:1", "b.png:0", "c.png:0", "d.fits:0"});
  CHECK(parsed["items"][0]["skipped"] == true);
  CHECK(parsed["items"][4]["error"] == "c.png: broken \xef\xbf\xbd\xef\xbf\xbd bytes");
  CHECK(parsed["totals"]["items"] == 6);
  CHECK(parsed["totals"]["skipped"] == 1);
  CHECK(parsed["totals"]["stopped_early"] == "interrupted by a signal; items in flight were finished");
  CHECK(parsed["input"] == "in/\xc3\xbc");
  // Adding after a write sorts again; the new record takes its place.
  summary.add_record(record("a.nii", 0, 2, "ok", nullptr), true, 100, 12, {});
  summary.write(dir / "summary.json");
  CHECK(json::parse(test::read_text(dir / "summary.json"))["items"][3]["plane"] == 2);
}

TEST_CASE("an empty summary writes an empty items array", "[summary]") {
  test::TempDir dir("summary_write_empty");
  imflow::RunSummary summary;
  summary.finish(0.5);
  summary.write(dir / "summary.json");
  const std::string written = test::read_text(dir / "summary.json");
  CHECK(without_peak_rss(written) == without_peak_rss(summary.to_json().dump(2) + "\n"));
  CHECK(written.find("\n  \"items\": [],\n") != std::string::npos);
}

TEST_CASE("metrics.csv: rows made as records are added equal rows made at the end", "[summary]") {
  test::TempDir dir("summary_metrics");
  imflow::RunSummary at_end, when_added;
  when_added.derive_lines(imflow::metrics_csv_row);
  fill(at_end);
  fill(when_added);
  imflow::write_metrics_csv(at_end, dir / "at_end.csv");
  imflow::write_metrics_csv(when_added, dir / "when_added.csv");
  const std::string expected =
      "file,slice,rank,rel_frobenius_error,psnr_db,energy_kept,compression_ratio,singular_values,zeroed_pixels\n"
      "\"a,b.png\",0,1,0.0123456789,20,0.99,0.5,3,0\n"
      "a.nii,0,3,0.0123456789,25,0.99,0.5,3,0\n"
      "a.nii,1,2,0.0123456789,inf,0.99,0.5,3,5\n"
      "b.png,0,2,0.0123456789,30.5,0.99,0.5,3,0\n";
  CHECK(test::read_text(dir / "at_end.csv") == expected);
  CHECK(test::read_text(dir / "when_added.csv") == expected);
}

TEST_CASE("the merged catalog from a run summary equals the one from its JSON", "[summary]") {
  test::TempDir dir("summary_catalog");
  std::ofstream(dir / "x.cat.csv") << "id,x\n1,2.5\n";
  std::ofstream(dir / "y.cat.csv") << "id,x\n1,9\n2,10\n";
  imflow::RunSummary summary;
  json y = record("y.fits", 0, 0, "ok", nullptr), x = record("x.fits", 0, 0, "ok", nullptr);
  y["outputs"] = {(dir / "y.cat.csv").string()};
  x["outputs"] = {(dir / "x.cat.csv").string(), (dir / "x.png").string()};
  summary.add_record(y, true, 1, 1, {});
  summary.add_record(x, true, 1, 1, {});
  CHECK(imflow::write_merged_catalog(summary, dir / "from_summary.csv") == 3);
  CHECK(imflow::write_merged_catalog(summary.to_json(), dir / "from_json.csv") == 3);
  CHECK(test::read_text(dir / "from_summary.csv") == "file,hdu,plane,id,x\nx.fits,0,0,1,2.5\ny.fits,0,0,1,9\ny.fits,0,0,2,10\n");
  CHECK(test::read_text(dir / "from_json.csv") == test::read_text(dir / "from_summary.csv"));
}
