"""`repogym serve`: an OpenAI-compatible chat-completions server over a local transformers model."""
