"""`python -m repogym ...` runs the CLI (what `accelerate launch -m repogym train sft ...` needs)."""

from repogym.cli import main

main()
