"""Refuse HDF5 files whose global heaps would make libhdf5 loop or overrun.

Variable-length data in HDF5 (the binsparse descriptor is a variable-length
string attribute) lives in *global heap collections*: blocks starting with the
signature ``GCOL``, a version byte, three reserved bytes and the collection's
size, followed by objects, each with a 2-byte index, a 2-byte reference count,
4 reserved bytes, its size and its data padded to 8 bytes. libhdf5 decodes a
collection by walking its objects: it advances by each object's header plus
padded size, or for the free-space object (index 0) by its size alone. A
damaged collection whose free-space object has size 0 makes that walk stand
still: the read never returns (libhdf5's ``H5HG__cache_heap_deserialize``
spins at 100 % CPU), and an object running past its collection's end makes the
walk leave the collection's memory.

:func:`check_global_heaps` walks every collection of a file the way libhdf5
does, before h5py opens it, and raises :class:`FileFormatError` for the two
damaged cases. A valid collection's objects tile it exactly, so no valid file
is refused; bytes that only look like a collection (``GCOL`` inside raw data)
are refused only if they would also be a damaged one, which a file written by
HDF5 does not contain in practice. The scan reads the file once through a
memory map (it finds signatures at memory speed).

Examples
--------
>>> import os, tempfile, gpusparse as gs
>>> path = os.path.join(tempfile.mkdtemp(), "x.h5")
>>> gs.io.write_binsparse(path, gs.COO([[0]], [1.0], shape=(2,), device="cpu"))
>>> check_global_heaps(path)  # a valid file: nothing to say
"""

from __future__ import annotations

import mmap
import os

from gpusparse.io._common import FileFormatError

__all__ = ["check_global_heaps"]

_SIGNATURE = b"GCOL"
_SUPERBLOCK_SIGNATURE = b"\x89HDF\r\n\x1a\n"
_ALIGNMENT = 8


def _lengths_size(view) -> int:
    """The superblock's "size of lengths" (bytes of every size field), default 8.

    The superblock sits at offset 0, 512, 1024, 2048, ...; its version 0 and 1
    keep the size at byte 14, versions 2 and 3 at byte 10.
    """
    offset = 0
    while offset + 16 <= len(view):
        if view[offset:offset + 8] == _SUPERBLOCK_SIGNATURE:
            version = view[offset + 8]
            size = view[offset + 14] if version in (0, 1) else view[offset + 10]
            return size if size in (2, 4, 8, 16) else 8
        offset = 512 if offset == 0 else offset * 2
    return 8


def _walk_collection(view, start: int, lengths: int):
    """Why the collection at ``start`` is damaged, or None if its walk ends.

    Mirrors libhdf5's decoder: the collection header is the signature, the
    version, 3 reserved bytes and the size; each object header is index,
    reference count, 4 reserved bytes and the size.
    """
    header = 8 + lengths
    object_header = 8 + lengths
    end_of_file = len(view)
    if start + header > end_of_file or view[start + 4] != 1:
        return None  # libhdf5 refuses these itself (truncated, wrong version)
    size = int.from_bytes(view[start + 8:start + 8 + lengths], "little")
    if size < header or start + size > end_of_file:
        return None  # libhdf5 reads no objects of these
    position = header
    while position < size:
        if position + object_header > size:
            return None  # the tail is free space: the walk ends
        at = start + position
        index = int.from_bytes(view[at:at + 2], "little")
        object_size = int.from_bytes(view[at + 8:at + 8 + lengths], "little")
        if index > 0:
            need = object_header + -(-object_size // _ALIGNMENT) * _ALIGNMENT
        else:
            need = object_size
        if need == 0:
            return f"its free-space object at byte {at} has size 0 (the HDF5 library would never finish reading it)"
        if position + need > size:
            return (f"its object {index} at byte {at} claims {object_size} bytes, past the collection's end "
                    f"({size} bytes from byte {start})")
        position += need
    return None


def check_global_heaps(path, name=None) -> None:
    """Raise :class:`FileFormatError` if a global heap collection of ``path`` is damaged.

    Parameters
    ----------
    path : str or os.PathLike
        An HDF5 file on disk.
    name : str, optional
        The file's name in the error message (default ``path``).

    Raises
    ------
    FileFormatError
        Naming the file, the byte and the fault: a free-space object of size
        0 (libhdf5 would loop forever) or an object past its collection's end.
    """
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as view:
            lengths = _lengths_size(view)
            start = view.find(_SIGNATURE)
            while start >= 0:
                fault = _walk_collection(view, start, lengths)
                if fault is not None:
                    raise FileFormatError(f"{name or os.fspath(path)}: damaged HDF5 global heap at byte {start}: {fault}")
                start = view.find(_SIGNATURE, start + 1)
