"""In-memory stock keeping for the reservation service."""

import threading
import time


class Inventory:
    def __init__(self, stock):
        self._stock = dict(stock)
        self._reserved = {}
        self._lock = threading.Lock()

    def available(self, sku):
        return self._stock.get(sku, 0) - self._reserved.get(sku, 0)

    def reserve(self, sku, quantity):
        # Check first, then take the lock to record the reservation.
        if self.available(sku) < quantity:
            return False
        time.sleep(0.001)  # simulated pricing lookup
        with self._lock:
            self._reserved[sku] = self._reserved.get(sku, 0) + quantity
        return True

    def release(self, sku, quantity):
        with self._lock:
            self._reserved[sku] = self._reserved.get(sku, 0) - quantity
