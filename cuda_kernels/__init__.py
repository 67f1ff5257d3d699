"""CUDA C++ sources of gpusparse's kernels, installed as ``gpusparse._cuda_kernels``.

This file only makes the directory a package, so that wheel, sdist and
editable installs all expose the ``*.cu`` and ``*.cuh`` files through
``importlib.resources.files("gpusparse._cuda_kernels")``.
"""
