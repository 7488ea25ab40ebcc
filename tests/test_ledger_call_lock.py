"""`chain up`'s lock: waiting writes go first, then plain reads, then simulated calls, each first come first served;
and the gas meter ends a simulated call early only while a write or a read waits."""

from __future__ import annotations

import threading
import time

import pytest

from fedtopic.ledger.call_guard import READ, SIMULATED, WRITE, WritesFirstLock


def test_waiters_are_served_by_level_then_in_arrival_order():
    lock, order = WritesFirstLock(), []
    arrivals = [(SIMULATED, "s1"), (READ, "r1"), (SIMULATED, "s2"), (WRITE, "w1"), (READ, "r2"), (WRITE, "w2")]

    def wait(level: int, name: str) -> None:
        with lock.hold(level):
            order.append(name)

    with lock.hold(READ):  # held while everyone queues
        threads = []
        for level, name in arrivals:
            threads.append(threading.Thread(target=wait, args=(level, name)))
            threads[-1].start()
            time.sleep(0.05)  # arrival order
        assert lock.waiting_ahead_of_simulated()
    for t in threads:
        t.join(10)
    assert order == ["w1", "w2", "r1", "r2", "s1", "s2"]
    assert not lock.waiting_ahead_of_simulated()


@pytest.mark.parametrize("others_wait", [False, True])
def test_a_simulated_call_yields_only_while_others_wait(others_wait):
    from eth.vm.gas_meter import GasMeter

    from fedtopic.ledger import call_guard

    call_guard.install()
    meter = GasMeter(10**12)
    with call_guard.time_capped(1.0, lambda: others_wait):
        time.sleep(call_guard.PREEMPT_AFTER_S + 0.05)
        if others_wait:
            with pytest.raises(call_guard.CallTimeExceeded, match=call_guard.YIELDED):
                meter.consume_gas(1, "a step")
        else:
            meter.consume_gas(1, "a step")
