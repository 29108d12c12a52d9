"""What a voter going away and coming back looks like in the other nodes' logs (issue 29: logs an
operator can alert on). A voter that is down while the quorum holds is normal operation: no
ERROR line on any node, and each change of a peer's reachability is one line (WARN when a peer
that answered stops, INFO when it answers again), not one per retry. openraft reports every
failed leadership check and vote request itself (several a second); Frieda leaves those out
(logging.rs) and says it once (frieda_meta::network)."""

from __future__ import annotations

import re
import time

DOWN_S = 8


def lines(node, pattern: str) -> list[str]:
    return [l for l in node.text().splitlines() if re.search(pattern, l)]


def test_a_voter_down_and_back_is_one_warning_and_no_error(cluster):
    c = cluster(3)
    ctrl = c.controller()
    victim = next(i for i in c.nodes if i != ctrl)
    others = [i for i in c.nodes if i != victim]
    time.sleep(1)
    c.kill(victim)
    time.sleep(DOWN_S)  # openraft checks leadership several times a second meanwhile
    c.start(victim)
    time.sleep(3)
    c.assert_alive()
    for i in others:
        node = c.node(i)
        errors = lines(node, r" ERROR ")
        assert not errors, f"node {i} logged ERROR lines while voter {victim} was down:\n" + "\n".join(errors[:10])
        lost = lines(node, rf"WARN .*quorum peer does not answer.*node={victim}\b")
        assert len(lost) <= 1, f"node {i}: more than one warning for one outage:\n" + "\n".join(lost)
    # The active controller (the Raft leader) replicates to the victim, so it saw the change
    # both ways, once each.
    leader = c.node(ctrl)
    assert len(lines(leader, rf"WARN .*quorum peer does not answer.*node={victim}\b")) == 1, leader.tail(60)
    assert len(lines(leader, rf"INFO .*quorum peer answers again node={victim}\b")) == 1, leader.tail(60)
