"""The judge from command-line options (``--judge`` or ``--judge-url``), and the calibration it needs to gate."""

from __future__ import annotations

import math
from typing import Any

from chaoskit._errors import ChaoskitError
from chaoskit.judge._ask import Judge
from chaoskit.judge._calibrate import check_calibration
from chaoskit.judge._judge_models import OpenAIEndpoint, load_model
from chaoskit.metrics._cost import load_prices

__all__ = ["make_judge", "may_gate"]


def make_judge(
    spec: str | None,
    url: str | None,
    *,
    model: str | None = None,
    timeout: float = 60.0,
    cache_dir: str | None = None,
    cache: bool = True,
    prices: str | None = None,
    flag: str = "--judge",
) -> Judge | None:
    """The judge named by ``--judge MODULE:OBJECT`` or ``--judge-url URL`` (with ``--judge-model NAME``);
    None when neither is given. Bad options are a :class:`ChaoskitError` naming the flag."""
    if spec and url:
        raise ChaoskitError(f"give {flag} MODULE:OBJECT or {flag}-url URL, not both")
    if not spec and not url:
        if model:
            raise ChaoskitError(f"{flag}-model needs {flag} MODULE:OBJECT or {flag}-url URL")
        return None
    if not (isinstance(timeout, int | float) and math.isfinite(timeout) and timeout > 0):
        raise ChaoskitError(f"{flag}-timeout must be a number of seconds > 0, got {timeout!r}")
    chat = OpenAIEndpoint(url, model) if url else load_model(str(spec))
    return Judge(
        chat,
        timeout=timeout,
        cache_dir=cache_dir,
        cache=cache,
        prices=load_prices(prices) if prices else None,
        # with --judge, --judge-model names the model (in the cache key and the calibration)
        name=model if spec else None,
    )


def may_gate(judge: Judge | None, min_kappa: float | None, calibration: str | None, *, flag: str = "--judge") -> Any:
    """The judge's calibration, checked, or None. With ``--judge-min-kappa K`` the judge gates, and then only on
    a calibration file showing this judge reached kappa K on a labelled corpus (see :func:`check_calibration`);
    anything short of that is a :class:`ChaoskitError`, never a silent pass. A calibration given without K
    must still be this judge's: it corrects the judge's pass rate for the errors it was measured to make. The
    data is also set as ``judge.calibration``."""
    if calibration is not None and judge is None:
        raise ChaoskitError(f"{flag}-calibration needs {flag} or {flag}-url")
    if min_kappa is None:
        if judge is not None and calibration is not None:
            judge.calibration = check_calibration(calibration, judge.name, -1.0)
            return judge.calibration
        return None
    if judge is None:
        raise ChaoskitError(f"{flag}-min-kappa needs {flag} MODULE:OBJECT or {flag}-url URL")
    if not (math.isfinite(min_kappa) and -1.0 <= min_kappa <= 1.0):
        raise ChaoskitError(f"{flag}-min-kappa must be a kappa from -1 to 1 (e.g. 0.8), got {min_kappa:g}")
    if calibration is None:
        raise ChaoskitError(
            f"{flag}-min-kappa {min_kappa:g}: refusing to gate on judge {judge.name!r} without a calibration: give "
            f"{flag}-calibration FILE, written by: chaoskit judge calibrate --labels CORPUS --judge ... --out FILE"
        )
    judge.calibration = check_calibration(calibration, judge.name, min_kappa)
    return judge.calibration
