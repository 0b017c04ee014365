// kernels::image_flags: SExtractor's FLAG_TYPE OR, AND, MIN, MAX and MOST over each source's
// pixels (IMAFLAGS_ISO, NIMAFLAGS_ISO), and input.flags.type in the pipeline.
#include <catch2/catch.hpp>

#include <vector>

#include "imflow/kernels/image_flags.hpp"
#include "test_helpers.hpp"

using imflow::kernels::FlagType;

namespace {
// Three sources on one row of 12 pixels: source 1 on pixels 0-4, source 2 on 5-8, source 3 on
// 9-10; pixel 11 is background.
const std::vector<int32_t> kLabels = {1, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 0};
// Source 1: 6, 0, 3, 6, 3 (a tie: 6 first); source 2: 12, 4, 4, 5; source 3: none; the
// background pixel's 1 counts for no one.
const std::vector<int32_t> kFlags = {6, 0, 3, 6, 3, 12, 4, 4, 5, 0, 0, 1};

imflow::Catalog combined(FlagType type) {
  imflow::Catalog catalog(3);
  for (int i = 0; i < 3; ++i) catalog[i].id = i + 1;
  imflow::kernels::image_flags(kLabels.data(), kFlags.data(), static_cast<int64_t>(kLabels.size()), type, catalog);
  return catalog;
}

void check(FlagType type, std::vector<std::pair<int32_t, int32_t>> expected) {
  const imflow::Catalog catalog = combined(type);
  for (size_t i = 0; i < expected.size(); ++i) {
    INFO("source " << i + 1);
    CHECK(catalog[i].imaflags_iso == expected[i].first);
    CHECK(catalog[i].nimaflags_iso == expected[i].second);
  }
}
}  // namespace

TEST_CASE("image_flags combines each source's non-zero flags as FLAG_TYPE says", "[flags]") {
  check(FlagType::bit_or, {{7, 4}, {13, 4}, {0, 0}});
  check(FlagType::bit_and, {{2, 4}, {4, 4}, {0, 0}});  // 6 & 3 & 6 & 3; 12 & 4 & 4 & 5
  check(FlagType::minimum, {{3, 2}, {4, 2}, {0, 0}});
  check(FlagType::maximum, {{6, 2}, {12, 1}, {0, 0}});
  check(FlagType::most, {{6, 2}, {4, 2}, {0, 0}});     // 6 and 3 twice each: 6 comes first
}

TEST_CASE("input.flags.type selects the combination and is written back resolved", "[flags][config]") {
  const auto pipeline = test::pipeline_from("input: {flags: {image: '{stem}.flag.fits', type: most}}\n"
                                            "steps: [background, segment, label, measure]\n");
  CHECK(pipeline.input.flag_type == FlagType::most);
  CHECK(pipeline.resolved()["input"]["flags"]["type"].as<std::string>() == "most");
  CHECK(test::pipeline_from("input: {flags: {image: DQ}}\nsteps: [background, segment, label, measure]\n").input.flag_type ==
        FlagType::bit_or);
  CHECK_THROWS_WITH(test::pipeline_from("input: {flags: {image: DQ, type: xor}}\nsteps: [background, segment, label, measure]\n"),
                    Catch::Contains("type"));
}
