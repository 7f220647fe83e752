"""Type stubs of texplan.InferenceSession (python/texplan/_inference.py)."""
from os import PathLike
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

from ._texplan import NodeArg, Session

class InferenceSession:
    """A model ready to run, called as onnxruntime.InferenceSession is."""

    def __init__(
        self,
        path: Union[str, "PathLike[str]"],
        sess_options: None = None,
        providers: Optional[Sequence[Union[str, Tuple[str, Dict[str, Any]]]]] = None,
        provider_options: None = None,
        *,
        device: Optional[str] = None,
        **options: Any,
    ) -> None: ...
    def get_inputs(self) -> List[NodeArg]:
        """The model's inputs as NodeArgs (name, shape, type), in the order run() takes them."""
    def get_outputs(self) -> List[NodeArg]:
        """The model's outputs as NodeArgs, in the order run(None, ...) returns them."""
    def get_providers(self) -> List[str]:
        """The device the session runs on, as a one-element list."""
    @property
    def session(self) -> Session:
        """The texplan.Session underneath."""
    def run(
        self, output_names: Optional[Sequence[str]], input_feed: Dict[str, npt.ArrayLike], run_options: None = None
    ) -> List[np.ndarray]:
        """Runs the model; returns the outputs named in output_names (None: all) as a list, in that order."""
