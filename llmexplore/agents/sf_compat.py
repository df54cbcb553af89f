"""What sample-factory 2.1.1 needs to run on today's packages, in one place.

sample-factory has had no release since 2023 and pins numpy < 2 and huggingface-hub < 1; llmexplore
installs it without those pins (docs/INSTALL.md). Three of its lines then break, and each is mended
here, only where the installed packages break it:

- numpy >= 2.4 refuses to put a shape-(1,) array into one element of an array, which
  ``TensorDict._set_data_func`` does for every scalar a rollout worker writes: serial runs raise, and
  a parallel run's rollout workers die before the first batch.
- huggingface-hub >= 1.0 removed ``Repository``, which sample-factory's Hub download (``enjoy`` with
  ``--hf_repository``) imports; a stand-in downloads the same snapshot with ``snapshot_download``.
- gymnasium >= 1.0 no longer forwards attribute reads through a ``Wrapper``, and sample-factory asks
  for a vectorized env's ``num_agents`` through its own ``BatchedListToDictWrapper``: the batched
  sampling path (``train.sampling=batched``) then sizes its buffers for one agent and its rollout
  workers die on the first step. ``get_multiagent_info`` is mended to read through the wrappers.

Each mend is applied in this process by ``apply_all`` (``check_sample_factory`` calls it at the start
of every run) and, through the context that sample-factory hands to every process it spawns
(``carry_into_spawned_processes``), in each of those too. Each one also knows
the source digest of the sample-factory code it replaces: ``problems()`` (called by
``sf_private.check_sample_factory`` at the start of every run) names a mend that is needed but not in
place, or whose sample-factory code has changed.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
from dataclasses import dataclass
from typing import Any, Callable


def _numpy_version() -> tuple[int, int]:
    import numpy as np

    major, minor = np.__version__.split(".")[:2]
    return int(major), int(minor)


def _source_digest(function: Callable[..., Any]) -> str:
    """The first 16 hex digits of the sha256 of a function's source, to notice an upstream change."""
    return hashlib.sha256(inspect.getsource(function).encode()).hexdigest()[:16]


# -- numpy >= 2.4: a shape-(1,) array into one element ------------------------------------------------
def _original_set_data_func() -> Callable[..., Any]:
    from sample_factory.algo.utils.tensor_dict import TensorDict

    function = TensorDict.__dict__["_set_data_func"]
    return getattr(function, "llmexplore_replaces", function)


def _set_data_func(self: Any, x: Any, index: Any, new_data: Any) -> None:
    """sample-factory's ``TensorDict._set_data_func`` with a single-element array put into a single slot
    as the scalar it is (numpy < 2.4 did this itself); every other case goes to the original."""
    import numpy as np
    import torch
    from sample_factory.algo.utils.tensor_dict import TensorDict

    if isinstance(new_data, (dict, TensorDict)):
        for key, value in new_data.items():
            self._set_data_func(x.get(key), index, value)
        return
    if isinstance(x, np.ndarray) and isinstance(new_data, (np.ndarray, torch.Tensor)):
        array = new_data.cpu().numpy() if isinstance(new_data, torch.Tensor) else new_data
        if array.size == 1 and np.ndim(x[index]) == 0:
            array = array.reshape(())
        x[index] = array
        return
    _set_data_func.llmexplore_replaces(self, x, index, new_data)  # type: ignore[attr-defined]


def _apply_numpy_fix() -> None:
    from sample_factory.algo.utils.tensor_dict import TensorDict

    _set_data_func.llmexplore_replaces = _original_set_data_func()  # type: ignore[attr-defined]
    TensorDict._set_data_func = _set_data_func


def _numpy_fix_applied() -> bool:
    from sample_factory.algo.utils.tensor_dict import TensorDict

    return TensorDict.__dict__["_set_data_func"] is _set_data_func


# -- huggingface-hub >= 1.0: Repository removed ---------------------------------------------------
class HubRepository:
    """The one use sample-factory makes of huggingface-hub's removed ``Repository``:
    ``Repository(local_dir, repo_id)`` to fetch a model repository into ``local_dir``."""

    def __init__(self, local_dir: str, clone_from: str | None = None, **_ignored: Any):
        from huggingface_hub import snapshot_download

        if clone_from is None:
            raise ValueError("llmexplore's Repository stand-in only downloads (clone_from=REPO_ID)")
        self.local_dir = local_dir
        snapshot_download(repo_id=clone_from, local_dir=local_dir)


def _hub_lacks_repository() -> bool:
    """Needed only where huggingface_hub is installed without ``Repository``: training never imports the hub
    (only sample-factory's enjoy/push paths do), so a machine without it, such as an offline GPU machine given
    only what training needs, trains as it is."""
    try:
        import huggingface_hub
    except ImportError:
        return False
    return not hasattr(huggingface_hub, "Repository") or huggingface_hub.Repository is HubRepository


def _apply_hub_fix() -> None:
    import huggingface_hub

    huggingface_hub.Repository = HubRepository  # type: ignore[attr-defined]


def _hub_fix_applied() -> bool:
    import huggingface_hub

    return getattr(huggingface_hub, "Repository", None) is HubRepository


def _load_from_hf() -> Callable[..., Any]:
    return importlib.import_module("sample_factory.huggingface.huggingface_utils").load_from_hf


# -- gymnasium >= 1.0: no attribute forwarding through wrappers ------------------------------------
def _gymnasium_major() -> int:
    import gymnasium

    return int(gymnasium.__version__.split(".")[0])


def _original_multiagent_info() -> Callable[..., Any]:
    from sample_factory.algo.utils import make_env

    function = make_env.get_multiagent_info
    return getattr(function, "llmexplore_replaces", function)


def _wrapped_attribute(env: Any, name: str) -> Any:
    """``env``'s attribute ``name``, or the first one found down its ``.env`` chain (gymnasium < 1.0 read
    through wrappers itself); None when none has it."""
    seen = 0
    while env is not None and seen < 64:  # a wrapper chain, bounded against a cycle
        if name in vars(env) or hasattr(type(env), name):
            return getattr(env, name)
        env, seen = getattr(env, "env", None) if "env" in vars(env) else None, seen + 1
    return None


def get_multiagent_info(env: Any) -> tuple[bool, int]:
    """sample-factory's ``get_multiagent_info`` reading ``num_agents`` and ``is_multiagent`` through the
    wrappers around the env, as it did on gymnasium < 1.0."""
    num_agents = _wrapped_attribute(env, "num_agents")
    num_agents = 1 if num_agents is None else num_agents
    is_multiagent = _wrapped_attribute(env, "is_multiagent")
    is_multiagent = num_agents > 1 if is_multiagent is None else is_multiagent
    assert is_multiagent or num_agents == 1, f"Invalid configuration: {is_multiagent=} and {num_agents=}"
    return is_multiagent, num_agents


def _apply_wrapper_fix() -> None:
    from sample_factory.algo.utils import make_env

    get_multiagent_info.llmexplore_replaces = _original_multiagent_info()  # type: ignore[attr-defined]
    make_env.get_multiagent_info = get_multiagent_info


def _wrapper_fix_applied() -> bool:
    from sample_factory.algo.utils import make_env

    return make_env.get_multiagent_info is get_multiagent_info


# -- the list -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Mend:
    """One change sample-factory needs on newer packages."""

    #: as messages name it
    name: str
    #: when it is needed, and what breaks without it
    why: str
    #: whether the installed packages need it
    needed: Callable[[], bool]
    apply: Callable[[], None]
    applied: Callable[[], bool]
    #: the sample-factory function the mend stands in for or relies on, and its 2.1.1 source digest
    replaces: Callable[[], Callable[..., Any]]
    digest: str


MENDS: tuple[Mend, ...] = (
    Mend("TensorDict._set_data_func",
         "numpy >= 2.4 refuses a shape-(1,) array in one element: rollout workers die before training",
         lambda: _numpy_version() >= (2, 4), _apply_numpy_fix, _numpy_fix_applied,
         _original_set_data_func, "b2ab66ba434ed5ab"),
    Mend("huggingface_hub.Repository",
         "huggingface-hub >= 1.0 removed it; sample-factory's Hub download imports it",
         _hub_lacks_repository, _apply_hub_fix, _hub_fix_applied, _load_from_hf, "3315b0fb44189edf"),
    Mend("make_env.get_multiagent_info",
         "gymnasium >= 1.0 reads no attribute through a wrapper: batched sampling sizes its buffers for one agent",
         lambda: _gymnasium_major() >= 1, _apply_wrapper_fix, _wrapper_fix_applied, _original_multiagent_info,
         "ed5dd30bc2304f7d"),
)


def apply_all() -> list[str]:
    """Apply each mend the installed packages need (again is harmless); returns their names."""
    applied = []
    for mend in MENDS:
        if mend.needed():
            if not mend.applied():
                mend.apply()
            applied.append(mend.name)
    return applied


def problems() -> list[str]:
    """Each mend that is needed and not in place, or whose sample-factory code is not the one it was
    written for, as one line naming it."""
    found = []
    for mend in MENDS:
        if not mend.needed():
            continue
        if not mend.applied():
            found.append(f"{mend.name}: needed ({mend.why}) but not applied")
        try:
            digest = _source_digest(mend.replaces())
        except (ImportError, AttributeError, OSError, TypeError) as exc:
            found.append(f"{mend.name}: sample-factory's code it mends cannot be read ({exc})")
            continue
        if digest != mend.digest:
            found.append(f"{mend.name}: sample-factory's code it mends has changed (source digest {digest}, "
                         f"written for {mend.digest})")
    return found


# -- every process sample-factory spawns -----------------------------------------------------------
class _ApplyOnUnpickle:
    """Put on sample-factory's global context, which every spawned process unpickles first: unpickling
    it applies the mends there, before that process builds a rollout, inference or learner worker."""

    def __reduce__(self) -> tuple[Callable[[], "_ApplyOnUnpickle"], tuple[()]]:
        return _applied_here, ()


def _applied_here() -> _ApplyOnUnpickle:
    apply_all()
    return _ApplyOnUnpickle()


CONTEXT_ATTRIBUTE = "llmexplore_compat"


def carry_into_spawned_processes() -> None:
    """Make every process sample-factory spawns from now on apply the mends as it starts."""
    from sample_factory.algo.utils.context import sf_global_context

    setattr(sf_global_context(), CONTEXT_ATTRIBUTE, _ApplyOnUnpickle())


def carried_into_spawned_processes() -> bool:
    """Whether sample-factory's current global context carries the mends."""
    from sample_factory.algo.utils.context import sf_global_context

    return isinstance(getattr(sf_global_context(), CONTEXT_ATTRIBUTE, None), _ApplyOnUnpickle)
