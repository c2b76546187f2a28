"""A tiny causal LM and tokenizer built locally, for tests, the quickstart and smoke runs.

No download: the tokenizer is a byte-level BPE trained in about a second on
repogym's own Python source, the model (1-5M parameters, Llama or Qwen2
config) starts from random weights. The chat template renders tools and tool
calls the way Qwen2.5 does (`<tool_call>{json}</tool_call>`) and carries
`{% generation %}` markers, so SFT's assistant-only loss works on it.

    python -m repogym.train.tiny OUT_DIR [--arch llama|qwen2]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from repogym.errors import ConfigError

SPECIAL_TOKENS = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
)

# Qwen2.5's layout, trimmed; {% generation %} marks what an assistant-only loss trains on.
CHAT_TEMPLATE = (
    "{%- if tools %}"
    "{{- '<|im_start|>system\\n' }}"
    "{%- if messages and messages[0].role == 'system' %}{{- messages[0].content + '\\n\\n' }}{%- endif %}"
    "{{- '# Tools\\n\\nYou may call one or more functions. Their signatures are inside <tools></tools>:\\n<tools>' }}"
    "{%- for tool in tools %}{{- '\\n' + (tool | tojson) }}{%- endfor %}"
    "{{- '\\n</tools>\\n\\nFor each call, return a JSON object inside <tool_call></tool_call> tags:\\n' }}"
    '{{- \'<tool_call>\\n{"name": <function-name>, "arguments": <args-json-object>}\\n</tool_call><|im_end|>\\n\' }}'
    "{%- elif messages and messages[0].role == 'system' %}"
    "{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if message.role == 'system' and loop.first %}"
    "{%- elif message.role == 'assistant' %}"
    "{{- '<|im_start|>assistant\\n' }}{%- generation %}"
    "{{- message.content or '' }}"
    "{%- for call in message.tool_calls or [] %}{%- set fn = call.function or call %}"
    '{{- \'<tool_call>\\n{"name": "\' + fn.name + \'", "arguments": \' }}'
    "{%- if fn.arguments is string %}{{- fn.arguments }}{%- else %}{{- fn.arguments | tojson }}{%- endif %}"
    "{{- '}\\n</tool_call>' }}{%- endfor %}"
    "{{- '<|im_end|>' }}{%- endgeneration %}{{- '\\n' }}"
    "{%- elif message.role == 'tool' %}"
    "{{- '<|im_start|>user\\n<tool_response>\\n' + message.content + '\\n</tool_response><|im_end|>\\n' }}"
    "{%- else %}{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)

#: Shapes that land in 1-5M parameters with the default vocabulary.
ARCH_SHAPES: dict[str, dict[str, int]] = {
    "llama": {"hidden_size": 128, "intermediate_size": 384, "num_hidden_layers": 4, "num_attention_heads": 4},
    "qwen2": {"hidden_size": 128, "intermediate_size": 384, "num_hidden_layers": 4, "num_attention_heads": 4},
}


def training_corpus(limit_chars: int = 2_000_000) -> list[str]:
    """repogym's own Python source: always present, real code, no download."""
    root = Path(__file__).resolve().parents[1]
    texts, total = [], 0
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        texts.append(text)
        total += len(text)
        if total >= limit_chars:
            break
    return texts


def build_tokenizer(vocab_size: int = 4096) -> Any:
    """A byte-level BPE trained on local source, wrapped as a transformers fast tokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    core.train_from_iterator(training_corpus(), trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        bos_token=None,
        unk_token=None,
        additional_special_tokens=list(SPECIAL_TOKENS[1:]),
        padding_side="left",  # decoder-only batches pad on the left so replies line up
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def build_tiny_model(
    out_dir: str | Path, arch: str = "llama", vocab_size: int = 4096, seed: int = 0, max_positions: int = 8192
) -> Path:
    """Write a random-weight model and its tokenizer to `out_dir` (loadable with from_pretrained)."""
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig, Qwen2Config

    if arch not in ARCH_SHAPES:
        raise ConfigError(f"tiny model arch {arch!r}: known: {', '.join(ARCH_SHAPES)}")
    tokenizer = build_tokenizer(vocab_size)
    config_cls = {"llama": LlamaConfig, "qwen2": Qwen2Config}[arch]
    config = config_cls(
        vocab_size=len(tokenizer),
        max_position_embeddings=max_positions,
        tie_word_embeddings=True,
        eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
        **ARCH_SHAPES[arch],
    )
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    model.generation_config.save_pretrained(out)
    (out / "repogym_tiny.json").write_text(
        json.dumps({"arch": arch, "seed": seed, "params": count_params(model)})
    )
    return out


def count_params(model: Any) -> int:
    return sum(p.numel() for p in model.parameters())


def load_tokenizer(model_dir: str | Path) -> Any:
    """The folder's tokenizer, read from tokenizer.json as written (see DESIGN.md's pitfall with qwen2 folders)."""
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    folder = Path(model_dir)
    if (folder / "tokenizer.json").exists():
        return PreTrainedTokenizerFast.from_pretrained(folder)
    return AutoTokenizer.from_pretrained(folder)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Build a tiny local model + tokenizer (no download).")
    parser.add_argument("out_dir")
    parser.add_argument("--arch", default="llama", choices=sorted(ARCH_SHAPES))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    path = build_tiny_model(args.out_dir, arch=args.arch, seed=args.seed)
    print(path)


if __name__ == "__main__":
    main()
