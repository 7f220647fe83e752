# Writes tests/fixtures/grid_sample/cases.json: PyTorch's grid_sample (what
# exporters write as ONNX GridSample) on one X and one grid, for every mode,
# padding and align_corners that texplan runs; test_grid_sample.cpp checks
# the reference and the kernel against these values.
#   /usr/bin/python3 scripts/grid_sample_cases.py      (Debian's python3-torch)
import json, os
import torch
import torch.nn.functional as F

torch.manual_seed(0)
x = torch.randn(2, 3, 5, 6)
grid = torch.rand(2, 4, 7, 2) * 2.8 - 1.4  # past the edges on every side
grid[0, 0, 0] = torch.tensor([-1.0, 1.0])  # the corners themselves
grid[0, 0, 1] = torch.tensor([1.0, -1.0])
cases = []
for mode in ("bilinear", "nearest"):
    for padding in ("zeros", "border", "reflection"):
        for align in (0, 1):
            y = F.grid_sample(x, grid, mode=mode, padding_mode=padding, align_corners=bool(align))
            cases.append({"mode": mode, "padding_mode": padding, "align_corners": align,
                          "y": y.flatten().tolist()})
out = {"x_shape": list(x.shape), "x": x.flatten().tolist(),
       "grid_shape": list(grid.shape), "grid": grid.flatten().tolist(),
       "y_shape": [2, 3, 4, 7], "cases": cases, "torch": torch.__version__}
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "..", "tests", "fixtures", "grid_sample", "cases.json"), "w") as f:
    json.dump(out, f)
print(len(cases), "cases")
