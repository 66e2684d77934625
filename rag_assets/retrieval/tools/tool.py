"""A typed tool as one declaration: its arguments, its description, the function and how its
results read, for the model (numbered sources to cite) and for a person (`rag-assets NAME`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from rag_assets.retrieval.tools.toolbox import Source, Toolbox

Result = TypeVar("Result", bound=BaseModel)


class Found(BaseModel):
    """One result as a numbered source for the model: its text, what it is, its chunk."""

    text: str
    kind: str
    source: Source


def nothing_found(_: BaseModel) -> str:
    return "nothing found"


@dataclass(frozen=True)
class Tool(Generic[Result]):
    name: str  # as the model calls it; the subcommand writes `_` as `-`
    description: str  # for the model, and the subcommand's --help
    summary: str  # the subcommand's line in `rag-assets --help`
    arguments: type[BaseModel]  # what the model may pass (its function's parameters)
    function: Callable[..., list[Result]]  # (box, **options)
    show: Callable[[Result], str]  # one result as the subcommand prints it
    found: Callable[[Result], list[Found]]  # one result as sources for the model
    # The arguments plus what only a person sets on the command line (`--top-k`); None: the same.
    options: type[BaseModel] | None = None
    nothing: Callable[[Any], str] = nothing_found  # what the subcommand says for no result

    @property
    def command(self) -> str:
        return self.name.replace("_", "-")

    @property
    def accepted(self) -> type[BaseModel]:
        """What `call` validates: the options, else the model's arguments."""
        return self.options or self.arguments

    def spec(self) -> dict:
        """The tool as an OpenAI function definition."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.arguments.model_json_schema(),
            },
        }

    def run(self, box: Toolbox, options: BaseModel) -> list[Result]:
        return self.function(box, **dict(options))

    def call(self, box: Toolbox, values: dict[str, Any]) -> list[Result]:
        """The results for `values`, validated as options (ValidationError names what is wrong)."""
        return self.run(box, self.accepted.model_validate(values))

    def sources(self, box: Toolbox, values: dict[str, Any]) -> list[Found]:
        return [found for result in self.call(box, values) for found in self.found(result)]
