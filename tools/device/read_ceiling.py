#!/usr/bin/env python3
"""The host's ceiling for what imflow's FITS reader does per image: read() of whole files from
the page cache into a user buffer (one reused buffer per thread), with N threads (Python's file
reads release the GIL). usage: read_ceiling.py DIR THREADS... ; prints GB/s per thread count."""
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor


def main(root, counts):
    files = sorted(os.path.join(d, f) for d, _, names in os.walk(root) for f in names if f.endswith(".fits"))
    size = max(os.path.getsize(f) for f in files)
    for threads in counts:
        buffers = [bytearray(size) for _ in range(threads)]

        def read_share(k):
            done = 0
            view = memoryview(buffers[k])
            for f in files[k::threads]:
                with open(f, "rb", buffering=0) as handle:
                    done += handle.readinto(view)
            return done

        start = time.perf_counter()
        with ThreadPoolExecutor(threads) as pool:
            total = sum(pool.map(read_share, range(threads)))
        seconds = time.perf_counter() - start
        print(f"page-cache reads, {threads:2d} threads: {total / seconds / 1e9:6.1f} GB/s "
              f"({len(files)} files, {total / 1e9:.1f} GB, {seconds:.2f} s; {len(files) / seconds:,.0f} files/s)")


if __name__ == "__main__":
    main(sys.argv[1], [int(t) for t in sys.argv[2:]])
