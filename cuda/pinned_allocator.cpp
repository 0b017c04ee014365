// Pinned host memory (pinned_allocator.hpp): cudaHostAlloc, the slabs and registered huge-page
// blocks of PinnedAllocator, and its cache of freed ones.
#include "cuda/pinned_allocator.hpp"

#include <cuda_runtime_api.h>
#include <sys/mman.h>

#include <memory>
#include <new>

#include "cuda/cuda_check.hpp"

namespace imflow::cuda {

void* pinned_allocate(size_t bytes) {
  if (bytes == 0) bytes = 1;  // a valid, unique pointer as operator new gives
  void* pointer = nullptr;
  if (cudaHostAlloc(&pointer, bytes, cudaHostAllocPortable | cudaHostAllocMapped) != cudaSuccess) {
    (void)cudaGetLastError();
    throw std::bad_alloc();
  }
  return pointer;
}

void pinned_free(void* pointer) noexcept {
  if (pointer != nullptr) IMFLOW_CUDA_LOG(cudaFreeHost(pointer));
}

// Every block starts with a header (kHeader bytes, keeping 256-byte alignment) naming its slab
// (nullptr: a block with its own allocation, described by a LargeHeader).
struct PinnedAllocator::Slab {
  char* base = nullptr;
  size_t used = 0;
  size_t live = 0;  // blocks not yet freed
};

namespace {
constexpr size_t kHeader = 256;
constexpr size_t round_up(size_t bytes) { return (bytes + kHeader - 1) / kHeader * kHeader; }

// The header of a block with its own allocation: slab nullptr; `mapped` > 0 when the block is
// an mmap of that many bytes registered with cudaHostRegister, 0 when it came from cudaHostAlloc.
struct LargeHeader {
  PinnedAllocator::Slab* slab = nullptr;
  size_t mapped = 0;
  size_t size = 0;  // header included
};
static_assert(sizeof(LargeHeader) <= kHeader);

// Anonymous memory advised to 2 MiB pages, touched, then pinned with cudaHostRegister; nullptr
// when any step fails (the caller falls back to cudaHostAlloc). Measured on the H100 machine
// (tools/device/pinned_alloc.cu, 64 MiB): ~14 ms to map and touch, which runs outside the
// driver's lock, and ~2 ms to register, against ~30 ms inside it for cudaHostAlloc; so reader
// threads filling the pool no longer serialise on the driver (nor stall other streams' uploads).
char* map_and_register(size_t bytes) {
#if defined(__linux__)
  void* pointer = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (pointer == MAP_FAILED) return nullptr;
#if defined(MADV_HUGEPAGE)
  ::madvise(pointer, bytes, MADV_HUGEPAGE);  // a hint: errors ignored
#endif
  auto* bytes_ptr = static_cast<volatile char*>(pointer);
  for (size_t offset = 0; offset < bytes; offset += 4096) bytes_ptr[offset] = 0;  // fault in (zeroed) pages
  if (cudaHostRegister(pointer, bytes, cudaHostRegisterPortable | cudaHostRegisterMapped) != cudaSuccess) {
    (void)cudaGetLastError();
    ::munmap(pointer, bytes);
    return nullptr;
  }
  return static_cast<char*>(pointer);
#else
  (void)bytes;
  return nullptr;
#endif
}
}  // namespace

void* PinnedAllocator::allocate(size_t bytes) {
  const size_t size = kHeader + round_up(bytes == 0 ? 1 : bytes);
  if (size > kSlabBlock) {
    {
      std::lock_guard lock(mutex_);
      if (auto spare = spare_blocks_.find(size); spare != spare_blocks_.end()) {
        char* block = spare->second;
        spare_blocks_.erase(spare);
        cached_ -= size;
        return block + kHeader;
      }
    }
    char* block = map_and_register(size);
    const size_t mapped = block != nullptr ? size : 0;
    if (block == nullptr) block = static_cast<char*>(pinned_allocate(size));  // throws std::bad_alloc
    *reinterpret_cast<LargeHeader*>(block) = LargeHeader{nullptr, mapped, size};
    std::lock_guard lock(mutex_);
    ++allocations_;
    return block + kHeader;
  }
  std::lock_guard lock(mutex_);
  if (current_ == nullptr || current_->used + size > kSlabBytes) {
    if (!spare_slabs_.empty()) {
      current_ = spare_slabs_.back();
      spare_slabs_.pop_back();
      cached_ -= kSlabBytes;
    } else {
      auto slab = std::make_unique<Slab>();
      slab->base = static_cast<char*>(pinned_allocate(kSlabBytes));  // throws std::bad_alloc
      ++allocations_;
      current_ = slab.release();  // a full slab lives on until its last block is freed
    }
  }
  char* block = current_->base + current_->used;
  current_->used += size;
  ++current_->live;
  *reinterpret_cast<Slab**>(block) = current_;
  return block + kHeader;
}

void PinnedAllocator::free_block(char* block) noexcept {
  const size_t mapped = reinterpret_cast<const LargeHeader*>(block)->mapped;
  if (mapped > 0) {
    IMFLOW_CUDA_LOG(cudaHostUnregister(block));
    ::munmap(block, mapped);
  } else {
    pinned_free(block);
  }
  --allocations_;
}

void PinnedAllocator::deallocate(void* pointer) noexcept {
  if (pointer == nullptr) return;
  char* block = static_cast<char*>(pointer) - kHeader;
  Slab* slab = *reinterpret_cast<Slab**>(block);
  std::lock_guard lock(mutex_);
  if (slab == nullptr) {
    const size_t size = reinterpret_cast<const LargeHeader*>(block)->size;
    if (cached_ + size <= cache_limit_) {
      spare_blocks_.emplace(size, block);
      cached_ += size;
    } else {
      free_block(block);
    }
    return;
  }
  if (--slab->live == 0) {
    slab->used = 0;
    if (slab == current_) current_ = nullptr;
    if (cached_ + kSlabBytes <= cache_limit_) {
      spare_slabs_.push_back(slab);
      cached_ += kSlabBytes;
      return;
    }
    pinned_free(slab->base);
    --allocations_;
    delete slab;
  }
}

void PinnedAllocator::release_cached() noexcept {
  std::lock_guard lock(mutex_);
  for (Slab* slab : spare_slabs_) {
    pinned_free(slab->base);
    --allocations_;
    delete slab;
  }
  spare_slabs_.clear();
  for (auto& [size, block] : spare_blocks_) free_block(block);
  spare_blocks_.clear();
  cached_ = 0;
}

PinnedAllocator::~PinnedAllocator() { release_cached(); }

size_t PinnedAllocator::pinned_allocations() const {
  std::lock_guard lock(mutex_);
  return allocations_;
}

size_t PinnedAllocator::cached_bytes() const {
  std::lock_guard lock(mutex_);
  return cached_;
}

PinnedAllocator& pinned_allocator() {
  // Never destroyed: at exit the driver reclaims what is cached, and no CUDA call runs after the
  // runtime's own teardown.
  static PinnedAllocator* allocator = new PinnedAllocator(size_t{2} << 30);
  return *allocator;
}

void* cached_pinned_allocate(size_t bytes) { return pinned_allocator().allocate(bytes); }

void cached_pinned_free(void* pointer) noexcept {
  if (pointer != nullptr) pinned_allocator().deallocate(pointer);
}

}  // namespace imflow::cuda
