"""Real models for the benchmarks' ``--torchvision`` rows: torchvision networks through
``torch.export`` and ``from_exported_program`` at small input sizes, as a user imports them
(torch and torchvision are a development extra; without them there are no such rows)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

import tvm

# name -> (torchvision constructor name, input shape)
MODELS = {
    "tv_resnet18": ("resnet18", (1, 3, 64, 64)),
    "tv_mobilenet_v2": ("mobilenet_v2", (1, 3, 64, 64)),
    "tv_mnasnet0_5": ("mnasnet0_5", (1, 3, 64, 64)),
    "tv_squeezenet1_0": ("squeezenet1_0", (1, 3, 64, 64)),
    "tv_regnet_y_400mf": ("regnet_y_400mf", (1, 3, 64, 64)),
    "tv_densenet121": ("densenet121", (1, 3, 64, 64)),
    "tv_efficientnet_b0": ("efficientnet_b0", (1, 3, 64, 64)),
    "tv_shufflenet_v2_x1_0": ("shufflenet_v2_x1_0", (1, 3, 64, 64)),
    "tv_mobilenet_v3_small": ("mobilenet_v3_small", (1, 3, 64, 64)),
    "tv_resnet50": ("resnet50", (1, 3, 64, 64)),
}
# The models of --torchvision where not every model is asked for: the four above.
DEFAULT = ("tv_resnet18", "tv_mobilenet_v2", "tv_mnasnet0_5", "tv_squeezenet1_0")


def available() -> bool:
    try:
        import torch  # noqa: F401
        import torchvision  # noqa: F401
    except ImportError:
        return False
    return True


def load(name: str, models: dict | None = None) -> tuple[tvm.IRModule, str]:
    """The Relax module of torchvision model `name` of `models` (default ``MODELS``; weights=None,
    eval mode, batch norms decomposed for inference, parameters bound as constants) and its
    function name."""
    import torch
    import torchvision
    from tvm.relax.frontend.torch import from_exported_program

    constructor, shape = (MODELS if models is None else models)[name]
    model = getattr(torchvision.models, constructor)(weights=None).eval()
    torch.manual_seed(0)
    exported = torch.export.export(model, (torch.randn(*shape),))
    mod = from_exported_program(exported, keep_params_as_input=False)
    return tvm.relax.transform.DecomposeOpsForInference()(mod), "main"


def loaders(models: dict | None = None) -> dict[str, Callable[[], tuple[tvm.IRModule, str]]]:
    models = {name: MODELS[name] for name in DEFAULT} if models is None else models
    return {name: (lambda name=name: load(name, models)) for name in models}


def add_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--torchvision", action="store_true", help="add torchvision models")


def zoo(args: argparse.Namespace, base: dict, torchvision: dict | None = None) -> dict | None:
    """`base` (name -> loader), with the torchvision models `torchvision` (name -> (constructor,
    input shape); default the ``DEFAULT`` ones of ``MODELS``) under ``--torchvision``; None (and
    a message on stderr) when they were asked for and torch or torchvision is missing."""
    models = dict(base)
    if getattr(args, "torchvision", False):
        if not available():
            print("--torchvision needs torch and torchvision", file=sys.stderr)
            return None
        models.update(loaders(torchvision))
    return models
