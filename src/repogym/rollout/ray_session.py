"""This process's link to Ray, shared by the Ray executor and the Ray grader: a cluster at an address, or a
local Ray on loopback started here; and where a Ray task runs.

Ray tasks of repogym are sandboxes (an attempt, a grade): CPU-bound for seconds or minutes each. They are
scheduled with Ray's SPREAD strategy, since Ray's default fills the driver's node before it uses another
(up to half its CPUs), which on a cluster leaves the workers idle while the head runs sandboxes.
"""

from __future__ import annotations

import os

from repogym.errors import ConfigError

#: Ray's scheduling strategy for every sandbox task (see the module docstring).
SANDBOX_SCHEDULING = "SPREAD"


def require_ray(what: str) -> None:
    """Raise a ConfigError naming `what` (the option or class that asked) when Ray is not installed."""
    try:
        import ray  # noqa: F401
    except ImportError:
        raise ConfigError(f"{what}: Ray is not installed; pip install 'repogym[ray]'") from None


def connect(address: str | None, local_cpus: int) -> bool:
    """Connect this process to the cluster at `address`, or start a local Ray of `local_cpus` CPUs on
    loopback. Returns True when this call connected (the caller shuts Ray down when done), False when this
    process was connected already (someone else's Ray: leave it running).

    A local Ray's workers inherit this process's environment (REPOGYM_CACHE included); a cluster's
    workers use their own nodes' settings (docs/ray.md)."""
    import ray

    if ray.is_initialized():
        return False
    options = {"include_dashboard": False, "log_to_driver": False}
    if address:
        ray.init(address=address, **options)
    else:
        _local_ray_on_loopback()
        ray.init(num_cpus=local_cpus, **options)
    return True


def node_id() -> str:
    """The id of the Ray node this code runs on (hex), for the records of what ran where."""
    import ray

    return str(ray.get_runtime_context().get_node_id())


def _local_ray_on_loopback() -> None:
    """Make a single-machine Ray talk over 127.0.0.1 instead of the machine's network address.

    Ray reads this switch into a constant when it is imported (workers inherit the variable); a
    driver that imported Ray already gets the constant set too. Without it, a laptop's Ray serves
    on its LAN address. The variable stays set: a worker node's `ray start` launched from this process
    would refuse to start (Ray's multi-node switch is off), so give it an environment without it.
    """
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    if os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] == "0":
        from ray._private import ray_constants

        ray_constants.ENABLE_RAY_CLUSTER = False
