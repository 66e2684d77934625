"""The `rag-assets` command: its arguments (arguments.py) and the commands they run."""

from __future__ import annotations

import os
import signal
import sys
import warnings

from pydantic import ValidationError

from rag_assets.cli.arguments import build_parser
from rag_assets.errors import ConfigurationError
from rag_assets.retrieval.inputs import InvalidInput, one_line
from rag_assets.text.terminal import visible


def quiet_library_notices() -> None:
    """Dagster's notices that an API it offers is beta or preview (backfill_policy, ...) are for
    whoever changes this code, not for someone running a command: ignored, by category and
    module. Every other warning still shows; `dagster dev` keeps these ones."""
    # Where dagster defines them, without importing dagster itself (seconds, for `--help`).
    from dagster_shared.utils.warnings import BetaWarning, PreviewWarning

    for category in (BetaWarning, PreviewWarning):
        warnings.filterwarnings("ignore", category=category, module=r"dagster(\.|$)")


def main(argv: list[str] | None = None) -> int:
    quiet_library_notices()
    args = build_parser().parse_args(argv)
    try:
        code = args.func(args)
        sys.stdout.flush()
    except (InvalidInput, ValidationError) as error:
        # A value refused at the boundary: one line naming it, never a traceback.
        message = one_line(error) if isinstance(error, ValidationError) else str(error)
        print(f"rag-assets {args.command}: {visible(message)}", file=sys.stderr)
        return 2
    except ConfigurationError as error:
        # A setting or rag_collections.yaml the command cannot run with; the message names it.
        print(f"rag-assets {args.command}: {visible(str(error))}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader left early (`| head -1`): stop quietly, as Unix tools do, with the status of a
        # process ended by SIGPIPE. stdout goes to /dev/null so the flush at exit cannot fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    return code
