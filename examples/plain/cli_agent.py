"""A command-line agent for ``chaoskit run --agent "python examples/plain/cli_agent.py --task {task}"``.

The protocol (see docs/scenarios.md): the runner sets ``CHAOSKIT_PLAN`` (the episode's fault plan, which
``@chaos`` tools pick up), ``CHAOSKIT_TRACES_FILE`` (where chaoskit writes this process's spans) and
``TRACEPARENT`` (so the spans join the runner's trace). The agent opens one ``chaoskit.episode`` (its root
span carries the final output) and prints the final answer on stdout; logs go to stderr. A non-zero exit
is reported as a crashed episode.

``--mode crash`` exits with an error after the first tool call and ``--mode hang`` never answers (both for
testing how the runner reports broken agents).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import chaoskit
from examples.plain.agents import PlainAgent


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--task", required=True)
    p.add_argument("--policy", choices=("careful", "naive"), default="careful")
    p.add_argument("--mode", choices=("normal", "crash", "hang"), default="normal")
    args = p.parse_args(argv)
    agent = PlainAgent(args.policy)
    with chaoskit.episode(os.environ.get("CHAOSKIT_SCENARIO", "cli-agent")) as ep:
        if args.mode == "hang":
            agent.env.lookup_order("4832")
            time.sleep(3600)
        if args.mode == "crash":
            agent.env.lookup_order("4832")
            raise SystemExit("cli_agent: simulated crash")
        output = agent.invoke(args.task)
        ep.finish(output)
    print(output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
