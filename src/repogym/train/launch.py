"""The end of a run under `accelerate launch` / torchrun: the process group goes while Python is still alive.

Without `destroy_process_group()`, gloo's C++ worker threads are still joinable when the interpreter
finalizes, and a rank can abort at exit with "terminate called without an active exception" (SIGABRT)
after its training finished; seen once in CI on two CPU processes, and the mechanism is described in
pytorch/pytorch#179291. The CLI's `main` calls this on the way out of every command (`train sft`,
`train rl`, `train flywheel` alike). accelerate owns the group (the Trainer's `PartialState` created it), so its own
`destroy_process_group` ends it; a run that made no group (one process) is left as it is.
"""

from __future__ import annotations


def end_process_group() -> None:
    """Destroy the default process group if this process has one (after training, before exit)."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return
    from accelerate import PartialState

    PartialState().destroy_process_group()
