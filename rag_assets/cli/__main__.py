"""`python -m rag_assets.cli`: the `rag-assets` command."""

import sys

from rag_assets.cli import main

sys.exit(main())
