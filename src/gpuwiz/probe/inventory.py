"""Which GPUs this machine has: NVML (nvidia-ml-py) when installed, else PyTorch's view, else none.

No import of torch or pynvml at module load: the CLI imports this for ``recommend --have local``.
"""

from __future__ import annotations

import importlib
import warnings
from dataclasses import dataclass
from types import ModuleType


@dataclass(frozen=True, slots=True)
class LocalGpu:
    index: int
    name: str
    memory_gib: float


@dataclass(frozen=True, slots=True)
class Inventory:
    gpus: tuple[LocalGpu, ...]
    via: str  # "NVML", "PyTorch (CUDA/ROCm)", or "" when nothing could look
    note: str  # what was tried, in words, when nothing was found

    @property
    def name(self) -> str | None:
        return self.gpus[0].name if self.gpus else None


def _try_import(name: str) -> ModuleType | None:
    try:
        with warnings.catch_warnings():  # torch's CPU build warns when NumPy is absent; not our user's concern
            warnings.simplefilter("ignore")
            return importlib.import_module(name)
    except ImportError:
        return None


def _nvml() -> tuple[tuple[LocalGpu, ...], str]:
    nv = _try_import("pynvml")
    if nv is None:
        return (), "nvidia-ml-py not installed"
    try:
        nv.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - NVMLError_* subclasses; no driver is a normal answer here
        return (), f"NVML: {type(exc).__name__} (no NVIDIA driver?)"
    try:
        out = []
        for i in range(int(nv.nvmlDeviceGetCount())):
            h = nv.nvmlDeviceGetHandleByIndex(i)
            name = nv.nvmlDeviceGetName(h)
            if isinstance(name, bytes):
                name = name.decode("utf-8", "replace")
            mem = nv.nvmlDeviceGetMemoryInfo(h).total / 2**30
            out.append(LocalGpu(i, str(name), float(mem)))
        return tuple(out), ""
    except Exception as exc:  # noqa: BLE001 - as above
        return (), f"NVML: {type(exc).__name__}"
    finally:
        try:
            nv.nvmlShutdown()
        except Exception:  # noqa: BLE001 - shutting down a half-initialised NVML
            pass


def _torch() -> tuple[tuple[LocalGpu, ...], str]:
    torch = _try_import("torch")
    if torch is None:
        return (), "PyTorch not installed"
    if not torch.cuda.is_available():
        return (), "PyTorch sees no CUDA/ROCm device"
    out = []
    for i in range(torch.cuda.device_count()):
        p = torch.cuda.get_device_properties(i)
        out.append(LocalGpu(i, str(p.name), float(p.total_memory) / 2**30))
    return tuple(out), ""


def detect_gpus() -> Inventory:
    gpus, why_nvml = _nvml()
    if gpus:
        return Inventory(gpus, "NVML", "")
    gpus, why_torch = _torch()
    if gpus:
        return Inventory(gpus, "PyTorch (CUDA/ROCm)", "")
    return Inventory((), "", f"no GPU found ({why_nvml}; {why_torch})")
