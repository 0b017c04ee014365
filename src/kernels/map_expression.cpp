// The map expression compiler: a recursive-descent parser that builds a small tree (folding
// constants as it goes), then postfix code with immediate operands; errors name the column.
#include "imflow/kernels/map_expression.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <limits>
#include <numbers>
#include <vector>

namespace imflow::kernels {

MapExpressionError::MapExpressionError(int column, const std::string& reason)
    : std::invalid_argument(column > 0 ? "col " + std::to_string(column) + ": " + reason : reason), column_(column) {}

namespace {

struct Function {
  std::string_view name;
  std::string_view signature;  // as listed in messages
  size_t arity;
  MapOp op;  // MapOp::count: clip(v, lo, hi) = min(max(v, lo), hi)
};

// Sorted by name.
constexpr Function kFunctions[] = {
    {"abs", "abs", 1, MapOp::abs}, {"acos", "acos", 1, MapOp::acos}, {"acosh", "acosh", 1, MapOp::acosh},
    {"asin", "asin", 1, MapOp::asin}, {"asinh", "asinh", 1, MapOp::asinh}, {"atan", "atan", 1, MapOp::atan},
    {"atan2", "atan2(y, x)", 2, MapOp::atan2}, {"atanh", "atanh", 1, MapOp::atanh}, {"cbrt", "cbrt", 1, MapOp::cbrt},
    {"ceil", "ceil", 1, MapOp::ceil}, {"clip", "clip(v, lo, hi)", 3, MapOp::count}, {"cos", "cos", 1, MapOp::cos},
    {"cosh", "cosh", 1, MapOp::cosh}, {"exp", "exp", 1, MapOp::exp}, {"exp2", "exp2", 1, MapOp::exp2},
    {"expm1", "expm1", 1, MapOp::expm1}, {"floor", "floor", 1, MapOp::floor}, {"log", "log", 1, MapOp::log},
    {"log10", "log10", 1, MapOp::log10}, {"log1p", "log1p", 1, MapOp::log1p}, {"log2", "log2", 1, MapOp::log2},
    {"max", "max(a, b)", 2, MapOp::max}, {"min", "min(a, b)", 2, MapOp::min}, {"pow", "pow(a, b)", 2, MapOp::pow},
    {"sign", "sign", 1, MapOp::sign}, {"sin", "sin", 1, MapOp::sin}, {"sinh", "sinh", 1, MapOp::sinh},
    {"sqrt", "sqrt", 1, MapOp::sqrt}, {"tan", "tan", 1, MapOp::tan}, {"tanh", "tanh", 1, MapOp::tanh},
    {"trunc", "trunc", 1, MapOp::trunc},
};

struct Constant {
  std::string_view name;
  float value;
};
constexpr Constant kConstants[] = {{"pi", std::numbers::pi_v<float>}, {"e", std::numbers::e_v<float>},
                                   {"inf", std::numeric_limits<float>::infinity()}, {"nan", std::numeric_limits<float>::quiet_NaN()}};
constexpr std::string_view kNames = "x, pi, e, inf, nan";
constexpr struct {
  std::string_view name;
} kNameList[] = {{"x"}, {"pi"}, {"e"}, {"inf"}, {"nan"}};

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

// Edit distance ignoring case, for "did you mean" hints.
size_t edit_distance(std::string_view a, std::string_view b) {
  auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

template <typename Names>
std::string did_you_mean(std::string_view word, const Names& names) {
  std::string_view best;
  // At most 1 edit for short words, else 2, and fewer edits than letters ('y' is not 'x').
  size_t best_distance = std::min<size_t>(word.size(), word.size() <= 3 ? 2 : 3);
  for (const auto& candidate : names) {
    const size_t distance = edit_distance(word, candidate.name);
    if (distance < best_distance) best = candidate.name, best_distance = distance;
  }
  return best.empty() ? "" : "; did you mean '" + std::string(best) + "'?";
}

struct Node {
  enum Kind : uint8_t { number, variable, operation } kind = number;
  MapOp op = MapOp::push_const;
  float value = 0.0f;
  int a = -1, b = -1;
};

class Parser {
 public:
  Parser(std::string_view text, MapCompileOptions options) : text_(text), options_(options) {}

  int parse() {
    skip_space();
    if (at_end()) fail(column(), "empty expression: write one in x, e.g. asinh(x / 10)");
    const int root = sum();
    skip_space();
    if (!at_end()) fail(column(), "expected an operator (+ - * / ^) or the end of the expression, got " + got_after_operand());
    return root;
  }
  const std::vector<Node>& nodes() const { return nodes_; }

 private:
  // Counts nested constructs so deep input fails cleanly instead of overflowing the stack.
  struct Nest {
    explicit Nest(Parser& parser) : parser_(parser) {
      if (++parser_.depth_ > kMapMaxNesting) {
        parser_.fail(parser_.column(), "nested too deeply (more than " + std::to_string(kMapMaxNesting) + " levels)");
      }
    }
    ~Nest() { --parser_.depth_; }
    Parser& parser_;
  };

  [[noreturn]] void fail(int column, const std::string& reason) const { throw MapExpressionError(column, reason); }
  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }
  int column() const { return static_cast<int>(pos_) + 1; }
  void skip_space() {
    while (!at_end() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r')) ++pos_;
  }

  // The token at the current position, for messages.
  std::string got() const {
    if (at_end()) return "the end of the expression";
    const char c = text_[pos_];
    size_t end = pos_ + 1;
    if (is_name_char(c) || c == '.') {
      while (end < text_.size() && (is_name_char(text_[end]) || text_[end] == '.')) ++end;
    }
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
      char byte[16];
      std::snprintf(byte, sizeof byte, "byte 0x%02X", static_cast<unsigned>(static_cast<unsigned char>(c)));
      return byte;
    }
    std::string token(1, '\'');  // built up, not "'" + string: GCC 12 misreports -Wrestrict on that
    token.append(text_.substr(pos_, end - pos_));
    token.push_back('\'');
    return token;
  }
  // got() where an operator could follow: a name, number or '(' there is a missing '*'.
  std::string got_after_operand() const {
    const char c = peek();
    return got() + (is_name_char(c) || c == '(' ? " (multiplication is written with *)" : "");
  }

  int sum() {
    int left = product();
    for (;;) {
      skip_space();
      const char c = peek();
      if (c != '+' && c != '-') return left;
      ++pos_;
      left = binary(c == '+' ? MapOp::add : MapOp::sub, left, product());
    }
  }

  int product() {
    int left = unary();
    for (;;) {
      skip_space();
      const char c = peek();
      if (c != '*' && c != '/') return left;
      const int at = column();
      ++pos_;
      if (c == '*' && peek() == '*') fail(at, "'**' is not an operator: write a power as a ^ b");
      left = binary(c == '*' ? MapOp::mul : MapOp::div, left, unary());
    }
  }

  int unary() {
    skip_space();
    const char c = peek();
    if (c != '-' && c != '+') return power();
    Nest nest(*this);
    ++pos_;
    const int operand = unary();
    return c == '-' ? unary_node(MapOp::neg, operand) : operand;
  }

  int power() {
    const int base = primary();
    skip_space();
    if (peek() != '^') return base;
    Nest nest(*this);
    ++pos_;
    return binary(MapOp::pow, base, unary());  // the exponent may be signed and is itself a power
  }

  int primary() {
    skip_space();
    const char c = peek();
    if (is_digit(c) || c == '.') return number();
    if (is_name_start(c)) return name();
    if (c == '(') {
      Nest nest(*this);
      const int open = column();
      ++pos_;
      const int inner = sum();
      skip_space();
      if (peek() != ')') {
        fail(column(), "expected ')' to close the '(' at col " + std::to_string(open) + ", got " + got_after_operand());
      }
      ++pos_;
      return inner;
    }
    fail(column(), "expected a number, x, a constant, a function or '(', got " + got());
  }

  int number() {
    const int at = column();
    const size_t start = pos_;
    while (is_digit(peek())) ++pos_;
    bool digits = pos_ > start;
    if (peek() == '.') {
      ++pos_;
      const size_t fraction = pos_;
      while (is_digit(peek())) ++pos_;
      digits = digits || pos_ > fraction;
    }
    if (!digits) fail(at, "expected a number, got '.'");
    if (peek() == 'e' || peek() == 'E') {
      size_t next = pos_ + 1;
      if (next < text_.size() && (text_[next] == '+' || text_[next] == '-')) ++next;
      if (next >= text_.size() || !is_digit(text_[next])) {
        fail(at, "malformed number '" + std::string(text_.substr(start, next - start)) + "': expected digits after the exponent");
      }
      pos_ = next;
      while (is_digit(peek())) ++pos_;
    }
    const std::string_view span = text_.substr(start, pos_ - start);
    float value = 0.0f;
    const auto [end, error] = std::from_chars(span.data(), span.data() + span.size(), value);
    if (error == std::errc::result_out_of_range) fail(at, "number '" + std::string(span) + "' is out of the float32 range");
    if (error != std::errc() || end != span.data() + span.size()) fail(at, "malformed number '" + std::string(span) + "'");
    return number_node(value);
  }

  int name() {
    const int at = column();
    const size_t start = pos_;
    while (is_name_char(peek())) ++pos_;
    const std::string word(text_.substr(start, pos_ - start));
    skip_space();
    const bool call = peek() == '(';
    for (const Function& function : kFunctions) {
      if (function.name != word) continue;
      if (!call) fail(at, "function '" + word + "' needs its arguments in parentheses: " + word + "(...)");
      return call_function(function, at);
    }
    const bool variable = word == "x";
    for (const Constant& constant : kConstants) {
      if (constant.name != word) continue;
      if (call) fail(at, "'" + word + "' is a constant, not a function");
      return number_node(constant.value);
    }
    if (variable) {
      if (call) fail(at, "'x' is the pixel value, not a function (multiplication is written with *)");
      return add({Node::variable, MapOp::push_x, 0.0f, -1, -1});
    }
    if (call) {
      fail(at, "unknown function '" + word + "'" + did_you_mean(word, kFunctions) + " (known: " + map_function_names() + ")");
    }
    fail(at, "unknown name '" + word + "'" + did_you_mean(word, kNameList) + " (known: " + std::string(kNames) + ")");
  }

  int call_function(const Function& function, int at) {
    Nest nest(*this);
    const int open = column();
    ++pos_;  // '('
    std::vector<int> args;
    skip_space();
    if (peek() != ')') {
      for (;;) {
        args.push_back(sum());
        skip_space();
        if (peek() != ',') break;
        ++pos_;
      }
    }
    if (peek() != ')') {
      fail(column(), "expected ',' or ')' to close the '(' at col " + std::to_string(open) + ", got " + got_after_operand());
    }
    ++pos_;
    if (args.size() != function.arity) {
      fail(at, std::string(function.name) + " takes " + std::to_string(function.arity) + " argument" +
                   (function.arity == 1 ? "" : "s") + ", got " + std::to_string(args.size()));
    }
    if (function.op == MapOp::count) return binary(MapOp::min, binary(MapOp::max, args[0], args[1]), args[2]);
    return function.arity == 1 ? unary_node(function.op, args[0]) : binary(function.op, args[0], args[1]);
  }

  int add(Node node) {
    nodes_.push_back(node);
    return static_cast<int>(nodes_.size()) - 1;
  }
  int number_node(float value) { return add({Node::number, MapOp::push_const, value, -1, -1}); }
  int unary_node(MapOp op, int a) {
    if (options_.optimize && nodes_[a].kind == Node::number) return number_node(map_apply(op, nodes_[a].value, 0.0f));
    return add({Node::operation, op, 0.0f, a, -1});
  }
  int binary(MapOp op, int a, int b) {
    if (options_.optimize) {
      const bool number_a = nodes_[a].kind == Node::number, number_b = nodes_[b].kind == Node::number;
      if (number_a && number_b) return number_node(map_apply(op, nodes_[a].value, nodes_[b].value));
      if (op == MapOp::pow && number_b && nodes_[b].value == 2.0f) return unary_node(MapOp::square, a);
    }
    return add({Node::operation, op, 0.0f, a, b});
  }

  std::string_view text_;
  MapCompileOptions options_;
  size_t pos_ = 0;
  int depth_ = 0;
  std::vector<Node> nodes_;
};

// Postfix code for the tree; a constant operand of a binary operation becomes its immediate.
class Emitter {
 public:
  explicit Emitter(const std::vector<Node>& nodes) : nodes_(nodes) {}

  MapProgram finish(int root) {
    emit(root);
    if (count_ > kMapMaxOps) {
      throw MapExpressionError(0, "the expression needs " + std::to_string(count_) + " operations, more than the " +
                                      std::to_string(kMapMaxOps) + " a map step runs: split it over two map steps");
    }
    if (program_.max_stack > kMapMaxStack) {
      throw MapExpressionError(0, "the expression needs " + std::to_string(program_.max_stack) +
                                      " values at once, more than " + std::to_string(kMapMaxStack) +
                                      ": nest less to the right of operators, e.g. (a + b) + c rather than a + (b + c)");
    }
    return program_;
  }

 private:
  void push(MapOp op, MapOperand operand, float value, int stack_change) {
    if (count_ < kMapMaxOps) {
      program_.op[count_] = op;
      program_.operand[count_] = operand;
      program_.value[count_] = value;
      program_.length = count_ + 1;
    }
    ++count_;
    depth_ += stack_change;
    program_.max_stack = std::max(program_.max_stack, depth_);
  }

  void emit(int index) {
    const Node& node = nodes_[static_cast<size_t>(index)];
    if (node.kind == Node::number) return push(MapOp::push_const, MapOperand::stack, node.value, 1);
    if (node.kind == Node::variable) return push(MapOp::push_x, MapOperand::stack, 0.0f, 1);
    if (map_is_unary(node.op)) {
      emit(node.a);
      return push(node.op, MapOperand::stack, 0.0f, 0);
    }
    const Node& a = nodes_[static_cast<size_t>(node.a)];
    const Node& b = nodes_[static_cast<size_t>(node.b)];
    if (b.kind == Node::number) {
      emit(node.a);
      return push(node.op, MapOperand::right_value, b.value, 0);
    }
    if (a.kind == Node::number) {
      emit(node.b);
      return push(node.op, MapOperand::left_value, a.value, 0);
    }
    emit(node.a);
    emit(node.b);
    push(node.op, MapOperand::stack, 0.0f, -1);
  }

  const std::vector<Node>& nodes_;
  MapProgram program_;
  int count_ = 0;
  int depth_ = 0;
};

}  // namespace

MapProgram compile_map_expression(std::string_view text, MapCompileOptions options) {
  if (text.size() > kMapMaxExpressionLength) {
    throw MapExpressionError(0, "the expression is " + std::to_string(text.size()) + " characters long, more than " +
                                    std::to_string(kMapMaxExpressionLength));
  }
  Parser parser(text, options);
  const int root = parser.parse();
  return Emitter(parser.nodes()).finish(root);
}

std::string map_function_names() {
  std::string names;
  for (const Function& function : kFunctions) names += (names.empty() ? "" : ", ") + std::string(function.signature);
  return names;
}

}  // namespace imflow::kernels
