"""Where the scheduler may put a replacement: every node that can win one of its cycles.

A cycle scores the feasible nodes it found and takes the best. At scale it stops filtering once
it has `nodes_to_find` feasible nodes (percentageOfNodesToScore; the chart's 0 is upstream's
adaptive share), starting where the last cycle stopped: the nodes it scores are `sample`
consecutive feasible nodes in the cluster's node order, wrapping round, from a start the
rebalancer cannot know. So a node may receive the replacement when some such window holds it and
nothing that outscores it; a move is only as safe as the worst of those nodes.

The scores are the profile's over all feasible nodes; a cycle normalises over its own sample, so
near-ties within a window can order otherwise (the load margin does not cover that; the
optional `scoreMargin` against the source does).
"""

from __future__ import annotations


def possible_winners(scores: list[int], sample: int) -> set[int]:
    """Indexes (into `scores`, the feasible nodes in node order) of the nodes that are best
    (ties included) in some window of `sample` consecutive nodes, wrapping round."""
    n = len(scores)
    if n == 0:
        return set()
    if sample >= n:
        best = max(scores)
        return {i for i, s in enumerate(scores) if s == best}
    # Node i wins a window when the run of nodes around it scoring no more than it (cyclic)
    # is at least `sample` long: the nearest strictly greater node on each side bounds it.
    left = _reach(scores, range(n))
    right = _reach(scores, range(n - 1, -1, -1))
    return {i for i in range(n) if left[i] + right[i] + 1 >= sample}


def _reach(scores: list[int], order: range) -> list[int]:
    """For each node, how many nodes before it (in `order`, wrapping round) in a row score no
    more than it, capped at n - 1."""
    n = len(scores)
    reach = [0] * n
    stack: list[tuple[int, int]] = []  # (position in the doubled walk, node), scores decreasing
    walk = [*order, *order]
    for pos, i in enumerate(walk):
        while stack and scores[stack[-1][1]] <= scores[i]:
            stack.pop()
        if pos >= n:
            reach[i] = min(n - 1, pos - stack[-1][0] - 1) if stack else n - 1
        stack.append((pos, i))
    return reach
