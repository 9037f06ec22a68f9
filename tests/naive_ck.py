"""Brute-force oracle for (c,k)-safety (Martin et al., ICDE 2007): stdlib + Fraction only.

A release is a list of buckets, each a list of sensitive values; people are numbered
consecutively across buckets (bucket 0 holds people ``0..n_0-1``, bucket 1 the next
``n_1``, …), exactly like the ``martin`` vectors.

The oracle enumerates **every table consistent with the bucketization** (all distinct
assignments of each bucket's multiset to its people; distinct assignments are equally likely
because each one stands for the same number ∏ #x! of bijections) and, for the maximum
disclosure, **every set of ≤ k simple implications A_i → A** with a common consequent A
(Theorem 9 says these suffice) or every set of ≤ k negated atoms. Nothing here uses Lemma 12
or MINIMIZE1/2, so it shares no reasoning with the kernels.

Speed: worlds are bit positions and every atom is a Python int bitset over the worlds, so a
conditional probability is a few big-int ANDs and popcounts. The enumeration of knowledge
sets prunes only *exact* symmetries: people of a bucket are exchangeable, so the consequent's
person is the first person of its bucket, and the other people used by the antecedents of
each bucket form a prefix (in person order) of the remaining people of that bucket.
"""

from __future__ import annotations

from fractions import Fraction
from itertools import permutations

__all__ = [
    "World",
    "probability",
    "implication_disclosure",
    "negation_disclosure",
    "max_disclosure_implications",
    "max_disclosure_negations",
]


def _distinct_perms(values):
    return sorted(set(permutations(values)))


class World:
    """All tables consistent with ``buckets``, as bitsets over the enumerated worlds."""

    def __init__(self, buckets):
        self.buckets = [list(b) for b in buckets]
        self.bucket_of = []
        self.first = []
        start = 0
        for b, vals in enumerate(self.buckets):
            self.first.append(start)
            self.bucket_of.extend([b] * len(vals))
            start += len(vals)
        self.n_people = start
        per_bucket = [_distinct_perms(vals) for vals in self.buckets]
        rows = [()]
        for perms in per_bucket:
            rows = [r + p for r in rows for p in perms]
        self.n_worlds = len(rows)
        self.all = (1 << self.n_worlds) - 1
        bits = {}
        for w, row in enumerate(rows):
            for person, value in enumerate(row):
                bits[(person, value)] = bits.get((person, value), 0) | (1 << w)
        self._bits = bits

    def bits(self, person, value):
        """Bitset of the worlds where ``t_person[S] = value``."""
        return self._bits.get((person, value), 0)

    def count(self, bits):
        return bits.bit_count()


def _formula_bits(world, item):
    kind = item[0]
    if kind == "not":
        _, p, v = item
        return world.all & ~world.bits(p, v)
    if kind == "implies":
        _, (p, v), (q, w) = item
        return (world.all & ~world.bits(p, v)) | world.bits(q, w)
    if kind == "atom":
        _, p, v = item
        return world.bits(p, v)
    raise ValueError(f"unknown knowledge item {item!r}")


def probability(buckets, target, knowledge=(), world=None):
    """Pr(target | B ∧ knowledge) as a Fraction; None when the knowledge is inconsistent.

    ``target`` is ``(person, value)``; ``knowledge`` items are ``("not", p, v)``,
    ``("implies", (p, v), (q, w))`` or ``("atom", p, v)``.
    """
    world = world or World(buckets)
    mask = world.all
    for item in knowledge:
        mask &= _formula_bits(world, item)
    den = world.count(mask)
    if den == 0:
        return None
    return Fraction(world.count(mask & world.bits(*target)), den)


def implication_disclosure(buckets, consequent, antecedents, world=None):
    """Pr(A | B ∧ ∧_i (A_i → A)) for A = ``consequent`` (person, value)."""
    world = world or World(buckets)
    a = world.bits(*consequent)
    rest = world.all & ~a
    for p, v in antecedents:
        rest &= ~world.bits(p, v)
    ca = world.count(a)
    if ca == 0:
        return Fraction(0)
    return Fraction(ca, ca + world.count(rest))


def negation_disclosure(buckets, target, negated, world=None):
    """Pr(target | B ∧ ∧_i ¬N_i); None when the negations are inconsistent."""
    return probability(buckets, target, [("not", p, v) for p, v in negated], world)


def _atoms_for(world, consequent_person):
    """Candidate knowledge atoms (person, value) in canonical order, per person."""
    out = []
    for p in range(world.n_people):
        b = world.bucket_of[p]
        for v in sorted(set(world.buckets[b]), key=repr):
            out.append((p, v))
    return out


def _enumerate_sets(world, k, a_person, atoms, visit):
    """Call ``visit(chosen, survivors_fn)`` for canonical sets of ≤ k atoms (DFS).

    Canonical = in every bucket, the people used (other than ``a_person``) are a prefix of
    that bucket's people (skipping ``a_person``). Exact symmetry reduction.
    """
    n_b = len(world.buckets)

    def allowed(person, used_next):
        b = world.bucket_of[person]
        if person == a_person:
            return True
        return person <= used_next[b]

    def next_free(b, after):
        # smallest person of bucket b greater than `after`, skipping a_person
        p = after + 1
        if p == a_person:
            p += 1
        return p

    init_next = []
    for b in range(n_b):
        p = world.first[b]
        if p == a_person:
            p += 1
        init_next.append(p)

    def dfs(start, chosen, used_next):
        if visit(chosen) is True:
            return True
        if len(chosen) == k:
            return False
        for idx in range(start, len(atoms)):
            person, value = atoms[idx]
            if not allowed(person, used_next):
                continue
            b = world.bucket_of[person]
            new_next = used_next
            if person != a_person and person == used_next[b]:
                new_next = list(used_next)
                new_next[b] = next_free(b, person)
            if dfs(idx + 1, chosen + [(person, value)], new_next):
                return True
        return False

    dfs(0, [], init_next)


def max_disclosure_implications(buckets, k):
    """Exact max over A and ≤ k simple implications A_i → A of Pr(A | B ∧ ∧(A_i → A)).

    Returns ``(value, consequent, antecedents)`` with atoms as (global person, value).
    """
    world = World(buckets)
    best = [Fraction(-1), None, None]
    for b, vals in enumerate(world.buckets):
        a_person = world.first[b]
        for a_value in sorted(set(vals), key=repr):
            a = world.bits(a_person, a_value)
            ca = world.count(a)
            not_a = world.all & ~a
            atoms = [at for at in _atoms_for(world, a_person) if at != (a_person, a_value)]

            def visit(chosen, a=a, ca=ca, not_a=not_a, a_value=a_value, a_person=a_person):
                rest = not_a
                for p, v in chosen:
                    rest &= ~world.bits(p, v)
                val = Fraction(ca, ca + world.count(rest))
                if val > best[0]:
                    best[:] = [val, (a_person, a_value), list(chosen)]
                return val == 1  # cannot do better than 1: stop

            _enumerate_sets(world, k, a_person, atoms, visit)
            if best[0] == 1:
                return tuple(best)
    return tuple(best)


def max_disclosure_negations(buckets, k):
    """Exact max over A and ≤ k consistent negated atoms ¬N_i of Pr(A | B ∧ ∧¬N_i).

    Returns ``(value, target, negated)``.
    """
    world = World(buckets)
    best = [Fraction(-1), None, None]
    for b, vals in enumerate(world.buckets):
        a_person = world.first[b]
        for a_value in sorted(set(vals), key=repr):
            a = world.bits(a_person, a_value)
            atoms = [at for at in _atoms_for(world, a_person) if at != (a_person, a_value)]

            def visit(chosen, a=a, a_value=a_value, a_person=a_person):
                mask = world.all
                for p, v in chosen:
                    mask &= ~world.bits(p, v)
                den = world.count(mask)
                if den == 0:
                    return False
                val = Fraction(world.count(mask & a), den)
                if val > best[0]:
                    best[:] = [val, (a_person, a_value), list(chosen)]
                return val == 1

            _enumerate_sets(world, k, a_person, atoms, visit)
            if best[0] == 1:
                return tuple(best)
    return tuple(best)
