"""The tokenizer of repogym's own models: a byte-level BPE trained locally, and its chat template.

No download: `build_tokenizer(texts)` trains a BPE with `tokenizers` on the text it is given
(Python source: `repogym model init` uses a sample of the standard library; the tiny model of
tests uses `stable_source()`, a fixed slice of it, about a second). The chat template renders tools and tool calls the way
Qwen2.5 does (`<tool_call>{json}</tool_call>`) and carries `{% generation %}` markers, so
SFT's assistant-only loss works on it. Loading a saved tokenizer is inference's
(`repogym.agent.backends.tokenizer.load_tokenizer`, re-exported here).
"""

from __future__ import annotations

import sysconfig
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from repogym.agent.backends.tokenizer import load_tokenizer

__all__ = ["CHAT_TEMPLATE", "SPECIAL_TOKENS", "build_tokenizer", "load_tokenizer", "stable_source"]

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


#: Standard-library folders left out of the tests' corpus: tests, vendored tools, installed packages.
_STDLIB_SKIPPED = {"test", "tests", "idlelib", "lib2to3", "site-packages", "dist-packages", "__pycache__"}


def stable_source(limit_chars: int = 2_000_000) -> list[str]:
    """The standard library's first .py files in path order, up to `limit_chars` (the tiny model's corpus).

    It changes with the Python version only. repogym's own source was the corpus before: every edit
    retrained the tiny model's tokenizer, and the training tests' loss curves moved with it.
    """

    root = Path(sysconfig.get_paths()["stdlib"])
    texts, total = [], 0
    for path in sorted(root.rglob("*.py")):
        if _STDLIB_SKIPPED.intersection(path.relative_to(root).parts[:-1]):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        texts.append(text)
        total += len(text)
        if total >= limit_chars:
            break
    return texts


def build_tokenizer(vocab_size: int = 4096, texts: Iterable[str] | None = None) -> Any:
    """A byte-level BPE trained on `texts` (default: `stable_source()`), as a transformers fast tokenizer."""
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
    core.train_from_iterator(stable_source() if texts is None else texts, trainer=trainer)
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
