"""Stateful differential fuzzing: a gpusparse array and its dense NumPy model, side by side.

:class:`SparseMachine` holds a sparse array ``x`` and the dense NumPy array
``m`` it stands for (with the expected fill value), applies random sequences
of operations to both -- construction, coalesce, elementwise ufuncs with
scalars, dense and sparse operands, reductions, indexing, shape
manipulation, products, conversions, casts -- and after every step checks
that ``x.todense()`` and the components themselves give the model, that the
container invariants hold (honest flags, canonical compressed arrays,
components on the array's device), and that shape, dtype and fill value are
the model's. Where NumPy raises, the library must raise the same kind of
error. Arrays an operation consumed are kept and checked again at the end:
operations never change their operands.

Where the library's documented semantics differ from NumPy's, the model
follows the library and says so:

* products skip unstored elements (no ``0 * inf = nan`` from an unstored
  zero; SciPy does the same): :func:`_model.masked_matmul`;
* softmax normalises the stored elements of each line, unstored ones count
  as ``-inf``: :func:`_model.masked_softmax`;
* a ufunc whose NumPy result is float16 is computed in float32 (sparse
  arrays hold no float16);
* functions linear in one uncoalesced operand (``-x``, ``2 * x``,
  ``x / 4``) map each duplicate on its own, so the model applies them to the
  stored terms rather than to their sum;
* casts that are undefined behaviour in C (NaN, infinities and out-of-range
  floats to integers) are not drawn.

Floats are compared within a tolerance scaled by the magnitude of the terms
each element is computed from (see :func:`_model.assert_close`); after a
successful comparison the model takes the library's values, so rounding
never accumulates across steps. Integer overflow wraps in both.
"""

from __future__ import annotations

from hypothesis import settings

from _machine import SparseMachineBase
from _rules_arithmetic import ArithmeticRules
from _rules_conversions import ConversionRules
from _rules_shapes import ShapeRules
from gpusparse._device import Device


class SparseMachine(ConversionRules, ArithmeticRules, ShapeRules, SparseMachineBase):
    """A sparse array and its dense model; every rule changes or queries both.

    The state, construction and the invariant are :class:`_machine.SparseMachineBase`'s; the rules
    come by family from the mixins (Hypothesis collects the rules of every base class).
    """


def _machine_settings(device: Device) -> settings:
    """The profile's budget; the emulated CUDA device runs the kernels on the CPU, so it gets a third."""
    base = settings.default
    if not device.is_cuda:
        return settings(base)
    return settings(base, max_examples=max(2, base.max_examples // 3),
                    stateful_step_count=max(10, base.stateful_step_count // 2))


def test_stateful(device):
    """Random sequences of operations agree with the dense NumPy model."""
    from hypothesis.stateful import run_state_machine_as_test

    machine = type(f"SparseMachine_{device.kind}", (SparseMachine,), {"device": device})
    run_state_machine_as_test(machine, settings=_machine_settings(device))
