#!/usr/bin/env bash
# Run tools/device/first_calls.cu (one-time costs of a short CUDA run) a few ways, and the start-up
# of an empty program linked with / without the CUDA libraries imflow links. JSON lines on stdout.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
nvcc -O2 -arch=sm_90 -o /tmp/first_calls "$here/first_calls.cu" -lcusolver -lcublas
wall() { local s e; s=$(date +%s%N); "$@" >/dev/null; e=$(date +%s%N); echo $(( (e - s) / 1000000 )); }
for mode in plain warmup plain warmup; do
  s=$(date +%s%N); line=$(/tmp/first_calls $([ $mode = warmup ] && echo warmup)); e=$(date +%s%N)
  echo "${line%\}}, \"process_ms\": $(( (e - s) / 1000000 ))}"
done
echo "{\"eager\": $(CUDA_MODULE_LOADING=EAGER /tmp/first_calls)}"
echo 'int main() { return 0; }' > /tmp/empty.cpp
g++ -o /tmp/empty_plain /tmp/empty.cpp
g++ -o /tmp/empty_cuda /tmp/empty.cpp -L/usr/local/cuda/lib64 -Wl,--no-as-needed -lcusolver -lcublas -lcublasLt -lcudart
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
for b in empty_plain empty_cuda empty_cuda empty_cuda; do echo "{\"$b\": $(wall /tmp/$b)}"; done
