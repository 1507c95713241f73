"""The model side of training: loading the Conductor LLM and its LoRA config.

- :func:`resolve_model_path` and :func:`load_tokenizer` turn a recipe's ``model`` into something
  ``transformers`` loads, with the padding GRPO needs;
- :func:`lora_config` adapts every linear projection, or only the top layers (cheaper on a CPU);
- :func:`score_only_completions_on_cpu` makes TRL's fused LM head project only the completion
  tokens on a CPU, as it does on a GPU.

``torch``, ``transformers``, ``peft`` and ``trl`` are imported inside the functions, so importing
this module stays light. The model as a policy is :class:`~conductor_env.agents.model_policy.ModelPolicy`.
"""

from __future__ import annotations

from typing import Any


def resolve_model_path(model: str) -> str:
    """Returns a loadable model reference: a known local name is exported once to the cache, and
    a LoRA adapter folder (``train export-adapter``'s, a shipped Conductor's) is merged into its
    base once, so training can go on from it."""
    from conductor_env.workers import local_models as models
    from conductor_env.workers.local_adapter import is_adapter_folder, merged_model_folder

    if model in models.MODELS:
        return str(models.ensure_model(model))
    if is_adapter_folder(model):
        return str(merged_model_folder(model))
    return model


def load_tokenizer(model_path: str) -> Any:
    """Loads the tokenizer, padded on the left with a pad token (as GRPO requires)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_path)
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    if tokenizer.chat_template is None:
        raise ValueError(f"the model at {model_path} has no chat template; the Conductor prompt is a chat message")
    return tokenizer


#: Projection names of the common decoder architectures (Gemma, Llama, Qwen, Mistral).
_PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def lora_config(model_path: str, *, r: int, alpha: int, top_layers: int | None = None) -> Any:
    """Returns a PEFT LoRA config on every linear projection, or on the top ``top_layers`` only.

    Adapting only the top layers stops the backward pass there, which is cheaper on a CPU.
    """
    from peft import LoraConfig

    if not top_layers:
        return LoraConfig(r=r, lora_alpha=alpha, target_modules="all-linear", task_type="CAUSAL_LM")
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(model_path)
    total = int(getattr(config, "num_hidden_layers", 0) or getattr(getattr(config, "text_config", None), "num_hidden_layers", 0))
    if not 0 < top_layers <= total:
        raise ValueError(f"lora_top_layers must be in 1..{total} for this model, got {top_layers}")
    return LoraConfig(
        r=r,
        lora_alpha=alpha,
        target_modules=list(_PROJECTIONS),
        layers_to_transform=list(range(total - top_layers, total)),
        task_type="CAUSAL_LM",
    )


#: TRL releases whose private ``trl.trainer.utils._use_triton(device)`` switch was read and
#: checked (same log-probabilities, see tests/agents/training/test_agents_grpo.py); on any other
#: release :func:`score_only_completions_on_cpu` changes nothing.
VERIFIED_TRL = ("1.16.",)


def score_only_completions_on_cpu() -> bool:
    """Makes TRL's fused LM head score only the completion positions on a CPU too, on verified TRL releases.

    TRL's GRPO loss projects hidden states through the LM head in tiles. On CUDA/XPU it projects
    only the positions that carry a label (the completion); elsewhere it projects *every*
    position, to keep tile shapes fixed for graph compilers (Neuron). On a CPU that multiplies
    the LM-head work by (prompt + completion) / completion, which for a 300-token prompt, a
    40-token workflow and Gemma's 262k-token vocabulary makes the LM head most of the training
    time. The compact path is plain PyTorch there and gives the same log-probabilities, so it is
    enabled for CPU devices by wrapping TRL's private ``_use_triton``. That is a private function:
    the wrap is applied only for the releases in :data:`VERIFIED_TRL` and only when the function
    still takes one ``device`` argument; it is called when a trainer is built, not at import.

    Returns:
        True when the compact path is on; False (and nothing changed) on another TRL release, or
        when TRL is missing or its switch changed.
    """
    import inspect

    try:
        import trl
        from trl.trainer import utils as trl_utils
    except ImportError:  # pragma: no cover - TRL is an optional dependency
        return False
    original = getattr(trl_utils, "_use_triton", None)
    if original is None or not str(getattr(trl, "__version__", "")).startswith(VERIFIED_TRL):
        return False
    if getattr(original, "compact_on_cpu", False):
        return True
    if list(inspect.signature(original).parameters) != ["device"]:
        return False

    def compact(device: Any) -> bool:
        return device.type == "cpu" or original(device)

    compact.compact_on_cpu = True  # type: ignore[attr-defined]
    trl_utils._use_triton = compact
    return True
