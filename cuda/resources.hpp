// The RAII CUDA resources, in one include: devices (device.hpp), streams and events (stream.hpp),
// grow-only device and pinned buffers (buffers.hpp) and the pinned HostAllocator
// (pinned_allocator.hpp).
#pragma once
#include "cuda/buffers.hpp"
#include "cuda/device.hpp"
#include "cuda/pinned_allocator.hpp"
#include "cuda/stream.hpp"
