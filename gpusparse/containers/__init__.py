"""Sparse containers: they hold component arrays; operations live in ``gpusparse.ops``."""

from gpusparse.containers._base import SparseArray
from gpusparse.containers.compressed import CSC, CSR
from gpusparse.containers.coo import COO

__all__ = ["COO", "CSC", "CSR", "SparseArray"]
