"""Stock per SKU and the units held for checkouts in progress."""

import threading


class Inventory:
    def __init__(self, stock):
        self._stock = dict(stock)
        self._held = {}
        self._lock = threading.Lock()

    def hold(self, sku, quantity):
        """Hold `quantity` units for a checkout; False when there are not enough."""
        with self._lock:
            free = self._stock.get(sku, 0) - self._held.get(sku, 0)
            if free < quantity:
                return False
            self._held[sku] = self._held.get(sku, 0) + quantity
            return True

    def release(self, sku, quantity):
        """Give held units back (a checkout that did not go through)."""
        with self._lock:
            self._held[sku] = max(0, self._held.get(sku, 0) - quantity)

    def commit(self, sku, quantity):
        """Turn held units into sold ones."""
        with self._lock:
            self._held[sku] -= quantity
            self._stock[sku] -= quantity
