// The `map` step's compiled per-pixel expression: a postfix program of float32 operations, what
// every operation computes (shared by the CPU and the CUDA kernel, so both compute the same thing),
// and the CPU kernel that applies a program to an image. The compiler is map_expression.hpp.
#pragma once
#include <math.h>

#include <cstdint>
#include <string>

#include "imflow/image.hpp"
#include "imflow/kernels/host_device.hpp"

namespace imflow::kernels {

// The operations, as X-macro lists so the enum, the names and the CUDA dispatch stay in step.
#define IMFLOW_MAP_UNARY_OPS(X)                                                                      \
  X(neg) X(abs) X(sqrt) X(cbrt) X(square) X(exp) X(exp2) X(expm1) X(log) X(log10) X(log2) X(log1p) \
  X(sin) X(cos) X(tan) X(asin) X(acos) X(atan) X(sinh) X(cosh) X(tanh) X(asinh) X(acosh) X(atanh)  \
  X(floor) X(ceil) X(trunc) X(sign)
#define IMFLOW_MAP_BINARY_OPS(X) X(add) X(sub) X(mul) X(div) X(pow) X(min) X(max) X(atan2)
#define IMFLOW_MAP_ENUMERATOR(name) name,

// push_x / push_const push the pixel value / a constant; a unary operation replaces the top of
// the stack; a binary one combines a (below) and b (the top), or the top and an immediate value.
enum class MapOp : uint8_t {
  push_x,
  push_const,
  IMFLOW_MAP_UNARY_OPS(IMFLOW_MAP_ENUMERATOR) IMFLOW_MAP_BINARY_OPS(IMFLOW_MAP_ENUMERATOR) count
};

IMFLOW_HOST_DEVICE constexpr bool map_is_unary(MapOp op) { return op >= MapOp::neg && op < MapOp::add; }
IMFLOW_HOST_DEVICE constexpr bool map_is_binary(MapOp op) { return op >= MapOp::add && op < MapOp::count; }

// Where a binary operation takes its operands: both from the stack, or one is the instruction's
// value (a constant operand costs no stack slot): right_value is op(top, value), left_value
// op(value, top).
enum class MapOperand : uint8_t { stack, right_value, left_value };

inline constexpr int kMapMaxOps = 64;    // instructions of a program
inline constexpr int kMapMaxStack = 16;  // values on the stack at once

// A compiled expression: plain data, passed by value to the CUDA kernel (kernel-argument memory).
struct MapProgram {
  int length = 0;
  int max_stack = 0;  // the most values on the stack while it runs (<= kMapMaxStack)
  MapOp op[kMapMaxOps] = {};
  MapOperand operand[kMapMaxOps] = {};
  float value[kMapMaxOps] = {};  // push_const's constant, or a binary operation's immediate
};

// What operation Op computes, in float32: a (and b for binary operations). The C library's float
// functions on the host, CUDA's on the device; + - * / and sqrt round correctly on both (on the
// device explicitly, so no FMA contraction or fast-math flag can change them). min and max return
// NaN when either operand is NaN (as NumPy's minimum/maximum), so masked pixels stay masked;
// sign(x) is -1, 1, or x itself for 0, -0 and NaN.
template <MapOp Op>
IMFLOW_HOST_DEVICE inline float map_apply(float a, float b) {
  (void)b;
#ifdef __CUDA_ARCH__
  if constexpr (Op == MapOp::add) return __fadd_rn(a, b);
  else if constexpr (Op == MapOp::sub) return __fsub_rn(a, b);
  else if constexpr (Op == MapOp::mul) return __fmul_rn(a, b);
  else if constexpr (Op == MapOp::div) return __fdiv_rn(a, b);
  else if constexpr (Op == MapOp::square) return __fmul_rn(a, a);
  else if constexpr (Op == MapOp::sqrt) return __fsqrt_rn(a);
#else
  if constexpr (Op == MapOp::add) return a + b;
  else if constexpr (Op == MapOp::sub) return a - b;
  else if constexpr (Op == MapOp::mul) return a * b;
  else if constexpr (Op == MapOp::div) return a / b;
  else if constexpr (Op == MapOp::square) return a * a;
  else if constexpr (Op == MapOp::sqrt) return sqrtf(a);
#endif
  else if constexpr (Op == MapOp::neg) return -a;
  else if constexpr (Op == MapOp::abs) return fabsf(a);
  else if constexpr (Op == MapOp::cbrt) return cbrtf(a);
  else if constexpr (Op == MapOp::exp) return expf(a);
  else if constexpr (Op == MapOp::exp2) return exp2f(a);
  else if constexpr (Op == MapOp::expm1) return expm1f(a);
  else if constexpr (Op == MapOp::log) return logf(a);
  else if constexpr (Op == MapOp::log10) return log10f(a);
  else if constexpr (Op == MapOp::log2) return log2f(a);
  else if constexpr (Op == MapOp::log1p) return log1pf(a);
  else if constexpr (Op == MapOp::sin) return sinf(a);
  else if constexpr (Op == MapOp::cos) return cosf(a);
  else if constexpr (Op == MapOp::tan) return tanf(a);
  else if constexpr (Op == MapOp::asin) return asinf(a);
  else if constexpr (Op == MapOp::acos) return acosf(a);
  else if constexpr (Op == MapOp::atan) return atanf(a);
  else if constexpr (Op == MapOp::sinh) return sinhf(a);
  else if constexpr (Op == MapOp::cosh) return coshf(a);
  else if constexpr (Op == MapOp::tanh) return tanhf(a);
  else if constexpr (Op == MapOp::asinh) return asinhf(a);
  else if constexpr (Op == MapOp::acosh) return acoshf(a);
  else if constexpr (Op == MapOp::atanh) return atanhf(a);
  else if constexpr (Op == MapOp::floor) return floorf(a);
  else if constexpr (Op == MapOp::ceil) return ceilf(a);
  else if constexpr (Op == MapOp::trunc) return truncf(a);
  else if constexpr (Op == MapOp::sign) return a > 0.0f ? 1.0f : (a < 0.0f ? -1.0f : a);
  else if constexpr (Op == MapOp::pow) return powf(a, b);
  else if constexpr (Op == MapOp::atan2) return atan2f(a, b);
  else if constexpr (Op == MapOp::min) return a != a ? a : (b != b ? b : (b < a ? b : a));
  else if constexpr (Op == MapOp::max) return a != a ? a : (b != b ? b : (b > a ? b : a));
  else return a;  // push_x, push_const: not applied
}

// map_apply for an operation known at run time (the compiler's constant folding).
#define IMFLOW_MAP_APPLY_CASE(name) \
  case MapOp::name:                 \
    return map_apply<MapOp::name>(a, b);
IMFLOW_HOST_DEVICE inline float map_apply(MapOp op, float a, float b) {
  switch (op) {
    IMFLOW_MAP_UNARY_OPS(IMFLOW_MAP_APPLY_CASE)
    IMFLOW_MAP_BINARY_OPS(IMFLOW_MAP_APPLY_CASE)
    default:
      return a;
  }
}
#undef IMFLOW_MAP_APPLY_CASE

// Replace every pixel x of `image` by the program's value (in place, float32), in blocks of
// pixels one operation at a time (loops the compiler vectorizes), blocks in parallel (oneTBB).
void apply_map(const MapProgram& program, ImageView image);

// The program as a fully parenthesised expression, e.g. "((asinh((x / 10)) * 2.5) + 1)".
std::string describe_map_program(const MapProgram& program);

}  // namespace imflow::kernels
