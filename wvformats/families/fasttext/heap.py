"""libstdc++'s heap algorithms as fastText's predictions use them (``std::push_heap``, ``std::pop_heap``,
``std::sort_heap`` with ``comparePairs``): where scores tie, the order they leave is the peer's."""

from __future__ import annotations


def _less(a: tuple[float, int], b: tuple[float, int]) -> bool:
    return a[0] > b[0]


def _sift_up(heap: list, hole: int, top: int, value: tuple[float, int]) -> None:
    parent = (hole - 1) // 2
    while hole > top and _less(heap[parent], value):
        heap[hole] = heap[parent]
        hole = parent
        parent = (hole - 1) // 2
    heap[hole] = value


def push_heap(heap: list) -> None:
    _sift_up(heap, len(heap) - 1, 0, heap[-1])


def pop_heap(heap: list, n: int) -> None:
    """std::pop_heap over heap[:n]: the top goes to n - 1."""
    value = heap[n - 1]
    heap[n - 1] = heap[0]
    hole, length = 0, n - 1
    child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if _less(heap[child], heap[child - 1]):
            child -= 1
        heap[hole] = heap[child]
        hole = child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        heap[hole] = heap[child - 1]
        hole = child - 1
    _sift_up(heap, hole, 0, value)


def sort_heap(heap: list) -> list:
    heap = list(heap)
    for n in range(len(heap), 1, -1):
        pop_heap(heap, n)
    return heap
