"""The settings a command runs with: the environment's, with the files' --template and
--parser over them."""

from __future__ import annotations

import argparse

from rag_assets.settings import Settings


def command_settings(args: argparse.Namespace) -> Settings:
    settings = Settings.from_env(args.data_dir)
    overrides = {f"force_{k}": getattr(args, k, None) for k in ("template", "parser")}
    return settings.model_copy(update={k: v for k, v in overrides.items() if v})
