"""Constants shared by the CPU kernels."""

#: Work below this many elements runs serially: thread start-up costs more.
PARALLEL_MIN = 1 << 15
