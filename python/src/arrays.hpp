// NumPy arrays that own C++ vectors (freed by a capsule when NumPy lets go), and 2-d image views.
#pragma once
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <vector>

#include "imflow/image.hpp"

namespace imflow::python {

// A read-only, C-contiguous 2-d float32 NumPy array (imflow/sep.py converts whatever it is given).
using Image = nanobind::ndarray<const float, nanobind::numpy, nanobind::ndim<2>, nanobind::c_contig, nanobind::device::cpu>;

inline ConstImageView view_of(const Image& image) {
  return {image.data(), static_cast<int64_t>(image.shape(1)), static_cast<int64_t>(image.shape(0))};
}

// Moves `values` into a NumPy array of the given shape (no copy).
template <typename T>
nanobind::ndarray<nanobind::numpy, T> to_numpy(std::vector<T>&& values, std::initializer_list<size_t> shape) {
  auto owner = std::make_unique<std::vector<T>>(std::move(values));
  T* data = owner->data();
  nanobind::capsule capsule(owner.get(), [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  owner.release();
  return nanobind::ndarray<nanobind::numpy, T>(data, shape, capsule);
}

// Moves `values` (an array of the shape's size) into a NumPy array of that shape (no copy).
template <typename T>
nanobind::ndarray<nanobind::numpy, T> to_numpy(std::unique_ptr<T[]>&& values, std::initializer_list<size_t> shape) {
  T* data = values.get();
  nanobind::capsule capsule(data, [](void* p) noexcept { delete[] static_cast<T*>(p); });
  values.release();
  return nanobind::ndarray<nanobind::numpy, T>(data, shape, capsule);
}

}  // namespace imflow::python
