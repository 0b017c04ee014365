// Checks on command-line values shared by the subcommands: whole numbers in a range (a value that
// is not a number is said to be one, where CLI::Range alone calls it out of range) and non-empty
// paths.
#pragma once
#include <CLI/CLI.hpp>

#include <string>

namespace imflow::cli {

template <typename Whole>
CLI::Validator whole_number_in(Whole low, Whole high) {
  const CLI::Range range(low, high);
  CLI::Validator check(
      [range](std::string& text) {
        Whole value{};
        if (!CLI::detail::lexical_cast(text, value)) return "Value " + text + " is not a whole number";
        return range(text);
      },
      range.get_description());
  return check;
}

// A path given as "" (an unset shell variable) is an error, not the pipeline's own path.
inline const CLI::Validator kNotEmpty([](std::string& value) { return value.empty() ? std::string("an empty path") : std::string(); },
                                      "", "NOT_EMPTY");

}  // namespace imflow::cli
