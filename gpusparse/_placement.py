"""Where arrays live, as values: :class:`Device`, the host :data:`CPU`, and the CuPy module.

The bottom of the device layer. :mod:`gpusparse._device` (the default
device, device scopes, the kernels of each device) re-exports these names;
they live here, with no import of the library at module level, so that the
primitives and :mod:`gpusparse._memory` can name a device without importing
:mod:`gpusparse._device`, which looks the primitives up (``kernels_for``).
CuPy is imported on first use only.
"""

from __future__ import annotations

import dataclasses
import functools
import types

__all__ = ["CPU", "Device", "cuda_module"]


@dataclasses.dataclass(frozen=True)
class Device:
    """A place where arrays live: the host CPU or one CUDA device.

    Parameters
    ----------
    kind : {"cpu", "cuda"}
        The kind of device.
    index : int
        The CUDA device ordinal; always 0 for the CPU.

    Examples
    --------
    >>> Device.parse("cuda:1")
    Device('cuda:1')
    >>> str(Device.parse("cpu"))
    'cpu'
    """

    kind: str
    index: int = 0

    @classmethod
    def parse(cls, spec: "str | Device") -> "Device":
        """Parse ``"cpu"``, ``"cuda"`` or ``"cuda:N"`` (or return a Device)."""
        if isinstance(spec, Device):
            return spec
        if not isinstance(spec, str):
            raise TypeError(
                f"device must be a str such as 'cpu', 'cuda' or 'cuda:1', or a Device; "
                f"got {type(spec).__name__}"
            )
        text = spec.strip().lower()
        if text == "cpu":
            return cls("cpu", 0)
        if text == "cuda" or text == "gpu":
            return cls("cuda", 0)
        if text.startswith("cuda:"):
            ordinal = text[len("cuda:"):]
            if ordinal.isdigit():
                return cls("cuda", int(ordinal))
        raise ValueError(f"device must be 'cpu', 'cuda' or 'cuda:N'; got {spec!r}")

    @property
    def is_cuda(self) -> bool:
        return self.kind == "cuda"

    def __str__(self) -> str:
        return "cpu" if self.kind == "cpu" else f"cuda:{self.index}"

    def __repr__(self) -> str:
        return f"Device('{self}')"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            try:
                other = Device.parse(other)
            except (TypeError, ValueError):
                return False
        if not isinstance(other, Device):
            return NotImplemented
        return (self.kind, self.index) == (other.kind, other.index)

    def __hash__(self) -> int:
        return hash((self.kind, self.index))


CPU = Device("cpu", 0)


@functools.cache
def _emulated() -> bool:
    from gpusparse._kernels import cuda_emulation
    return cuda_emulation.enabled()


def cuda_module() -> types.ModuleType:
    """``cupy``, or its stand-in on the emulated CUDA device; imported on first use."""
    if _emulated():
        from gpusparse._kernels.cuda_emulation._array import cupy
        return cupy
    import cupy
    return cupy
