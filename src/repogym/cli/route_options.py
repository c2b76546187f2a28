"""`repogym eval`'s routing options (--route, --by, --threshold, --verifier, --price, --endpoint): declared once, here, and
read into a `repogym.evaluate.routing.Route`; the verifier, which `evaluate` may not import, is loaded here."""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Annotated

import typer

from repogym.cli.attempt_options import AttemptOptions
from repogym.cli.options import OptionGroup
from repogym.errors import ConfigError
from repogym.evaluate.routing import (
    ROUTE_KEYS,
    Route,
    check_threshold,
    parse_endpoint,
    parse_predictor,
    parse_price,
    parse_route,
)
from repogym.verifier.score import check_diff_verifier, load_verifier, score_attempts

DEFAULT_THRESHOLD = 0.5


@dataclass(frozen=True)
class RouteOptions(OptionGroup):
    """Route each task to a small or a large policy by a predicted risk that the small one fails."""

    route: Annotated[
        str,
        typer.Option(
            "--route",
            help="small=P1,large=P2: evaluate both policies (each as --policy takes it), then send each task to "
            "the small one unless --by predicts it fails (replaces --policy; needs -n 1).",
        ),
    ] = ""
    by: Annotated[
        str,
        typer.Option(
            "--by",
            help="With --route, what predicts the small policy's failure: difficulty (from the task alone; the "
            "default) or verifier:V (the verifier in folder V judges the small policy's attempt).",
        ),
    ] = ""
    threshold: Annotated[
        float | None,
        typer.Option(
            "--threshold",
            help="With --route, in [0, 1]: the small policy keeps tasks whose risk is below it (0: all to the "
            f"large one; 1: all kept). Default {DEFAULT_THRESHOLD}.",
        ),
    ] = None
    verifier: Annotated[
        str,
        typer.Option(
            "--verifier", help="With --route --by verifier: the verifier folder (= --by verifier:V)."
        ),
    ] = ""
    price: Annotated[
        list[str] | None,
        typer.Option(
            "--price",
            help="With --route, KEY=IN/OUT: a policy's price per 1M input and output tokens, e.g. large=2.5/10 "
            "(repeatable; the curve then shows money).",
        ),
    ] = None
    endpoint: Annotated[
        list[str] | None,
        typer.Option(
            "--endpoint",
            help="With --route, KEY=URL: an openai: policy's own endpoint in place of --base-url, e.g. "
            "large=https://api.example.com/v1 (repeatable: two endpoints, one per policy).",
        ),
    ] = None

    def parsed(self, attempts: AttemptOptions) -> Route | None:
        """The route these options give (its verifier not yet loaded: `with_verifier`), None without --route;
        every bad value raises a ConfigError naming its option."""
        if not self.route:
            given = [name for name, value in self._extras().items() if value]
            if given:
                raise ConfigError(f"{given[0]}: only with --route small=P1,large=P2")
            return None
        policies = parse_route(self.route)
        if attempts.policy:
            raise ConfigError(f"--policy {attempts.policy}: --route names the policies; drop --policy")
        by, folder = parse_predictor(self.by or "difficulty", self.verifier)
        threshold = check_threshold(DEFAULT_THRESHOLD if self.threshold is None else self.threshold)
        prices = dict(parse_price(text) for text in self.price or [])
        endpoints = dict(parse_endpoint(text) for text in self.endpoint or [])
        for key, url in endpoints.items():
            if not policies[key].startswith("openai:"):
                raise ConfigError(
                    f"--endpoint {key}={url}: the {key} policy is {policies[key]!r}; only an openai: policy has an "
                    "endpoint"
                )
        small, large = (
            dataclasses.replace(
                attempts.policy_config(policies[key]),
                price=prices.get(key),
                base_url=endpoints.get(key, attempts.base_url),
            )
            for key in ROUTE_KEYS
        )
        return Route(small, large, by, threshold, folder)

    def _extras(self) -> dict[str, object]:
        return {"--by": self.by, "--threshold": self.threshold is not None, "--verifier": self.verifier,
                "--price": self.price, "--endpoint": self.endpoint}  # fmt: skip


def with_verifier(route: Route) -> Route:
    """The route with its verifier loaded, where it routes by one (a bad folder fails here, before any attempt)."""
    if not route.verifier:
        return route
    key = "--by verifier:V"
    verifier = check_diff_verifier(load_verifier(route.verifier, key=key), key)  # it judges a diff alone
    return dataclasses.replace(route, verifier_scores=functools.partial(score_attempts, verifier))
