"""Devices prepared at once: in-order steps stay in order, the first named failure is told."""

from __future__ import annotations

import threading
import time

import pytest

from pytest_ssd.device.in_order import Order, each, prepare


def test_the_error_told_is_the_first_items_not_the_first_to_happen() -> None:
    def step(item: float, _: Order) -> float:
        time.sleep(item)
        if item < 0.3:
            raise ValueError(f"failed after {item}")
        return item

    with pytest.raises(ValueError, match=r"failed after 0\.2"):
        prepare([0.4, 0.2, 0.0], step)  # 0.0 fails first; 0.2 is the first named that failed


def test_turns_are_taken_in_order_and_a_failed_item_lets_the_later_ones_go() -> None:
    taken: list[int] = []
    lock = threading.Lock()

    def step(item: int, order: Order) -> int:
        time.sleep(0.05 * (5 - item))  # the last named is ready first
        if item == 2:
            raise ValueError("no turn")
        with order.locking.turn(order.index), lock:
            taken.append(item)
        return item

    with pytest.raises(ValueError, match="no turn"):
        prepare(list(range(5)), step)
    assert taken == [0, 1, 3, 4]


def test_results_come_in_order() -> None:
    assert each([3, 1, 2], lambda n: (time.sleep(0.01 * n), n * 10)[1]) == [30, 10, 20]
