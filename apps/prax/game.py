"""The "teach the listeners a regex" game, UI-free: a target, label checks, and when each listener got it.

As in the paper's setting, the person (the speaker) knows the target program and the listeners do not. Like
upstream's demo page: the target is a random program, a label is checked against a full match of the target, and a
listener "gets it" when its top-1 guess is equivalent to the target as an automaton.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from apps.prax import dsl
from apps.prax.equivalence import equivalent
from shared.errors import UserInputError


@dataclass
class Game:
    target: str
    solved_after: dict[str, int] = field(default_factory=dict)  # listener role -> examples given when solved

    @classmethod
    def new(cls, seed: int | None = None, max_chars: int = 20) -> Game:
        rng = random.Random(seed)
        while True:
            target = dsl.sample_program(rng, max_chars=max_chars).render()
            if dsl.program_split(target) == "heldout":  # a regex our listeners never trained on
                return cls(target)

    def check_label(self, text: str, label: str) -> None:
        """Raise UserInputError when the person's label contradicts the target (upstream checks this too)."""
        dsl.check_string(text)
        truth = dsl.matches(self.target, text)
        if truth != (label == "+"):
            raise UserInputError(f"{text!r} {'does' if truth else 'does not'} match {self.target}, so it should be "
                                 f"labelled {'+' if truth else '-'}; the game only accepts true labels.")

    def record(self, role: str, top1: str | None, n_examples: int) -> bool:
        """Note whether ``role``'s top-1 guess is right now; the first success is kept. Returns success now."""
        ok = top1 is not None and equivalent(top1, self.target)
        if ok and role not in self.solved_after:
            self.solved_after[role] = n_examples
        return ok

    def status(self, roles: list[str]) -> str:
        parts = []
        for role in roles:
            n = self.solved_after.get(role)
            parts.append(f"{role}: got it after {n} example{'s' * (n != 1)}" if n else f"{role}: not yet")
        return "; ".join(parts)

    def to_dict(self) -> dict:
        return {"target": self.target, "solved_after": dict(self.solved_after)}

    @classmethod
    def from_dict(cls, data: dict | None) -> Game | None:
        return cls(data["target"], dict(data.get("solved_after", {}))) if data else None
