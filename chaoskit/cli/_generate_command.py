"""``chaoskit generate``: seeded synthetic trajectories (models x architectures x horizons) to try the metrics on."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from chaoskit._errors import ChaoskitError

_EPILOG = """\
Each trajectory is a made-up agent bringing N items to their target values (a lookup and an update per
item: a horizon of H steps has (H-1)//2 items), through real @chaos tools under a seeded fault plan. No model
is called and no figure describes a real model. The same arguments write the same bytes.

  chaoskit generate --out gen.json                          # trajectory JSON (chaoskit.metrics.read_trajectories)
  chaoskit generate --format otlp --out gen.jsonl           # OTLP-JSON Lines (chaoskit check, read_steps)
  chaoskit generate --models small=0.6,large=0.9 --architectures react,reflexion --horizons 10,30 --tasks 5
"""


def _names(text: str) -> list[str]:
    items = [t.strip() for t in text.split(",")]
    if not items or any(not t for t in items):
        raise argparse.ArgumentTypeError(f"expected names separated by commas, got {text!r}")
    return items


def _ints(text: str) -> list[int]:
    try:
        return [int(t) for t in _names(text)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected whole numbers separated by commas, got {text!r}") from None


def add_parser(sub: Any) -> None:
    """Register ``chaoskit generate`` on the ``sub`` subparsers."""
    g = sub.add_parser(
        "generate",
        help="write seeded synthetic trajectories (models x architectures x horizons) to try the metrics on",
        description="Write seeded synthetic agent trajectories, in the benchmark's trajectory JSON or as "
        "OTLP-JSON Lines, for trying chaoskit's metrics without an LLM.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    g.add_argument("--out", required=True, metavar="FILE", help="where to write them")
    g.add_argument(
        "--format",
        choices=("trajectory", "otlp"),
        default="trajectory",
        help="trajectory: the benchmark's JSON (task, steps with reasoning, tool calls, outputs); otlp: "
        "OTLP-JSON Lines, one episode a line, as chaoskit run --traces writes (default trajectory)",
    )
    g.add_argument(
        "--models",
        type=_names,
        default=["model-a", "model-b"],
        metavar="M[=SKILL],...",
        help="model names, each with an optional skill from 0 to 1 (default: drawn from the seed and the "
        "name); the lower, the more mistakes (default model-a,model-b)",
    )
    g.add_argument(
        "--architectures",
        type=_names,
        default=["react", "reflexion", "plan-execute"],
        metavar="A,...",
        help="react, reflexion, plan-execute (default all three)",
    )
    g.add_argument(
        "--horizons", type=_ints, default=[10, 20, 30], metavar="H,...", help="steps per task (default 10,20,30)"
    )
    g.add_argument("--tasks", type=int, default=3, help="tasks per model, architecture and horizon (default 3)")
    g.add_argument(
        "--fault-rate",
        type=float,
        default=0.1,
        help="probability that a tool call fails (an HTTP 503 or a reset connection; default 0.1)",
    )
    g.add_argument("--seed", type=int, default=0, help="the seed: the same seed writes the same bytes (default 0)")
    g.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Write the trajectories; exit 0, or 2 on a usage error."""
    from chaoskit.metrics._synthetic import generate, parse_model, write_generated

    if not str(args.out).strip():
        raise ChaoskitError("--out is empty: give the file to write")
    models = [parse_model(m, args.seed) for m in args.models]
    made = generate(
        models=models,
        architectures=args.architectures,
        horizons=args.horizons,
        tasks=args.tasks,
        fault_rate=args.fault_rate,
        seed=args.seed,
    )
    meta = {
        "command": "chaoskit generate",
        "models": {m.name: m.skill for m in models},
        "architectures": list(args.architectures),
        "horizons": list(args.horizons),
        "tasks": args.tasks,
        "fault_rate": args.fault_rate,
        "seed": args.seed,
        "note": "synthetic: no model was called; these figures describe no real model",
    }
    write_generated(made, args.out, args.format, meta)
    passed = sum(1 for g in made if g.trajectory["success"])
    print(f"chaoskit generate: {len(made)} trajectories ({passed} succeeded) written to {args.out} ({args.format})")
    sys.stdout.flush()
    return 0
