"""A tokenizer for the bridge checks, trained where they run (a trainer's classes need one; no hub is reachable).

Imported by the checks scripts inside the trainers' venvs; `tokenizers` and `transformers` are imported in the
function, so pytest's doctest collection imports this file without them.
"""

from __future__ import annotations

from typing import Any


def tiny_tokenizer(corpus: list[str]) -> Any:
    """A byte-level BPE tokenizer trained here (decode(encode(text)) == text) with a plain chat template."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import PreTrainedTokenizerFast

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(corpus, vocab_size=400, special_tokens=["<pad>", "<eos>"], show_progress=False)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, pad_token="<pad>", eos_token="<eos>")
    tokenizer.chat_template = (
        "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}<assistant>{% endif %}"
    )
    return tokenizer
