"""`arbrun --trace` timelines, read with tools/plot-trace.py's own parser (imported, not copied)."""
import importlib.util
import os

from . import stats

_TOOL = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                      "tools", "plot-trace.py"))
_module = None


def plot_trace_module():
    """tools/plot-trace.py as a module (its read_trace() and series())."""
    global _module
    if _module is None:
        spec = importlib.util.spec_from_file_location("arbrun_plot_trace", _TOOL)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {_TOOL}")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        _module = mod
    return _module


def read_trace(path):
    """Rows (time, event, core, cpu, value); raises ValueError on a malformed trace."""
    return plot_trace_module().read_trace(path)


def cores_held(path, offset_s=0.0):
    """The cores a process held over time as step points [(t, cores)], t shifted by offset_s
    (the process's start on the caller's clock). [] when the trace is missing or empty; a
    malformed trace raises ValueError."""
    if not path or not os.path.isfile(path) or os.path.getsize(path) == 0:
        return []
    rows = read_trace(path)
    if not rows:
        return []
    (held_t, held_v), _req, _util = plot_trace_module().series(rows)
    points = [(t + offset_s, v) for t, v in zip(held_t, held_v)]
    # The process is gone after its last row: it holds nothing from then on.
    points.append((rows[-1][0] + offset_s, 0))
    return points


def summary(points):
    """(average cores over the process's life, peak cores) of cores_held() points."""
    if len(points) < 2:
        return None, None
    start, end = points[0][0], points[-1][0]
    avg = stats.step_average(points, start, end) if end > start else None
    return avg, max(v for _, v in points)
