// The `map` step's expression language: a per-pixel expression in x, parsed once when the
// pipeline is loaded into a MapProgram (map.hpp); errors name the column and what was expected.
#pragma once
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

#include "imflow/kernels/map.hpp"

namespace imflow::kernels {

// An invalid expression. what() reads "col N: reason" (N counts bytes of the expression from 1),
// or only the reason for a limit of the whole program (column() is 0 then).
class MapExpressionError : public std::invalid_argument {
 public:
  MapExpressionError(int column, const std::string& reason);
  int column() const { return column_; }

 private:
  int column_;
};

struct MapCompileOptions {
  // Compute operations on constants once, here (in float32, with the host's functions: both
  // backends then use the same value), and write a ^ 2 as a * a (exact on both). Off: one
  // instruction per operator of the text, for tests of the parser.
  bool optimize = true;
};

inline constexpr size_t kMapMaxExpressionLength = 4096;  // bytes of text
inline constexpr int kMapMaxNesting = 200;               // parentheses, signs, powers, calls

// Grammar (docs/pipeline.md): sum := product {(+|-) product}; product := unary {(*|/) unary};
// unary := (-|+) unary | power; power := primary [^ unary] (right-associative, so 2^3^2 = 512
// and -x^2 = -(x^2)); primary := number | x | pi | e | inf | nan | function(args) | (sum).
// Throws MapExpressionError.
MapProgram compile_map_expression(std::string_view text, MapCompileOptions options = {});

// The functions the language knows, e.g. "abs, acos, ...", for messages.
std::string map_function_names();

}  // namespace imflow::kernels
