"""Exchange with other libraries (placeholder until the interop module lands)."""


def from_foreign(obj, copy=None):
    """A gpusparse array for a foreign sparse ``obj``, or None if ``obj`` is not one."""
    return None
