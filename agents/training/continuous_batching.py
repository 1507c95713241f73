"""TRL's continuous-batching generation (``use_transformers_continuous_batching``) under mixed precision.

With ``bf16`` (a CUDA run, unless its recipe turns it off) Accelerate wraps the trained model's
``forward`` so that its outputs come back in float32: it calls ``.float()`` on every output that
has a half-precision ``dtype``. Continuous batching returns its ``PagedAttentionCache`` among
the outputs, and that cache has a ``dtype`` but no ``.float()``, so every request fails with
``'PagedAttentionCache' object has no attribute 'float'`` and TRL then raises ``IndexError`` on
the empty completions.
TRL casts the model to the training precision before it generates, so generation needs neither
the output conversion nor autocast: :func:`generate_batch_without_output_conversion` runs
``generate_batch`` on the forward Accelerate saved before wrapping it.

See https://huggingface.co/docs/accelerate/usage_guides/low_precision_training and
https://huggingface.co/docs/trl/grpo_trainer (``use_transformers_continuous_batching``).
"""

from __future__ import annotations

import functools
from typing import Any

#: Where :meth:`accelerate.Accelerator.prepare_model` keeps the forward it wrapped for mixed precision.
ACCELERATE_ORIGINAL_FORWARD = "_original_forward"


def generate_batch_without_output_conversion(model: Any) -> None:
    """Makes ``model.generate_batch`` run on the model's own forward, not Accelerate's mixed-precision wrapper.

    Call it on the model the trainer generates with, before or after ``Accelerator.prepare``:
    the wrapper is looked up at each call, and a model Accelerate never wrapped generates as before.

    Args:
        model: A ``transformers`` model or a PEFT model around one.
    """
    generate_batch = model.generate_batch

    @functools.wraps(generate_batch)
    def generate(*args: Any, **kwargs: Any) -> Any:
        original = model.__dict__.get(ACCELERATE_ORIGINAL_FORWARD)
        if original is None:
            return generate_batch(*args, **kwargs)
        wrapped = model.__dict__["forward"]
        model.forward = original
        try:
            return generate_batch(*args, **kwargs)
        finally:
            model.forward = wrapped

    model.generate_batch = generate
