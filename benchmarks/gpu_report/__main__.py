"""``python3 -m benchmarks.gpu_report``: the GPU report (see :mod:`benchmarks.gpu_report`)."""

import sys

from benchmarks.gpu_report.cli import main

if __name__ == "__main__":
    sys.exit(main())
