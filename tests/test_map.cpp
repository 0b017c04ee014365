// The map step: its expression language (precedence, associativity, numbers, functions, error
// messages with columns, limits), float32 results against a double reference over many pixels,
// NaN/Inf propagation, the step in pipeline files, and an engine run with map before detection.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <numbers>
#include <random>

#include <nlohmann/json.hpp>

#include "imflow/engine.hpp"
#include "imflow/errors.hpp"
#include "imflow/io/fits.hpp"
#include "imflow/kernels/background.hpp"
#include "imflow/kernels/map.hpp"
#include "imflow/kernels/map_expression.hpp"
#include "test_helpers.hpp"

using namespace imflow;
using Catch::Matchers::Contains;

namespace {
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

std::string structure(const std::string& text) {  // the parse tree, nothing folded
  return kernels::describe_map_program(kernels::compile_map_expression(text, {.optimize = false}));
}
std::string optimized(const std::string& text) {
  return kernels::describe_map_program(kernels::compile_map_expression(text));
}

std::vector<float> map_values(const std::string& text, const std::vector<float>& values, bool optimize = true) {
  ImageBuffer image;
  image.resize(static_cast<int64_t>(values.size()), 1);
  std::copy(values.begin(), values.end(), image.data());
  kernels::apply_map(kernels::compile_map_expression(text, {.optimize = optimize}), image.view());
  return {image.begin(), image.end()};
}
float map_value(const std::string& text, float x = 0.0f) { return map_values(text, {x})[0]; }

std::string map_error_of(const std::string& text) {
  try {
    kernels::compile_map_expression(text);
  } catch (const kernels::MapExpressionError& error) {
    return error.what();
  }
  return "no error";
}

// Distance in representable floats (0: equal; a NaN counts as far).
int64_t ulps(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0 : std::numeric_limits<int64_t>::max();
  auto ordered = [](float v) {
    const auto bits = static_cast<int64_t>(std::bit_cast<int32_t>(v));
    return bits < 0 ? std::numeric_limits<int32_t>::min() - bits : bits;
  };
  return std::abs(ordered(a) - ordered(b));
}
}  // namespace

TEST_CASE("map expressions parse with the precedence and associativity of mathematics", "[map]") {
  CHECK(structure("2^3^2") == "(2 ^ (3 ^ 2))");
  CHECK(map_value("2^3^2") == 512.0f);
  CHECK(map_value("2^3^2", 0.0f) == map_values("2^3^2", {0.0f}, false)[0]);
  CHECK(structure("-x^2") == "-(x ^ 2)");
  CHECK(map_value("-x^2", 3.0f) == -9.0f);
  CHECK(map_value("-x^2", -3.0f) == -9.0f);
  CHECK(map_value("-2^2") == -4.0f);
  CHECK(structure("2^-x") == "(2 ^ -x)");
  CHECK(map_value("2^-1") == 0.5f);
  CHECK(map_value("2^-x^2", 1.0f) == 0.5f);  // 2^(-(x^2))
  CHECK(structure("1 - 2 - 3") == "((1 - 2) - 3)");
  CHECK(map_value("1 - 2 - 3") == -4.0f);
  CHECK(structure("8 / 4 / 2") == "((8 / 4) / 2)");
  CHECK(map_value("8 / 4 / 2") == 1.0f);
  CHECK(structure("2 + 3 * 4") == "(2 + (3 * 4))");
  CHECK(map_value("2 + 3 * 4") == 14.0f);
  CHECK(map_value("(2 + 3) * 4") == 20.0f);
  CHECK(structure("x * -1 + +x") == "((x * -1) + x)");
  CHECK(map_value("--x", 5.0f) == 5.0f);
  CHECK(structure("asinh(x / 10) * 2.5 + 1") == "((asinh((x / 10)) * 2.5) + 1)");
  CHECK(structure("clip(x, 0, 1)") == "min(max(x, 0), 1)");
  CHECK(structure("pow(x, 2)") == "(x ^ 2)");
  CHECK(structure(" 1-x ") == "(1 - x)");  // a constant left operand: an immediate, same order
  CHECK(map_value("1 - x", 3.0f) == -2.0f);
  CHECK(map_value("2 / x", 4.0f) == 0.5f);
  CHECK(map_value("x / 2", 4.0f) == 2.0f);
  CHECK(map_value("2 ^ x", 3.0f) == 8.0f);
  CHECK(map_value("atan2(1, x)", 1.0f) == std::atan2(1.0f, 1.0f));
  CHECK(map_value("x ^ 3 ^ 2", 2.0f) == 512.0f);
  // Constants are folded, a ^ 2 is a * a.
  CHECK(optimized("x ^ 2") == "square(x)");
  CHECK(optimized("2 * pi * x") == "(6.2831855 * x)");
  CHECK(optimized("sqrt(4) + x / (1 + 1)") == "(2 + (x / 2))");
}

TEST_CASE("map numbers and constants", "[map]") {
  CHECK(map_value("1e-3") == 1e-3f);
  CHECK(map_value(".5") == 0.5f);
  CHECK(map_value("5.") == 5.0f);
  CHECK(map_value("1E3") == 1000.0f);
  CHECK(map_value("2.5e+2") == 250.0f);
  CHECK(map_value("007") == 7.0f);
  CHECK(map_value("0.1") == 0.1f);  // rounded once, decimal to float
  CHECK(map_value("2e3") == 2000.0f);
  CHECK(map_value("2*e") == 2.0f * std::numbers::e_v<float>);
  CHECK(map_value("pi") == std::numbers::pi_v<float>);
  CHECK(map_value("e") == std::numbers::e_v<float>);
  CHECK(map_value("-inf") == -kInf);
  CHECK(std::isnan(map_value("nan")));
  CHECK(map_value("x", 1.25f) == 1.25f);
}

TEST_CASE("map functions match a double-precision reference over many pixels", "[map]") {
  struct Case {
    const char* text;
    std::function<double(double)> reference;
    double lo, hi;
    bool log_uniform = false;
    int64_t max_ulps = 3;
  };
  const std::vector<Case> cases = {
      {"sqrt(x)", [](double x) { return std::sqrt(x); }, 0, 1e6, false, 0},
      {"cbrt(x)", [](double x) { return std::cbrt(x); }, -1e6, 1e6},
      {"exp(x)", [](double x) { return std::exp(x); }, -80, 80},
      {"exp2(x)", [](double x) { return std::exp2(x); }, -120, 120},
      {"expm1(x)", [](double x) { return std::expm1(x); }, -10, 10},
      {"log(x)", [](double x) { return std::log(x); }, 1e-30, 1e30, true},
      {"log10(x)", [](double x) { return std::log10(x); }, 1e-30, 1e30, true},
      {"log2(x)", [](double x) { return std::log2(x); }, 1e-30, 1e30, true},
      {"log1p(x)", [](double x) { return std::log1p(x); }, -0.99, 1e6},
      {"sin(x)", [](double x) { return std::sin(x); }, -100, 100},
      {"cos(x)", [](double x) { return std::cos(x); }, -100, 100},
      {"tan(x)", [](double x) { return std::tan(x); }, -1.5, 1.5},
      {"asin(x)", [](double x) { return std::asin(x); }, -1, 1},
      {"acos(x)", [](double x) { return std::acos(x); }, -1, 1},
      {"atan(x)", [](double x) { return std::atan(x); }, -1e4, 1e4},
      {"sinh(x)", [](double x) { return std::sinh(x); }, -80, 80},
      {"cosh(x)", [](double x) { return std::cosh(x); }, -80, 80},
      {"tanh(x)", [](double x) { return std::tanh(x); }, -20, 20},
      {"asinh(x)", [](double x) { return std::asinh(x); }, -1e6, 1e6},
      {"acosh(x)", [](double x) { return std::acosh(x); }, 1, 1e6},
      {"atanh(x)", [](double x) { return std::atanh(x); }, -0.999, 0.999},
      {"atan2(x, 3)", [](double x) { return std::atan2(x, 3.0); }, -100, 100},
      {"x ^ 1.5", [](double x) { return std::pow(x, 1.5); }, 0, 1e4},
      {"pow(2, x)", [](double x) { return std::pow(2.0, x); }, -100, 100},
      // Exact or correctly rounded: equal to the double result rounded once.
      {"abs(x)", [](double x) { return std::abs(x); }, -1e6, 1e6, false, 0},
      {"floor(x)", [](double x) { return std::floor(x); }, -1e6, 1e6, false, 0},
      {"ceil(x)", [](double x) { return std::ceil(x); }, -1e6, 1e6, false, 0},
      {"trunc(x)", [](double x) { return std::trunc(x); }, -1e6, 1e6, false, 0},
      {"sign(x)", [](double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : x; }, -1, 1, false, 0},
      {"x ^ 2", [](double x) { return x * x; }, -1e4, 1e4, false, 0},
      {"x / 3", [](double x) { return x / 3; }, -1e4, 1e4, false, 0},
      {"3 / x", [](double x) { return 3 / x; }, -1e4, 1e4, false, 0},
      {"x - 7.25", [](double x) { return x - 7.25; }, -1e4, 1e4, false, 0},
      {"min(x, 0.5)", [](double x) { return std::min(x, 0.5); }, -1, 1, false, 0},
      {"max(0.5, x)", [](double x) { return std::max(0.5, x); }, -1, 1, false, 0},
      {"clip(x, -0.25, 0.5)", [](double x) { return std::clamp(x, -0.25, 0.5); }, -1, 1, false, 0},
  };
  std::mt19937 rng(20240601);
  const size_t n = 100003;  // several parallel tasks and a partial block
  for (const Case& c : cases) {
    INFO(c.text);
    std::uniform_real_distribution<double> u(c.log_uniform ? std::log(c.lo) : c.lo, c.log_uniform ? std::log(c.hi) : c.hi);
    std::vector<float> x(n);
    for (float& v : x) v = static_cast<float>(c.log_uniform ? std::exp(u(rng)) : u(rng));
    const std::vector<float> got = map_values(c.text, x);
    int64_t worst = 0;
    for (size_t i = 0; i < n; ++i) worst = std::max(worst, ulps(got[i], static_cast<float>(c.reference(x[i]))));
    CHECK(worst <= c.max_ulps);
  }
}

TEST_CASE("map compound expressions match a double-precision reference", "[map]") {
  struct Case {
    const char* text;
    std::function<double(double)> reference;
    double lo, hi;
  };
  const std::vector<Case> cases = {
      {"asinh(x / 10) * 2.5 + 1", [](double x) { return std::asinh(x / 10) * 2.5 + 1; }, -1e4, 1e4},
      {"sqrt(abs(x)) * sign(x)", [](double x) { return std::sqrt(std::abs(x)) * (x > 0 ? 1 : -1); }, -1e4, 1e4},
      {"log10(max(x, 1e-3))", [](double x) { return std::log10(std::max(x, 1e-3)); }, -10, 1e4},
      {"clip((x - 100) / 50, 0, 1) ^ 0.5", [](double x) { return std::sqrt(std::clamp((x - 100) / 50, 0.0, 1.0)); }, 0, 300},
      {"exp(-x^2 / 2) / sqrt(2 * pi)", [](double x) { return std::exp(-x * x / 2) / std::sqrt(2 * std::numbers::pi); }, -10, 10},
      {"1 / (1 + exp(-x))", [](double x) { return 1 / (1 + std::exp(-x)); }, -50, 50},
      {"floor(x / 16) * 16 + 0.5", [](double x) { return std::floor(x / 16) * 16 + 0.5; }, 0, 1e4},
      {"(x - 365) / 37 * 2 - 1", [](double x) { return (x - 365) / 37 * 2 - 1; }, 0, 1000},
  };
  std::mt19937 rng(7);
  for (const Case& c : cases) {
    INFO(c.text);
    std::uniform_real_distribution<double> u(c.lo, c.hi);
    std::vector<float> x(50000);
    for (float& v : x) v = static_cast<float>(u(rng));
    const std::vector<float> got = map_values(c.text, x);
    size_t bad = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double want = c.reference(x[i]);
      if (!(std::abs(got[i] - want) <= 1e-6 * (1 + std::abs(want)))) ++bad;
    }
    CHECK(bad == 0);
  }
}

TEST_CASE("map propagates NaN and Inf as IEEE float does", "[map]") {
  for (const char* text : {"abs(x)", "sqrt(x)", "cbrt(x)", "exp(x)", "log(x)", "log10(x)", "sin(x)", "tan(x)", "asinh(x)",
                           "tanh(x)", "floor(x)", "ceil(x)", "sign(x)", "x + 1", "1 - x", "x * 0", "2 / x", "x ^ 2",
                           "2 ^ x", "min(x, 1)", "max(1, x)", "min(x, -inf)", "clip(x, 0, 1)", "atan2(x, 1)", "pow(x, 2.5)",
                           "-x"}) {
    INFO(text);
    CHECK(std::isnan(map_value(text, kNan)));
  }
  // C's (and NumPy's) pow: x^0 and 1^x are 1 even for NaN.
  CHECK(map_value("x ^ 0", kNan) == 1.0f);
  CHECK(map_value("pow(1, x)", kNan) == 1.0f);
  CHECK(map_value("exp(x)", kInf) == kInf);
  CHECK(map_value("exp(x)", -kInf) == 0.0f);
  CHECK(map_value("log(x)", 0.0f) == -kInf);
  CHECK(std::isnan(map_value("log(x)", -1.0f)));
  CHECK(std::isnan(map_value("sqrt(x)", -1.0f)));
  CHECK(map_value("1 / x", 0.0f) == kInf);
  CHECK(map_value("1 / x", -0.0f) == -kInf);
  CHECK(std::isnan(map_value("x - x", kInf)));
  CHECK(map_value("tanh(x)", kInf) == 1.0f);
  CHECK(map_value("clip(x, 0, 1)", kInf) == 1.0f);
  CHECK(map_value("clip(x, 0, 1)", -kInf) == 0.0f);
  CHECK(map_value("min(x, 1)", -kInf) == -kInf);
  CHECK(map_value("x * 2", std::numeric_limits<float>::max()) == kInf);
  // An expression without x sets every pixel, NaN ones too.
  const std::vector<float> constant = map_values("2 * pi", {kNan, 1.0f, -kInf});
  CHECK(constant == std::vector<float>(3, 2.0f * std::numbers::pi_v<float>));
}

TEST_CASE("map expression errors name the column and what was expected", "[map]") {
  CHECK_THAT(map_error_of("asinh(sqr(x))"),
             Contains("col 7: unknown function 'sqr'; did you mean 'sqrt'? (known: abs, acos,") &&
                 Contains("clip(v, lo, hi)") && Contains("trunc)"));
  try {
    kernels::compile_map_expression("asinh(sqr(x))");
  } catch (const kernels::MapExpressionError& error) {
    CHECK(error.column() == 7);
  }
  CHECK(map_error_of("x +") == "col 4: expected a number, x, a constant, a function or '(', got the end of the expression");
  CHECK(map_error_of("(x + 1") == "col 7: expected ')' to close the '(' at col 1, got the end of the expression");
  CHECK(map_error_of("y * 2") == "col 1: unknown name 'y' (known: x, pi, e, inf, nan)");
  CHECK(map_error_of("X") == "col 1: unknown name 'X'; did you mean 'x'? (known: x, pi, e, inf, nan)");
  CHECK(map_error_of("min(x)") == "col 1: min takes 2 arguments, got 1");
  CHECK(map_error_of("1 + sqrt(x, 2)") == "col 5: sqrt takes 1 argument, got 2");
  CHECK(map_error_of("x ** 2") == "col 3: '**' is not an operator: write a power as a ^ b");
  CHECK(map_error_of("2x") ==
        "col 2: expected an operator (+ - * / ^) or the end of the expression, got 'x' (multiplication is written with *)");
  CHECK(map_error_of("1e") == "col 1: malformed number '1e': expected digits after the exponent");
  CHECK(map_error_of("x * 1e+") == "col 5: malformed number '1e+': expected digits after the exponent");
  CHECK(map_error_of("1e999") == "col 1: number '1e999' is out of the float32 range");
  CHECK(map_error_of("") == "col 1: empty expression: write one in x, e.g. asinh(x / 10)");
  CHECK(map_error_of("   ") == "col 4: empty expression: write one in x, e.g. asinh(x / 10)");
  CHECK(map_error_of("sqrt") == "col 1: function 'sqrt' needs its arguments in parentheses: sqrt(...)");
  CHECK(map_error_of("x(2)") == "col 1: 'x' is the pixel value, not a function (multiplication is written with *)");
  CHECK(map_error_of("pi(2)") == "col 1: 'pi' is a constant, not a function");
  CHECK(map_error_of("x # 2") == "col 3: expected an operator (+ - * / ^) or the end of the expression, got '#'");
  CHECK(map_error_of("x + \xC3\xA9") == "col 5: expected a number, x, a constant, a function or '(', got byte 0xC3");
  CHECK(map_error_of("min(x,)") == "col 7: expected a number, x, a constant, a function or '(', got ')'");
  CHECK(map_error_of("min(x 2)") ==
        "col 7: expected ',' or ')' to close the '(' at col 4, got '2' (multiplication is written with *)");
  CHECK(map_error_of(")") == "col 1: expected a number, x, a constant, a function or '(', got ')'");
  CHECK(map_error_of(".") == "col 1: expected a number, got '.'");
  CHECK(map_error_of(std::string(300, '(') + "x" + std::string(300, ')')) == "col 201: nested too deeply (more than 200 levels)");
  CHECK(map_error_of(std::string(300, '-') + "x") == "col 201: nested too deeply (more than 200 levels)");
  CHECK(map_error_of("x" + std::string(5000, ' ')) == "the expression is 5001 characters long, more than 4096");
}

TEST_CASE("map programs are limited to 64 operations and 16 stack values", "[map]") {
  std::string sum = "x";
  for (int i = 0; i < 21; ++i) sum += " + sqrt(x)";  // 1 + 21 * 3 = 64 operations
  REQUIRE(kernels::compile_map_expression(sum).length == 64);
  CHECK(map_value(sum, 4.0f) == 46.0f);
  CHECK(map_error_of(sum + " + x") == "the expression needs 66 operations, more than the 64 a map step runs: "
                                      "split it over two map steps");
  auto nested = [](int terms) {  // x + (x + (x + ...)): every x waits on the stack
    std::string text;
    for (int i = 1; i < terms; ++i) text += "x + (";
    return text + "x" + std::string(static_cast<size_t>(terms - 1), ')');
  };
  REQUIRE(kernels::compile_map_expression(nested(16)).max_stack == 16);
  CHECK(map_value(nested(16), 0.5f) == 8.0f);
  CHECK_THAT(map_error_of(nested(17)), Contains("needs 17 values at once, more than 16: nest less to the right"));
  try {
    kernels::compile_map_expression(nested(17));
  } catch (const kernels::MapExpressionError& error) {
    CHECK(error.column() == 0);
  }
}

TEST_CASE("the map step: a config error at validate time names the file, line and column", "[map]") {
  auto config_error = [](const std::string& yaml) -> std::string {
    try {
      test::pipeline_from(yaml);
    } catch (const ConfigError& error) {
      return error.what();
    }
    return "no error";
  };
  CHECK_THAT(config_error("steps:\n  - map: {expression: \"asinh(sqr(x))\"}\n"),
             Contains("test.yaml:2:23: steps[0].map.expression: col 7: unknown function 'sqr'"));
  CHECK_THAT(config_error("steps:\n  - map:\n      expression: x +\n"),
             Contains("test.yaml:3:19: steps[0].map.expression: col 4: expected a number"));
  CHECK_THAT(config_error("steps: [map]\n"), Contains("steps[0].map.expression: required"));
  CHECK_THAT(config_error("steps: [{map: {expression: x, scale: 2}}]\n"), Contains("steps[0].map.scale: unknown key"));
  CHECK_THAT(config_error("steps: [{map: {expression: [1, 2]}}]\n"), Contains("expression: expected a string"));
  // What `imflow validate` loads: a file.
  test::TempDir dir("map_validate");
  std::ofstream(dir / "bad.yaml") << "device: cpu\nsteps:\n  - map: {expression: 'log(x) + max(x, 2'}\n  - background\n";
  CHECK_THROWS_WITH(load_pipeline(dir / "bad.yaml"),
                    Contains("bad.yaml:3:23: steps[0].map.expression: col 18: expected ',' or ')' to close the '(' at col 13"));
  std::ofstream(dir / "good.yaml") << "steps:\n  - map: {expression: 'asinh(x / 10) * 2.5 + 1'}\n  - background\n";
  const Pipeline pipeline = load_pipeline(dir / "good.yaml");
  CHECK(pipeline.resolved()["steps"][0]["map"]["expression"].as<std::string>() == "asinh(x / 10) * 2.5 + 1");
  REQUIRE(find_step("map") != nullptr);

  WorkItem item;
  item.pixels.resize(3, 1);
  item.pixels.data()[0] = 10.0f, item.pixels.data()[1] = kNan, item.pixels.data()[2] = -10.0f;
  pipeline.steps[0]->run_cpu(item);
  CHECK(item.pixels.data()[0] == Approx(std::asinh(1.0) * 2.5 + 1).epsilon(1e-6));
  CHECK(std::isnan(item.pixels.data()[1]));
  CHECK(item.pixels.data()[2] == Approx(1 - std::asinh(1.0) * 2.5).epsilon(1e-6));
}

TEST_CASE("an engine run with map before detection equals detection on pre-mapped images", "[map][engine]") {
  test::TempDir dir("map_engine");
  const std::string expression = "asinh((x - 100) / 5) * 40 + sqrt(max(x, 0))";
  std::filesystem::create_directories(dir / "raw");
  std::filesystem::create_directories(dir / "mapped");
  for (int i = 0; i < 3; ++i) {
    const std::string name = "field" + std::to_string(i) + ".fits";
    std::vector<double> sky = test::star_field(96, 80, 40 + i, 6);
    sky[static_cast<size_t>(7 + i)] = std::numeric_limits<double>::quiet_NaN();  // a masked pixel stays masked
    test::write_fits(dir / "raw" / name, -32, {96, 80}, sky);
    ImageBuffer image;
    read_fits_plane(dir / "raw" / name, 0, 0, image);
    kernels::apply_map(kernels::compile_map_expression(expression), image.view());
    test::write_fits(dir / "mapped" / name, -32, {96, 80}, std::vector<double>(image.begin(), image.end()));
  }
  auto run = [&](const std::string& input, const std::string& output, const std::string& steps) {
    Pipeline pipeline = test::pipeline_from("output: {formats: [csv, fits_image]}\ndevice: cpu\nthreads: 2\nsteps: " + steps);
    pipeline.input.dir = dir / input;
    pipeline.output.dir = dir / output;
    const RunSummary summary = run_pipeline(pipeline, {});
    CHECK(summary.succeeded() == 3);
    CHECK(summary.failed() == 0);
    return nlohmann::json::parse(test::read_text(dir / output / "summary.json"));
  };
  const auto with_map = run("raw", "out_map", "[{map: {expression: '" + expression + "'}}, background, segment, label, measure]");
  run("mapped", "out_ref", "[background, segment, label, measure]");
  for (int i = 0; i < 3; ++i) {
    const std::string stem = "field" + std::to_string(i);
    INFO(stem);
    ImageBuffer written, expected;
    read_fits_plane(dir / "out_map" / (stem + ".image.fits"), 0, 0, written);
    read_fits_plane(dir / "mapped" / (stem + ".fits"), 0, 0, expected);
    REQUIRE(written.size() == expected.size());
    CHECK(std::isnan(written.data()[7 + i]));
    CHECK(std::equal(written.begin(), written.end(), expected.begin(), expected.end(),
                     [](float a, float b) { return a == b || (std::isnan(a) && std::isnan(b)); }));
    const std::string catalog = test::read_text(dir / "out_map" / (stem + ".cat.csv"));
    CHECK(catalog == test::read_text(dir / "out_ref" / (stem + ".cat.csv")));
    CHECK(std::count(catalog.begin(), catalog.end(), '\n') >= 2);  // the header and at least one source
    std::vector<float> work;
    const double median = kernels::kappa_sigma_clip(expected.view(), 3.0, 100, work).median;
    for (const auto& record : with_map["items"]) {
      if (record["file"].get<std::string>().find(stem) != std::string::npos) {
        CHECK(record["background"]["median"].get<double>() == median);
      }
    }
  }
}
