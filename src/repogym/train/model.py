"""repogym's own small models (`repogym model init DIR --size tiny|small|base|medium`) and model-folder checks.

A model is a Llama (or Qwen2) config with random weights and a byte-level BPE tokenizer trained
on local Python source (default: a sample of the standard library, the kind of text it will be
pretrained on), written as an ordinary Hugging Face folder: everything that loads a local model
(`--policy hf:PATH`, `repogym serve`, `train sft`, `train rl`) loads it. Sizes, with tied input
and output embeddings (parameters counted with the default vocabulary):

| size   | hidden | layers | heads | MLP  | vocab  | context | parameters |
|--------|--------|--------|-------|------|--------|---------|------------|
| tiny   | 128    | 4      | 4     | 384  | 4,096  | 2,048   | ~1.4M      |
| small  | 256    | 6      | 4     | 768  | 8,192  | 4,096   | ~6.9M      |
| base   | 384    | 8      | 6     | 1152 | 16,384 | 4,096   | ~20M       |
| medium | 768    | 12     | 12    | 2048 | 16,384 | 4,096   | ~97M       |

`repogym_model.json` in the folder records the size, shape, seed and tokenizer corpus.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from repogym.errors import ConfigError
from repogym.train.tokenizer import build_tokenizer

MODEL_RECORD = "repogym_model.json"
WEIGHT_PATTERNS = (
    "*.safetensors",
    "pytorch_model*.bin",
    "*.safetensors.index.json",
    "pytorch_model.bin.index.json",
)


@dataclass(frozen=True)
class ModelShape:
    """The shape of one size; every field is a Llama/Qwen2 config key except vocab_size's use."""

    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    intermediate_size: int
    vocab_size: int
    max_position_embeddings: int


SIZES: dict[str, ModelShape] = {
    "tiny": ModelShape(128, 4, 4, 384, 4096, 2048),
    "small": ModelShape(256, 6, 4, 768, 8192, 4096),
    "base": ModelShape(384, 8, 6, 1152, 16384, 4096),
    # For a GPU: minutes of pretraining on 2 CPU cores teach a model this size little.
    "medium": ModelShape(768, 12, 12, 2048, 16384, 4096),
}
ARCHS = ("llama", "qwen2")


def init_model(
    out_dir: str | os.PathLike[str],
    size: str = "tiny",
    arch: str = "llama",
    seed: int = 0,
    tokenizer_texts: list[str] | None = None,
    tokenizer_corpus: dict[str, Any] | None = None,
    max_positions: int | None = None,
) -> Path:
    """Write a random-weight model of `size` and its tokenizer (trained on `tokenizer_texts`) to `out_dir`."""
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig, Qwen2Config

    if size not in SIZES:
        raise ConfigError(f"--size {size!r}: known sizes: {', '.join(SIZES)}")
    if arch not in ARCHS:
        raise ConfigError(f"--arch {arch!r}: known: {', '.join(ARCHS)}")
    shape = SIZES[size]
    tokenizer = build_tokenizer(shape.vocab_size, tokenizer_texts)
    config_cls = {"llama": LlamaConfig, "qwen2": Qwen2Config}[arch]
    config = config_cls(
        vocab_size=len(tokenizer),
        hidden_size=shape.hidden_size,
        num_hidden_layers=shape.num_hidden_layers,
        num_attention_heads=shape.num_attention_heads,
        num_key_value_heads=shape.num_attention_heads,
        intermediate_size=shape.intermediate_size,
        max_position_embeddings=max_positions or shape.max_position_embeddings,
        tie_word_embeddings=True,
        eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
    )
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    model.generation_config.save_pretrained(out)
    record = {
        "size": size,
        "arch": arch,
        "seed": seed,
        "params": sum(p.numel() for p in model.parameters()),
        "shape": asdict(shape),
        "tokenizer_corpus": tokenizer_corpus or {"roots": ["standard library (stable_source)"]},
    }
    (out / MODEL_RECORD).write_text(json.dumps(record, indent=2) + "\n")
    return out


def has_weights(folder: Path) -> bool:
    return any(any(folder.glob(pattern)) for pattern in WEIGHT_PATTERNS)


def check_model_folder(path: str | os.PathLike[str], key: str = "base_model") -> Path:
    """`path` as a causal-LM folder (config, weights, tokenizer), or a ConfigError naming `key` and the fix."""
    folder = Path(path).expanduser()
    fix = "build one with `repogym model init DIR` or give a local Hugging Face model folder"
    if not folder.exists():
        raise ConfigError(f"{key}: {folder} does not exist; {fix}")
    if not folder.is_dir() or not (folder / "config.json").is_file():
        raise ConfigError(f"{key}: {folder} is not a model folder (no config.json in it); {fix}")
    from transformers import AutoConfig
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    try:
        config = AutoConfig.from_pretrained(folder)
    except (ValueError, OSError, KeyError) as exc:
        raise ConfigError(f"{key}: {folder}/config.json is not a transformers config: {exc}") from None
    architectures = getattr(config, "architectures", None) or []
    causal = config.model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES or any(
        name.endswith("ForCausalLM") for name in architectures
    )
    if not causal:
        raise ConfigError(
            f"{key}: {folder} holds a {config.model_type!r} model ({', '.join(architectures) or 'no architectures'}), "
            "not a causal language model; give a decoder-only LM (Llama, Qwen2, ...)"
        )
    if not has_weights(folder):
        raise ConfigError(
            f"{key}: {folder} has a config but no weights (*.safetensors or pytorch_model*.bin)"
        )
    if not any(
        (folder / name).is_file() for name in ("tokenizer.json", "tokenizer_config.json", "tokenizer.model")
    ):
        raise ConfigError(f"{key}: {folder} has no tokenizer (tokenizer.json or tokenizer_config.json)")
    return folder


def model_record(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """`repogym_model.json` of a folder ({} for models repogym did not build)."""
    path = Path(folder) / MODEL_RECORD
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return {}
