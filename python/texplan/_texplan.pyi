"""Type stubs of texplan's C++ module (python/src/texplan_py.cpp)."""
from os import PathLike
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

__version__: str

class Error(RuntimeError):
    """Every failure that is not a bad argument or a missing file, with a one-line message naming the model,
    node or tensor."""

class NodeArg:
    """A graph input or output as onnxruntime's NodeArg describes it."""

    @property
    def name(self) -> str:
        """the tensor's name in the model"""
    @property
    def shape(self) -> List[Union[int, str, None]]:
        """the declared shape: int, or str for a symbolic dimension, or None"""
    @property
    def type(self) -> str:
        """the ONNX type name, as onnxruntime gives it: 'tensor(float)', ..."""
    @property
    def dtype(self) -> np.dtype:
        """the numpy dtype an input must have (run() does not cast)"""

class Session:
    """A model imported with its weights, planned and ready to run on an OpenCL device."""

    def __init__(
        self,
        path: str,
        device: str = "pocl",
        strategy: str = "best",
        textures: str = "none",
        dims: Mapping[str, int] = ...,
        input_shapes: Mapping[str, Sequence[int]] = ...,
        cache_size: int = 4,
        precision: str = "fp32",
        patch: str = "off",
        program_cache: bool = True,
    ) -> None: ...
    def run(self, inputs: Union[Mapping[str, npt.ArrayLike], Sequence[npt.ArrayLike]]) -> Dict[str, np.ndarray]:
        """Runs the model: {output name: numpy array}; inputs must have the model's dtypes (TypeError) and
        shapes (ValueError)."""
    def get_inputs(self) -> List[NodeArg]:
        """The model's inputs as NodeArgs, in input order."""
    def get_outputs(self) -> List[NodeArg]:
        """The model's outputs as NodeArgs, in output order."""
    @property
    def model(self) -> str:
        """the model's name"""
    @property
    def strategy(self) -> str:
        """the planning strategy"""
    @property
    def inputs(self) -> List[Dict[str, Any]]:
        """[{name, shape, dtype}] as the model declares them (None for a symbolic dimension)"""
    @property
    def outputs(self) -> List[Dict[str, Any]]:
        """[{name, shape, dtype}] of the last specialization run"""
    @property
    def device(self) -> str:
        """the OpenCL device's name"""
    @property
    def lower_bound_bytes(self) -> int:
        """the least activation memory any plan of the current specialization needs"""
    @property
    def plan_bytes(self) -> int:
        """the activation bytes of the current specialization's plan"""
    @property
    def activation_bytes(self) -> int:
        """device bytes of the memory pools the current specialization allocated"""
    @property
    def weight_bytes(self) -> int:
        """device bytes of the uploaded weights and constants"""
    @property
    def last_run_ms(self) -> float:
        """wall time of the last run in ms, transfers included"""
    @property
    def fallback_nodes(self) -> List[str]:
        """nodes that run on the CPU reference, 'name (op)'"""
    @property
    def compilations(self) -> int:
        """how many specializations were planned so far"""
    @property
    def specializations(self) -> List[Dict[str, Any]]:
        """the cached specializations, most recently used first"""

def plan(
    path: str,
    strategy: str = "best",
    target: str = "pocl",
    textures: str = "none",
    tensors: bool = True,
    patch: str = "off",
    precision: str = "fp32",
) -> Dict[str, Any]:
    """Plans the activation memory of a model and returns the report of `texplan plan --json` as a dict."""

def timeline(report: Dict[str, Any], path: str) -> None:
    """Draws a plan() report (made with tensors=True) as a .svg or self-contained .html picture."""

def load_tensor(path: str) -> np.ndarray:
    """Reads a serialized onnx.TensorProto (.pb) into a numpy array."""

def save_tensor(array: np.ndarray, name: str, path: str) -> None:
    """Writes a numpy array as a serialized onnx.TensorProto."""

def devices() -> List[Dict[str, Any]]:
    """Lists the OpenCL devices with the planner's profile of each."""
