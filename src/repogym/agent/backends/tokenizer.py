"""Loading a model folder's tokenizer for inference (the hf backend) and for training, which imports it from here.

Guarantees: a folder with a tokenizer.json is read from that file as written, through
`PreTrainedTokenizerFast`, with the chat template saved beside it; any other folder goes through
`AutoTokenizer`. Not guaranteed: that the folder has a chat template (a base model may not).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def load_tokenizer(model_dir: str | Path) -> Any:
    """The folder's tokenizer, read from tokenizer.json as written (see DESIGN.md's pitfall with qwen2 folders)."""
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    folder = Path(model_dir)
    if (folder / "tokenizer.json").exists():
        return PreTrainedTokenizerFast.from_pretrained(folder)
    return AutoTokenizer.from_pretrained(folder)
