// The map step's CPU kernel: runs a compiled expression (MapProgram) over an image in blocks of
// pixels, one operation at a time over the whole block (loops the compiler vectorizes), with the
// blocks spread over threads by oneTBB; and a program's description as an infix expression.
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <vector>

#include "imflow/kernels/map.hpp"

namespace imflow::kernels {

namespace {

constexpr int kBlock = 256;              // pixels evaluated together; the stack is kMapMaxStack blocks (16 KiB)
constexpr int64_t kGrain = int64_t{1} << 15;  // pixels per parallel task at least

using Lane = float[kBlock];
using UnaryLoop = void (*)(float*, int);
using BinaryLoop = void (*)(float*, const float*, int);
using ImmediateLoop = void (*)(float*, float, int);

template <MapOp Op>
void unary_loop(float* top, int n) {
  for (int i = 0; i < n; ++i) top[i] = map_apply<Op>(top[i], 0.0f);
}
template <MapOp Op>
void binary_loop(float* a, const float* b, int n) {
  for (int i = 0; i < n; ++i) a[i] = map_apply<Op>(a[i], b[i]);
}
template <MapOp Op>
void right_value_loop(float* top, float value, int n) {
  for (int i = 0; i < n; ++i) top[i] = map_apply<Op>(top[i], value);
}
template <MapOp Op>
void left_value_loop(float* top, float value, int n) {
  for (int i = 0; i < n; ++i) top[i] = map_apply<Op>(value, top[i]);
}

// One loop per operation, indexed by MapOp (entries of other kinds are never called).
template <size_t... I>
constexpr auto loop_tables(std::index_sequence<I...>) {
  return std::tuple{std::array<UnaryLoop, sizeof...(I)>{&unary_loop<static_cast<MapOp>(I)>...},
                    std::array<BinaryLoop, sizeof...(I)>{&binary_loop<static_cast<MapOp>(I)>...},
                    std::array<ImmediateLoop, sizeof...(I)>{&right_value_loop<static_cast<MapOp>(I)>...},
                    std::array<ImmediateLoop, sizeof...(I)>{&left_value_loop<static_cast<MapOp>(I)>...}};
}
constexpr auto kLoops = loop_tables(std::make_index_sequence<static_cast<size_t>(MapOp::count)>{});

// Evaluate the program for n <= kBlock pixels at `pixels`, in place; `stack` is scratch.
void evaluate_block(const MapProgram& program, float* pixels, int n, Lane* stack) {
  const auto& [unary, binary, right_value, left_value] = kLoops;
  int size = 0;  // values on the stack; the top is stack[size - 1]
  for (int pc = 0; pc < program.length; ++pc) {
    const MapOp op = program.op[pc];
    const auto index = static_cast<size_t>(op);
    if (op == MapOp::push_x) {
      std::copy(pixels, pixels + n, stack[size++]);
    } else if (op == MapOp::push_const) {
      std::fill(stack[size], stack[size] + n, program.value[pc]);
      ++size;
    } else if (map_is_unary(op)) {
      unary[index](stack[size - 1], n);
    } else if (program.operand[pc] == MapOperand::right_value) {
      right_value[index](stack[size - 1], program.value[pc], n);
    } else if (program.operand[pc] == MapOperand::left_value) {
      left_value[index](stack[size - 1], program.value[pc], n);
    } else {
      binary[index](stack[size - 2], stack[size - 1], n);
      --size;
    }
  }
  std::copy(stack[0], stack[0] + n, pixels);
}

void evaluate_range(const MapProgram& program, float* pixels, int64_t begin, int64_t end) {
  alignas(64) Lane stack[kMapMaxStack];
  for (int64_t start = begin; start < end; start += kBlock) {
    evaluate_block(program, pixels + start, static_cast<int>(std::min<int64_t>(kBlock, end - start)), stack);
  }
}

#define IMFLOW_MAP_NAME(name) #name,
constexpr const char* kOpNames[] = {"x", "const", IMFLOW_MAP_UNARY_OPS(IMFLOW_MAP_NAME) IMFLOW_MAP_BINARY_OPS(IMFLOW_MAP_NAME)};
#undef IMFLOW_MAP_NAME
static_assert(std::size(kOpNames) == static_cast<size_t>(MapOp::count));

std::string format_number(float value) {
  if (std::isnan(value)) return "nan";
  char text[32];
  const auto result = std::to_chars(text, text + sizeof text, value);
  return std::string(text, result.ptr);
}

}  // namespace

void apply_map(const MapProgram& program, ImageView image) {
  const int64_t n = image.size();
  // A program from compile_map_expression is never empty and fits its stack.
  if (program.length <= 0 || program.length > kMapMaxOps || program.max_stack > kMapMaxStack) {
    throw std::invalid_argument("apply_map: not a compiled map program");
  }
  if (n <= 0) return;
  if (n <= kGrain) {
    evaluate_range(program, image.data, 0, n);
    return;
  }
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, n, kGrain), [&](const tbb::blocked_range<int64_t>& range) {
    evaluate_range(program, image.data, range.begin(), range.end());
  });
}

std::string describe_map_program(const MapProgram& program) {
  std::vector<std::string> stack;
  auto pop = [&] {
    std::string top = stack.empty() ? "?" : std::move(stack.back());
    if (!stack.empty()) stack.pop_back();
    return top;
  };
  for (int i = 0; i < program.length; ++i) {
    const MapOp op = program.op[i];
    const std::string name = kOpNames[static_cast<size_t>(op)];
    if (op == MapOp::push_x) {
      stack.push_back("x");
    } else if (op == MapOp::push_const) {
      stack.push_back(format_number(program.value[i]));
    } else if (map_is_unary(op)) {
      const std::string a = pop();
      stack.push_back(op == MapOp::neg ? "-" + a : name + "(" + a + ")");
    } else {
      std::string a, b;
      if (program.operand[i] == MapOperand::stack) b = pop(), a = pop();
      else if (program.operand[i] == MapOperand::right_value) a = pop(), b = format_number(program.value[i]);
      else b = pop(), a = format_number(program.value[i]);
      const char* infix = op == MapOp::add ? " + " : op == MapOp::sub ? " - " : op == MapOp::mul ? " * "
                          : op == MapOp::div ? " / " : op == MapOp::pow ? " ^ " : nullptr;
      stack.push_back(infix ? "(" + a + infix + b + ")" : name + "(" + a + ", " + b + ")");
    }
  }
  return stack.empty() ? "" : stack.back();
}

}  // namespace imflow::kernels
